"""Running a command: its pipes read as they fill (at most a cap kept), its limits set in the
child, its process group killed and reaped when it ends, times out or is cancelled."""

from __future__ import annotations

import asyncio
import atexit
import ctypes
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from ._agent_user import become
from ._argv import AgentBox
from ._cgroup import AGENT_TASKS, PidsGroup, kill_open_groups
from ._choice import SandboxError, SandboxSettings
from ._owner import stat_fields

try:
    import resource
except ImportError:  # pragma: no cover - Windows: no rlimits (and no bubblewrap)
    resource = None  # type: ignore[assignment]

PR_SET_PDEATHSIG = 1
PR_CAPBSET_DROP = 24
PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 47, 4
_CAP_VERSION_3 = 0x20080522
try:
    _libc = ctypes.CDLL(None, use_errno=True) if sys.platform == "linux" else None
    _prctl = _libc.prctl if _libc is not None else None
except (OSError, AttributeError):  # pragma: no cover - no libc prctl
    _libc = _prctl = None


#: Seconds to keep reading after a command ended (what its last children still write).
EOF_GRACE_S = 0.5


@dataclass
class Finished:
    """What a sandboxed command did: its exit code (124 on timeout, like `timeout(1)`), its
    output (stdout, with stderr merged unless asked apart), how many bytes were cut."""

    code: int
    output: str
    stderr: str = ""
    timed_out: bool = False
    cut: int = 0
    killed_by: int | None = None


class _Capped:
    """Keeps the first `cap` bytes of a pipe and counts the rest, read as they arrive (with the
    event loop's `add_reader`: nothing to await, so a cancellation cannot come in between)."""

    def __init__(self, fd: int, cap: int, loop: asyncio.AbstractEventLoop):
        self.fd, self.cap, self.loop = fd, cap, loop
        self.data = bytearray()
        self.cut = 0
        self.done: asyncio.Future[None] = loop.create_future()
        os.set_blocking(fd, False)
        loop.add_reader(fd, self._read)

    def _read(self) -> None:
        try:
            chunk = os.read(self.fd, 65536)
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        if not chunk:
            self.close()
            return
        room = self.cap - len(self.data)
        if room > 0:
            self.data += chunk[:room]
        self.cut += max(0, len(chunk) - max(room, 0))

    def close(self) -> None:
        if self.fd < 0:
            return
        self.loop.remove_reader(self.fd)
        os.close(self.fd)
        self.fd = -1
        if not self.done.done():
            self.done.set_result(None)


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def _last_capability() -> int:
    try:
        return int(Path("/proc/sys/kernel/cap_last_cap").read_text())
    except (OSError, ValueError):
        return 63


#: The highest capability number of this kernel (read in the parent: the child only drops).
_LAST_CAP = _last_capability() if sys.platform == "linux" else -1


def _drop_root_powers() -> None:
    """In a child of root, before exec: no capability survives the exec (the bounding, ambient
    and inheritable sets emptied), so the program runs as a uid 0 without root's powers: it
    cannot read another process's memory or environment (convoeval's keys: convoeval is not
    dumpable), nor override file permissions. For commands that run outside bubblewrap (which
    drops them with `--cap-drop ALL`): `--sandbox none` and those on the host."""
    if os.geteuid() != 0 or _prctl is None or _libc is None:
        return
    for cap in range(_LAST_CAP + 1):
        _prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)
    _prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    header, data = _CapHeader(_CAP_VERSION_3, 0), (_CapData * 2)()
    if _libc.capget(ctypes.byref(header), data) == 0:
        for part in data:
            part.inheritable = 0
        _libc.capset(ctypes.byref(header), data)


def _in_child(
    settings: SandboxSettings | None,
    *,
    processes: bool = True,
    group: PidsGroup | None = None,
    powerless: bool = False,
) -> None:
    """In the child, before exec: killed when convoeval dies (even by kill -9; bubblewrap then
    takes its whole PID namespace down), in its pids cgroup (`group`, where RLIMIT_NPROC does not
    hold), and the `sandbox:` limits, inherited by all it starts. `processes=False` leaves out
    RLIMIT_NPROC (for an agent CLI: it counts the threads of all the user's processes on the
    machine, and a CLI runs dozens). `powerless`: as root, no capability survives the exec
    (`_drop_root_powers`)."""
    if _prctl is not None:
        _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    os.umask(os.umask(0o022) | 0o002)  # nothing it makes is writable by others (`_seccomp` keeps it so)
    if group is not None:
        group.join()
    if powerless:
        _drop_root_powers()
    if settings is None or resource is None:
        return
    mb = 1024 * 1024
    _set_limits(
        (resource.RLIMIT_AS, settings.memory_mb * mb),
        *([(resource.RLIMIT_NPROC, settings.processes)] if processes else []),
        (resource.RLIMIT_FSIZE, settings.file_size_mb * mb),
        (resource.RLIMIT_CPU, settings.cpu_seconds),
        (resource.RLIMIT_CORE, 0),
    )


