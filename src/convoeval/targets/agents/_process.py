"""Running an agent's command: a clean environment, a timeout, stdout read line by line (lines of
any length).

Agent CLIs get only the environment they need: a few basic variables (PATH, HOME, locale,
temp dir), the variables their provider names (their own API keys), and what the target's
config passes explicitly (`env:` values, `env_passthrough:` names). Nothing else of the
parent's environment, so other secrets never reach them. Their API keys are redacted from
anything that ends up in an error message.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..._sandbox import forget_group, watch_group
from .._base import TargetConfig, TargetError
from .._http import redact
from ._settings import ProcessSettings

#: Variables every agent process gets from the parent (when set).
BASE_ENV = ("PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LC_ALL", "LC_CTYPE", "TERM", "TMPDIR", "TZ")
#: Longest stderr tail quoted in an error.
STDERR_TAIL = 600
#: Most stdout a command may print (lines themselves have no length limit).
MAX_STDOUT = 512 * 2**20
#: Most stderr kept (its end).
MAX_STDERR = 2**20
#: Bytes read at a time.
CHUNK = 2**16
#: Longest wait for a killed command's pipes to close.
REAP_S = 5.0
PIPE = asyncio.subprocess.PIPE


@dataclass
class Line:
    """One line of a command's stdout and when it arrived (seconds since the start)."""

    text: str
    at: float


@dataclass
class Finished:
    """What a finished command printed."""

    returncode: int
    lines: list[Line] = field(default_factory=list)
    stderr: str = ""
    duration_ms: float = 0.0

    @property
    def stdout(self) -> str:
        return "\n".join(line.text for line in self.lines)


def work_dir(config: TargetConfig, cwd: str | None) -> Path | None:
    """A configured `cwd`, relative to the targets file's folder (None: convoeval's own)."""
    return None if cwd is None else config.source_dir / cwd


def agent_env(
    config: TargetConfig, settings: ProcessSettings, provider_keys: Iterable[str] = ()
) -> tuple[dict[str, str], list[str]]:
    """The environment of an agent process, and the secret values in it (to redact).

    Args:
        config: the target's config (`api_key_env` names a key variable copied too).
        settings: `env` (a mapping set as is), `env_passthrough` (names copied from the parent).
        provider_keys: variables the provider itself needs (e.g. ANTHROPIC_API_KEY).
    """
    names = [*BASE_ENV, *provider_keys, *settings.env_passthrough]
    if config.api_key_env:
        names.append(config.api_key_env)
    env = {name: os.environ[name] for name in names if name in os.environ}
    env.update(settings.env)
    secrets = [env[n] for n in [*provider_keys, config.api_key_env or ""] if n and env.get(n)]
    if config.api_key is not None:
        secrets.append(config.api_key.get_secret_value())
    return env, secrets


async def run_command(
    argv: list[str],
    *,
    cwd: str | Path | None,
    env: dict[str, str],
    timeout_s: float,
    name: str,
    secrets: Iterable[str] = (),
    shell: bool = False,
    watch: Callable[[Line], str | None] | None = None,
    explain: Callable[[list[Line]], str | None] | None = None,
    preexec: Callable[[], None] | None = None,
) -> Finished:
    """Run a command to its end (killing its process group after `timeout_s`).

    Stdout is read in chunks and split into lines with no limit on a line's length (only on
    the whole output, `MAX_STDOUT` bytes). `watch` sees every line as it arrives: a message
    it returns stops the command at once and becomes the error. `explain` reads the lines
    printed so far when the command times out: what it says is added to the error. `preexec`
    runs in the child before the program (its limits).

    Raises:
        TargetError: the executable is missing, the command timed out, printed too much, or
            `watch` stopped it.
    """
    started = time.perf_counter()
    pipes: dict[str, object] = {
        "stdin": asyncio.subprocess.DEVNULL,
        "stdout": PIPE,
        "stderr": PIPE,
        "start_new_session": True,
    }
    if preexec is not None:
        pipes["preexec_fn"] = preexec
    try:
        if shell:
            process = await asyncio.create_subprocess_shell(argv[0], cwd=cwd, env=env, **pipes)  # type: ignore[arg-type]
        else:
            process = await asyncio.create_subprocess_exec(*argv, cwd=cwd, env=env, **pipes)  # type: ignore[arg-type]
    except FileNotFoundError:
        raise TargetError(
            f"{name}: command not found: {argv[0]!r} (install it or set `command`/`executable` in the targets file)"
        ) from None
    except (NotADirectoryError, PermissionError) as exc:
        raise TargetError(f"{name}: cannot start {argv[0]!r}: {exc}") from None
    except subprocess.SubprocessError as exc:  # the child's set-up (`preexec`) failed
        raise TargetError(f"{name}: cannot start {argv[0]!r} in its sandbox: {exc}") from None
    watch_group(process.pid)  # killed at exit, or at once by a second Ctrl-C, if still running
    try:
        lines, tail = await _watched(process, started, timeout_s, name, secrets, watch, explain)
    finally:
        forget_group(process.pid)
    stderr = redact(tail.result().decode("utf-8", "replace"), tuple(secrets))
    return Finished(
        returncode=process.returncode or 0,
        lines=lines,
        stderr=stderr,
        duration_ms=(time.perf_counter() - started) * 1000,
    )


