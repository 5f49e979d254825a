"""The sandbox of commands a model or a suite controls, probed as an attacker would: a real chat
model behind loopback HTTP (the fake server scripted to call `bash`), real bubblewrap, real
`convoeval run` processes (for memory, Ctrl-C and kill -9)."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import convoeval
from convoeval import _sandbox as sandbox
from convoeval._sandbox._seccomp import program as seccomp_program
from convoeval.results import EvaluationResult, ToolCall
from convoeval.testing import FakeOpenAIServer, tool_calls

from .conftest import command_lines, write

Body = dict[str, Any]
KEY = "sk-test-SANDBOX-" + uuid.uuid4().hex
OTHER_KEY = "sk-ant-SANDBOX-" + uuid.uuid4().hex
needs_bwrap = pytest.mark.skipif(
    shutil.which("bwrap") is None, reason="bubblewrap is not installed (.ci/run installs it)"
)


def script(*replies: str | Body):
    """A model answering `replies` in order, then the last one forever."""
    queue = list(replies)
    return lambda body: queue.pop(0) if len(queue) > 1 else queue[0]


def bash(*commands: str) -> Body:
    return tool_calls(*[("bash", {"command": c}) for c in commands])


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as fake:
        monkeypatch.setenv("OPENAI_BASE_URL", fake.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        monkeypatch.setenv("ANTHROPIC_API_KEY", OTHER_KEY)
        monkeypatch.delenv("CONVOEVAL_SANDBOX", raising=False)
        yield fake


def agent_suite(folder: Path, agent: str = "{bash_timeout_s: 10}", workspace: str = "{}", say: str = "go") -> Path:
    write(folder / "targets.yaml", f"targets:\n  - name: bot\n    provider: openai\n    model: m\n    agent: {agent}\n")
    return write(
        folder / "s.eval.yaml",
        f"execution: {{target: bot}}\ntests:\n  - id: probe\n    workspace: {workspace}\n    input: {say}\n",
    )


def run(suite: Path, **options: Any) -> EvaluationResult:
    return convoeval.run(suite, judge="scripted", cache=False, store=False, **options).results[0]


def calls(result: EvaluationResult) -> list[ToolCall]:
    return [c for e in result.scores for c in e.tool_calls] or [c for m in result.output for c in m.tool_calls]


def processes_with(needle: str) -> list[int]:
    """Pids whose command line contains `needle` (read from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if needle in cmdline:
                found.append(int(entry.name))
    return found


@needs_bwrap
def test_no_key_reaches_a_command_or_the_model_in_any_encoding(server: FakeOpenAIServer, tmp_path: Path) -> None:
    """D2: /proc/$PPID/environ showed the run's keys, which went to the model server."""
    dump = "(env; cat /proc/$PPID/environ /proc/1/environ; ls /proc)"
    server.reset(reply=script(bash(dump, f"{dump} | base64 -w0", f"{dump} | rev"), "done"))
    result = run(agent_suite(tmp_path))
    plain, encoded, reversed_ = calls(result)
    decoded = base64.b64decode(encoded.output.splitlines()[1]).decode()
    assert "PATH=" in plain.output and "PATH=" in decoded  # the commands ran and printed their environment
    assert plain.output.split("\n", 1)[0] == "exit code 0"
    wire = str(server.requests)
    for key in (KEY, OTHER_KEY):
        assert key not in wire and key not in decoded and key[::-1] not in reversed_.output
        assert base64.b64encode(key.encode()).decode()[:20] not in wire
    assert result.sandbox == "bubblewrap"


@needs_bwrap
def test_writes_outside_the_workspace_never_reach_the_host(server: FakeOpenAIServer, tmp_path: Path) -> None:
    """D3: bash wrote outside the workspace; now only the workspace is writable, /tmp and ~ are private."""
    mark = f"convoeval-probe-{uuid.uuid4().hex}"
    server.reset(
        reply=script(
            bash(
                f"echo x > /tmp/{mark}; echo x > ~/{mark}; echo x > /var/tmp/{mark}; echo x > /usr/{mark}; "
                "echo kept > inside.txt; "
                f"cat /tmp/{mark} ~/{mark}"
            ),
            tool_calls(("read_file", {"path": "inside.txt"})),
            "done",
        )
    )
    result = run(agent_suite(tmp_path, workspace="{keep: always}"))
    written, read = calls(result)
    assert "x\nx" in written.output and "Read-only file system" in written.output
    assert (
        not Path(f"/tmp/{mark}").exists()
        and not (Path.home() / mark).exists()
        and not Path(f"/var/tmp/{mark}").exists()
        and not Path(f"/usr/{mark}").exists()
    )
    assert read.output == "kept\n"
    assert result.trials[0].workspace and (Path(result.trials[0].workspace) / "inside.txt").read_text() == "kept\n"
    shutil.rmtree(result.trials[0].workspace)


@pytest.fixture
def listener() -> Iterator[tuple[int, list[socket.socket]]]:
    """A TCP server on a loopback port, recording the connections it accepted."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    sock.settimeout(0.2)
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                accepted.append(sock.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield sock.getsockname()[1], accepted
    stop.set()
    thread.join()
    sock.close()


@needs_bwrap
@pytest.mark.parametrize("allowed_by", [None, "target", "test"])
def test_no_network_from_bash_unless_allowed(
    server: FakeOpenAIServer, tmp_path: Path, listener, allowed_by: str | None
) -> None:
    port, accepted = listener
    connect = f'python3 -c \'import socket; socket.create_connection(("127.0.0.1", {port}), 2); print("connected")\''
    server.reset(reply=script(bash(connect), "done"))
    allow = "{sandbox: {network: true}}"
    suite = agent_suite(
        tmp_path, agent=allow if allowed_by == "target" else "{}", workspace=allow if allowed_by == "test" else "{}"
    )
    [call] = calls(run(suite))
    assert ("connected" in call.output) is (allowed_by is not None) and len(accepted) == int(allowed_by is not None)


def run_cli(
    suite: Path, *args: str, env: dict[str, str] | None = None, ignoring_sigint: bool = False
) -> subprocess.Popen[str]:
    """`convoeval run` as a real process (its own process group), in the suite's folder;
    `ignoring_sigint`: started with SIGINT ignored, as a shell script's background job is."""
    return subprocess.Popen(
        [sys.executable, "-m", "convoeval", "run", str(suite), "--judge", "scripted", "--no-cache", *args],
        cwd=suite.parent,
        env={**os.environ, **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=(lambda: signal.signal(signal.SIGINT, signal.SIG_IGN)) if ignoring_sigint else None,
    )


@needs_bwrap
def test_endless_output_ends_at_the_timeout_with_memory_bounded(server: FakeOpenAIServer, tmp_path: Path) -> None:
    """D1: `cat /dev/zero` hung the run (up to 2.6 GB); `yes` held 1 GB before the cut."""
    server.reset(reply=script(bash("cat /dev/zero", "yes"), "done"))
    suite = agent_suite(tmp_path, agent="{bash_timeout_s: 1.5, output_chars: 1000}")
    started = time.monotonic()
    proc = run_cli(suite, "-o", str(tmp_path / "r.jsonl"))
    peak_kb = 0
    while proc.poll() is None:  # VmHWM: the most memory convoeval itself held (since its exec)
        if time.monotonic() - started > 60:
            os.killpg(proc.pid, signal.SIGKILL)
            pytest.fail(f"the run hung (convoeval held {peak_kb} KB)")
        try:
            status = Path(f"/proc/{proc.pid}/status").read_text()
        except OSError:
            break
        peak_kb = max([peak_kb, *(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmHWM:"))])
        time.sleep(0.05)
    proc.wait()
    seconds = time.monotonic() - started
    assert proc.stderr is not None and proc.returncode in (0, 1), proc.stderr.read()
    result = EvaluationResult.model_validate_json((tmp_path / "r.jsonl").read_text())
    zero, yes = calls(result)
    assert zero.error and zero.error.startswith("timed out after 1.5 s") and yes.error and "timed out" in yes.error
    assert seconds < 30
    assert 0 < peak_kb < 400_000  # convoeval stayed small while gigabytes flowed through its pipes


#: When a run's Ctrl-C lands: as its model call reaches the server (the reply and the command's
#: start race it), as soon as its command runs, twice in a row, and in a run started with SIGINT
#: ignored (a shell script's background job: pytest under such a harness hung here, 2026-11-26).
MOMENTS = ("at-the-call", "as-the-command-starts", "twice", "started-ignoring-sigint")


@needs_bwrap
@pytest.mark.parametrize("sandbox", ["bubblewrap", "none"])
def test_ctrl_c_at_any_moment_ends_the_run_and_leaves_no_tool_process(
    server: FakeOpenAIServer, tmp_path: Path, sandbox: str
) -> None:
    """D3: after Ctrl-C the running tool commands were left behind; a run started with SIGINT
    ignored ran on to its command's timeout. Each run ends with 130 and the resume hint."""
    marks = {moment: f"{700 + uuid.uuid4().int % 200}.{uuid.uuid4().int % 1000}" for moment in MOMENTS}

    def reply(body: Body) -> str | Body:
        mark = next(m for m in marks.values() if m in str(body["messages"]))
        return "done" if any(m["role"] == "tool" for m in body["messages"]) else bash(f"sleep {mark}")

    server.reset(reply=reply)
    runs = {}
    for moment, mark in marks.items():
        suite = agent_suite(tmp_path / moment, agent="{bash_timeout_s: 60}", say=f"run {mark}")
        runs[moment] = run_cli(suite, "--sandbox", sandbox, ignoring_sigint=moment == "started-ignoring-sigint")
    try:
        waiting, deadline = dict(runs), time.monotonic() + 60
        while waiting and time.monotonic() < deadline:
            running, asked = " ".join(command_lines()), str(server.requests)
            for moment, proc in list(waiting.items()):
                if (marks[moment] in asked) if moment == "at-the-call" else (f"sleep {marks[moment]}" in running):
                    os.kill(proc.pid, signal.SIGINT)
                    if moment == "twice":
                        time.sleep(0.02)
                        os.kill(proc.pid, signal.SIGINT)
                    del waiting[moment]
            time.sleep(0.02)
        assert not waiting, f"never started: {list(waiting)}"
        for moment, proc in runs.items():
            _, err = proc.communicate(timeout=20)
            assert proc.returncode == 130, (moment, err)
            assert "interrupted; finish the run with: convoeval run --resume" in err and "Traceback" not in err, err
    finally:
        for proc in runs.values():
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
    gone = time.monotonic() + 5  # the kernel ends a PID namespace's processes a moment later
    while any(f"sleep {m}" in line for line in command_lines() for m in marks.values()) and time.monotonic() < gone:
        time.sleep(0.05)
    assert [line for line in command_lines() if any(f"sleep {m}" in line for m in marks.values())] == []


def test_a_run_in_process_gives_back_the_sigint_handling_it_found(
    server: FakeOpenAIServer, tmp_path: Path, cli
) -> None:
    """`convoeval run` handles SIGINT itself while it runs; called in-process (a test, a notebook)
    the caller's handling is back afterwards, also when it ignored SIGINT."""
    server.reset(reply=script("done"))
    suite = agent_suite(tmp_path, agent="{tools: [read_file]}", workspace="{}")
    for found in (signal.default_int_handler, signal.SIG_IGN):
        previous = signal.signal(signal.SIGINT, found)
        try:
            code, out, err = cli("run", suite, "--judge", "scripted", "--no-cache")
            assert code == 0 and "run 2" in out, (code, out, err)
            assert signal.getsignal(signal.SIGINT) is found
        finally:
            signal.signal(signal.SIGINT, previous)


@needs_bwrap
def test_a_detached_process_does_not_outlive_its_trial(server: FakeOpenAIServer, tmp_path: Path) -> None:
    mark = f"{500 + uuid.uuid4().int % 200}.{uuid.uuid4().int % 1000}"
    server.reset(reply=script(bash(f"setsid sleep {mark} > /dev/null 2>&1 & echo started"), "done"))
    [call] = calls(run(agent_suite(tmp_path)))
    assert call.output == "exit code 0\nstarted\n"
    time.sleep(0.1)
    assert processes_with(f"sleep {mark}") == []


@needs_bwrap
@pytest.mark.skipif(os.geteuid() != 0, reason="needs root: the probe runs as another user")
def test_no_other_user_reaches_into_a_workspace_the_model_opened(server: FakeOpenAIServer, tmp_path: Path) -> None:
    """As root, the model's uid 0 owns the workspace: `chmod 755 .` and a copy of `id` with mode
    4755 made a set-user-ID root program that any user of the host ran (`euid=0`), during the
    conversation and in the kept workspace."""
    seen: list[str] = []

    def as_nobody(workspace: str) -> str:
        probe = f"cat {workspace}/note; {workspace}/id"
        ran = subprocess.run(["/bin/sh", "-c", probe], capture_output=True, text=True, user=65534, group=65534,
                             extra_groups=[], cwd="/", timeout=20)  # fmt: skip
        return ran.stdout + ran.stderr

    def reply(body: Body) -> str | Body:
        if len(seen) == 1:  # the model's command ran, its conversation goes on
            seen.append(as_nobody(str(body["messages"][-1]["content"]).splitlines()[-1]))
            return "done"
        seen.append("asked")
        return bash(
            "cp /usr/bin/id id && (chmod 4755 id || chmod 755 id) && echo private > note && chmod 644 note && chmod 755 . && pwd"
        )

    server.reset(reply=reply)
    result = run(agent_suite(tmp_path, workspace="{keep: always}"))
    kept = result.trials[0].workspace or ""
    try:
        assert calls(result)[0].output.startswith("exit code 0\n") and len(seen) == 2, seen
        for output in (seen[1], as_nobody(kept)):
            assert "private" not in output and "euid=0" not in output and "Permission denied" in output, output
        assert Path(kept, "note").read_text() == "private\n"  # the kept workspace is whole, for its owner
    finally:
        shutil.rmtree(kept, ignore_errors=True)


#: Every way a command's shell makes a file of its own set-user-ID or set-group-ID.
_SET_ID = (
    "cp /usr/bin/id {p}chmod; chmod 4755 {p}chmod; chmod g+s {p}chmod; "
    "install -m 4755 /usr/bin/id {p}install; "
    "python3 -c 'import os; os.open(\"{p}open\", os.O_CREAT | os.O_WRONLY, 0o6755)'; "
    "python3 -c 'import os; os.mknod(\"{p}mknod\", 0o104755)'; "
    "cp /usr/bin/id {p}plain && chmod 755 {p}plain && echo plain-ok; true"
)


@needs_bwrap
def test_no_command_makes_a_set_user_id_file_where_other_users_run_it(server: FakeOpenAIServer, tmp_path: Path) -> None:
    """A `before_all` hook writes the eval folder, which other users of the machine reach: as
    root, `cp /usr/bin/bash rootsh && chmod 4755 rootsh` there left a root shell that `nobody`
    ran (`rootsh -p`: euid=0). No sandboxed command may set those bits now, however it tries
    (chmod, open or mknod with the mode, `install -m`); a plain chmod still works."""
    hook = _SET_ID.format(p="hook-")
    server.reset(reply=script(bash(_SET_ID.format(p="model-")), "done"))
    suite = agent_suite(tmp_path, workspace=f"{{keep: always, hooks: {{before_all: {{command: {json.dumps(hook)}}}}}}}")
    result = run(suite)
    [call] = calls(result)
    workspace = Path(result.trials[0].workspace or "")
    try:
        assert "plain-ok" in call.output and result.sandbox == "bubblewrap"
        made = [*tmp_path.glob("hook-*"), *workspace.glob("model-*")]
        names = {f"{who}-{how}" for who in ("hook", "model") for how in ("chmod", "install", "plain")}
        assert names <= {p.name for p in made} and (tmp_path / "hook-plain").stat().st_mode & 0o777 == 0o755, made
        for path in made:
            assert not path.stat().st_mode & (stat.S_ISUID | stat.S_ISGID), path
    finally:
        shutil.rmtree(workspace, ignore_errors=True)


@needs_bwrap
def test_a_hook_cannot_open_the_eval_folder_to_other_users(server: FakeOpenAIServer, tmp_path: Path) -> None:
    """A `before_all` hook's `chmod 777 .` left the eval folder writable by every user, who then
    replaced `targets.yaml` with a `cli` target the next run ran (as root). In the eval folder a
    hook may not give others write (chmod, an ACL); in its own workspace the model still may."""
    write(tmp_path / "data.txt", "fixture\n")
    acl = 'python3 -c \'import os; os.setxattr("data.txt", "user.note", b"x")\' 2>&1 | tail -1'
    hook = f"chmod 777 . ; chmod o+w data.txt ; {acl} > acl.txt; chmod 600 data.txt && echo private > mine.txt; true"
    server.reset(reply=script(bash("touch x && chmod 777 x && stat -c %a x"), "done"))
    suite = agent_suite(tmp_path, workspace=f"{{hooks: {{before_all: {{command: {json.dumps(hook)}}}}}}}")
    [call] = calls(run(suite))
    assert stat.S_IMODE(tmp_path.stat().st_mode) & 0o002 == 0 and (tmp_path / "mine.txt").exists()
    assert stat.S_IMODE((tmp_path / "data.txt").stat().st_mode) == 0o600  # a plain chmod still works
    assert "Operation not supported" in (tmp_path / "acl.txt").read_text()
    assert call.output.rstrip().endswith("777"), call.output  # the model's own workspace is its own


@needs_bwrap
def test_a_commands_standard_input_is_read_only(server: FakeOpenAIServer, tmp_path: Path) -> None:
    """Its stdin, a deleted file in the host's temp folder, was open for writing: a command wrote
    up to `file_size_mb` there, outside its workspace."""
    probe = "python3 -c 'import os; os.write(0, b\"x\" * 4096)' 2>&1 | tail -1; echo ran"
    server.reset(reply=script(bash(probe), "done"))
    [call] = calls(run(agent_suite(tmp_path)))
    assert "Bad file descriptor" in call.output and "ran" in call.output, call.output


def test_the_seccomp_filter_has_a_table_for_each_architecture_it_names() -> None:
    """The filter is a whole number of instructions, ends the process on an unknown
    architecture, and is absent (not wrong) on a machine convoeval has no table for."""
    for machine in ("x86_64", "aarch64"):
        for shared in (False, True):
            program = seccomp_program(machine, shared=shared)
            assert program is not None and len(program) % 8 == 0
            assert program[-4:] == (0x80000000).to_bytes(4, "little")
    assert seccomp_program("riscv64") is None


@needs_bwrap
def test_a_command_has_no_terminal_and_stays_in_the_group_convoeval_kills(
    server: FakeOpenAIServer, tmp_path: Path
) -> None:
    """No terminal to inject input into (the reason for bwrap's `--new-session`, which convoeval
    leaves out: bwrap starts in a session of its own, without a terminal), and the command in
    bwrap's session and process group, the ones convoeval kills."""
    probe = "tty; (exec 3<>/dev/tty) 2>/dev/null && echo tty-open || echo no-tty; echo session $(ps -o sid= $$)"
    server.reset(reply=script(bash(probe), "done"))
    [call] = calls(run(agent_suite(tmp_path)))
    assert "not a tty" in call.output and "no-tty" in call.output and "tty-open" not in call.output
    # The session (and group) is bwrap's, outside the PID namespace (0 in here), not one of its own.
    assert call.output.rstrip().endswith("session 0")


def test_without_bwrap_a_test_offering_bash_fails_saying_how_to_fix_it(
    server: FakeOpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))  # no bwrap on PATH
    server.reset(reply=script(bash("echo hi"), "done"))
    result = run(agent_suite(tmp_path))
    assert result.execution_status == "execution_error" and result.sandbox == "unavailable"
    assert result.error and "apt-get install bubblewrap" in result.error and "--sandbox none" in result.error
    assert server.target_requests() == []  # failed before any call: no command ran unconfined


def test_a_bwrap_that_cannot_make_namespaces_is_reported_not_run(
    server: FakeOpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where user namespaces are off, bwrap exists but fails: the test says so before any call."""
    folder = tmp_path / "bin"
    folder.mkdir()
    fake = write(folder / "bwrap", "#!/bin/sh\necho 'bwrap: setting up uid map: Permission denied' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    server.reset(reply=script(bash("echo hi"), "done"))
    result = run(agent_suite(tmp_path))
    assert result.execution_status == "execution_error" and server.target_requests() == []
    assert "bubblewrap cannot make a sandbox here (bwrap: setting up uid map: Permission denied)" in (
        result.error or ""
    )


def test_without_bwrap_verify_is_an_execution_error_not_a_failed_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.delenv("CONVOEVAL_SANDBOX", raising=False)
    write(tmp_path / "targets.yaml", "targets:\n  - {name: bot, provider: scripted, default: done}\n")
    suite = write(
        tmp_path / "s.eval.yaml",
        "execution: {target: bot}\ntests:\n  - id: t\n    mode: conversation\n    workspace: {}\n"
        "    verify: {command: 'true'}\n    turns: [{input: go}]\n",
    )
    result = run(suite)
    assert result.execution_status == "execution_error" and "apt-get install bubblewrap" in (result.error or "")


def test_sandbox_none_must_be_chosen_by_name_and_is_recorded(
    server: FakeOpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server.reset(reply=script(bash("echo $HOME"), "done"))
    suite = agent_suite(tmp_path)
    result = run(suite, sandbox="none")
    [call] = calls(result)
    assert result.sandbox == "none" and "convoeval-home-" in call.output  # a fresh HOME, even unconfined
    server.reset(reply=script(bash("echo hi"), "done"))
    proc = run_cli(suite, "--sandbox", "none", "-o", str(tmp_path / "r.jsonl"))
    out, err = proc.communicate(timeout=60)
    assert "sandbox: none" in out, err
    bad = run_cli(suite, "--sandbox", "nothing")
    _, err = bad.communicate(timeout=60)
    assert bad.returncode == 2 and "sandbox" in err and "'none'" in err and "Traceback" not in err


@pytest.mark.skipif(shutil.which("docker") is not None, reason="docker is installed here: its own test applies")
def test_the_docker_sandbox_without_docker_is_a_tool_error_naming_it(server: FakeOpenAIServer, tmp_path: Path) -> None:
    server.reset(reply=script(bash("echo hi"), "done"))
    [call] = calls(run(agent_suite(tmp_path), sandbox="docker"))
    assert call.error == "--sandbox docker: the docker command is not installed"


def _daemon() -> bool:
    return (
        shutil.which("docker") is not None and subprocess.run(["docker", "info"], capture_output=True).returncode == 0
    )


@pytest.mark.skipif(not _daemon(), reason="no Docker daemon is reachable here")
def test_the_docker_sandbox_runs_bash_without_network_in_the_workspace(
    server: FakeOpenAIServer, tmp_path: Path
) -> None:
    server.reset(reply=script(bash("echo hi > f.txt; cat f.txt; env"), "done"))
    [call] = calls(run(agent_suite(tmp_path), sandbox="docker"))
    assert "hi" in call.output and KEY not in call.output


@needs_bwrap
def test_verify_hooks_and_code_graders_run_in_the_sandbox(
    server: FakeOpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The suite's commands get the same confinement as the model's."""
    mark = f"convoeval-probe-{uuid.uuid4().hex}"
    leak = "cat /proc/$PPID/environ /proc/1/environ; env"
    write(tmp_path / "targets.yaml", "targets:\n  - {name: bot, provider: scripted, default: done}\n")
    write(
        tmp_path / "grade.py",
        "import json, os, sys\njson.load(sys.stdin)\n"
        "seen = open('/proc/1/environ').read() + str(os.environ) + open('each.txt').read()\n"
        f"print(json.dumps({{'pass': {KEY!r} not in seen and 'HOME=/tmp/home' in seen}}))\n",
    )
    write(
        tmp_path / "s.eval.yaml",
        f"""\
execution: {{target: bot}}
workspace:
  hooks:
    before_each: {{command: '{leak} > each.txt; echo x > /tmp/{mark}'}}
tests:
  - id: t
    mode: conversation
    verify: {{command: '! grep -q {KEY} each.txt && echo x > /var/tmp/{mark} && echo x > /var/{mark}'}}
    turns:
      - input: go
        assertions: [{{type: code-grader, command: [{sys.executable}, grade.py]}}]
""",
    )
    result = run(tmp_path / "s.eval.yaml")
    verify = result.scores[-1]
    assert (
        verify.name == "verify"
        and verify.verdict == "fail"
        and "Read-only file system" in verify.assertions[0].evidence
    )
    assert result.scores[0].verdict == "pass", result.scores[0]
    assert not Path(f"/tmp/{mark}").exists() and not Path(f"/var/tmp/{mark}").exists()  # private to it
    assert not Path(f"/var/{mark}").exists()


@needs_bwrap
def test_secrets_under_common_names_never_reach_a_suites_commands(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`verify` runs the model's code, and what it sees reaches the model through the workspace:
    a `*_PASS` password, GitLab's `CI_JOB_JWT` and a webhook's URL got there."""
    secrets = {
        "RABBITMQ_DEFAULT_PASS": "rabbit-" + uuid.uuid4().hex,
        "CI_JOB_JWT": "eyJhbGciOiJSUzI1NiJ9." + uuid.uuid4().hex,
        "SLACK_WEBHOOK_URL": "https://hooks.slack.com/services/T0/B0/" + uuid.uuid4().hex,
    }
    for name, value in secrets.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("PLAIN_SETTING", "visible")
    write(tmp_path / "targets.yaml", "targets:\n  - {name: bot, provider: scripted, default: done}\n")
    write(
        tmp_path / "s.eval.yaml",
        "execution: {target: bot}\ntests:\n  - id: t\n    mode: conversation\n    workspace: {keep: always}\n"
        "    verify: {command: 'env > env.txt'}\n    turns: [{input: go}]\n",
    )
    kept = Path(run(tmp_path / "s.eval.yaml").trials[0].workspace or "")
    try:
        seen = (kept / "env.txt").read_text()
    finally:
        shutil.rmtree(kept)
    assert "PLAIN_SETTING=visible" in seen
    assert [name for name, value in secrets.items() if value in seen] == []


@needs_bwrap
def test_the_limits_a_test_or_target_sets_hold_inside(server: FakeOpenAIServer, tmp_path: Path) -> None:
    server.reset(
        reply=script(
            bash(
                "head -c 3000000 /dev/zero > big.bin; echo wrote $(stat -c %s big.bin)",
                "python3 -c 'bytearray(300 * 2**20)' 2>&1 | tail -1",
                "ulimit -t",
            ),
            "done",
        )
    )
    suite = agent_suite(
        tmp_path,
        agent="{sandbox: {file_size_mb: 1, cpu_seconds: 900}}",
        workspace="{sandbox: {memory_mb: 200, cpu_seconds: 7}}",
    )
    size, memory, cpu = calls(run(suite))
    assert "wrote 1048576" in size.output  # cut at 1 MB (the target's limit)
    assert "MemoryError" in memory.output  # 200 MB of address space (the test's limit)
    assert cpu.output == "exit code 0\n7\n"  # the lower of the two


@needs_bwrap
def test_a_program_named_by_its_path_runs_though_its_folder_is_hidden(tmp_path: Path) -> None:
    """A command naming its program by path (a `bun` under a checkout in /tmp, through the link
    npm makes) finds it: the program's folder and its link's target's are shown, read-only."""
    tools = Path(tempfile.mkdtemp(prefix="convoeval-program-"))  # a temp folder: the sandbox hides it
    try:
        (tools / "pkg" / "bin").mkdir(parents=True)
        program = tools / "pkg" / "bin" / "hello.exe"
        program.write_text("#!/bin/sh\necho hello from the program\n")
        program.chmod(0o755)
        (tools / "secret.txt").write_text("not for the sandbox\n")
        (tools / ".bin").mkdir()
        (tools / ".bin" / "hello").symlink_to("../pkg/bin/hello.exe")
        work = tmp_path / "work"
        work.mkdir()
        sandbox.choose("bubblewrap")
        done = asyncio.run(sandbox.run([str(tools / ".bin" / "hello")], work, timeout_s=30, writable=work))
        assert (done.code, done.output.strip()) == (0, "hello from the program"), done.output
        other = asyncio.run(sandbox.run(["/bin/cat", str(tools / "secret.txt")], work, timeout_s=30, writable=work))
        assert other.code != 0 and "not for the sandbox" not in other.output  # the rest of the folder stays hidden
    finally:
        sandbox.choose(None)
        shutil.rmtree(tools, ignore_errors=True)


def test_the_relay_adds_nothing_to_the_programs_stderr(tmp_path: Path) -> None:
    """A program that ends with connections to the relay still open (a grader that timed out
    on the proxy, or did not wait for it): its stderr is its own, without the relay's asyncio
    tracebacks (which replaced the reason AgentV's SDK printed, in a pinned AgentV file)."""

    async def main() -> list[bytes]:
        async def slow(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            try:
                await asyncio.sleep(1)
            except asyncio.CancelledError:
                pass
            writer.close()

        server = await asyncio.start_unix_server(slow, str(tmp_path / "p.sock"))
        program = (
            "import os, socket\nport = int(os.environ['URL'].rsplit(':', 1)[1])\n"
            "held = [socket.create_connection(('127.0.0.1', port)) for _ in range(20)]\n"
            "[s.send(b'GET /info HTTP/1.1\\r\\n\\r\\n') for s in held]\n"
        )
        argv = sandbox.Relay(tmp_path / "p.sock", "URL").argv([sys.executable, "-c", program], inside=False)
        errs = []
        for _ in range(3):
            child = await asyncio.create_subprocess_exec(*argv, stderr=asyncio.subprocess.PIPE)
            errs.append((await child.communicate())[1])
            assert child.returncode == 0
        server.close()
        return errs

    assert asyncio.run(main()) == [b"", b"", b""]


@needs_bwrap
async def test_a_command_reserving_6_gb_of_address_space_runs_under_the_default_limits(tmp_path: Path) -> None:
    """As JavaScript runtimes do (bun 1.3, which AgentV pins, aborts under 4096 MB, the old default):
    6 GB reserved, read-only and without swap (MAP_NORESERVE, 0x4000), so nothing is committed."""
    reserve = "mmap.mmap(-1, 6 << 30, mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | 0x4000, mmap.PROT_READ)"
    argv = [sys.executable, "-c", f"import mmap; m = {reserve}; print('reserved')"]
    ran = await sandbox.run(argv, tmp_path, timeout_s=30, settings=sandbox.SandboxSettings())
    assert (ran.code, ran.output.strip()) == (0, "reserved"), ran.stderr