def in_agent_child(settings: SandboxSettings, group: PidsGroup | None = None, box: AgentBox | None = None) -> None:
    """`_in_child` for an agent CLI: every limit but RLIMIT_NPROC, and its pids cgroup
    (`agent_pids_group`) when it has one; then, when `box` names a user (convoeval is root), the
    host paths that user could not reach opened up for it (`Reach`), and the drop to that user,
    all while still root. The drop clears PR_SET_PDEATHSIG: it is set again as the user, and a
    parent already gone ends the child at once."""
    _in_child(settings, processes=False, group=group)
    if box is None or box.user is None:
        return
    parent = os.getppid()
    try:
        box.reach.open_up()
        become(box.user)
    except OSError as exc:  # said on its stderr, which the CLI's error quotes
        os.write(2, f"convoeval: cannot start the agent's sandbox as {box.user.name}: {exc}\n".encode())
        os._exit(126)
    if _prctl is not None:
        _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # convoeval died before the signal was armed again
        os._exit(1)


def agent_pids_group(settings: SandboxSettings) -> PidsGroup | None:
    """An agent CLI's pids cgroup where RLIMIT_NPROC does not hold (None elsewhere, or where no
    cgroup can be made): `processes` for the commands it runs, plus AGENT_TASKS for its own
    threads, which a pids cgroup counts. Remove it (`PidsGroup.remove`) when the CLI has ended."""
    return PidsGroup.make(settings.processes + AGENT_TASKS)


def _set_limits(*limits: tuple[int, int]) -> None:
    for limit, value in limits:
        try:
            resource.setrlimit(limit, (value, value))
        except (ValueError, OSError):  # a hard limit already lower: keep it
            pass


def _feed(data: bytes) -> BinaryIO:
    """A deleted temporary file holding `data`, opened read-only for the command's stdin: the
    read-write one let a command write up to `file_size_mb` into the host's temp folder, outside
    its workspace (where /proc is not mounted, the read-write one)."""
    with tempfile.TemporaryFile() as written:
        written.write(data)
        written.flush()
        try:
            return open(f"/proc/self/fd/{written.fileno()}", "rb")  # closed by the caller
        except OSError:
            pass
    fallback = tempfile.TemporaryFile()
    fallback.write(data)
    fallback.seek(0)
    return fallback


async def spawn(
    argv: list[str],
    cwd: Path,
    env: dict[str, str],
    stdin: bytes | None,
    cap: int,
    separate_stderr: bool,
    timeout_s: float,
    settings: SandboxSettings | None,
    container: str | None,
    powerless: bool = False,
    keep_fds: tuple[int, ...] = (),
) -> Finished:
    """Start `argv` in a session and pids cgroup (`PidsGroup.make`; not docker's client) of its own,
    read its pipes as they fill (`cap` bytes kept), kill its group when it ends or is stopped.
    `powerless`: as root, without root's capabilities (`_drop_root_powers`). `keep_fds`: open in
    the child too (bubblewrap's seccomp filter)."""
    loop = asyncio.get_running_loop()
    group = PidsGroup.make(settings.processes) if settings is not None and container is None else None
    feed = _feed(stdin) if stdin is not None else None  # a file, not a pipe: a command that never reads cannot block us
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe() if separate_stderr else (None, None)
    creating = asyncio.ensure_future(
        asyncio.create_subprocess_exec(
            *argv,
            cwd=str(cwd),
            env=env,
            stdin=feed if feed is not None else asyncio.subprocess.DEVNULL,
            stdout=out_w,
            stderr=err_w if err_w is not None else out_w,
            start_new_session=True,
            pass_fds=keep_fds,
            preexec_fn=lambda: _in_child(settings, group=group, powerless=powerless),
        )
    )

    def started(_: object) -> None:  # the child holds its copies now (or never will)
        _close(out_w, err_w)
        if feed is not None:
            feed.close()

    creating.add_done_callback(_track_group)
    creating.add_done_callback(started)
    try:
        # Shielded: a Ctrl-C landing while the process is being made must not leave its group
        # unknown (asyncio would kill only the first process); it is known as soon as it exists
        # and killed at exit with the others.
        proc = await asyncio.shield(creating)
    except BaseException as exc:  # cancelled: the command is not wanted any more
        _abandon(creating, (out_r, err_r), group)
        if group is not None and isinstance(exc, subprocess.SubprocessError):  # joining it failed
            raise SandboxError(f"cannot put the command in its pids cgroup {group.path}") from None
        raise
    readers: list[_Capped] = []
    timed_out = False
    try:
        readers = [_Capped(fd, cap, loop) for fd in (out_r, err_r) if fd is not None]
        try:
            async with asyncio.timeout(timeout_s):
                await proc.wait()
        except TimeoutError:
            timed_out = True
        else:
            ends = asyncio.gather(*(r.done for r in readers))
            try:  # not wait_for: before Python 3.12 it drops a Ctrl-C landing as the pipes close
                async with asyncio.timeout(EOF_GRACE_S):
                    await asyncio.shield(ends)
            except TimeoutError:  # a child that left the group still holds the pipe: stop reading
                pass
    finally:
        await _end(proc, container, group)
        for reader in readers:
            reader.close()
        if not readers:  # never watched
            _close(out_r, err_r)
    code = proc.returncode if proc.returncode is not None else -signal.SIGKILL
    output = readers[0].data.decode("utf-8", "replace")
    stderr = readers[1].data.decode("utf-8", "replace") if len(readers) > 1 else ""
    cut = sum(r.cut for r in readers)
    if timed_out:
        return Finished(124, output, stderr, timed_out=True, cut=cut)
    return Finished(code, output, stderr, cut=cut, killed_by=-code if code < 0 else None)


