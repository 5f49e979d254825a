"""The workspace lent to an agent CLI's unprivileged user for one turn (convoeval runs as root).

Before the turn every file and folder of the workspace is given to the user (its owners
recorded); after it, when nothing of the turn runs any more, each goes back to its recorded
owner, and what the turn made to the workspace's owner, so hooks, `verify`, code-graders and a
kept workspace find it owned as before. Links are never followed (`lchown`): a link the agent
made to a host file changes nothing but the link. A file with other hard links (`git clone`
of a local repo links its objects) is not given: its other names may lie outside the
workspace; the agent may read it, not change it in place (removing it, or writing a new file
in its place, still works). The kernel clears the set-user-ID and set-group-ID bits of a file
whose owner changes, and `give_back` clears any left, so no file the agent wrote becomes a
set-user-ID program of root's.

An entry is told from one the turn put in its place by its inode; so that a file the agent
removes cannot give its inode number to the file it writes next (ext4 hands a freed number out
again at once), the entries owned by someone other than the workspace's owner, the only ones
whose owner the mix-up would change, are held open (`O_PATH`) until they are given back.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from ._agent_user import AgentUser

#: Other owners' entries held open at most (each a file descriptor); any more are told by inode alone.
HELD_AT_MOST = 256


@dataclass
class Lent:
    """A workspace lent to `user`: the owner of each entry before, by path (and inode: a file
    the turn put in another's place is the turn's)."""

    root: Path
    user: AgentUser
    owners: dict[str, tuple[int, int, int]] = field(default_factory=dict)
    held: list[int] = field(default_factory=list)  # descriptors keeping other owners' inodes taken

    def give_back(self) -> None:
        """Every entry back to its recorded owner; one the turn made to the workspace's owner.

        Raises:
            OSError: an entry could not be given back (the others were).
        """
        try:
            if str(self.root) in self.owners:
                self._give_all_back()
        finally:
            self.release()

    def release(self) -> None:
        """Close the descriptors that hold other owners' entries."""
        for fd in self.held:
            os.close(fd)
        self.held.clear()

    def _give_all_back(self) -> None:
        _, *default = self.owners[str(self.root)]
        failed: OSError | None = None
        for path in _entries(self.root):
            try:
                self._give_back(path, default)
            except FileNotFoundError:
                continue
            except OSError as exc:
                failed = failed or OSError(exc.errno, f"cannot give {path} back to its owner: {exc.strerror}")
        if failed is not None:
            raise failed

    def _give_back(self, path: str, default: list[int]) -> None:
        st = os.lstat(path)
        inode, *owner = self.owners.get(path, (-1, *default))
        shared = inode == st.st_ino and st.st_nlink > 1 and stat.S_ISREG(st.st_mode)  # never lent
        uid, gid = owner if inode == st.st_ino else default
        if (st.st_uid, st.st_gid) != (uid, gid):
            os.lchown(path, uid, gid)
        if stat.S_ISREG(st.st_mode) and st.st_mode & (stat.S_ISUID | stat.S_ISGID) and not shared:
            os.chmod(path, stat.S_IMODE(st.st_mode) & ~(stat.S_ISUID | stat.S_ISGID))


def lend(root: Path, user: AgentUser) -> Lent:
    """Give the workspace `root` to `user` for a turn (its owners recorded for `give_back`)."""
    lent = Lent(root, user)
    shared = set()
    try:
        for path in _entries(root):
            st = os.lstat(path)
            owner = lent.owners[path] = (st.st_ino, st.st_uid, st.st_gid)
            if stat.S_ISREG(st.st_mode) and st.st_nlink > 1:
                shared.add(path)
            if owner[1:] != lent.owners[str(root)][1:] and len(lent.held) < HELD_AT_MOST:
                lent.held.append(os.open(path, os.O_PATH | os.O_NOFOLLOW))
    except BaseException:
        lent.release()
        raise
    try:
        for path in lent.owners.keys() - shared:
            os.lchown(path, user.uid, user.gid)
    except BaseException:
        lent.give_back()
        raise
    return lent


#: The longest path the kernel takes (Linux's PATH_MAX, with its NUL).
PATH_MAX = 4096


def _entries(root: Path) -> list[str]:
    """`root` and every path under it, links included but not followed (no recursion: a turn
    may leave folders nested deeper than Python's stack), but those too long to name (deeper
    than `PATH_MAX`: the turn's, left to the user, removed with the workspace)."""
    found, folders = [str(root)], [str(root)]
    while folders:
        try:
            with os.scandir(folders.pop()) as entries:
                for entry in entries:
                    if len(os.fsencode(entry.path)) >= PATH_MAX:
                        continue
                    found.append(entry.path)
                    if entry.is_dir(follow_symlinks=False):
                        folders.append(entry.path)
        except (FileNotFoundError, NotADirectoryError):
            continue
    return found
