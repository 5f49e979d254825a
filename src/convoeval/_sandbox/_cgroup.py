"""The `processes` limit where RLIMIT_NPROC does not hold: a pids cgroup for each command.

The kernel does not apply RLIMIT_NPROC to root, nor to a process with CAP_SYS_RESOURCE or
CAP_SYS_ADMIN (`copy_process` in kernel/fork.c), so there a command gets a cgroup of its own
with `pids.max` = the limit: made before it starts (`PidsGroup.make`), joined by the child
before it execs (`PidsGroup.join`: a cgroup under it, `LEAF`, so bwrap and all it starts are
inside, the limit out of their reach, convoeval never), and
removed when the command has ended (`PidsGroup.remove`: what is left in it is killed, `rmdir`
retried while the tasks drain). Its name, `convoeval-<pid>.<start>-<n>`, tells a later run
whether its owner still runs: the cgroups of a run killed with -9 are swept by the next one.

Where: cgroup v1, in the `pids` hierarchy under convoeval's own pids cgroup. cgroup v2, under
convoeval's own cgroup when `pids` is enabled for its children, else beside it (under its
parent): a v2 cgroup that holds processes cannot enable controllers for its children ("no
internal processes"), and convoeval's own cgroup holds convoeval. Nowhere (no pids controller,
read-only, not root, a container's cgroup namespace): the limit is not enforced and
`process_limit()` says why.
"""

from __future__ import annotations

import asyncio
import atexit
import functools
import itertools
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

from ._choice import SandboxError
from ._owner import left_by_gone_owner, owner_tag

#: How a command's cgroup is named: `convoeval-<pid>.<start>-<n>`.
PREFIX = "convoeval-"
#: Capabilities that exempt a process from RLIMIT_NPROC (linux/capability.h).
CAP_SYS_ADMIN, CAP_SYS_RESOURCE = 21, 24
#: The cgroup inside a command's cgroup that the command joins. `pids.max` is set on the one
#: above, out of the command's sight: bubblewrap gives it a cgroup namespace rooted where it
#: starts, so a command that mounts the pids hierarchy there (possible in a user namespace of
#: its own) can raise only the leaf's `pids.max`, never the limit that counts.
LEAF = "command"
#: Longest wait for a killed command's tasks to leave its cgroup before giving up on `rmdir`.
DRAIN_S = 3.0
#: Tasks an agent CLI may have besides `processes`: its own threads count in a pids cgroup
#: (Node runs about ten, a Rust CLI one per core).
AGENT_TASKS = 256


@dataclass(frozen=True)
class ProcessLimit:
    """How `processes` is enforced for commands here: `enforced`, and how (or why not)."""

    enforced: bool
    how: str


def rlimit_holds() -> bool:
    """Whether the kernel applies RLIMIT_NPROC to the commands convoeval starts: not for the
    real uid 0, nor with CAP_SYS_RESOURCE or CAP_SYS_ADMIN."""
    if os.getuid() == 0:
        return False
    try:
        status = Path("/proc/self/status").read_text()
    except OSError:
        return True
    caps = next((int(line.split()[1], 16) for line in status.splitlines() if line.startswith("CapEff:")), 0)
    return not caps & (1 << CAP_SYS_ADMIN | 1 << CAP_SYS_RESOURCE)


def process_limit() -> ProcessLimit:
    """How `processes` holds for the commands of this process (docker has its own flag)."""
    if rlimit_holds():
        return ProcessLimit(True, "RLIMIT_NPROC")
    base, why = _place()
    return ProcessLimit(base is not None, why)


def find_base(mountinfo: str, cgroups: str) -> Path | str:
    """The folder commands' cgroups go in, from the text of /proc/self/mountinfo and
    /proc/self/cgroup; or why there is none."""
    mounts = [_mount(line) for line in mountinfo.splitlines() if " - " in line]
    for root, point, options, fstype, super_options in mounts:
        if fstype == "cgroup" and "pids" in super_options:
            own = next((p for h, c, p in _memberships(cgroups) if "pids" in c.split(",")), None)
            return _v1_base(root, point, options, own)
    for root, point, options, fstype, _ in mounts:
        if fstype == "cgroup2":
            own = next((p for h, c, p in _memberships(cgroups) if h == "0"), None)
            return _v2_base(root, point, options, own)
    return "no cgroup file system with the pids controller is mounted"


