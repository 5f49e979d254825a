"""`sandbox.processes` where the kernel ignores RLIMIT_NPROC (convoeval as root): a pids cgroup
per command, probed with real bubblewrap, real processes and the machine's real cgroups. A
command tries to start more processes than its limit; a bounded fork bomb runs inside an outer
cgroup of the test's own; a convoeval killed with -9 leaves a cgroup the next one sweeps."""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

import convoeval
from convoeval import _sandbox as sandbox
from convoeval._sandbox import SandboxSettings
from convoeval._sandbox._cgroup import PREFIX, _place, find_base
from convoeval.results import ToolCall
from convoeval.targets._base import TargetConfig
from convoeval.targets.agents._boxed import AgentHomes, launch
from convoeval.targets.agents._process import run_command
from convoeval.targets.agents._settings import AgentCliSettings
from convoeval.testing import FakeOpenAIServer, tool_calls

from .conftest import write

#: A command that tries to start `n` processes (`sleep MARK`) and says how many started.
STARTS = """python3 -c '
import subprocess
ok = bad = 0
for _ in range({n}):
    try:
        subprocess.Popen(["sleep", "{mark}"]); ok += 1
    except OSError:
        bad += 1
print("started", ok, "failed", bad, flush=True)'"""


def _base() -> Path:
    base, why = _place()
    if base is None:
        pytest.skip(f"no pids cgroup can be made here: {why}")
    return base


@pytest.fixture
def cgroups() -> Path:
    """Where this process's commands get their cgroups (skips where RLIMIT_NPROC holds, or no
    cgroup can be made: the limit is then the kernel's, or not enforced and said so)."""
    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap is not installed (.ci/run installs it)")
    if sandbox.process_limit().how == "RLIMIT_NPROC":
        pytest.skip("not root: the kernel applies RLIMIT_NPROC, no cgroup is made")
    return _base()


def ours(base: Path, pid: int | None = None) -> list[Path]:
    """The command cgroups of process `pid` (this one) under `base`."""
    return sorted(base.glob(f"{PREFIX}{pid or os.getpid()}.*"))


def sleeping(mark: str) -> int:
    return sum(1 for p in Path("/proc").glob("[0-9]*/cmdline") if _cmdline(p) == f"sleep\0{mark}\0")


