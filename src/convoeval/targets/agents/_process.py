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
import contextlib
import errno
import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterable, Sequence
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
#: Longest wait, after SIGTERM, for a stopped command to end before its process group gets
#: SIGKILL: Claude Code ends the commands it started (each in a session of its own, out of the
#: group's reach) on SIGTERM, and SIGKILL would leave them running.
TERM_GRACE_S = 3.0
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


class Stopped(TargetError):
    """The command was stopped before its end (`timed_out`, or by `watch`): with the lines it had printed."""

    def __init__(self, message: str, lines: list[Line], timed_out: bool = False):
        super().__init__(message)
        self.lines = lines
        self.timed_out = timed_out


def work_dir(config: TargetConfig, cwd: str | None) -> Path | None:
    """A configured `cwd`, relative to the targets file's folder (None: convoeval's own)."""
    return None if cwd is None else config.source_dir / cwd


def target_key(config: TargetConfig, key_names: Sequence[str]) -> tuple[list[str], str] | None:
    """The key a target gives an agent CLI, and the variables the CLI gets it in (None: the target
    gives none, the CLI reads its own variables).

    The key is `api_key`, else the variable `api_key_env` names. The CLI gets it as the first of
    its `key_names` (ANTHROPIC_API_KEY, OPENAI_API_KEY: what it reads), or as `api_key_env` when
    that is one of them, and under the `api_key_env` name as well (a Codex model provider whose
    `env_key` names it).

    Raises:
        TargetError: the key is empty, or `api_key_env` names a variable that is not set.
    """
    if config.api_key is None and not config.api_key_env:
        return None
    value = config.resolve_api_key()
    if not value:
        missing = f"set {config.api_key_env} (api_key_env)" if config.api_key is None else "api_key is empty"
        raise TargetError(f"{config.name}: no API key: {missing}")
    named = config.api_key_env
    own = named if named is not None and named in key_names else key_names[0]
    return list(dict.fromkeys([own, named] if named else [own])), value


def agent_env(
    config: TargetConfig,
    settings: ProcessSettings,
    provider_keys: Iterable[str] = (),
    key_names: Sequence[str] = (),
) -> tuple[dict[str, str], list[str]]:
    """The environment of an agent process, and the secret values in it (to redact).

    Args:
        config: the target's config (`api_key_env` names a key variable copied too).
        settings: `env` (a mapping set as is), `env_passthrough` (names copied from the parent).
        provider_keys: variables the provider itself needs (e.g. ANTHROPIC_API_KEY).
        key_names: the CLI's key variables: the key the target gives (`target_key`) replaces
            what convoeval's environment holds in them.

    Raises:
        TargetError: the target names a key that is not there (`target_key`).
    """
    given = target_key(config, key_names) if key_names else None
    names = [*BASE_ENV, *provider_keys, *settings.env_passthrough]
    if given is not None:
        names = [name for name in names if name not in key_names]
    elif config.api_key_env:
        names.append(config.api_key_env)
    env = {name: os.environ[name] for name in names if name in os.environ}
    if given is not None:
        env.update(dict.fromkeys(given[0], given[1]))
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
    stdin: str | None = None,
    done: Callable[[Line], bool] | None = None,
) -> Finished:
    """Run a command to its end (stopping it after `timeout_s`, see `_end`).

    Stdout is read in chunks and split into lines with no limit on a line's length (only on
    the whole output, `MAX_STDOUT` bytes). `watch` sees every line as it arrives: a message
    it returns stops the command at once and becomes the error. `explain` reads the lines
    printed so far when the command times out: what it says is added to the error. `preexec`
    runs in the child before the program (its limits). `stdin` is written to the command's
    standard input, which is then closed (without it, the input is empty). `done` sees every
    line too: True says the command has said all it will (a CLI that answered but stays up for
    the commands it left running): it is ended as at a timeout (`_end`) and its lines so far
    are its output, with no stderr.

    Raises:
        TargetError: the executable is missing or its command line is too long; `Stopped`
            (with the lines printed so far): the command timed out, printed too much, or
            `watch` stopped it.
    """
    started = time.perf_counter()
    pipes: dict[str, object] = {
        "stdin": asyncio.subprocess.DEVNULL if stdin is None else PIPE,
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
    except OSError as exc:
        if exc.errno != errno.E2BIG:
            raise
        size = sum(len(a.encode()) for a in argv) // 1024
        raise TargetError(f"{name}: cannot start the command: its command line is too long ({size} KiB)") from None
    watch_group(process.pid)  # killed at exit, or at once by a second Ctrl-C, if still running
    try:
        data = stdin.encode() if stdin is not None else None
        lines, tail = await _watched(process, started, timeout_s, name, secrets, watch, explain, data, done)
    finally:
        forget_group(process.pid)
    stderr = "" if tail.cancelled() else redact(tail.result().decode("utf-8", "replace"), tuple(secrets))
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
    stdin: bytes | None = None,
    done: Callable[[Line], bool] | None = None,
) -> tuple[list[Line], asyncio.Future[bytes]]:
    """Read a started command to its end (`run_command`), writing `stdin` to its input: its
    stdout lines and stderr's tail (cancelled: `done` ended it)."""
    lines: list[Line] = []
    reading = asyncio.ensure_future(_read_lines(process, lines, started, watch, done))
    tail = asyncio.ensure_future(_read_tail(process))
    exiting = asyncio.ensure_future(process.wait())
    tasks: list[asyncio.Future[Any]] = [reading, tail, exiting]
    if stdin is not None:
        tasks.append(asyncio.ensure_future(_feed(process, stdin)))
    try:  # not wait_for: before Python 3.12 it drops a Ctrl-C landing as the command ends
        async with asyncio.timeout(timeout_s):
            await asyncio.gather(*tasks)
    except TimeoutError:
        await _end(process, tasks)
        detail = explain(lines) if explain is not None else None
        message = f"{name}: timed out after {timeout_s:g} s" + (f" ({detail})" if detail else "")
        raise Stopped(redact(message, tuple(secrets)), lines, timed_out=True) from None
    except _Stop as stop:
        await _end(process, tasks)
        raise Stopped(f"{name}: {redact(str(stop), tuple(secrets))}", lines) from None
    except _Done:
        await _end(process, tasks)
    except asyncio.CancelledError:  # Ctrl-C, SIGTERM: the command ends as at a timeout
        await _end(process, tasks)
        raise
    return lines, tail