async def _watched(
    process: asyncio.subprocess.Process,
    started: float,
    timeout_s: float,
    name: str,
    secrets: Iterable[str],
    watch: Callable[[Line], str | None] | None,
    explain: Callable[[list[Line]], str | None] | None,
) -> tuple[list[Line], asyncio.Future[bytes]]:
    """Read a started command to its end (`run_command`): its stdout lines and stderr's tail."""
    lines: list[Line] = []
    reading = asyncio.ensure_future(_read_lines(process, lines, started, watch))
    tail = asyncio.ensure_future(_read_tail(process))
    exiting = asyncio.ensure_future(process.wait())
    tasks: list[asyncio.Future[Any]] = [reading, tail, exiting]
    try:  # not wait_for: before Python 3.12 it drops a Ctrl-C landing as the command ends
        async with asyncio.timeout(timeout_s):
            await asyncio.gather(*tasks)
    except TimeoutError:
        await _end(process, tasks)
        detail = explain(lines) if explain is not None else None
        message = f"{name}: timed out after {timeout_s:g} s" + (f" ({detail})" if detail else "")
        raise TargetError(redact(message, tuple(secrets))) from None
    except _Stop as stop:
        await _end(process, tasks)
        raise TargetError(f"{name}: {redact(str(stop), tuple(secrets))}") from None
    except asyncio.CancelledError:
        _kill(process)
        for task in tasks:
            task.cancel()
        raise
    return lines, tail


class _Stop(Exception):
    """Raised while reading to stop the command (the message says why)."""


async def _read_lines(
    process: asyncio.subprocess.Process,
    lines: list[Line],
    started: float,
    watch: Callable[[Line], str | None] | None,
) -> None:
    """Stdout as lines, however long a line is; at most `MAX_STDOUT` bytes in all."""
    assert process.stdout is not None
    pending = bytearray()
    total = 0

    def add(raw: bytes) -> None:
        line = Line(raw.decode("utf-8", "replace").rstrip("\r"), time.perf_counter() - started)
        lines.append(line)
        stop = watch(line) if watch is not None else None
        if stop:
            raise _Stop(stop)

    while chunk := await process.stdout.read(CHUNK):
        total += len(chunk)
        if total > MAX_STDOUT:
            raise _Stop(f"printed more than {MAX_STDOUT // 2**20} MB on stdout; stopped it")
        pending += chunk
        if b"\n" in chunk:
            *complete, rest = bytes(pending).split(b"\n")
            pending = bytearray(rest)
            for raw in complete:
                add(raw)
    if pending:
        add(bytes(pending))


async def _read_tail(process: asyncio.subprocess.Process) -> bytes:
    """Stderr, keeping only its last `MAX_STDERR` bytes."""
    assert process.stderr is not None
    tail = b""
    while chunk := await process.stderr.read(CHUNK):
        tail = (tail + chunk)[-MAX_STDERR:]
    return tail


async def _end(process: asyncio.subprocess.Process, tasks: list[asyncio.Future[Any]]) -> None:
    """Kill the process group and reap it without waiting on a full pipe: the readers are
    stopped, then both pipes are drained to their end (unread output is dropped) while the
    process exits, for at most `REAP_S` seconds (a process that left the group may hold them)."""
    _kill(process)
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)

    async def drain(stream: asyncio.StreamReader | None) -> None:
        while stream is not None and await stream.read(CHUNK):
            pass

    try:
        async with asyncio.timeout(REAP_S):
            await asyncio.gather(drain(process.stdout), drain(process.stderr), process.wait())
    except TimeoutError:  # give the pipes up: close our ends (asyncio has no public way to)
        transport = getattr(process, "_transport", None)
        if transport is not None:
            transport.close()


def _kill(process: asyncio.subprocess.Process) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def failure(name: str, finished: Finished, secrets: Iterable[str] = ()) -> TargetError:
    """The error for a command that exited non-zero, quoting the end of its stderr (else of its
    stdout), starting at a line or word boundary."""
    text = finished.stderr.strip() or redact(finished.stdout.strip(), tuple(secrets))
    tail = _tail(text, STDERR_TAIL)
    return TargetError(f"{name}: exited with code {finished.returncode}" + (f": {tail}" if tail else ""))


def _tail(text: str, limit: int) -> str:
    """The end of `text`, at most `limit` characters, not starting mid-line (or mid-word)."""
    if len(text) <= limit:
        return text
    tail = text[-limit:]
    for boundary in ("\n", " "):
        cut = tail.find(boundary)
        if 0 <= cut < limit // 2:
            return "..." + tail[cut + 1 :]
    return "..." + tail
