"""The unprivileged user an agent CLI's sandbox starts as when convoeval runs as root: which user,
the workspace lent to it and given back (real files, real `lchown`), and the paths under a
folder it cannot pass through opened up for it (a real bubblewrap started as that user).

The lending and start tests need root (CI runs as root); elsewhere the CLI runs as convoeval's
own user and none of this applies.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from convoeval import _sandbox as sandbox
from convoeval._sandbox import DEFAULT_SETTINGS, SandboxError, agent_bwrap_argv, in_agent_child, lend
from convoeval._sandbox._agent_user import AgentUser, can_pass, closed_folders, parse_user
from convoeval.targets._base import TargetConfig
from convoeval.targets.agents._boxed import AgentHomes, launch
from convoeval.targets.agents._codex_rollout import find_rollout
from convoeval.targets.agents._settings import AgentCliSettings

ROOT = hasattr(os, "geteuid") and os.geteuid() == 0
root_only = pytest.mark.skipif(not ROOT, reason="only root lends the workspace to another user")
NOBODY = parse_user("nobody")


def test_the_agent_user_is_nobody_unless_named(monkeypatch: pytest.MonkeyPatch) -> None:
    assert NOBODY.uid != 0 and NOBODY.gid != 0 and NOBODY.name == "nobody"
    assert parse_user("4321") == AgentUser(4321, 4321, "4321")  # a uid without an entry: its own group
    assert parse_user("4321:777") == AgentUser(4321, 777, "4321")
    for bad, words in [("0", "root"), ("4321:0", "root"), ("root", "root"), ("no-such-user-x", "no such user")]:
        with pytest.raises(SandboxError, match=words):
            parse_user(bad)
    monkeypatch.setenv(sandbox.AGENT_USER_ENV, "4321:777")
    assert sandbox.agent_user() == (AgentUser(4321, 777, "4321") if ROOT else None)


def test_not_root_nothing_changes(tmp_path: Path) -> None:
    """Without a user (convoeval is not root) the sandbox is the one it always was: nothing to
    open up, bubblewrap started as convoeval's user."""
    box = agent_bwrap_argv(["true"], tmp_path, tmp_path, [], None)
    assert box.user is None and box.reach.closed == [] and box.reach.needed == []


def test_folders_the_user_cannot_pass_are_found_highest_first(tmp_path: Path) -> None:
    user = AgentUser(4321, 4321, "x")
    locked = tmp_path / "locked"
    (locked / "repo" / "tools").mkdir(parents=True)
    locked.chmod(0o700)
    opened = tmp_path / "open"
    opened.mkdir()
    assert not can_pass(locked, user) and can_pass(opened, user)
    found = closed_folders([str(locked / "repo" / "tools"), str(opened), str(locked / "repo")], user)
    # pytest's own folder (0700, root's) may be the highest closed one; never one under another
    assert found and all(not Path(a).is_relative_to(b) for a in found for b in found if a != b)
    assert any(locked.is_relative_to(f) for f in found)
    if ROOT:  # the owner's bit counts for its owner
        os.chown(locked, 4321, 4321)
        assert can_pass(locked, user)


def owners_of(tree: Path) -> dict[str, str]:
    """`uid:gid` of `tree` ("") and of every path under it, links not followed (by find(1))."""
    listed = subprocess.run(["find", str(tree), "-printf", "%U:%G %P\\0"], capture_output=True, text=True, check=True)
    return {path: owner for owner, _, path in (e.partition(" ") for e in listed.stdout.split("\0") if e)}


