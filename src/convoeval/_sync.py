"""The synchronous API's event loop: `convoeval.run` works from a Jupyter cell or an async test too."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def run_sync(work: Coroutine[Any, Any, T]) -> T:
    """`asyncio.run(work)`; where an event loop is already running in this thread (a Jupyter
    cell, an async test), `work` runs on a thread and loop of its own while the caller waits,
    as Inspect's and DeepEval's synchronous calls do there. Interrupting the wait (Ctrl-C, a
    kernel interrupt) cancels `work` and waits for it to end."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(work)
    started, ended = threading.Event(), threading.Event()
    box: dict[str, Any] = {}

    async def main() -> T:
        box["loop"], box["task"] = asyncio.get_running_loop(), asyncio.current_task()
        started.set()
        return await work

    def thread_main() -> None:
        try:
            box["result"] = asyncio.run(main())
        except BaseException as exc:  # given to the caller
            box["error"] = exc
        finally:
            started.set()
            ended.set()

    thread = threading.Thread(target=thread_main, name="convoeval-run", daemon=True)
    thread.start()
    try:
        ended.wait()  # not `thread.join()`: an interrupted join takes the thread for ended (Python 3.11)
    except BaseException:
        started.wait()
        if "loop" in box:
            with contextlib.suppress(RuntimeError):  # its loop closed: `work` has ended
                box["loop"].call_soon_threadsafe(box["task"].cancel)
        ended.wait()
        raise
    if "error" in box:
        raise box["error"]
    return box["result"]
