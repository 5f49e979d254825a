"""The tool agent's file tools, attacked by the model through its own `bash`: real bubblewrap,
a real chat model behind loopback HTTP."""

from __future__ import annotations

import os
import shutil
import stat
import time
import uuid
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


def _agent_suite(folder: Path, base_url: str, template: str) -> Path:
    write(
        folder / "targets.yaml",
        f"targets:\n  - {{name: bot, provider: openai, model: m, base_url: '{base_url}', api_key: sk-x1234567,"
        " agent: {bash_timeout_s: 20}}\n",
    )
    return write(
        folder / "s.eval.yaml",
        f"execution: {{target: bot}}\ntests:\n  - id: t\n    workspace: {{template: {template}}}\n    input: go\n",
    )


@needs_bwrap
def test_a_template_link_to_a_private_file_does_not_bring_it_into_the_workspace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The template was copied following links: `key -> ~/.ssh/id_ed25519` put the key's text in
    the workspace, where the model read it (convoeval copies as itself, outside any sandbox)."""
    monkeypatch.delenv("CONVOEVAL_SANDBOX", raising=False)
    private = Path("/var/tmp") / f"convoeval-link-{uuid.uuid4().hex}"
    private.mkdir()
    secret = "PRIVATE-" + uuid.uuid4().hex
    write(private / "id_ed25519", secret)
    (tmp_path / "template" / "sub").mkdir(parents=True)
    write(tmp_path / "template" / "sub" / "kept.txt", "a template file")
    (tmp_path / "template" / "key").symlink_to(private / "id_ed25519")
    (tmp_path / "template" / "dir").symlink_to(private)
    (tmp_path / "template" / "inner").symlink_to("sub/kept.txt")
    steps = [
        tool_calls(("read_file", {"path": "key"})),
        tool_calls(("bash", {"command": "cat key dir/id_ed25519 inner; ls -l"})),
        "done",
    ]
    try:
        with FakeOpenAIServer(reply=lambda body: steps.pop(0) if len(steps) > 1 else steps[0]) as server:
            result = convoeval.run(
                _agent_suite(tmp_path, server.base_url, "template"), judge="scripted", cache=False, store=False
            ).results[0]
            wire = str(server.requests)
    finally:
        shutil.rmtree(private)
    read, shell = [c for m in result.output for c in m.tool_calls]
    assert read.error and "outside the workspace" in read.error, read
    assert shell.output and "a template file" in shell.output, shell  # a link inside the template still works
    assert secret not in wire and secret not in str(result.model_dump()), "the private file reached the model"


@pytest.mark.timeout(60)
@pytest.mark.parametrize("special", ["fifo", "device"])
def test_a_special_file_in_the_template_is_a_clear_execution_error(tmp_path: Path, special: str) -> None:
    """A device node in a template was copied by reading it (`/dev/zero`'s would never end: this
    test uses `/dev/null`'s numbers); a FIFO was refused with a raw list of tuples."""
    (tmp_path / "template").mkdir()
    node = tmp_path / "template" / "node"
    if special == "fifo":
        os.mkfifo(node)
    else:
        if os.geteuid() != 0:
            pytest.skip("only root can make a device node")
        os.mknod(node, stat.S_IFCHR | 0o600, os.makedev(1, 3))
    with FakeOpenAIServer(reply=lambda body: "done") as server:
        result = convoeval.run(
            _agent_suite(tmp_path, server.base_url, "template"), judge="scripted", cache=False, store=False
        ).results[0]
    assert result.execution_status == "execution_error", result
    assert result.error == f"workspace: workspace template: {node} is not a regular file, folder or link"


@needs_bwrap
@pytest.mark.timeout(60)
def test_a_key_a_tool_prints_reaches_the_model_redacted(tmp_path: Path) -> None:
    """A command tool printed a file of its folder that held the target's key, and its output
    went to the model's provider as it was (results showed `[REDACTED]`, too late)."""
    key = f"sk-inline-{uuid.uuid4().hex}"
    write(tmp_path / "notes.txt", f"deploy with {key}\n")
    with FakeOpenAIServer() as server:
        server.reset(reply=lambda body: "done" if body["messages"][-1]["role"] == "tool" else tool_calls(("notes", {})))
        write(
            tmp_path / "targets.yaml",
            f"targets:\n  - {{name: bot, provider: openai, model: m, base_url: '{server.base_url}', api_key: {key},"
            f" agent: {{tools: [{{name: notes, command: 'cat {tmp_path}/notes.txt'}}]}}}}\n",
        )
        write(tmp_path / "s.eval.yaml", "execution: {target: bot}\ntests:\n  - {id: t, workspace: {}, input: go}\n")
        convoeval.run(tmp_path / "s.eval.yaml", judge="scripted", cache=False, store=False)
        answered = [m for r in server.requests for m in r["messages"] if m["role"] == "tool"]
    assert answered and answered[0]["content"] == "exit code 0\ndeploy with [REDACTED]\n", answered
