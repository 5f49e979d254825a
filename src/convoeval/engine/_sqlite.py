"""SQLite plumbing shared by the response cache and the run store.

Both databases are WAL files: readers never wait for the writer, and a commit survives a killed
process (`synchronous=NORMAL` only risks the last commits on a power loss, never corruption).
Reads are short primary-key lookups done on the caller's thread. Writes go through one
`SqliteWriter` thread per file so that commits (and WAL checkpoints) never stall the event
loop; writes are grouped into one transaction (committed every `GROUP_S`), and a write that
asks to be durable before it is acknowledged is committed at once. Rows that nobody waits for
(a cached reply, a graded turn) are queued as plain statements and inserted with `executemany`.
"""

from __future__ import annotations

import asyncio
import queue
import sqlite3
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, InvalidStateError
from pathlib import Path
from typing import Generic, Protocol, TypeVar

from ..errors import ConvoevalError

#: Writes grouped into one transaction at most.
MAX_BATCH = 4096
#: How often the writer commits the writes that need not be durable at once (one commit and one
#: thread wake-up per write would cost more CPU than the writes; a durable write is not kept waiting).
GROUP_S = 0.05
#: How long a failing write (locked database, full disk) is retried before the file is given up.
WRITE_TIMEOUT_S = 30.0
#: How often a background checkpointer copies the WAL's commits into the database file.
CHECKPOINT_EVERY_S = 0.25
#: WAL pages past which a writer with a background checkpointer still checkpoints in its own
#: commit (SQLite's default, 1000 pages, then applies 16 times over): only when the background
#: checkpoints never catch up with the commits.
FALLBACK_CHECKPOINT_PAGES = 16_000


class StoreError(ConvoevalError):
    """A SQLite file cannot be written (or opened): the message names the file and the cause.

    `damaged` is True when the file is not a (healthy) SQLite database.
    """

    def __init__(self, message: str, damaged: bool = False):
        super().__init__(message)
        self.damaged = damaged


def store_error(path: Path, exc: BaseException) -> StoreError:
    """The StoreError for `exc` raised while using the file at `path`."""
    text = str(exc)
    return StoreError(describe(path, exc), damaged="not a database" in text or "malformed" in text)


def database_files(path: Path) -> list[Path]:
    """A database's file and its journals (`-wal`, `-shm`), which hold its latest writes."""
    return [path, *(path.with_name(path.name + suffix) for suffix in ("-wal", "-shm"))]


def set_aside(path: Path) -> Path:
    """Rename a damaged database (and its -wal/-shm files) to `NAME.damaged-TIMESTAMP`; returns the new name."""
    aside = path.with_name(f"{path.name}.damaged-{time.strftime('%Y%m%d-%H%M%S')}")
    for extra in database_files(path)[1:]:
        if extra.exists():
            extra.unlink()
    path.rename(aside)
    return aside


def unreadable(path: Path, exc: sqlite3.Error) -> str:
    """`cannot read PATH: cause` for a SQLite file a command only reads (damaged, or not one of
    convoeval's: a table or column missing)."""
    return f"cannot read {path}: {exc} (the file is damaged or not convoeval's; move it away or use another --store)"


def describe(path: Path, exc: BaseException) -> str:
    """`cannot write PATH: cause` with a hint for the usual causes."""
    if isinstance(exc, OSError) and exc.strerror:
        cause = exc.strerror + (f" ({exc.filename})" if exc.filename else "")
    else:
        cause = str(exc) or type(exc).__name__
    hint = ""
    if "locked" in cause or "busy" in cause:
        hint = " (another process holds its write lock; stop it or use another --store)"
    elif "full" in cause:
        hint = " (the disk is full; free space or use another --store)"
    elif isinstance(exc, (FileExistsError, NotADirectoryError)):
        hint = " (a file stands where a folder is needed; move it or use another --store)"
    elif isinstance(exc, OSError) or any(w in cause.lower() for w in ("readonly", "unable to open")):
        hint = " (make it writable, or put the state elsewhere with --store DIR or CONVOEVAL_HOME)"
    elif any(w in cause for w in ("not a database", "malformed", "no such table", "no such column", "has no column")):
        hint = " (the file is damaged or not convoeval's; move it away or use another --store)"
    return f"cannot write {path}: {cause}{hint}"