def _cmdline(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""


def counted(output: str) -> tuple[int, int]:
    found = re.search(r"started (\d+) failed (\d+)", output)
    assert found, output
    return int(found[1]), int(found[2])


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as fake:
        monkeypatch.setenv("OPENAI_BASE_URL", fake.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-PIDS-" + uuid.uuid4().hex)
        monkeypatch.delenv("CONVOEVAL_SANDBOX", raising=False)
        yield fake


@pytest.mark.parametrize("backend", ["bubblewrap", "none"])
def test_a_model_command_starts_no_more_processes_than_the_limit(
    server: FakeOpenAIServer, tmp_path: Path, cgroups: Path, backend: str
) -> None:
    """As root RLIMIT_NPROC let all 60 start (the old code); the command's cgroup stops them
    at 20 tasks (bwrap's two processes, the shell and python among them), and is gone after."""
    mark = f"{300 + uuid.uuid4().int % 200}.{uuid.uuid4().int % 1000}"
    replies = [tool_calls(("bash", {"command": STARTS.format(n=60, mark=mark)})), "done"]
    server.reset(reply=lambda body: replies.pop(0) if len(replies) > 1 else replies[0])
    write(
        tmp_path / "targets.yaml",
        "targets:\n  - name: bot\n    provider: openai\n    model: m\n    agent: {bash_timeout_s: 20}\n",
    )
    suite = write(
        tmp_path / "s.eval.yaml",
        "execution: {target: bot}\ntests:\n  - id: bomb\n    workspace: {sandbox: {processes: 20}}\n    input: go\n",
    )
    result = convoeval.run(suite, judge="scripted", cache=False, store=False, sandbox=backend).results[0]
    [call] = [c for e in result.scores for c in e.tool_calls] or [c for m in result.output for c in m.tool_calls]
    assert isinstance(call, ToolCall) and call.output is not None, result
    started, failed = counted(call.output)
    assert 1 <= started <= 20 - 2 and started + failed == 60, call.output
    assert ours(cgroups) == []
    assert sleeping(mark) == 0  # the started ones ended with the command


def test_concurrent_commands_each_have_a_cgroup_of_their_own(cgroups: Path, tmp_path: Path) -> None:
    """Four commands at once, 10 tasks each: each stops at its own 10 (one shared cgroup would
    stop them all at 10 together), four cgroups exist while they run, none after."""
    mark = f"{300 + uuid.uuid4().int % 200}.{uuid.uuid4().int % 1000}"
    command = STARTS.format(n=30, mark=mark) + "; sleep 1"
    seen: list[int] = []

    async def watch() -> None:
        for _ in range(100):
            seen.append(len(ours(cgroups)))
            await asyncio.sleep(0.02)

    async def main() -> list[sandbox.Finished]:
        sandbox.choose("bubblewrap")
        settings = SandboxSettings(processes=10)
        runs = [sandbox.run(command, tmp_path, timeout_s=20, writable=tmp_path, settings=settings) for _ in range(4)]
        done = await asyncio.gather(watch(), *runs)
        return done[1:]  # type: ignore[return-value]

    finished = asyncio.run(main())
    started = [counted(f.output)[0] for f in finished]
    assert all(1 <= n <= 10 - 3 for n in started), started
    assert sum(started) > 10
    assert max(seen) == 4
    assert ours(cgroups) == []
    assert sleeping(mark) == 0


def test_a_timed_out_command_leaves_no_cgroup_and_no_process(cgroups: Path, tmp_path: Path) -> None:
    mark = f"{300 + uuid.uuid4().int % 200}.{uuid.uuid4().int % 1000}"

    async def main() -> sandbox.Finished:
        sandbox.choose("none")  # unconfined: a process that leaves the group still dies with the cgroup
        command = f"setsid sleep {mark} & sleep {mark}"
        return await sandbox.run(command, tmp_path, timeout_s=1, settings=SandboxSettings(processes=50))

    finished = asyncio.run(main())
    assert finished.timed_out and finished.code == 124
    assert ours(cgroups) == []
    assert sleeping(mark) == 0


@pytest.fixture
def outer(cgroups: Path) -> Iterator[Path]:
    """A pids cgroup of the test's own (300 tasks) that the fork bomb's convoeval runs in: a
    safety outside the one under test (cgroup limits hold for all the cgroups below)."""
    folder = cgroups / f"convoeval-test-{uuid.uuid4().hex[:8]}"
    folder.mkdir()
    (folder / "pids.max").write_text("300")
    yield folder
    for _ in range(300):
        for pid in (folder / "cgroup.procs").read_text().split():
            os.kill(int(pid), signal.SIGKILL)
        try:
            folder.rmdir()
            break
        except OSError:
            time.sleep(0.01)


BOMB = """
import asyncio, pathlib
from convoeval import _sandbox as sandbox
sandbox.choose("bubblewrap")
print(sandbox.process_limit().how, flush=True)
settings = sandbox.SandboxSettings(processes=50)
done = asyncio.run(sandbox.run("bash -c ':(){ :|:& };:; exec sleep 10'", pathlib.Path("/"), timeout_s=3, settings=settings))
print("timed_out", done.timed_out, done.code, done.output[-300:], flush=True)
"""


def test_a_fork_bomb_stays_within_the_limit(outer: Path) -> None:
    """`:(){ :|:& };:` with `processes: 50` for 3 s: the outer cgroup (convoeval, its threads,
    the bomb's cgroup under it) never held more than the bomb's 50 and convoeval's own few."""
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-c", BOMB],
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=lambda: (outer / "cgroup.procs").write_text(str(os.getpid())),
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("a pids cgroup per command"), proc.stdout
    assert "timed_out True" in proc.stdout
    peak = int((outer / "pids.peak").read_text()) if (outer / "pids.peak").exists() else None
    events = dict(line.split() for line in (outer / "pids.events").read_text().splitlines())
    assert events["max"] == "0"  # the outer safety never had to stop a fork
    if peak is not None:
        assert 50 < peak <= 50 + 40, peak  # the bomb filled its 50; python's threads are the rest
    assert time.monotonic() - started < 30
    assert list(outer.glob(f"{PREFIX}*")) == []


KILLED = """
import asyncio, pathlib
from convoeval import _sandbox as sandbox
sandbox.choose("bubblewrap")
asyncio.run(sandbox.run("sleep 60", pathlib.Path("/"), timeout_s=60, settings=sandbox.SandboxSettings()))
"""


def test_the_cgroup_of_a_run_killed_with_9_is_swept_by_the_next(cgroups: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-c", KILLED])
    deadline = time.monotonic() + 30
    while not ours(cgroups, proc.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    [left] = ours(cgroups, proc.pid)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert left.is_dir()  # kill -9: nothing removed it
    assert left in sandbox.sweep_stale_cgroups(cgroups)
    assert not left.exists()
    mine = sandbox.PidsGroup(cgroups, 5)  # a live owner's cgroup stays
    try:
        assert sandbox.sweep_stale_cgroups(cgroups) == [] and mine.path.is_dir()
    finally:
        assert mine.remove_now(1)


def test_an_agent_cli_gets_the_limit_plus_room_for_its_own_threads(cgroups: Path, tmp_path: Path) -> None:
    """An agent CLI (here python3 in its place) in the agent sandbox with `processes: 4`: its
    cgroup holds 4 + AGENT_TASKS tasks, and is removed with it."""
    mark = f"{300 + uuid.uuid4().int % 200}.{uuid.uuid4().int % 1000}"
    n = 4 + sandbox.AGENT_TASKS + 40
    script = STARTS.format(n=n, mark=mark).split("'")[1]
    homes = AgentHomes(None)
    workdir = tmp_path / "ws"
    workdir.mkdir()

    async def main() -> str:
        sandbox.choose("bubblewrap")
        token = sandbox.use_trial_settings(SandboxSettings(processes=4))
        try:
            config = TargetConfig(name="c", provider="claude-code")
            start = launch(config, AgentCliSettings(), homes, ["python3", "-c", script], str(workdir), None, ((), ()))
        finally:
            sandbox.reset_trial_settings(token)
        assert start.pids is not None and start.pids.path.is_dir()
        try:
            done = await run_command(
                start.argv, cwd=workdir, env=start.env, timeout_s=30, name="c", preexec=start.preexec
            )
        finally:
            await start.pids.remove()
            assert start.home is not None
            homes.settle(start.home, None)  # the turn started no session: its HOME goes
        return done.stdout

    output = asyncio.run(main())
    started, failed = counted(output)
    assert 4 < started <= 4 + sandbox.AGENT_TASKS and started + failed == n, output
    assert ours(cgroups) == []


V1 = "30 25 0:27 / /sys/fs/cgroup/pids rw,nosuid,nodev,noexec,relatime shared:12 - cgroup cgroup rw,pids\n"
V2 = "30 25 0:27 {root} {point} rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate\n"


def test_where_cgroups_go_on_cgroup_v1() -> None:
    assert find_base(V1, "8:pids:/\n0::/\n") == Path("/sys/fs/cgroup/pids")
    assert find_base(V1, "8:pids:/user/7\n") == Path("/sys/fs/cgroup/pids/user/7")
    assert "read-only" in str(find_base(V1.replace(" rw,nosuid", " ro,nosuid"), "8:pids:/\n"))
    assert "not under" in str(find_base(V1.replace(" / /sys", " /docker/x /sys"), "8:pids:/other\n"))
    assert find_base(V1.replace(" / /sys", " /docker/x /sys"), "8:pids:/docker/x/y\n") == Path("/sys/fs/cgroup/pids/y")
    assert "no cgroup file system" in str(find_base("", "0::/\n"))


def test_where_cgroups_go_on_cgroup_v2(tmp_path: Path) -> None:
    """A cgroup2 tree laid out as files (no v2 pids controller on this machine): under
    convoeval's cgroup when pids is enabled for its children, else beside it, never in a
    namespace's top cgroup that holds processes."""
    point = tmp_path / "cg"
    own = point / "user.slice" / "session-3.scope"
    own.mkdir(parents=True)
    for folder in (point, point / "user.slice", own):
        (folder / "cgroup.controllers").write_text("cpu memory pids\n")
        (folder / "cgroup.subtree_control").write_text("")
    (point / "user.slice" / "cgroup.subtree_control").write_text("memory pids\n")
    mounts = V2.format(root="/", point=point)
    assert find_base(mounts, "0::/user.slice/session-3.scope\n") == point / "user.slice"
    (own / "cgroup.subtree_control").write_text("pids\n")
    assert find_base(mounts, "0::/user.slice/session-3.scope\n") == own
    (point / "cgroup.subtree_control").write_text("")
    assert "top of the cgroups" in str(find_base(mounts, "0::/\n"))
    (point / "cgroup.controllers").write_text("cpu memory\n")
    assert "without the pids controller" in str(find_base(mounts, "0::/\n"))
    # v1 pids wins on a hybrid machine (this one: pids is bound to v1, not v2)
    assert find_base(mounts + V1, "8:pids:/\n0::/\n") == Path("/sys/fs/cgroup/pids")


def test_without_a_cgroup_commands_still_run_and_the_header_says_the_limit_is_not_enforced(
    server: FakeOpenAIServer, tmp_path: Path, cgroups: Path
) -> None:
    """`convoeval run` in a mount namespace of its own where the pids cgroups are read-only (as
    in most containers): the run goes on, its commands are not held to `processes` (the kernel
    ignores RLIMIT_NPROC for root), and the run header says so."""
    if shutil.which("unshare") is None:
        pytest.skip("unshare (util-linux) is missing")
    mark = f"{300 + uuid.uuid4().int % 200}.{uuid.uuid4().int % 1000}"
    replies = [tool_calls(("bash", {"command": STARTS.format(n=30, mark=mark)})), "done"]
    server.reset(reply=lambda body: replies.pop(0) if len(replies) > 1 else replies[0])
    write(tmp_path / "targets.yaml", "targets:\n  - name: bot\n    provider: openai\n    model: m\n    agent: {}\n")
    suite = write(
        tmp_path / "s.eval.yaml",
        "execution: {target: bot}\ntests:\n  - id: t\n    workspace: {sandbox: {processes: 20}}\n    input: go\n",
    )
    run = f"{sys.executable} -m convoeval run {suite} --judge scripted --no-cache -o {tmp_path / 'r.jsonl'}"
    mounts = [line.split() for line in Path("/proc/self/mountinfo").read_text().splitlines()]
    points = [m[4] for m in mounts if m[-3] == "cgroup" and "pids" in m[-1].split(",")]
    if not points:
        pytest.skip("the pids controller is not on cgroup v1 here (the test remounts its folder read-only)")
    shell = f"mount -o remount,bind,ro {points[0]} && exec {run}"
    proc = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "sh", "-c", shell],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode in (0, 1), proc.stderr
    assert "sandbox: `processes` is not enforced" in proc.stdout and "read-only" in proc.stdout, proc.stdout
    output = (tmp_path / "r.jsonl").read_text()
    assert "started 30 failed 0" in output
    assert sleeping(mark) == 0


#: An attacker's program: a user namespace of its own (full capabilities in it), then a cgroup
#: and a mount namespace, the pids hierarchy mounted where it can write, its `pids.max` raised,
#: a cgroup made under it and joined; then as many processes as it can start.
ESCAPE = """
import ctypes, os, subprocess, sys
libc = ctypes.CDLL(None, use_errno=True)
assert libc.unshare(0x10000000) == 0 and libc.unshare(0x00020000 | 0x02000000) == 0
os.makedirs("/tmp/c", exist_ok=True)
assert libc.mount(b"none", b"/tmp/c", b"cgroup", 0, b"pids") == 0, ctypes.get_errno()
open("/tmp/c/pids.max", "w").write("max")
os.makedirs("/tmp/c/mine", exist_ok=True)
open("/tmp/c/mine/cgroup.procs", "w").write(str(os.getpid()))
print("raised", open("/tmp/c/pids.max").read().strip(), flush=True)
ok = bad = 0
for _ in range(60):
    try:
        subprocess.Popen(["sleep", sys.argv[1]]); ok += 1
    except OSError:
        bad += 1
print("started", ok, "failed", bad, flush=True)
"""


def test_a_command_cannot_raise_its_own_limit(cgroups: Path, tmp_path: Path) -> None:
    """The limit sits one cgroup above the command's, out of its cgroup namespace: a command that
    mounts the pids hierarchy in a user namespace of its own raises only its own cgroup's
    `pids.max` (with a single cgroup all 60 started), and the cgroups it made go with it."""
    mark = f"{300 + uuid.uuid4().int % 200}.{uuid.uuid4().int % 1000}"
    (tmp_path / "escape.py").write_text(ESCAPE)

    async def main() -> sandbox.Finished:
        sandbox.choose("bubblewrap")
        command = f"python3 {tmp_path / 'escape.py'} {mark}"
        return await sandbox.run(
            command, tmp_path, timeout_s=20, writable=tmp_path, settings=SandboxSettings(processes=20)
        )

    finished = asyncio.run(main())
    assert "raised max" in finished.output, finished.output  # the attack itself worked
    started, failed = counted(finished.output)
    assert started <= 20 - 3 and started + failed == 60, finished.output
    assert ours(cgroups) == []
    assert sleeping(mark) == 0


def test_as_root_a_command_cannot_remount_the_system_writable(tmp_path: Path) -> None:
    """bubblewrap kept root's capabilities inside: `mount -o remount,rw,bind` made a read-only
    host folder writable, and a file was written on the host (`--cap-drop ALL` now)."""
    if shutil.which("bwrap") is None or os.geteuid() != 0:
        pytest.skip("needs bubblewrap and root (as another user the sandbox has no capabilities)")
    shown = tmp_path / "shown"
    shown.mkdir()
    attempts = [
        f"mount -o remount,rw,bind {shown}; echo 1 > {shown}/one",
        f"mount -o remount,rw,bind /; echo 2 > {shown}/two",
        # a user namespace of its own (full capabilities there) before the remount: mounts are locked
        "python3 -c 'import ctypes; c = ctypes.CDLL(None, use_errno=True); c.unshare(0x10000000 | 0x20000); "
        f'print("remount", c.mount(None, b"{shown}", None, 0x1020, None), ctypes.get_errno()); '
        f'open("{shown}/three", "w")\'',
    ]

    async def main() -> list[sandbox.Finished]:
        sandbox.choose("bubblewrap")
        return [await sandbox.run(a, Path("/"), timeout_s=20, readable=[shown]) for a in attempts]

    done = asyncio.run(main())
    assert all("Read-only file system" in f.output for f in done), [f.output for f in done]
    assert "remount -1 1" in done[2].output  # EPERM
    assert list(shown.iterdir()) == []


def test_as_root_a_command_cannot_write_the_hosts_kernel_settings(tmp_path: Path) -> None:
    """The command's uid 0 is the host's, and a sysctl asks for no capability: a model's `bash`
    wrote /proc/sys (`kernel.core_pattern` would run its program as root on the host). The probe
    writes back the value it read, so a failing test changes nothing."""
    if shutil.which("bwrap") is None or os.geteuid() != 0:
        pytest.skip("needs bubblewrap and root (another uid cannot write /proc/sys)")
    setting = "/proc/sys/fs/lease-break-time"
    probe = f"v=$(cat {setting}) && echo $v > {setting} && echo wrote; find /proc/sys -writable -type f | wc -l"

    async def main() -> list[sandbox.Finished]:
        sandbox.choose("bubblewrap")
        return [
            await sandbox.run(probe, tmp_path, timeout_s=20, writable=tmp_path, system_only=s) for s in (True, False)
        ]

    for done in asyncio.run(main()):
        assert "Read-only file system" in done.output and "wrote" not in done.output, done.output
        assert done.output.splitlines()[-1] == "0"  # no setting of the host's is writable


@pytest.mark.parametrize("how", [signal.SIGINT, signal.SIGKILL])
def test_ctrl_c_removes_the_cgroups_and_kill_9_leaves_them_to_the_sweep(
    server: FakeOpenAIServer, tmp_path: Path, cgroups: Path, how: signal.Signals
) -> None:
    """`convoeval run` stopped while a model's command runs: after Ctrl-C neither the command
    nor its cgroup is left; after kill -9 only the (empty) cgroup is, until a sweep."""
    mark = f"{300 + uuid.uuid4().int % 200}.{uuid.uuid4().int % 1000}"
    replies = [tool_calls(("bash", {"command": f"sleep {mark}"})), "done"]
    server.reset(reply=lambda body: replies.pop(0) if len(replies) > 1 else replies[0])
    write(
        tmp_path / "targets.yaml",
        "targets:\n  - name: bot\n    provider: openai\n    model: m\n    agent: {bash_timeout_s: 60}\n",
    )
    suite = write(
        tmp_path / "s.eval.yaml", "execution: {target: bot}\ntests:\n  - id: t\n    workspace: {}\n    input: go\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "convoeval", "run", str(suite), "--judge", "scripted", "--no-cache"],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    deadline = time.monotonic() + 60
    while not (sleeping(mark) and ours(cgroups, proc.pid)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert sleeping(mark) and ours(cgroups, proc.pid), "the tool command never started"
    os.kill(proc.pid, how)
    proc.communicate(timeout=60)
    gone = time.monotonic() + 5  # the kernel ends a PID namespace's processes a moment later
    while sleeping(mark) and time.monotonic() < gone:
        time.sleep(0.05)
    assert sleeping(mark) == 0
    left = ours(cgroups, proc.pid)
    if how == signal.SIGINT:
        assert left == []
    else:
        assert left and set(left) <= set(sandbox.sweep_stale_cgroups(cgroups))
        assert ours(cgroups, proc.pid) == []
