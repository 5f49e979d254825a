"""The tool agent's file tools, attacked by the model through its own `bash`: real bubblewrap,
a real chat model behind loopback HTTP."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest

import convoeval
from convoeval.testing import FakeOpenAIServer, tool_calls

from .conftest import write

needs_bwrap = pytest.mark.skipif(
    shutil.which("bwrap") is None, reason="bubblewrap is not installed (.ci/run installs it)"
)


@needs_bwrap
@pytest.mark.timeout(60)
def test_write_file_to_a_fifo_the_model_made_is_refused_without_hanging_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`write_file` opened a FIFO made by `bash mkfifo` for writing, in the event loop: the whole
    run waited forever for a reader."""
    monkeypatch.delenv("CONVOEVAL_SANDBOX", raising=False)
    steps = [
        tool_calls(("bash", {"command": "mkfifo pipe && echo made"})),
        tool_calls(("write_file", {"path": "pipe", "content": "x"})),
        tool_calls(("edit_file", {"path": "pipe", "old": "a", "new": "b"})),
        tool_calls(("write_file", {"path": "plain.txt", "content": "still works"})),
        "done",
    ]
    with FakeOpenAIServer(reply=lambda body: steps.pop(0) if len(steps) > 1 else steps[0]) as server:
        write(
            tmp_path / "targets.yaml",
            f"targets:\n  - {{name: bot, provider: openai, model: m, base_url: '{server.base_url}', api_key: sk-x1234567,"
            " agent: {bash_timeout_s: 20}}\n",
        )
        write(
            tmp_path / "s.eval.yaml",
            "execution: {target: bot}\ntests:\n  - id: t\n    workspace: {keep: always}\n    input: go\n",
        )
        started = time.monotonic()
        result = convoeval.run(tmp_path / "s.eval.yaml", judge="scripted", cache=False, store=False).results[0]
    assert time.monotonic() - started < 30
    made, to_fifo, edit, plain = [c for m in result.output for c in m.tool_calls]
    assert made.output and "made" in made.output
    assert to_fifo.error and to_fifo.error.startswith("pipe: ") and edit.error, (to_fifo, edit)
    assert plain.output == "wrote plain.txt"
    workspace = Path(result.trials[0].workspace or "")
    assert (workspace / "plain.txt").read_text() == "still works"
    shutil.rmtree(workspace)
