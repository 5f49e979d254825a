"""The tool agent's file tools, attacked by the model through its own `bash`: real bubblewrap,
a real chat model behind loopback HTTP."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import pytest

import convoeval
from convoeval.run._workspace import (
    DIFF_CHARS,
    SNAPSHOT_BYTES,
    WORKSPACE_PREFIX,
    file_changes,
    snapshot,
    sweep_stale_workspaces,
)
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


def _nest(folder: Path, depth: int) -> Path:
    """`depth` folders one in another under `folder` (deeper than Python's stack), a file at the bottom."""
    path = folder
    for _ in range(depth):
        path = path / "a"
        os.mkdir(path)
    (path / "deep.txt").write_text("x\n")
    return path


@needs_bwrap
@pytest.mark.timeout(120)
def test_folders_nested_deeper_than_pythons_stack_neither_error_the_trial_nor_stay(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A model's bash that nested 1,500 folders made the trial an execution error
    (RecursionError in the post-turn snapshot, its transcript lost), and its workspace was
    never removed (`shutil.rmtree` recursed too)."""
    monkeypatch.delenv("CONVOEVAL_SANDBOX", raising=False)
    nest = (
        'python3 -c \'import os\nfor _ in range(1200): os.mkdir("a"); os.chdir("a")\nopen("deep.txt", "w").write("x")\''
    )
    steps = [tool_calls(("bash", {"command": f"{nest} && pwd -P"})), "done"]
    try:
        with FakeOpenAIServer(reply=lambda body: steps.pop(0) if len(steps) > 1 else steps[0]) as server:
            (tmp_path / "template").mkdir()
            suite = _agent_suite(tmp_path, server.base_url, "template")
            result = convoeval.run(suite, judge="scripted", cache=False, store=False).results[0]
    finally:  # what a failure left: the sweep of a run without this fix would crash on it
        for left in Path(tempfile.gettempdir()).glob(f"{WORKSPACE_PREFIX}{os.getpid()}.*-t-*"):
            subprocess.run(["rm", "-rf", str(left)], check=True)
    assert result.execution_status == "ok" and result.verdict == "pass", result.error
    (call,) = [c for m in result.output for c in m.tool_calls]
    assert call.output and "deep.txt" in (result.trials[0].file_changes or "")
    workspace = Path(call.output.splitlines()[-1])
    assert workspace.name.startswith("convoeval-ws-") and not workspace.exists()


def test_a_stale_workspace_nested_deeper_than_pythons_stack_is_swept() -> None:
    """The sweep before `before_all` hooks raised RecursionError on such a leftover: every later
    run with a `before_all` hook ended in a traceback."""
    stale = Path(tempfile.mkdtemp(prefix=f"{WORKSPACE_PREFIX}999999999.1-deep-"))  # no such process
    _nest(stale, 1200)
    try:
        sweep_stale_workspaces()
        assert not stale.exists()
    finally:
        subprocess.run(["rm", "-rf", str(stale)], check=True)


def test_the_snapshot_reads_a_bounded_total_whatever_the_workspace_holds(tmp_path: Path) -> None:
    """A model's bash made 1,500 hard links to one 256 KB text file (300 KB on disk): convoeval
    read each one and diffed them all on the host, 1.5 GB and 30 s for one trial (20,000 links:
    out of memory), the event loop blocked meanwhile."""
    text = "".join(f"line {i} of a big text file\n" for i in range(7000))  # < SNAPSHOT_FILE_BYTES
    (tmp_path / "a.txt").write_text(text)
    for i in range(300):
        os.link(tmp_path / "a.txt", tmp_path / f"link{i:03}.txt")
    files = snapshot(tmp_path)
    assert len(files) == 301 and files["a.txt"] == text
    assert sum(map(len, files.values())) <= SNAPSHOT_BYTES
    changes = file_changes({}, tmp_path)
    assert len(changes) < DIFF_CHARS + 100 and changes.endswith("[... diff cut: 301 files changed in all]\n")


def test_the_snapshot_walks_folders_from_the_one_holding_them_past_a_paths_length(tmp_path: Path) -> None:
    """Each folder is opened from its open parent, never by a path (which a process left in a
    docker workspace could lead through a link meanwhile, and which stops at 4,096 bytes)."""
    script = "import os\nfor _ in range(2500): os.mkdir('a'); os.chdir('a')\nopen('deep.txt', 'w').write('x')"
    try:  # removed even when it fails: pytest's own clean-up of old temp folders recurses
        subprocess.run([sys.executable, "-c", script], cwd=tmp_path, check=True)
        (tmp_path / "link").symlink_to("/etc")
        files = snapshot(tmp_path)
        assert list(files) == ["a/" * 2500 + "deep.txt"] and files["a/" * 2500 + "deep.txt"] == "x"
    finally:
        subprocess.run(["rm", "-rf", str(tmp_path / "a")], check=True)
