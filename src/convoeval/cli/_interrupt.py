"""Ctrl-C during `convoeval run`: the first one stops the run, a second one ends the process.

The first SIGINT cancels the run's task: every trial unwinds, its commands are killed and their
cgroups removed, what was recorded stays, and the command says how to resume (exit 130). A
second SIGINT (or one after an interrupted run, while the process ends) does not wait for any
of that: the commands still running are killed, the resume hint is written and the process
exits 130 at once, with no traceback from wherever the signal landed.

SIGINT is handled even when `convoeval run` was started with it ignored (a background job of a
shell script inherits SIGINT ignored): a run that a `kill -INT` cannot stop goes on spending
calls, and was how a test of Ctrl-C hung under a harness that started pytest in the background.
"""

from __future__ import annotations

import asyncio
import os
import signal
import threading
from collections.abc import Awaitable, Callable, Coroutine
from types import FrameType
from typing import Any, TypeVar

from .._sandbox import end_all_now

T = TypeVar("T")


def interrupted_message(run_id: str | None) -> str:
    """What an interrupted run prints on stderr."""
    return "interrupted" + (f"; finish the run with: convoeval run --resume {run_id}" if run_id else "")


class Interrupts:
    """SIGINT while one run goes on (see the module docstring); `run_id` names the run for the
    resume hint once it is known."""

    def __init__(self, run_id: Callable[[], str | None]):
        self.run_id = run_id
        self.count = 0
        self._previous: Any = None
        self._installed = False

    def run(self, work: Coroutine[Any, Any, T]) -> T:
        """`asyncio.run(work)` with SIGINT handled as the module docstring says."""
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.getsignal(signal.SIGINT)  # before asyncio.run puts in its own
        try:
            return asyncio.run(self._guard(work))
        finally:
            self._restore()

    async def _guard(self, work: Awaitable[T]) -> T:
        """Await `work` (the run) in the task whose cancellation the first SIGINT requests."""
        if threading.current_thread() is threading.main_thread():
            loop, task = asyncio.get_running_loop(), asyncio.current_task()
            assert task is not None

            def on_sigint(signum: int, frame: FrameType | None) -> None:
                self.count += 1
                if self.count == 1 and not task.done():
                    # thread-safe: it also wakes the loop, asleep in select() when the signal came
                    loop.call_soon_threadsafe(task.cancel)
                    return
                self.end_now()

            signal.signal(signal.SIGINT, on_sigint)
            self._installed = True
        return await work

    def _restore(self) -> None:
        """After the run: the previous SIGINT handling again, unless the run was interrupted (then
        a further Ctrl-C, while the process ends, ends it at once)."""
        if self._installed and not self.count:
            signal.signal(signal.SIGINT, signal.SIG_DFL if self._previous is None else self._previous)
            self._installed = False

    def end_now(self) -> None:
        """Kill the commands still running, say how to resume, and exit 130 without unwinding."""
        end_all_now()
        try:  # not through sys.stderr: the signal may have landed in the middle of a write to it
            os.write(2, (interrupted_message(self.run_id()) + "\n").encode())
        finally:
            os._exit(130)
