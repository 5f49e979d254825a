"""The sandbox every command a model or a suite controls runs in: the tool agent's `bash` and
command tools, `verify`, workspace hooks and code-graders in a workspace.

Backends, chosen for the whole run (`--sandbox`, `RunOptions.sandbox`, `CONVOEVAL_SANDBOX`):

- `bubblewrap` (the default where `bwrap` is installed): new user, PID, network, IPC and UTS
  namespaces (`--unshare-all`; `--share-net` only with `network: true`); the whole system
  mounted read-only, a private `/tmp` and `/run`, the workspace the only writable host folder;
  a fresh `HOME` in the private `/tmp`; `--die-with-parent` and the PID namespace, so every
  process a command starts dies with it; the parent's `/proc` out of sight.
- `docker` (a reachable daemon): the same rules with `docker run --rm --read-only
  --network none`, the workspace mounted at its own path, in `sandbox.image`.
- `none` (only when chosen by name): the command runs on the host with the clean environment
  and the limits below; its process group is killed when it ends, times out or is cancelled,
  but a process that leaves the group (`setsid`) survives, and nothing else is confined.

Every backend passes only the variables a suite names (plus PATH and the locale), applies the
`sandbox:` limits (address space, processes, file size, CPU seconds) with `setrlimit`, reads
output as it arrives and keeps at most `cap` bytes, and on timeout or cancellation kills the
command's whole process tree without waiting for its pipes.
"""

from __future__ import annotations

import asyncio
import atexit
import contextvars
import ctypes
import functools
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import ConfigDict, Field

from ._base_model import Model
from .errors import ConfigError

BACKENDS = ("bubblewrap", "docker", "none")
Backend = Literal["bubblewrap", "docker", "none"]
#: Variables every sandboxed command gets from the parent (when set); the suite names the rest.
BASE_ENV = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TERM")
#: Where the fresh HOME is, inside the sandbox's private /tmp.
SANDBOX_HOME = "/tmp/home"
#: Seconds to keep reading after a command ended (what its last children still write).
EOF_GRACE_S = 0.5
INSTALL_HINT = (
    "install bubblewrap (Debian/Ubuntu: `apt-get install bubblewrap`; Fedora: `dnf install bubblewrap`), "
    "or choose a sandbox by name: `--sandbox docker`, or `--sandbox none` to run them unconfined on this machine"
)


try:
    import resource
except ImportError:  # pragma: no cover - Windows: no rlimits (and no bubblewrap)
    resource = None  # type: ignore[assignment]

PR_SET_PDEATHSIG = 1
try:
    _prctl = ctypes.CDLL(None, use_errno=True).prctl if sys.platform == "linux" else None
except (OSError, AttributeError):  # pragma: no cover - no libc prctl
    _prctl = None


class SandboxError(ConfigError):
    """No sandbox can run the command (bubblewrap missing, no Docker daemon, unknown backend)."""


class SandboxSettings(Model):
    """`sandbox:` of a workspace (test) or an agent (target): what its commands may do."""

    model_config = ConfigDict(extra="forbid")

    network: bool = Field(False, description="Let commands use the network (off by default).")
    memory_mb: int = Field(4096, ge=16, le=1_048_576, description="Address space per process, in MB.")
    processes: int = Field(512, ge=1, le=1_000_000, description="Processes of the user at most (RLIMIT_NPROC).")
    file_size_mb: int = Field(1024, ge=1, le=1_048_576, description="Largest file a command may write, in MB.")
    cpu_seconds: int = Field(600, ge=1, le=86_400, description="CPU seconds per process.")
    image: str = Field("debian:bookworm-slim", min_length=1, description="The image of the docker backend.")

    def merged(self, other: SandboxSettings | None) -> SandboxSettings:
        """The test's settings and its target's together: the network when either allows it, the
        lower of each limit, the image the test names (else the target's)."""
        if other is None:
            return self
        return SandboxSettings(
            network=self.network or other.network,
            memory_mb=min(self.memory_mb, other.memory_mb),
            processes=min(self.processes, other.processes),
            file_size_mb=min(self.file_size_mb, other.file_size_mb),
            cpu_seconds=min(self.cpu_seconds, other.cpu_seconds),
            image=self.image if "image" in self.model_fields_set else other.image,
        )