def connect(path: Path, schema: str = "", timeout: float = 30.0) -> sqlite3.Connection:
    """A connection in autocommit mode with WAL journaling; `schema` is run once (idempotent DDL)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=timeout)
    try:
        conn.execute("PRAGMA synchronous=NORMAL")  # first: a new file turns to WAL with one sync less
        conn.execute("PRAGMA journal_mode=WAL")
        if schema:
            conn.executescript(schema)
    except BaseException:
        conn.close()
        raise
    return conn


T = TypeVar("T")
#: Called on the writer's thread with a queued row's parameters once it is committed (or dropped).
Done = Callable[[tuple[object, ...]], object]
#: A queued statement nobody waits for: (SQL, parameters, done or None).
_Row = tuple[str, tuple[object, ...], Done | None]


class _Queued(Protocol):
    """A queued write, whatever its result type."""

    durable: bool

    def attempt(self, conn: sqlite3.Connection) -> None: ...

    def settle(self) -> None: ...

    def fail(self, error: BaseException) -> None: ...


class _Write(Generic[T]):
    """One write: `fn`, the future its caller holds, and its outcome in the current transaction."""

    def __init__(self, fn: Callable[[sqlite3.Connection], T], durable: bool):
        self.fn = fn
        self.durable = durable
        self.future: Future[T] = Future()
        self._outcome: tuple[T] | Exception | None = None

    def attempt(self, conn: sqlite3.Connection) -> None:
        """Run `fn` in the open transaction. A database error (locked, full, I/O) propagates, so
        the whole transaction is retried; any other error fails this write only."""
        try:
            self._outcome = (self.fn(conn),)
        except sqlite3.OperationalError:
            raise
        except Exception as exc:  # one bad write must not lose the others
            self._outcome = exc

    def settle(self) -> None:
        """After the commit: hand the outcome to the caller (unless it gave up waiting: the
        future cancelled, as when the command ends on a closed pipe)."""
        try:
            if isinstance(self._outcome, Exception):
                self.future.set_exception(self._outcome)
            elif self._outcome is not None:
                self.future.set_result(self._outcome[0])
        except InvalidStateError:
            pass

    def fail(self, error: BaseException) -> None:
        try:
            self.future.set_exception(error)
        except InvalidStateError:  # failed by the other thread meanwhile
            pass


class SqliteWriter:
    """One thread that owns a write connection and runs the writes it is given, in order.

    `submit(fn)` queues `fn(connection)` and returns a concurrent Future; `await write(fn)`
    waits until it is committed; `add(sql, params)` queues one statement nobody waits for (no
    Future: consecutive ones with the same SQL go to one `executemany`). Writes share
    transactions: the thread commits what is queued every `group_s`, or at once when a `durable`
    write (committed, with whatever was queued before it, before its Future resolves) or `close`
    wakes it. A write that need not be durable wakes nobody, so it costs the caller's thread a
    deque append.

    A transaction that fails with a database error (locked, disk full, I/O) is rolled back and
    retried until `timeout_s` has passed; then the writer gives up: that write, every queued
    one and every later one fail with one `StoreError` naming the file and the cause. What was
    committed before stays on disk.
    """

    def __init__(
        self,
        path: Path,
        schema: str = "",
        name: str = "convoeval-sqlite",
        timeout_s: float | None = None,
        group_s: float = GROUP_S,
        cache_mib: int | None = None,
        checkpoint_in_background: bool = False,
    ):
        self.path = path
        self.timeout_s = WRITE_TIMEOUT_S if timeout_s is None else timeout_s
        self.group_s = group_s
        self.error: StoreError | None = None
        self._items: deque[_Queued | _Row] = deque()
        self._wake: queue.SimpleQueue[None] = queue.SimpleQueue()
        self._waking = False  # a wake-up is queued that the thread has not taken yet
        self._busy_ms = int(min(self.timeout_s, 5.0) * 1000)  # the connection's busy timeout
        try:
            self._conn = connect(path, schema, timeout=self._busy_ms / 1000)
            if cache_mib is not None:  # pages kept in memory (SQLite's default is 2 MiB)
                self._conn.execute(f"PRAGMA cache_size = -{cache_mib * 1024}")
        except (sqlite3.Error, OSError) as exc:
            raise store_error(path, exc) from None
        self._checkpointer = _Checkpointer.start(path, self._conn, name) if checkpoint_in_background else None
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._closed = False
        self._thread.start()

    def submit(
        self,
        fn: Callable[[sqlite3.Connection], T],
        *,
        durable: bool = False,
        loop: asyncio.AbstractEventLoop | None = None,
    ) -> Future[T]:
        """Queue `fn(connection)`; a `durable` write wakes the thread, at once or, given the
        running `loop` (whose thread must not block on the Future), once the loop has run the
        callbacks it is running: the writes they queue share the commit."""
        item = _Write(fn, durable)
        if self.error is not None:
            item.fail(self.error)
        elif self._closed:
            item.fail(RuntimeError(f"{self.path} is closed"))
        else:
            self._items.append(item)
            # one wake-up for the durable writes queued before it; a caller that may block gets its own
            if durable and (loop is None or not self._waking):
                self._waking = True
                if loop is None:
                    self._wake.put(None)
                else:
                    loop.call_soon(self._wake.put, None)
            if self.error is not None:  # the writer gave up meanwhile: it may never see this item
                self._fail_queued()
        return item.future

    def add(self, sql: str, params: tuple[object, ...], done: Done | None = None) -> bool:
        """Queue one statement nobody waits for; `done(params)` is called on the writer's thread
        once it is committed (or dropped: a row that fails on its own, a constraint, is dropped
        without losing the others). Returns False, queuing nothing, once the writer has given
        up (the next awaited write raises its StoreError) or is closed."""
        if self.error is not None or self._closed:
            return False
        self._items.append((sql, params, done))
        if self.error is not None:  # the writer gave up meanwhile: it may never see this row
            self._fail_queued()
        return True

    async def write(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run `fn` on the writer thread and wait until it is committed (with the other writes
        the event loop's current callbacks queue: tests that finish together share a commit)."""
        loop = asyncio.get_running_loop()
        return await asyncio.wrap_future(self.submit(fn, durable=True, loop=loop), loop=loop)

    def close(self) -> None:
        """Commit what is queued and stop the thread (idempotent)."""
        if self._closed:
            return
        self._closed = True
        if self._checkpointer is not None:
            self._checkpointer.close()
        self._wake.put(None)
        self._thread.join()
        self._conn.close()

    def _run(self) -> None:
        while True:
            try:
                self._wake.get(timeout=self.group_s)
            except queue.Empty:
                pass
            self._waking = False  # before taking the writes: one queued after this wakes it again
            stop = self._closed  # read first: every write submitted before `close` is queued by now
            while self._items:
                batch = [self._items.popleft() for _ in range(min(len(self._items), MAX_BATCH))]
                try:
                    self._commit(batch)
                except sqlite3.Error as exc:
                    self.error = store_error(self.path, exc)
                    for failed in batch:
                        if not isinstance(failed, tuple):
                            failed.fail(self.error)
                    self._fail_queued()
                    return
                _settle(batch)
            if stop:
                return

    def _commit(self, batch: list[_Queued | _Row]) -> None:
        """Run the batch in one transaction, retrying database errors until the timeout."""
        conn = self._conn
        deadline = time.monotonic() + self.timeout_s
        delay = 0.01
        while True:
            try:
                wait_ms = min(int(max(0.0, deadline - time.monotonic()) * 1000), 5000)
                if wait_ms != self._busy_ms:  # the usual 5 s is set once
                    conn.execute(f"PRAGMA busy_timeout = {wait_ms}")
                    self._busy_ms = wait_ms
                conn.execute("BEGIN IMMEDIATE")
                _attempt(conn, batch)
                conn.execute("COMMIT")
                return
            except sqlite3.OperationalError:
                if conn.in_transaction:
                    try:
                        conn.execute("ROLLBACK")
                    except sqlite3.Error:
                        pass
                if time.monotonic() + delay > deadline:
                    raise
                time.sleep(delay)
                delay = min(delay * 2, 0.5)

    def _fail_queued(self) -> None:
        while True:
            try:
                item = self._items.popleft()
            except IndexError:
                return
            if self.error is not None and not isinstance(item, tuple):
                item.fail(self.error)


