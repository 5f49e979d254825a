"""Which sandbox runs the commands: the backends, the run's choice, a trial's `sandbox:`
settings, and the environment a command gets."""

from __future__ import annotations

import contextvars
import functools
import os
import shutil
import subprocess
from collections.abc import Iterable, Mapping
from typing import Literal

from pydantic import ConfigDict, Field

from .._base_model import Model
from ..errors import ConfigError

BACKENDS = ("bubblewrap", "docker", "none")
Backend = Literal["bubblewrap", "docker", "none"]
#: Variables every sandboxed command gets from the parent (when set); the suite names the rest.
BASE_ENV = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TERM")
INSTALL_HINT = (
    "install bubblewrap (Debian/Ubuntu: `apt-get install bubblewrap`; Fedora: `dnf install bubblewrap`), "
    "or choose a sandbox by name: `--sandbox docker`, or `--sandbox none` to run them unconfined on this machine"
)


class SandboxError(ConfigError):
    """No sandbox can run the command (bubblewrap missing, no Docker daemon, unknown backend)."""


class SandboxSettings(Model):
    """`sandbox:` of a workspace (test) or an agent (target): what its commands may do."""

    model_config = ConfigDict(extra="forbid")

    network: bool = Field(False, description="Let commands use the network (off by default).")
    memory_mb: int = Field(
        8192,
        ge=16,
        le=1_048_576,
        description="Address space per process, in MB (JavaScript runtimes reserve much of it: bun 1.3 aborts under 4096).",
    )
    processes: int = Field(
        512,
        ge=1,
        le=1_000_000,
        description="Processes at most: the user's (RLIMIT_NPROC); as root, each command's tasks (a pids cgroup).",
    )
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
    """Set the run's backend (None: the default, or `$CONVOEVAL_SANDBOX`); an unknown name raises.
    When that is bubblewrap, trying it starts now, in the background: the run loads its suites
    meanwhile and waits for the answer only when it first needs it."""
    name = name or os.environ.get("CONVOEVAL_SANDBOX") or None
    if name is not None and name not in BACKENDS:
        raise SandboxError(f"unknown sandbox {name!r}: choose one of {', '.join(BACKENDS)}")
    _chosen.set(name)
    if name in (None, "bubblewrap") and (bwrap := shutil.which("bwrap")) is not None:
        _start_trying(bwrap)


def chosen() -> str:
    """The backend the run chose by name (`choose`, else `$CONVOEVAL_SANDBOX`), else the default
    `bubblewrap`: what another process running the run's commands (a Ray worker) must use."""
    return _chosen.get() or os.environ.get("CONVOEVAL_SANDBOX") or "bubblewrap"


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
        bwrap = _which_bwrap(os.environ.get("PATH"))
        if bwrap is None:
            raise SandboxError(f"commands run in a bubblewrap sandbox, but `bwrap` is not installed: {INSTALL_HINT}")
        if problem := _bwrap_problem(bwrap):
            raise SandboxError(f"bubblewrap cannot make a sandbox here ({problem}): {INSTALL_HINT}")
        return "bubblewrap"
    return name  # type: ignore[return-value]


@functools.lru_cache(maxsize=8)
def _which_bwrap(path: str | None) -> str | None:
    """`bwrap` on this PATH (asked once per PATH: every result names the backend)."""
    return shutil.which("bwrap", path=path)


#: The command that tells whether bubblewrap can make the sandbox here.
_TRY_ARGS = ("--unshare-all", "--die-with-parent", "--ro-bind", "/", "/", "--proc", "/proc", "--", "true")
#: `bwrap` tries started by `choose` and not yet waited for, by path.
_trying: dict[str, subprocess.Popen[str]] = {}


def _start_trying(bwrap: str) -> None:
    """Start trying `bwrap` without waiting, unless its answer is known or already coming."""
    if bwrap in _trying or _bwrap_problem.cache_info().currsize:
        return
    try:
        _trying[bwrap] = subprocess.Popen(
            [bwrap, *_TRY_ARGS], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
        )
    except OSError:  # _bwrap_problem tries again and says why
        pass


@functools.cache
def _bwrap_problem(bwrap: str) -> str | None:
    """Why `bwrap` cannot make the sandbox on this machine (user namespaces off, say), or None;
    tried once per process (the try `choose` started, when there is one)."""
    started = _trying.pop(bwrap, None)
    try:
        if started is None:
            started = subprocess.Popen(
                [bwrap, *_TRY_ARGS],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
            )
        _, stderr = started.communicate(timeout=20)
    except (OSError, subprocess.TimeoutExpired) as exc:
        if started is not None:
            started.kill()
            started.wait()
        return str(exc)
    return None if started.returncode == 0 else (stderr.strip()[-200:] or f"exit code {started.returncode}")


def command_env(names: Iterable[str] = (), extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """A command's environment: PATH and the locale, the variables `names` lists (as the parent
    has them), then `extra`; nothing else of the parent's environment."""
    wanted = (*BASE_ENV, *names)
    env = {n: os.environ[n] for n in wanted if n in os.environ}
    return {**env, **(extra or {})}