DEFAULT_SETTINGS = SandboxSettings()

_chosen: contextvars.ContextVar[str | None] = contextvars.ContextVar("convoeval_sandbox", default=None)
_trial: contextvars.ContextVar[SandboxSettings | None] = contextvars.ContextVar("convoeval_sandbox_trial", default=None)


def choose(name: str | None) -> None:
    """Set the run's backend (None: the default, or `$CONVOEVAL_SANDBOX`); an unknown name raises."""
    name = name or os.environ.get("CONVOEVAL_SANDBOX") or None
    if name is not None and name not in BACKENDS:
        raise SandboxError(f"unknown sandbox {name!r}: choose one of {', '.join(BACKENDS)}")
    _chosen.set(name)


def use_trial_settings(settings: SandboxSettings | None) -> contextvars.Token[SandboxSettings | None]:
    """Set the current trial's `sandbox:` settings (its workspace's); returns the token to reset."""
    return _trial.set(settings)


def reset_trial_settings(token: contextvars.Token[SandboxSettings | None]) -> None:
    _trial.reset(token)


def trial_settings() -> SandboxSettings:
    return _trial.get() or DEFAULT_SETTINGS


def describe() -> str:
    """The backend the run's commands use, or `unavailable` (bubblewrap missing, none chosen)."""
    try:
        return backend()
    except SandboxError:
        return "unavailable"


def backend() -> Backend:
    """The backend in force; SandboxError when the default is wanted and `bwrap` is missing."""
    name = _chosen.get() or os.environ.get("CONVOEVAL_SANDBOX") or None
    if name is not None and name not in BACKENDS:
        raise SandboxError(f"unknown sandbox {name!r}: choose one of {', '.join(BACKENDS)}")
    if name in (None, "bubblewrap"):
        bwrap = shutil.which("bwrap")
        if bwrap is None:
            raise SandboxError(f"commands run in a bubblewrap sandbox, but `bwrap` is not installed: {INSTALL_HINT}")
        if problem := _bwrap_problem(bwrap):
            raise SandboxError(f"bubblewrap cannot make a sandbox here ({problem}): {INSTALL_HINT}")
        return "bubblewrap"
    return name  # type: ignore[return-value]


