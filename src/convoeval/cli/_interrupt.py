"""Ctrl-C (SIGINT) and SIGTERM during `convoeval run` and the arena: the first one stops the work,
a second one ends the process. SIGTERM (how CI systems cancel a job) is handled as Ctrl-C is;
the exit code is 130 after Ctrl-C, 143 after SIGTERM (`_stop`).

`Interrupts.run` handles both: the first signal
cancels the work's task: every trial unwinds, its commands are killed and their cgroups removed,
what was recorded stays, and the command says how to resume. A second signal (or one after an
interrupted run, while the process ends) does not wait for any of that: the commands still
running are killed, the message is written and the process exits at once, with no traceback from
wherever the signal landed.

Both signals are handled there even when the command was started with them ignored (a background
job of a shell script inherits SIGINT ignored): a run that a `kill -INT` cannot stop goes on
spending calls, and was how a test of Ctrl-C hung under a harness that started pytest in the
background.
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
from ._stop import STOP_SIGNALS, exit_code, interrupted_message, received

T = TypeVar("T")


class Interrupts:
    """SIGINT and SIGTERM while one piece of async work goes on (see the module docstring);
    `run_id` names the run for the resume hint once it is known."""

    def __init__(self, run_id: Callable[[], str | None] = lambda: None):
        self.run_id = run_id
        self.count = 0
        self.signum: int | None = None
        self._previous: dict[int, Any] = {}
        self._installed = False

    @property
    def exit_code(self) -> int:
        """130 when Ctrl-C stopped the work, 143 when SIGTERM did."""
        return exit_code(self.signum)

    def message(self) -> str:
        return interrupted_message(self.run_id(), self.signum)

    def run(self, work: Coroutine[Any, Any, T]) -> T:
        """`asyncio.run(work)` with SIGINT and SIGTERM handled as the module docstring says."""
        if threading.current_thread() is threading.main_thread():
            # before asyncio.run puts in its own SIGINT handler
            self._previous = {s: signal.getsignal(s) for s in STOP_SIGNALS}
        try:
            return asyncio.run(self._guard(work))
        finally:
            self._restore()

    async def _guard(self, work: Awaitable[T]) -> T:
        """Await `work` in the task whose cancellation the first signal requests."""
        if threading.current_thread() is threading.main_thread():
            loop, task = asyncio.get_running_loop(), asyncio.current_task()
            assert task is not None

            def on_signal(signum: int, frame: FrameType | None) -> None:
                self.count += 1
                if self.count == 1:
                    self.signum = signum
                    received(signum)
                    if not task.done():
                        # thread-safe: it also wakes the loop, asleep in select() when the signal came
                        loop.call_soon_threadsafe(task.cancel)
                        return
                self.end_now()

            for stop in STOP_SIGNALS:
                signal.signal(stop, on_signal)
            self._installed = True
        return await work

    def _restore(self) -> None:
        """After the work: the previous handling again, unless the work was interrupted (then a
        further signal, while the process ends, ends it at once)."""
        if self._installed and not self.count:
            for stop, previous in self._previous.items():
                signal.signal(stop, signal.SIG_DFL if previous is None else previous)
            self._installed = False

    def end_now(self) -> None:
        """Kill the commands still running, say how to resume, and exit without unwinding."""
        end_all_now()
        try:  # not through sys.stderr: the signal may have landed in the middle of a write to it
            os.write(2, (self.message() + "\n").encode())
        finally:
            os._exit(self.exit_code)
