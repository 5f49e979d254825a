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


@root_only
def test_lending_gives_every_entry_to_the_user_and_back(tmp_path: Path) -> None:
    outside = tmp_path / "host.txt"
    outside.write_text("host\n")
    ws = tmp_path / "ws"
    (ws / "sub").mkdir(parents=True)
    (ws / "sub" / "a.txt").write_text("a")
    (ws / "theirs.txt").write_text("t")
    os.chown(ws / "theirs.txt", 4321, 4322)  # a file of another owner (a template's)
    (ws / "link").symlink_to(outside)  # a link to a host file: never followed
    os.link(outside, ws / "hard")  # a hard link (a local `git clone`'s objects): another name of a host file
    lent = lend(ws, NOBODY)
    given = {(p.lstat().st_uid, p.lstat().st_gid) for p in [ws, *ws.rglob("*")] if p.name != "hard"}
    assert given == {(NOBODY.uid, NOBODY.gid)}
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
    lent.give_back()
    owners = {str(p.relative_to(ws)): (p.lstat().st_uid, p.lstat().st_gid) for p in ws.rglob("*")}
    assert owners.pop("theirs.txt") == (4321, 4322)
    assert set(owners.values()) == {(0, 0)} and (ws.stat().st_uid, ws.stat().st_gid) == (0, 0)
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