#: Process groups of the commands running now: killed at exit whatever path the exit takes.
_live: set[int] = set()


def _close(*fds: int | None) -> None:
    for fd in fds:
        if fd is not None:
            os.close(fd)


def _abandon(
    creating: asyncio.Future[asyncio.subprocess.Process], fds: tuple[int, int | None], group: PidsGroup | None
) -> None:
    """A command no longer wanted while it was being made: once made, its pipes are closed, its
    group killed and its cgroup removed."""
    creating.add_done_callback(lambda _: _close(*fds))
    creating.add_done_callback(_kill_made)
    if group is not None:
        creating.add_done_callback(lambda _: group.discard())


def _made(creating: asyncio.Future[asyncio.subprocess.Process]) -> int | None:
    """The pid (and group) of the process `creating` made, if it made one."""
    return creating.result().pid if not creating.cancelled() and creating.exception() is None else None


def _track_group(creating: asyncio.Future[asyncio.subprocess.Process]) -> None:
    if (pid := _made(creating)) is not None:
        _live.add(pid)


def _kill_made(creating: asyncio.Future[asyncio.subprocess.Process]) -> None:
    if (pid := _made(creating)) is not None:
        _kill_group(pid)


def watch_group(group: int) -> None:
    """Kill process group `group` at exit (and in `end_all_now`) unless `forget_group` comes
    first: for a process started elsewhere in a session of its own (an agent CLI)."""
    _live.add(group)


def forget_group(group: int) -> None:
    """`group` has ended (its leader reaped): its number may be reused, never kill it again."""
    _live.discard(group)


#: The scratch folders in use (`scratch_folder`), removed at exit if their block has not ended.
_scratch: set[str] = set()


@contextmanager
def scratch_folder(prefix: str) -> Iterator[Path]:
    """A new private folder in the temp folder for a command's files (its prompt, its output),
    removed when the block ends, or at exit and by `end_all_now` when the process ends first
    (a worker whose driver died): what it holds never outlives the run."""
    folder = tempfile.mkdtemp(prefix=prefix)
    _scratch.add(folder)
    try:
        yield Path(folder)
    finally:
        _remove_scratch(folder)


def _remove_scratch(folder: str) -> None:
    """Remove `folder`, then forget it: a signal handler that ends the process meanwhile
    (`end_all_now`) still finds it and removes it."""
    shutil.rmtree(folder, ignore_errors=True)
    _scratch.discard(folder)


@atexit.register
def _kill_live() -> None:
    for group in list(_live):
        _kill_group(group)
    for folder in list(_scratch):
        _remove_scratch(folder)


def end_all_now() -> None:
    """Kill every command running now, without waiting for anything: their process groups and
    what is in their pids cgroups (left in place for the sweep of a later run); remove their
    scratch folders. For a process that is about to end at once (a second Ctrl-C)."""
    _kill_live()
    kill_open_groups()


def kill_children() -> None:
    """Kill every child of this process, with its process group when it leads a session of its
    own (a command's): the commands whose start has not returned yet too, which no list holds
    (`watch_group` comes after). For a process that runs nothing but commands and is about to
    end at once (a worker whose driver died)."""
    me = os.getpid()
    try:
        entries = list(os.scandir("/proc"))
    except OSError:  # no /proc (macOS): the commands it watches are killed, not those starting
        return
    for entry in entries:
        if not entry.name.isdigit() or (fields := stat_fields(int(entry.name))) is None:
            continue
        pid, ppid, session = int(entry.name), int(fields[1]), int(fields[3])
        if ppid != me:
            continue
        try:
            if session == pid:
                os.killpg(pid, signal.SIGKILL)
            else:  # not in its own session yet: between its fork and its exec
                os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def _kill_group(group: int) -> None:
    _live.discard(group)
    try:
        os.killpg(group, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


async def _end(proc: asyncio.subprocess.Process, container: str | None, group: PidsGroup | None) -> None:
    """Kill what is left of the command's group (and its container), reap it, and remove its
    pids cgroup (after killing what is left in it)."""
    _kill_group(proc.pid)
    if container is not None:
        killer = await asyncio.create_subprocess_exec(
            "docker", "kill", container, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL
        )
        await killer.wait()
    if proc.returncode is None:
        await asyncio.shield(proc.wait())
    if group is not None:
        await asyncio.shield(group.remove())