def _mount(line: str) -> tuple[str, str, list[str], str, list[str]]:
    """(root, mount point, mount options, file system type, super options) of a mountinfo line."""
    left, right = line.split(" - ", 1)
    fields, more = left.split(), right.split()
    return _unescape(fields[3]), _unescape(fields[4]), fields[5].split(","), more[0], more[-1].split(",")


def _unescape(path: str) -> str:
    return path.replace("\\040", " ").replace("\\011", "\t").replace("\\012", "\n").replace("\\134", "\\")


def _memberships(cgroups: str) -> list[tuple[str, str, str]]:
    return [tuple(line.split(":", 2)) for line in cgroups.splitlines() if line.count(":") >= 2]  # type: ignore[misc]


def _inside(root: str, point: str, own: str | None) -> Path | None:
    """The folder of cgroup `own` under a mount of cgroup `root` at `point` (None: not in it)."""
    if own is None or not (root == "/" or own == root or own.startswith(root.rstrip("/") + "/")):
        return None
    rest = own if root == "/" else own[len(root) :]
    return Path(point) / rest.lstrip("/")


def _writable(root: str, point: str, options: list[str], own: str | None, v1: bool) -> Path | str:
    """The folder of convoeval's cgroup under a cgroup mount, or why it is not usable there."""
    folder = _inside(root, point, own)
    if folder is None:
        return f"convoeval's {'pids ' if v1 else ''}cgroup ({own}) is not under the {'pids' if v1 else 'cgroup2'} mount {point}"
    if "ro" in options:
        return f"the {'pids ' if v1 else ''}cgroups ({point}) are mounted read-only"
    return folder


def _v1_base(root: str, point: str, options: list[str], own: str | None) -> Path | str:
    return _writable(root, point, options, own, v1=True)


def _v2_base(root: str, point: str, options: list[str], own: str | None) -> Path | str:
    folder = _writable(root, point, options, own, v1=False)
    if isinstance(folder, str):
        return folder
    if "pids" not in _words(folder / "cgroup.controllers"):
        return f"cgroup v2 without the pids controller for convoeval's cgroup {folder}"
    if "pids" in _words(folder / "cgroup.subtree_control"):
        return folder
    if folder != Path(point):  # the parent enables pids for its children, convoeval's among them
        return folder.parent
    return (
        f"cgroup v2: convoeval's cgroup {folder} is the top of the cgroups it can see and holds "
        "processes, so it cannot enable pids for cgroups under it"
    )


def _words(path: Path) -> list[str]:
    try:
        return path.read_text().split()
    except OSError:
        return []


@functools.cache
def _place() -> tuple[Path | None, str]:
    """Where this process makes commands' cgroups, or None; and how the limit holds (or why
    not). Found once: stale cgroups of dead runs swept, and one made and removed."""
    try:
        found = find_base(Path("/proc/self/mountinfo").read_text(), Path("/proc/self/cgroup").read_text())
    except OSError as exc:
        found = f"cannot read this process's cgroups ({exc.strerror})"
    reason = "not enforced (as root, or with CAP_SYS_RESOURCE/CAP_SYS_ADMIN, RLIMIT_NPROC does not apply, and no pids cgroup can be made: {})"
    if isinstance(found, str):
        return None, reason.format(found)
    sweep_stale_cgroups(found)
    problem = _try(found)
    if problem:
        return None, reason.format(problem)
    return found, f"a pids cgroup per command under {found}"


def _try(base: Path) -> str | None:
    """Why no command cgroup can be made under `base` (one made and removed); or None. Cheap
    enough for the run header (a quarter of a millisecond); a child that then cannot join one
    is an error of its command (`spawn`), never a command run without its limit."""
    try:
        PidsGroup(base, 1).remove_now(DRAIN_S)
    except SandboxError as exc:
        return str(exc)
    return None


_count = itertools.count(1)
#: The cgroups this process made and has not removed yet: removed at exit whatever path it takes.
_open: set[PidsGroup] = set()
#: Removals still waiting for tasks to drain (kept so the event loop does not lose them).
_draining: set[asyncio.Task[None]] = set()


