"""The REAL `claude` and `codex` CLIs in the workspace's sandbox when convoeval runs as root: the
commands their shell tool runs must not reach the host. The model (a loopback fake server) asks
the CLI to remount `/` and the pids cgroups read-write, to create a host file outside the
workspace and to write `max` into the CLI's own pids cgroup; none of it happens, because the
CLI's sandbox runs as an unprivileged user (`CONVOEVAL_AGENT_USER`, default `nobody`).

Root only (CI runs as root); skipped elsewhere, where the sandbox never had root's powers.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from convoeval._sandbox._cgroup import PREFIX, _place

from . import test_agent_clis_real as real
from .agent_servers import Body, FakeAnthropic, FakeModelServer, FakeResponses, Rule
from .conftest import REPO, write
from .test_agent_clis_real import SYSTEM, claude_target, codex_target, run_suite

clis = real.clis
agent_home = real.agent_home

pytestmark = pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() != 0, reason="only root's sandbox had root's powers"
)

SUITE = """\
tests:
  - id: escape
    mode: conversation
    workspace: {keep: always}
    input:
      - {role: system, content: "%(system)s"}
    turns:
      - input: Break out please
"""


@pytest.fixture
def bwrap() -> None:
    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap is missing: agent CLIs run in the workspace's sandbox with `bwrap` (apt bubblewrap)")


@pytest.fixture
def host_dir() -> Iterator[Path]:
    """A host folder outside the workspace, the temp folders and the homes (all hidden in the
    sandbox), so a command that could write host files would write here."""
    parent = Path("/var/tmp") if Path("/var/tmp").is_dir() and not Path("/var/tmp").is_symlink() else REPO
    folder = parent / f"convoeval-agentroot-{uuid.uuid4().hex[:8]}"
    folder.mkdir(mode=0o777)
    folder.chmod(0o777)  # writable even by the unprivileged user: only a read-only mount keeps it out
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def cgroup_mount(folder: Path) -> str:
    """The mount point that holds cgroup `folder` (the longest one above it)."""
    points = [line.split(" - ")[0].split()[4] for line in Path("/proc/self/mountinfo").read_text().splitlines()]
    return max((p for p in points if folder.is_relative_to(p)), key=len)


def escape(host_file: Path) -> str:
    """The shell command the model asks for: remount the system and the pids cgroups writable,
    write a host file, lift the CLI's own process limit, and print what came of each."""
    base, _ = _place()
    steps = [
        "echo uid=$(id -u)",
        "mount -o remount,rw,bind / 2>&1; echo remount=$?",
        f"touch {host_file} 2>&1; echo touch=$?",
        # root of a user namespace of its own: the mounts it inherits stay read-only (locked)
        f"unshare -rm sh -c 'mount -o remount,rw,bind / && touch {host_file}' 2>&1; echo nstouch=$?",
    ]
    if base is not None:
        mine = f"{base}/{PREFIX}{os.getpid()}.*"
        steps += [
            f"mount -o remount,rw,bind {cgroup_mount(base)} 2>&1; echo cgremount=$?",
            f"for f in {mine}/pids.max; do echo max > $f; echo write=$?; echo limit=$(cat $f); done",
            f"unshare -rm sh -c 'mount -o remount,rw,bind {cgroup_mount(base)} && echo max > {mine}/pids.max' 2>&1;"
            " echo nswrite=$?",
        ]
    return "; ".join(steps)


class Watching:
    """Reads the CLI's pids.max on the host when the tool's output reaches the model server
    (the CLI is still running then, its cgroup in place)."""

    limits: list[str]

    def watch(self, server: FakeModelServer, body: Body) -> None:
        base, _ = _place()
        if base is not None and server.tool_output(body) is not None:
            self.limits = [p.read_text().strip() for p in base.glob(f"{PREFIX}{os.getpid()}.*/pids.max")]


class WatchingAnthropic(Watching, FakeAnthropic):
    def answer(self, body: Body):  # type: ignore[no-untyped-def]
        self.watch(self, body)
        return super().answer(body)


class WatchingResponses(Watching, FakeResponses):
    def answer(self, body: Body):  # type: ignore[no-untyped-def]
        self.watch(self, body)
        return super().answer(body)


def said(output: str, key: str) -> str | None:
    """The value the command printed as `key=value` on a line of its own."""
    found = re.search(rf"^{key}=(\S*)$", output, re.M)
    return found.group(1) if found else None


def check_contained(server: Watching, output: str, host_file: Path) -> None:
    assert said(output, "uid") not in (None, "0"), output  # the command ran, not as root
    assert not host_file.exists(), output
    for step in ("remount", "touch", "nstouch"):
        assert said(output, step) not in (None, "0"), output
    base, _ = _place()
    if base is not None:
        for step in ("cgremount", "write", "nswrite"):
            assert said(output, step) not in (None, "0"), output
        assert said(output, "limit") not in (None, "max"), output
        assert server.limits and "max" not in server.limits, server.limits


