"""SQLite plumbing shared by the response cache and the run store.

Both databases are WAL files: readers never wait for the writer, and a commit survives a killed
process (`synchronous=NORMAL` only risks the last commits on a power loss, never corruption).
Reads are short primary-key lookups done on the caller's thread. Writes go through one
`SqliteWriter` thread per file so that commits (and WAL checkpoints) never stall the event
loop; consecutive writes are grouped into one transaction unless a write asks to be durable
before it is acknowledged.
"""

from __future__ import annotations

import asyncio
import queue
import sqlite3
import threading
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import Any

#: Writes grouped into one transaction at most (when they arrive faster than they commit).
MAX_BATCH = 512


def connect(path: Path, schema: str = "") -> sqlite3.Connection:
    """A connection in autocommit mode with WAL journaling; `schema` is run once (idempotent DDL)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=30.0)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    if schema:
        conn.executescript(schema)
    return conn


Write = Callable[[sqlite3.Connection], Any]


class SqliteWriter:
    """One thread that owns a write connection and runs the writes it is given, in order.

    `submit(fn)` queues `fn(connection)` and returns a concurrent Future; `await write(fn)`
    waits until it is committed. Writes that arrive together share a transaction; a `durable`
    write is committed (with whatever was queued before it) before its Future resolves.
    """

    def __init__(self, path: Path, schema: str = "", name: str = "convoeval-sqlite"):
        self.path = path
        self._queue: queue.SimpleQueue[tuple[Write, Future[Any], bool] | None] = queue.SimpleQueue()
        self._conn = connect(path, schema)
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()
        self._closed = False

    def submit(self, fn: Write, *, durable: bool = False) -> Future[Any]:
        future: Future[Any] = Future()
        if self._closed:
            future.set_exception(RuntimeError(f"{self.path} is closed"))
        else:
            self._queue.put((fn, future, durable))
        return future

    async def write(self, fn: Write) -> Any:
        """Run `fn` on the writer thread and wait until it is committed."""
        return await asyncio.wrap_future(self.submit(fn, durable=True))

    def close(self) -> None:
        """Commit what is queued and stop the thread (idempotent)."""
        if self._closed:
            return
        self._closed = True
        self._queue.put(None)
        self._thread.join()
        self._conn.close()

    def _run(self) -> None:
        conn = self._conn
        while True:
            item = self._queue.get()
            done: list[tuple[Future[Any], Any, BaseException | None]] = []
            stop = item is None
            if not stop:
                conn.execute("BEGIN IMMEDIATE")
            while item is not None:
                fn, future, durable = item
                try:
                    done.append((future, fn(conn), None))
                except Exception as exc:  # one bad write must not lose the others
                    done.append((future, None, exc))
                if durable or len(done) >= MAX_BATCH:
                    break
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
                if item is None:
                    stop = True
            if done:
                try:
                    conn.execute("COMMIT")
                except sqlite3.Error as exc:
                    conn.execute("ROLLBACK")
                    done = [(future, None, exc) for future, _, _ in done]
            for future, result, error in done:
                if error is not None:
                    future.set_exception(error)
                else:
                    future.set_result(result)
            if stop:
                return