class _Checkpointer:
    """Copies a WAL file's commits into its database on a thread and connection of its own, so
    that no commit waits for the copy.

    SQLite checkpoints in the commit that takes the WAL past 1000 pages: that commit (and every
    write waiting for it: finished tests, at the end of a large run) waits for the copy and its
    two fsyncs, which on a busy disk took up to half a second. The writer's connection
    checkpoints itself only past FALLBACK_CHECKPOINT_PAGES instead, and this thread runs a
    PASSIVE checkpoint every CHECKPOINT_EVERY_S, which never blocks the writer or a reader (a
    commit made meanwhile is copied by the next one). Durability is SQLite's, as before: a
    commit is in the WAL; a checkpoint only moves it. A checkpoint that fails (a locked or full
    disk) is left to the next one, and to the last connection's close, which copies what is left.
    """

    def __init__(self, conn: sqlite3.Connection, name: str):
        self._conn = conn
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"{name}-checkpoints", daemon=True)

    @classmethod
    def start(cls, path: Path, writer: sqlite3.Connection, name: str) -> _Checkpointer | None:
        """The checkpointer of `path`, its writer connection set to leave the checkpoints to it;
        None (the writer checkpointing as SQLite does) when its connection cannot be opened."""
        try:
            conn = connect(path)
        except (sqlite3.Error, OSError):
            return None
        writer.execute(f"PRAGMA wal_autocheckpoint = {FALLBACK_CHECKPOINT_PAGES}")
        checkpointer = cls(conn, name)
        checkpointer._thread.start()
        return checkpointer

    def _run(self) -> None:
        while not self._stop.wait(CHECKPOINT_EVERY_S):
            try:
                self._conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
            except sqlite3.Error:
                pass

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self._conn.close()


