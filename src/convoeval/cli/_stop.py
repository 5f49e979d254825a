"""Which signal stopped this command, and the exit code it makes: 128 + its number, as a shell
reports a process a signal ended (130 for Ctrl-C, 143 for SIGTERM, what CI systems send to
cancel a job). Also SIGTERM for commands without handlers of their own (`stop_on_sigterm`, put
in force by `main`): it raises `Stopped`, a KeyboardInterrupt, so the command unwinds from it as
from Ctrl-C (`cli._interrupt` handles both signals while a run goes on)."""

from __future__ import annotations

import signal
import threading
from types import FrameType

#: The signals that stop a command: Ctrl-C and a CI job's cancellation.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)

#: The first stop signal this process received, when one came through our handlers.
_stopped_by: int | None = None


class Stopped(KeyboardInterrupt):
    """SIGTERM in a command without a handler of its own: unwinds as Ctrl-C does."""


def received(signum: int) -> None:
    """Note the stop signal that came (the first one decides the exit code)."""
    global _stopped_by
    if _stopped_by is None:
        _stopped_by = signum


def exit_code(signum: int | None = None) -> int:
    """128 + the signal's number: 130 after Ctrl-C (the default), 143 after SIGTERM."""
    return 128 + int(signum or _stopped_by or signal.SIGINT)


def stopped_code(code: object) -> object:
    """A command's exit code, with typer's 130 for a KeyboardInterrupt made 143 when SIGTERM
    raised it (`Stopped`)."""
    return exit_code() if code == 130 and _stopped_by is not None else code


def interrupted_message(run_id: str | None, signum: int | None = None) -> str:
    """What an interrupted run prints on stderr."""
    what = "terminated (SIGTERM)" if (signum or _stopped_by) == signal.SIGTERM else "interrupted"
    return what + (f"; finish the run with: convoeval run --resume {run_id}" if run_id else "")


def _raise_stopped(signum: int, frame: FrameType | None) -> None:
    received(signum)
    raise Stopped


def stop_on_sigterm() -> None:
    """From now on SIGTERM raises `Stopped` in the main thread (unless it is ignored)."""
    if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _raise_stopped)