def test_claude_code_commands_cannot_remount_write_host_files_or_lift_the_limit(
    bwrap: None,
    clis: dict[str, Path],
    agent_home: Path,
    host_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    host_file = host_dir / "escaped"
    server = WatchingAnthropic([Rule("Break out", "Done: {output}", ("Bash", {"command": escape(host_file)}))])
    server.limits = []
    with server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        result, _ = run_suite(tmp_path, SUITE % {"system": SYSTEM}, claude_target(clis), sandbox="bubblewrap")
    calls = [c for c in server.model_calls if not server.is_side_request(c.body)]
    output = next((server.tool_output(c.body) for c in calls if server.tool_output(c.body) is not None), None)
    assert output is not None, json.dumps([c.body for c in calls])[:3000]
    check_contained(server, output, host_file)
    assert result.execution_status != "execution_error", result.error
    shutil.rmtree(result.trials[0].workspace or "", ignore_errors=True)


def test_codex_commands_cannot_remount_write_host_files_or_lift_the_limit(
    bwrap: None, clis: dict[str, Path], agent_home: Path, host_dir: Path, tmp_path: Path
) -> None:
    """Codex with its own sandbox off (`danger-full-access`): convoeval's is the one that holds."""
    host_file = host_dir / "escaped"
    server = WatchingResponses([Rule("Break out", "Done: {output}", ("exec_command", {"cmd": escape(host_file)}))])
    server.limits = []
    with server:
        target = codex_target(clis, server, tmp_path)
        target["args"] = [a if a != "workspace-write" else "danger-full-access" for a in target["args"]]
        result, _ = run_suite(tmp_path, SUITE % {"system": SYSTEM}, target, sandbox="bubblewrap")
    outputs = [server.tool_output(c.body) for c in server.model_calls]
    output = next((o for o in outputs if o is not None), None)
    assert output is not None, result.error
    check_contained(server, output, host_file)
    assert result.execution_status != "execution_error", result.error
    shutil.rmtree(result.trials[0].workspace or "", ignore_errors=True)


@pytest.fixture
def locked_clis(clis: dict[str, Path], tmp_path: Path, which: str) -> Iterator[dict[str, Path]]:
    """The installed CLIs again (hard links: no copy), in a folder of mode 0700 of root's, as a
    repo cloned under /root is: `nobody` cannot pass through it. Claude Code's in the repo (a
    folder the sandbox shows), Codex's in the temp folder (one it hides), where the file system
    allows the links."""
    modules = clis["claude"].parent.parent.resolve()  # .../node_modules
    device = modules.stat().st_dev
    places = (REPO, tmp_path) if which == "claude" else (tmp_path, REPO)
    place = next((p for p in places if p.stat().st_dev == device), modules.parent.parent)
    locked = place / f".locked-{uuid.uuid4().hex[:8]}"
    locked.mkdir(mode=0o700)

    def link(src: str, dst: str) -> None:
        try:
            os.link(src, dst)
        except OSError:  # another file system
            shutil.copy2(src, dst)

    try:
        shutil.copytree(modules, locked / "repo" / "node_modules", symlinks=True, copy_function=link)
        yield {name: locked / "repo" / "node_modules" / ".bin" / name for name in clis}
    finally:
        shutil.rmtree(locked, ignore_errors=True)


SUITE_WRITE = """\
tests:
  - id: locked
    mode: conversation
    workspace: {keep: always}
    input:
      - {role: system, content: "%(system)s"}
    turns:
      - input: Write the note
        assertions:
          - {type: contains, value: NOTE-7}
"""


@pytest.mark.parametrize("which", ["claude", "codex"])
def test_a_cli_installed_under_a_folder_nobody_cannot_pass_still_works(
    bwrap: None,
    locked_clis: dict[str, Path],
    agent_home: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    which: str,
) -> None:
    assert (
        locked_clis[which].exists() and os.stat(locked_clis[which].parent.parent.parent.parent).st_mode & 0o777 == 0o700
    )
    command = "echo NOTE-7 > note.txt && cat note.txt"
    if which == "claude":
        server: FakeModelServer = FakeAnthropic(
            [Rule("Write the note", "Wrote {output}.", ("Bash", {"command": command}))]
        )
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        target = claude_target(locked_clis)
    else:
        server = FakeResponses([Rule("Write the note", "Wrote {output}.", ("exec_command", {"cmd": command}))])
        target = codex_target(locked_clis, server, tmp_path)  # Codex's own sandbox inside, as nobody
    with server:
        result, _ = run_suite(tmp_path, SUITE_WRITE % {"system": SYSTEM}, target, sandbox="bubblewrap")
    assert result.verdict == "pass", result.error or result.model_dump_json(indent=1)[:3000]
    kept = Path(result.trials[0].workspace or "")
    assert (kept / "note.txt").read_text() == "NOTE-7\n" and (kept / "note.txt").stat().st_uid == 0
    shutil.rmtree(kept)


#: Runs a command as root of a user namespace that maps uids 0-65535 to themselves (so `nobody`
#: exists in it) and where no further user namespace can be made: a host without unprivileged
#: user namespaces, as far as bubblewrap started as `nobody` can tell.
NO_USERNS = """\
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
ready, go = os.pipe(), os.pipe()
pid = os.fork()
if pid == 0:
    if libc.unshare(0x10000000) != 0:
        os._exit(90)
    os.write(ready[1], b"1")
    os.read(go[0], 1)
    open("/proc/sys/user/max_user_namespaces", "w").write("0")
    os.execvp(sys.argv[1], sys.argv[1:])
os.read(ready[0], 1)
for kind in ("uid_map", "gid_map"):
    open(f"/proc/{pid}/{kind}", "w").write("0 0 65536")
os.write(go[1], b"1")
sys.exit(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
"""


def test_without_unprivileged_user_namespaces_the_turn_is_an_error_that_says_what_to_do(
    bwrap: None, clis: dict[str, Path], agent_home: Path, tmp_path: Path
) -> None:
    """Never a turn with root's powers instead: the CLI does not start at all."""
    with FakeAnthropic(real.RULES) as server:
        write(tmp_path / "targets.yaml", json.dumps({"targets": [claude_target(clis)]}))
        suite = write(tmp_path / "s.eval.yaml", SUITE % {"system": SYSTEM})
        (tmp_path / "work").mkdir()
        out = tmp_path / "r.jsonl"
        run = [sys.executable, "-m", "convoeval", "run", str(suite), "--target", "claude", "--judge", "scripted"]
        run += ["--no-cache", "-o", str(out)]
        env = {**os.environ, "ANTHROPIC_BASE_URL": server.url, "CONVOEVAL_SANDBOX": "bubblewrap"}
        done = subprocess.run(
            [sys.executable, "-c", NO_USERNS, *run], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
        )
        assert out.exists(), done.stderr[-3000:]
        result = json.loads(out.read_text().splitlines()[0])
    assert result["execution_status"] == "execution_error", result
    error = result["error"]
    assert "unprivileged user nobody" in error and "cannot start as that user here" in error, error
    assert "user namespaces" in error and "--sandbox none" in error, error
    assert server.requests == []  # the CLI never started
    shutil.rmtree(result["trials"][0]["workspace"])  # kept (`keep: always`), empty


SUITE_VERIFY = """\
tests:
  - id: report
    mode: conversation
    workspace:
      keep: always
      hooks:
        after_each: {command: "cat result.txt out/part > hook.txt"}
    verify: {command: "grep -q DONE result.txt", timeout_s: 30}
    input:
      - {role: system, content: "%(system)s"}
    turns:
      - input: Start the report
      - input: Finish the report
      - input: Never sent
"""


def test_verify_and_hooks_find_the_turns_files_after_every_turn(
    bwrap: None, clis: dict[str, Path], agent_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The CLI writes private files (umask 077) as `nobody`; `verify` after each turn and the
    `after_each` hook run as root without capabilities, so they read them only because the
    workspace was given back to its owner after the turn."""
    rules = [
        Rule(
            "Start the report",
            "Started.",
            ("Bash", {"command": "umask 077; echo WIP > result.txt; mkdir out; echo part > out/part"}),
        ),
        Rule("Finish the report", "Finished.", ("Bash", {"command": "umask 077; echo DONE > result.txt; id -u"})),
    ]
    with FakeAnthropic(rules) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        result, _ = run_suite(tmp_path, SUITE_VERIFY % {"system": SYSTEM}, claude_target(clis), sandbox="bubblewrap")
    assert result.verdict == "pass", result.error or result.model_dump_json(indent=1)[:3000]
    verify = next(s for s in result.scores if s.name == "verify")
    assert verify.note == "verified at turn 2", verify
    assert [a.passed for a in verify.assertions] == [False, True], verify.assertions
    assert "Permission denied" not in json.dumps([a.evidence for a in verify.assertions])
    kept = Path(result.trials[0].workspace or "")
    assert (kept / "hook.txt").read_text() == "DONE\npart\n"
    owners = {(p.lstat().st_uid, stat.S_IMODE(p.lstat().st_mode)) for p in kept.rglob("*")}
    assert owners == {(0, 0o600), (0, 0o700), (0, 0o644)}, owners  # the turn's modes, root's files
    shutil.rmtree(kept)


def test_a_turn_that_times_out_still_gives_the_workspace_back(
    bwrap: None, clis: dict[str, Path], agent_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    command = "mkdir -p out && touch out/made && sleep 60"
    with FakeAnthropic([Rule("Write the note", "never", ("Bash", {"command": command}))]) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        suite = SUITE_WRITE % {"system": SYSTEM}
        result, _ = run_suite(tmp_path, suite, claude_target(clis, timeout_s=5), sandbox="bubblewrap")
    assert result.execution_status == "execution_error" and "timed out after 5 s" in (result.error or "")
    kept = Path(result.trials[0].workspace or "")
    assert (kept / "out" / "made").exists()  # the command ran, as nobody
    owners = {(p.lstat().st_uid, p.lstat().st_gid) for p in [kept, *kept.rglob("*")]}
    assert owners == {(0, 0)}, owners
    shutil.rmtree(kept)