class PidsGroup:
    """One command's pids cgroup: at most `limit` tasks (processes and threads) at once."""

    def __init__(self, base: Path, limit: int):
        self.path = base / f"{PREFIX}{owner_tag()}-{next(_count)}"
        try:
            self.path.mkdir()
            _open.add(self)
            _write(self.path / "pids.max", str(limit))
            (self.path / LEAF).mkdir()
        except OSError as exc:
            self.remove_now(0)
            raise SandboxError(f"cannot make the pids cgroup that limits a command's processes: {exc}") from None

    @classmethod
    def make(cls, limit: int) -> PidsGroup | None:
        """A cgroup of `limit` tasks when RLIMIT_NPROC does not hold and one can be made here."""
        if rlimit_holds():
            return None
        base, _ = _place()
        return None if base is None else cls(base, limit)

    def join(self) -> None:
        """In the child, before exec: move it into this cgroup's leaf (raises when it cannot)."""
        _write(self.path / LEAF / "cgroup.procs", str(os.getpid()))

    async def remove(self) -> None:
        """Kill what is left in it and remove it, waiting up to DRAIN_S for its tasks to go
        (if they never go, it stays for the exit, or the sweep of a later run)."""
        deadline = time.monotonic() + DRAIN_S
        while not self._removed() and time.monotonic() < deadline:
            await asyncio.sleep(0.002)

    def remove_now(self, wait_s: float) -> bool:
        """`remove`, blocking (at exit, or where no event loop can wait); whether it is gone."""
        gone = _remove_within(self.path, wait_s)
        if gone:
            _open.discard(self)
        return gone

    def discard(self) -> None:
        """Remove it now if it is empty, else as soon as its tasks are gone (in the background)."""
        if self._removed():
            return
        try:
            task = asyncio.get_running_loop().create_task(self.remove())
        except RuntimeError:  # no loop: the exit removes it
            return
        _draining.add(task)
        task.add_done_callback(_draining.discard)

    def _removed(self) -> bool:
        if not _remove_dir(self.path):
            return False
        _open.discard(self)
        return True


def _write(path: Path, text: str) -> None:
    """Write a cgroup file (which exists: cgroup folders make no new files)."""
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def _remove_within(path: Path, wait_s: float) -> bool:
    """`_remove_dir`, tried again (blocking) until it is gone or `wait_s` has passed."""
    deadline = time.monotonic() + wait_s
    while not (gone := _remove_dir(path)) and time.monotonic() < deadline:
        time.sleep(0.01)
    return gone


def _remove_dir(path: Path) -> bool:
    """Kill what is in cgroup `path` and the cgroups under it (a command may make some, from a
    cgroup namespace of its own) and try to remove them once, deepest first; whether it is gone."""
    for folder, _, _ in os.walk(path, topdown=False):
        _kill_tasks(Path(folder))
        try:
            os.rmdir(folder)
        except FileNotFoundError:
            pass
        except OSError:  # EBUSY: tasks still in it
            return False
    return not path.exists()


def _kill_tasks(path: Path) -> None:
    """SIGKILL every task in cgroup `path` (v2: all at once with `cgroup.kill`)."""
    try:
        _write(path / "cgroup.kill", "1")
        return
    except OSError:  # cgroup v1, or a kernel before 5.14
        pass
    for pid in _words(path / "cgroup.procs"):
        try:
            os.kill(int(pid), signal.SIGKILL)
        except (ProcessLookupError, PermissionError, ValueError):
            pass


def sweep_stale_cgroups(base: Path) -> list[Path]:
    """Remove the commands' cgroups left under `base` by runs that were killed (kill -9): only
    those whose owning process is gone (same pid, same start time). Returns them."""
    return [
        path
        for path in base.glob(f"{PREFIX}*")
        if left_by_gone_owner(path.name[len(PREFIX) :]) and _remove_within(path, DRAIN_S)
    ]


def kill_open_groups() -> None:
    """Kill what is in every cgroup this process made and try once to remove each, without
    waiting for their tasks to drain (what stays is removed at exit, or by a later sweep)."""
    for group in list(_open):
        group._removed()


@atexit.register
def _remove_open() -> None:
    for group in list(_open):
        group.remove_now(DRAIN_S)