def _attempt(conn: sqlite3.Connection, batch: list[_Queued | _Row]) -> None:
    """Run a batch in the open transaction: each write on its own, each run of rows with the same
    SQL in one `executemany`."""
    start, end = 0, len(batch)
    while start < end:
        item = batch[start]
        if not isinstance(item, tuple):
            item.attempt(conn)
            start += 1
            continue
        rows, start = [item[1]], start + 1
        while start < end and isinstance(following := batch[start], tuple) and following[0] == item[0]:
            rows.append(following[1])
            start += 1
        _insert_rows(conn, item[0], rows)


def _insert_rows(conn: sqlite3.Connection, sql: str, rows: list[tuple[object, ...]]) -> None:
    """`executemany`; when a row fails on its own (a constraint, a value SQLite cannot take), the
    rows go one by one and the failing ones are dropped. A database error (locked, full, I/O)
    propagates, so the whole transaction is retried."""
    if len(rows) == 1:
        try:
            conn.execute(sql, rows[0])
        except sqlite3.OperationalError:
            raise
        except Exception:  # this row only
            pass
        return
    conn.execute("SAVEPOINT rows")
    try:
        conn.executemany(sql, rows)
    except sqlite3.OperationalError:
        raise
    except Exception:  # one bad row must not lose the others
        conn.execute("ROLLBACK TO rows")
        for row in rows:
            try:
                conn.execute(sql, row)
            except sqlite3.OperationalError:
                raise
            except Exception:
                pass
    conn.execute("RELEASE rows")


def _settle(batch: list[_Queued | _Row]) -> None:
    """After the commit: hand each write its outcome, tell each row's `done`."""
    for item in batch:
        if not isinstance(item, tuple):
            item.settle()
        elif item[2] is not None:
            try:
                item[2](item[1])
            except Exception:  # a caller's bookkeeping must not stop the writer
                pass
