"""Who an agent CLI's sandbox runs as when convoeval runs as root.

bubblewrap started by root keeps root's capabilities inside, and agent CLIs cannot drop them
(`--cap-drop ALL`): Codex's own sandbox, a bubblewrap inside convoeval's, needs them to map its
uid as root. So as root the CLI's bubblewrap starts as an unprivileged user instead (supplementary
groups dropped, then the group, then the user, in the child before exec): `nobody` (65534), or
the user `CONVOEVAL_AGENT_USER` names (a name, or `uid[:gid]`; never root). Nothing inside has
any power on the host then: `/` cannot be remounted, host files and the pids cgroups are not
writable, and nested sandboxes (Codex's) start unprivileged. Not root: nothing changes, the
CLI runs as convoeval's own user.
"""

from __future__ import annotations

import functools
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from ._choice import SandboxError

#: The variable that names the user agent CLIs run as when convoeval is root.
AGENT_USER_ENV = "CONVOEVAL_AGENT_USER"
#: `nobody`'s uid and gid where the password database has no `nobody`.
NOBODY = 65534


@dataclass(frozen=True)
class AgentUser:
    """An unprivileged user: its uid, its (only) group, and a name for messages and `USER`."""

    uid: int
    gid: int
    name: str


def agent_user() -> AgentUser | None:
    """The user agent CLIs run as: None when convoeval is not root (they run as its user).

    Raises:
        SandboxError: `CONVOEVAL_AGENT_USER` names no user, or root.
    """
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return None
    return parse_user(os.environ.get(AGENT_USER_ENV) or "nobody")


@functools.cache
def parse_user(value: str) -> AgentUser:
    """A user name, or `uid[:gid]` (the gid defaults to the user's group, else the uid)."""
    import pwd

    uid_text, _, gid_text = value.strip().partition(":")
    try:
        if uid_text.isdigit():
            uid = int(uid_text)
            try:
                entry = pwd.getpwuid(uid)
                name, gid = entry.pw_name, entry.pw_gid
            except KeyError:
                name, gid = uid_text, uid
        else:
            entry = pwd.getpwnam(uid_text)
            name, uid, gid = entry.pw_name, entry.pw_uid, entry.pw_gid
    except KeyError:
        if uid_text != "nobody":
            raise SandboxError(f"{AGENT_USER_ENV}={value!r}: no such user (give a user name or uid[:gid])") from None
        name, uid, gid = "nobody", NOBODY, NOBODY
    if gid_text:
        if not gid_text.isdigit():
            raise SandboxError(f"{AGENT_USER_ENV}={value!r}: the group must be a number (uid:gid)")
        gid = int(gid_text)
    if uid == 0 or gid == 0:
        raise SandboxError(f"{AGENT_USER_ENV}={value!r}: agent CLIs must not run as root or in root's group")
    return AgentUser(uid, gid, name)


def become(user: AgentUser) -> None:
    """In the child, before exec: drop root's supplementary groups, then take the user's group
    and uid (real, effective and saved: no way back)."""
    os.setgroups([])
    os.setresgid(user.gid, user.gid, user.gid)
    os.setresuid(user.uid, user.uid, user.uid)


#: What tells whether bubblewrap can make a sandbox as the agent's user (user namespaces).
_TRY = ("--unshare-all", "--die-with-parent", "--ro-bind", "/", "/", "--proc", "/proc", "--", "true")


@functools.cache
def start_problem(bwrap: str, user: AgentUser) -> str | None:
    """Why bubblewrap cannot start a sandbox as `user` here (no unprivileged user namespaces,
    say), or None; tried once per process."""
    try:
        done = subprocess.run(
            [bwrap, *_TRY],
            cwd="/",
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=20,
            preexec_fn=lambda: become(user),
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return str(exc) or type(exc).__name__
    return None if done.returncode == 0 else (done.stderr.strip()[-200:] or f"exit code {done.returncode}")


def can_pass(folder: Path, user: AgentUser) -> bool:
    """Whether `user` (with no group but its own) may pass through `folder`, by its mode bits."""
    try:
        st = os.stat(folder)
    except OSError:
        return True  # missing: nothing to pass, bubblewrap's `-try` binds skip it
    bit = 0o100 if st.st_uid == user.uid else 0o010 if st.st_gid == user.gid else 0o001
    return bool(st.st_mode & bit)


def closed_folders(paths: list[str], user: AgentUser) -> list[str]:
    """For the host paths the CLI's sandbox binds: the highest folder above each that `user`
    cannot pass through (a repo or a CLI under `/root`, mode 0700), parents first."""
    closed: list[str] = []
    for path in paths:
        for folder in reversed(Path(path).parents):
            if any(folder.is_relative_to(c) for c in closed):
                break
            if not can_pass(folder, user):
                closed.append(str(folder))
                break
    return sorted(closed, key=lambda f: len(Path(f).parts))