async def _feed(process: asyncio.subprocess.Process, data: bytes) -> None:
    """Write `data` to the command's input and close it (a command that exits without reading
    it all is not an error: what it said tells)."""
    assert process.stdin is not None
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        process.stdin.write(data)
        await process.stdin.drain()
    process.stdin.close()


class _Stop(Exception):
    """Raised while reading to stop the command (the message says why)."""


class _Done(Exception):
    """Raised while reading: the command has said all it will (`run_command`'s `done`)."""


async def _read_lines(
    process: asyncio.subprocess.Process,
    lines: list[Line],
    started: float,
    watch: Callable[[Line], str | None] | None,
    done: Callable[[Line], bool] | None = None,
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
        if done is not None and done(line):
            raise _Done

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
    """Stop the command and reap it without waiting on a full pipe: the readers are stopped,
    its process group gets SIGTERM, then SIGKILL once the command has ended or `TERM_GRACE_S`
    have passed (cancelled meanwhile: at once); both pipes are drained all along (unread output
    is dropped), until they close or `REAP_S` seconds after the SIGKILL (a process that left
    the group may hold them)."""
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)

    async def drain(stream: asyncio.StreamReader | None) -> None:
        while stream is not None and await stream.read(CHUNK):
            pass

    draining = asyncio.gather(drain(process.stdout), drain(process.stderr), return_exceptions=True)
    try:
        try:
            _signal(process, signal.SIGTERM)
            ends = time.monotonic() + TERM_GRACE_S
            while process.returncode is None and time.monotonic() < ends:
                await asyncio.sleep(0.02)
        finally:
            _signal(process, signal.SIGKILL)  # what is left of the group (all of it after the grace)
        async with asyncio.timeout(REAP_S):
            await asyncio.gather(draining, process.wait())
    except TimeoutError:  # give the pipes up: close our ends (asyncio has no public way to)
        transport = getattr(process, "_transport", None)
        if transport is not None:
            transport.close()
    finally:
        draining.cancel()


def _signal(process: asyncio.subprocess.Process, signum: signal.Signals) -> None:
    """Send `signum` to the command's process group."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signum)


def failure(name: str, finished: Finished, secrets: Iterable[str] = (), events: bool = False) -> TargetError:
    """The error for a command that exited non-zero (or a signal killed), quoting the end of its
    stderr (else of its stdout, unless `events`: its stdout is JSON events, no words for a
    person), starting at a line or word boundary."""
    stdout = "" if events else redact(finished.stdout.strip(), tuple(secrets))
    tail = ending(finished.stderr.strip() or stdout, STDERR_TAIL)
    code = finished.returncode
    how = f"was killed by {_signal_name(-code)}" if code < 0 else f"exited with code {code}"
    return TargetError(f"{name}: {how}" + (f": {tail}" if tail else ""))


def _signal_name(number: int) -> str:
    """`SIGKILL` for 9; `signal N` for a number Python does not name."""
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def ending(text: str, limit: int) -> str:
    """The end of `text`, at most `limit` characters, not starting mid-line (or mid-word)."""
    if len(text) <= limit:
        return text
    tail = text[-limit:]
    for boundary in ("\n", " "):
        cut = tail.find(boundary)
        if 0 <= cut < limit // 2:
            return "..." + tail[cut + 1 :]
    return "..." + tail