@root_only
def test_a_file_put_in_the_place_of_another_owners_is_the_turns(tmp_path: Path) -> None:
    """The agent removes a file of another owner's and writes one of the same name: ext4 gives
    the new file the freed inode number at once, yet it is the turn's (the workspace owner's)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    for round_ in range(5):
        (ws / "theirs.txt").write_text("t")
        os.chown(ws / "theirs.txt", 4321, 4322)
        lent = lend(ws, NOBODY)
        (ws / "theirs.txt").unlink()
        (ws / "theirs.txt").write_text("mine")
        os.chown(ws / "theirs.txt", NOBODY.uid, NOBODY.gid)
        lent.give_back()
        assert owners_of(ws)["theirs.txt"] == "0:0", f"round {round_}"
        assert not lent.held


def _nest_past_path_max(top: Path) -> None:
    """Folders of the turn's nested under `top` past what a path can name (4,096 bytes), made
    as a turn makes them: each from inside the one before (a test process in its own folder)."""
    script = "import os\nfor _ in range(2500): os.mkdir('a'); os.chdir('a')\nopen('deep.txt', 'w').write('x')"
    top.mkdir()
    subprocess.run(["python3", "-c", script], cwd=top, check=True)
    subprocess.run(["chown", "-R", f"{NOBODY.uid}:{NOBODY.gid}", str(top)], check=True)


@root_only
def test_lending_gives_every_entry_to_the_user_and_back(tmp_path: Path) -> None:
    outside = tmp_path / "host.txt"
    outside.write_text("host\n")
    ws = tmp_path / "ws"
    (ws / "sub").mkdir(parents=True)
    (ws / "sub" / "a.txt").write_text("a")
    (ws / "theirs.txt").write_text("t")
    os.chown(ws / "theirs.txt", 4321, 4322)  # files of another owner (a template's)
    (ws / "kept.txt").write_text("k")
    os.chown(ws / "kept.txt", 4321, 4322)
    (ws / "link").symlink_to(outside)  # a link to a host file: never followed
    os.link(outside, ws / "hard")  # a hard link (a local `git clone`'s objects): another name of a host file
    lent = lend(ws, NOBODY)
    given = owners_of(ws)
    assert given.pop("hard") == "0:0" and set(given.values()) == {f"{NOBODY.uid}:{NOBODY.gid}"}
    assert outside.stat().st_uid == 0  # through neither link
    # What the turn made: a file, a set-user-ID program, a folder, a link to a host file.
    made = [ws / "new.txt", ws / "suid", ws / "sub" / "deeper"]
    made[0].write_text("n")
    made[1].write_text("#!/bin/sh\n")
    made[2].mkdir()
    (ws / "sub" / "link2").symlink_to(outside)
    for path in [*made, ws / "sub" / "link2"]:
        os.lchown(path, NOBODY.uid, NOBODY.gid)
    made[1].chmod(0o6755)
    (ws / "sub" / "a.txt").unlink()  # and one it removed
    (ws / "theirs.txt").unlink()  # and one of another owner's it replaced: the new one is the turn's
    (ws / "theirs.txt").write_text("mine")
    os.chown(ws / "theirs.txt", NOBODY.uid, NOBODY.gid)
    deep = ws
    try:
        for _ in range(1200):  # folders nested deeper than Python's recursion limit
            deep = deep / "d"
            os.mkdir(deep)
            os.lchown(deep, NOBODY.uid, NOBODY.gid)
        _nest_past_path_max(ws / "far")
        lent.give_back()  # raised "File name too long" on the folders nested past a path's length
        owners = {p: o for p, o in owners_of(ws).items() if len(os.fsencode(ws / p)) < 4096}  # the rest: the turn's
        assert owners.pop("kept.txt") == "4321:4322"
        assert set(owners.values()) == {"0:0"} and len(owners) > 1200 and deep.stat().st_uid == 0
    finally:  # pytest's own clean-up of old temp folders recurses (shutil.rmtree)
        subprocess.run(["rm", "-rf", str(ws / "far"), str(ws / "d")], check=True)
    assert stat.S_IMODE(made[1].stat().st_mode) == 0o755  # no set-user-ID program of root's
    assert (outside.stat().st_uid, outside.read_text()) == (0, "host\n")


@root_only
def test_a_cli_under_a_folder_the_user_cannot_pass_still_starts(tmp_path: Path) -> None:
    """A program under a 0700 folder of root's (a repo under /root): bubblewrap as `nobody`
    could not bind it; opened up in the child's mount namespace, it runs, and the rest of the
    folder stays out of sight."""
    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap is missing")
    locked = tmp_path / "locked"
    tools = locked / "repo" / "tools"
    tools.mkdir(parents=True)
    (locked / "repo" / "secret.txt").write_text("secret")
    program = tools / "hello"
    program.write_text('#!/bin/sh\necho hello from $(id -u); cat "$(dirname "$0")/../secret.txt"; touch made\n')
    program.chmod(0o755)
    locked.chmod(0o700)
    ws, home = tmp_path / "ws", tmp_path / "home"
    ws.mkdir()
    home.mkdir()
    box = agent_bwrap_argv([str(program)], ws, home, [tools], NOBODY)
    assert box.reach.closed and str(tools) in box.reach.needed
    lent = lend(ws, NOBODY)
    try:
        done = subprocess.run(
            box.argv,
            cwd=ws,
            capture_output=True,
            text=True,
            timeout=30,
            preexec_fn=lambda: in_agent_child(DEFAULT_SETTINGS, None, box),
        )
    finally:
        lent.give_back()
    assert done.returncode == 0, done.stderr
    assert f"hello from {NOBODY.uid}" in done.stdout
    assert "No such file" in done.stderr and "secret" not in done.stdout  # beside the program: out of sight
    assert (ws / "made").stat().st_uid == 0  # made as nobody, given back
    # Nothing of the child's mounts reached the host.
    assert str(tools) not in Path("/proc/self/mountinfo").read_text()


def test_links_the_cli_leaves_in_its_home_never_make_convoeval_read_a_host_file(tmp_path: Path) -> None:
    """HOME is written by the CLI (as `nobody` under root): the session files kept and the Codex
    rollout read from it are plain files inside it, never a link to (or a pipe posing as) one."""
    outside = tmp_path / "host"
    (outside / "project").mkdir(parents=True)
    (outside / "project" / "root-session.jsonl").write_text('{"secret": "host"}\n')
    (outside / "rollout-x-T1.jsonl").write_text('{"payload": {}}\n')
    homes = AgentHomes(tmp_path / "kept")
    home = homes.home(str(tmp_path / "ws"), None)
    projects = home / ".claude" / "projects"
    (projects / "p").mkdir(parents=True)
    (projects / "p" / "mine.jsonl").write_text("{}\n")
    (projects / "p" / "link.jsonl").symlink_to(outside / "project" / "root-session.jsonl")
    (projects / "q").symlink_to(outside / "project")  # a link to a folder of the host's
    homes.settle(home, "s1")
    homes.end("s1")
    assert sorted(p.name for p in (tmp_path / "kept").iterdir()) == ["mine.jsonl"]
    sessions = tmp_path / "h" / ".codex" / "sessions" / "2026" / "11" / "26"
    sessions.mkdir(parents=True)
    env = {"HOME": str(tmp_path / "h")}
    (sessions / "rollout-a-T1.jsonl").symlink_to(outside / "rollout-x-T1.jsonl")
    os.mkfifo(sessions / "rollout-b-T2.jsonl")  # opening it would wait forever
    (sessions / "rollout-c-T3.jsonl").write_text("{}\n")
    assert find_rollout(env, "T1") is None and find_rollout(env, "T2") is None
    assert find_rollout(env, "T3") == sessions / "rollout-c-T3.jsonl"


@root_only
def test_an_entry_that_cannot_be_given_back_is_an_error_naming_it_and_the_rest_go_back(tmp_path: Path) -> None:
    if shutil.which("chattr") is None:
        pytest.skip("chattr is missing (e2fsprogs)")
    ws = tmp_path / "ws"
    ws.mkdir()
    for name in ("a", "stuck", "z"):
        (ws / name).write_text(name)
    lent = lend(ws, NOBODY)
    if subprocess.run(["chattr", "+i", str(ws / "stuck")], capture_output=True).returncode != 0:
        pytest.skip("this file system has no immutable files")
    try:
        with pytest.raises(OSError, match=f"cannot give {ws / 'stuck'} back to its owner"):
            lent.give_back()
    finally:
        subprocess.run(["chattr", "-i", str(ws / "stuck")], check=True)
    assert owners_of(ws) == {"": "0:0", "a": "0:0", "stuck": f"{NOBODY.uid}:{NOBODY.gid}", "z": "0:0"}


@root_only
def test_as_root_a_turn_starts_as_the_agent_user_by_the_clis_real_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap is missing")
    real = tmp_path / "install" / "cli.sh"
    real.parent.mkdir()
    real.write_text("#!/bin/sh\n")
    real.chmod(0o755)
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "agent-cli").symlink_to(real)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:/usr/bin:/bin")
    monkeypatch.setenv("USER", "root")
    homes = AgentHomes(None)
    config = TargetConfig(name="c", provider="claude-code")
    start = launch(config, AgentCliSettings(), homes, ["agent-cli", "-p"], str(tmp_path), None, ((), ()))
    try:
        assert start.user == NOBODY and start.env["USER"] == start.env["LOGNAME"] == "nobody"
        assert start.argv[-2:] == [str(real), "-p"]  # not the link in a folder nobody may not pass
        assert start.home is not None and start.home.stat().st_uid == NOBODY.uid
    finally:
        if start.pids is not None:
            start.pids.remove_now(1)
        homes.settle(start.home, None)  # type: ignore[arg-type]