@functools.cache
def _bwrap_problem(bwrap: str) -> str | None:
    """Why `bwrap` cannot make the sandbox on this machine (user namespaces off, say), or None;
    tried once per process."""
    try:
        tried = subprocess.run(
            [bwrap, "--unshare-all", "--die-with-parent", "--ro-bind", "/", "/", "--proc", "/proc", "--", "true"],
            capture_output=True,
            text=True,
            timeout=20,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return str(exc)
    return None if tried.returncode == 0 else (tried.stderr.strip()[-200:] or f"exit code {tried.returncode}")


def command_env(names: Iterable[str] = (), extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """A command's environment: PATH and the locale, the variables `names` lists (as the parent
    has them), then `extra`; nothing else of the parent's environment."""
    wanted = (*BASE_ENV, *names)
    env = {n: os.environ[n] for n in wanted if n in os.environ}
    return {**env, **(extra or {})}


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


async def run(
    command: str | Sequence[str],
    cwd: Path,
    *,
    timeout_s: float,
    writable: Path | None = None,
    readable: Sequence[Path] = (),
    env: Mapping[str, str] | None = None,
    stdin: bytes | None = None,
    cap: int = 1_000_000,
    separate_stderr: bool = False,
    settings: SandboxSettings | None = None,
    host: bool = False,
) -> Finished:
    """Run `command` (a shell command line, or an argv) in the run's sandbox, in `cwd`.

    Args:
        writable: the one host folder the command may change (the workspace).
        readable: host folders it must still see inside the private /tmp (the eval folder).
        env: its whole environment (see `command_env`); HOME and TMPDIR are set here.
        stdin: bytes on its standard input (else /dev/null).
        cap: bytes kept of stdout (and of stderr); the rest is read and counted, never kept.
        separate_stderr: keep stderr apart (`Finished.stderr`) instead of merged into output.
        settings: network and limits (default: the current trial's `sandbox:`).
        host: run it on the host as given, without sandbox or limits (commands convoeval
            composes itself, such as `git clone`), still bounded in output and time.

    Raises:
        SandboxError: no sandbox can run it (the message says how to install one or opt out).
        OSError: the program could not start (`none` backend with an argv).
    """
    if host:  # a command convoeval composes itself (git, docker): on the host, as given
        argv = ["/bin/sh", "-c", command] if isinstance(command, str) else list(command)
        return await _spawn(argv, cwd, dict(env or {}), stdin, cap, separate_stderr, timeout_s, None, None)
    settings = settings or trial_settings()
    which = backend()
    argv = [command] if isinstance(command, str) else list(command)
    shell = isinstance(command, str)
    home = None if which != "none" else Path(tempfile.mkdtemp(prefix="convoeval-home-"))
    inside = {"HOME": str(home), "TMPDIR": tempfile.gettempdir()} if home else {"HOME": SANDBOX_HOME, "TMPDIR": "/tmp"}
    full_env = {**(env or {}), **inside}
    name = None
    if which == "bubblewrap":
        argv = _bwrap_argv(argv, shell, cwd, writable, readable, settings)
    elif which == "docker":
        name = f"convoeval-{uuid.uuid4().hex[:12]}"
        argv = await _docker_argv(argv, shell, cwd, writable, full_env, settings, name)
    elif shell:
        argv = ["/bin/sh", "-c", argv[0]]
    if which == "docker":  # the docker client itself may need DOCKER_HOST and the like
        full_env = {**{k: v for k, v in os.environ.items() if k.startswith("DOCKER_")}, **full_env}
    try:
        return await _spawn(argv, cwd, full_env, stdin, cap, separate_stderr, timeout_s, settings, name)
    finally:
        if home is not None:
            shutil.rmtree(home, ignore_errors=True)


def _bwrap_argv(
    argv: list[str],
    shell: bool,
    cwd: Path,
    writable: Path | None,
    readable: Sequence[Path],
    settings: SandboxSettings,
) -> list[str]:
    """bubblewrap's command line: the system read-only, private temp folders, /run and /dev, a
    new PID namespace, no network unless allowed, the workspace bound read-write (same path).
    Programs on PATH and Python's own folders stay readable when they live in a temp folder."""
    out = ["bwrap", "--die-with-parent", "--new-session", "--unshare-all"]
    if settings.network:
        out.append("--share-net")
    hidden = list(dict.fromkeys(str(Path(t).resolve()) for t in ("/tmp", tempfile.gettempdir())))
    out += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/run"]
    for folder in hidden:
        out += ["--tmpfs", folder]
    out += ["--dir", SANDBOX_HOME]
    tools = [*os.environ.get("PATH", "").split(os.pathsep), sys.prefix, sys.base_prefix]
    shown = [*map(str, readable), *(t for t in tools if t and any(_under(t, h) for h in hidden))]
    for path in dict.fromkeys(str(Path(p).resolve()) for p in shown):
        out += ["--ro-bind-try", path, path]
    if writable is not None:
        resolved = str(Path(writable).resolve())
        out += ["--bind", resolved, resolved]
    out += ["--chdir", str(Path(cwd).resolve()), "--"]
    return out + (["/bin/sh", "-c", argv[0]] if shell else argv)


def _under(path: str, folder: str) -> bool:
    """Whether `path` lies inside `folder` (the folder itself does not count)."""
    resolved = Path(path).resolve()
    return resolved != Path(folder) and resolved.is_relative_to(folder)


async def _docker_argv(
    argv: list[str],
    shell: bool,
    cwd: Path,
    writable: Path | None,
    env: Mapping[str, str],
    settings: SandboxSettings,
    name: str,
) -> list[str]:
    if shutil.which("docker") is None:
        raise SandboxError("--sandbox docker: the docker command is not installed")
    probe = await asyncio.create_subprocess_exec(
        "docker",
        "info",
        "--format",
        "{{.ServerVersion}}",
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )
    if await probe.wait() != 0:
        raise SandboxError("--sandbox docker: no Docker daemon is reachable (start it, or choose another --sandbox)")
    out = ["docker", "run", "--rm", "-i", "--name", name, "--read-only", "--tmpfs", "/tmp", "--tmpfs", SANDBOX_HOME]
    out += ["--tmpfs", "/run"]
    out += ["--network", "bridge" if settings.network else "none", "--pids-limit", str(settings.processes)]
    out += ["--memory", f"{settings.memory_mb}m", "--ulimit", f"fsize={settings.file_size_mb * 1024 * 1024}"]
    out += ["--ulimit", f"cpu={settings.cpu_seconds}"]
    for key in env:  # values come from the docker client's environment, never the command line
        out += ["-e", key]
    if writable is not None:
        resolved = str(Path(writable).resolve())
        out += ["-v", f"{resolved}:{resolved}"]
    out += ["-w", str(Path(cwd).resolve()), settings.image]
    return out + (["/bin/sh", "-c", argv[0]] if shell else argv)


def _in_child(settings: SandboxSettings | None) -> None:
    """In the child, before exec: killed when convoeval dies (even by kill -9; bubblewrap then
    takes its whole PID namespace down), and the `sandbox:` limits, inherited by all it starts."""
    if _prctl is not None:
        _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if settings is None or resource is None:
        return
    mb = 1024 * 1024
    for limit, value in (
        (resource.RLIMIT_AS, settings.memory_mb * mb),
        (resource.RLIMIT_NPROC, settings.processes),
        (resource.RLIMIT_FSIZE, settings.file_size_mb * mb),
        (resource.RLIMIT_CPU, settings.cpu_seconds),
        (resource.RLIMIT_CORE, 0),
    ):
        try:
            resource.setrlimit(limit, (value, value))
        except (ValueError, OSError):  # a hard limit already lower: keep it
            pass


async def _spawn(
    argv: list[str],
    cwd: Path,
    env: dict[str, str],
    stdin: bytes | None,
    cap: int,
    separate_stderr: bool,
    timeout_s: float,
    settings: SandboxSettings | None,
    container: str | None,
) -> Finished:
    """Start `argv` in a session of its own, read its pipes as they fill (at most `cap` bytes
    kept), and kill its group when it ends, times out or is cancelled."""
    loop = asyncio.get_running_loop()
    feed = None
    if stdin is not None:  # a file, not a pipe: a command that never reads cannot block us
        feed = tempfile.TemporaryFile()
        feed.write(stdin)
        feed.seek(0)
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe() if separate_stderr else (None, None)
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            cwd=str(cwd),
            env=env,
            stdin=feed if feed is not None else asyncio.subprocess.DEVNULL,
            stdout=out_w,
            stderr=err_w if err_w is not None else out_w,
            start_new_session=True,
            preexec_fn=lambda: _in_child(settings),
        )
    finally:
        os.close(out_w)
        if err_w is not None:
            os.close(err_w)
        if feed is not None:
            feed.close()
    _live.add(proc.pid)
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
            try:
                await asyncio.wait_for(asyncio.shield(ends), EOF_GRACE_S)
            except TimeoutError:  # a child that left the group still holds the pipe: stop reading
                pass
    finally:
        await _end(proc, container)
        for reader in readers:
            reader.close()
        if not readers:  # never watched
            for fd in (out_r, err_r):
                if fd is not None:
                    os.close(fd)
    code = proc.returncode if proc.returncode is not None else -signal.SIGKILL
    output = readers[0].data.decode("utf-8", "replace")
    stderr = readers[1].data.decode("utf-8", "replace") if len(readers) > 1 else ""
    cut = sum(r.cut for r in readers)
    if timed_out:
        return Finished(124, output, stderr, timed_out=True, cut=cut)
    return Finished(code, output, stderr, cut=cut, killed_by=-code if code < 0 else None)


#: Process groups of the commands running now: killed at exit whatever path the exit takes.
_live: set[int] = set()


@atexit.register
def _kill_live() -> None:
    for group in list(_live):
        _kill_group(group)


def _kill_group(group: int) -> None:
    _live.discard(group)
    try:
        os.killpg(group, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


async def _end(proc: asyncio.subprocess.Process, container: str | None) -> None:
    """Kill what is left of the command's group (and its container) and reap it."""
    _kill_group(proc.pid)
    if container is not None:
        killer = await asyncio.create_subprocess_exec(
            "docker", "kill", container, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL
        )
        await killer.wait()
    if proc.returncode is None:
        await asyncio.shield(proc.wait())
