"""Rows nobody waits for (cached replies, graded turns): queued without a Future, inserted with
executemany, each failing row dropped alone; what the cache holds is found before and after its
commit, and a lookup of a key the cache file cannot hold reads nothing."""

from __future__ import annotations

import asyncio
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from convoeval.engine import ResponseCache, _key_filter, _sqlite
from convoeval.engine._cache import reply_from_json
from convoeval.engine._sqlite import SqliteWriter

SCHEMA = "CREATE TABLE IF NOT EXISTS t (k INTEGER PRIMARY KEY, v TEXT NOT NULL);"
INSERT = "INSERT INTO t (k, v) VALUES (?, ?)"


def _rows(path: Path) -> list[tuple[int, str]]:
    with sqlite3.connect(path) as conn:
        return conn.execute("SELECT k, v FROM t ORDER BY k").fetchall()


def test_rows_are_committed_and_a_failing_row_is_dropped_alone(tmp_path: Path) -> None:
    path = tmp_path / "w.sqlite"
    writer = SqliteWriter(path, SCHEMA)
    done: list[tuple[object, ...]] = []
    try:
        for k in range(50):
            assert writer.add(INSERT, (k, f"v{k}"), done.append)
        writer.add(INSERT, (7, "a second row 7"), done.append)  # fails the primary key: dropped
        writer.add(INSERT, (60, None), done.append)  # fails NOT NULL: dropped
        writer.add("INSERT INTO t (v, k) VALUES (?, ?)", ("v61", 61))  # other SQL: a statement of its own
        for k in range(70, 80):
            writer.add(INSERT, (k, f"v{k}"), done.append)
        committed = writer.submit(lambda c: c.execute("SELECT COUNT(*) FROM t").fetchone()[0], durable=True)
        assert committed.result(timeout=5) == 61  # the durable write ran after every row queued before it
    finally:
        writer.close()
    assert _rows(path) == [(k, f"v{k}") for k in [*range(50), 61, *range(70, 80)]]
    assert len(done) == 62  # every row's `done` ran, the dropped ones' too, each once
    assert done.count((7, "a second row 7")) == 1 and (60, None) in done


_HOLD_LOCK = """
import sqlite3, sys, time
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN IMMEDIATE")
print("locked", flush=True)
time.sleep(float(sys.argv[2]))
"""


def _hold_lock(db: Path, seconds: float) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", _HOLD_LOCK, str(db), str(seconds)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "locked"
    return proc


def test_rows_wait_out_a_short_lock_and_stop_being_queued_once_the_writer_gives_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "w.sqlite"
    writer = SqliteWriter(path, SCHEMA, group_s=0.01)
    locker = _hold_lock(path, 0.3)
    try:
        writer.add(INSERT, (1, "one"))
        locker.wait()
        deadline = time.monotonic() + 5
        while not _rows(path) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert _rows(path) == [(1, "one")]  # retried after the lock was released
    finally:
        writer.close()
    monkeypatch.setattr(_sqlite, "WRITE_TIMEOUT_S", 0.2)
    writer = SqliteWriter(path, SCHEMA, group_s=0.01)
    locker = _hold_lock(path, 30)
    try:
        writer.add(INSERT, (2, "two"))
        deadline = time.monotonic() + 5
        while writer.error is None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert writer.error is not None and "database is locked" in str(writer.error)
        assert writer.add(INSERT, (3, "three")) is False  # nothing more is queued
    finally:
        locker.kill()
        locker.wait()
        writer.close()
    assert _rows(path) == [(1, "one")]


def _reply(text: str) -> dict:
    return {
        "text": text,
        "usage": [3, 4],
        "latency_ms": 12.5,
        "cost_usd": 0.001,
        "tool_calls": [],
        "finish_reason": "stop",
    }


def _stored(path: Path) -> int:
    with sqlite3.connect(path) as conn:
        return int(conn.execute("SELECT COUNT(*) FROM responses").fetchone()[0])


def test_a_stored_reply_is_found_before_and_after_its_commit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_key_filter, "START_AFTER", 1)
    cache = ResponseCache(tmp_path / "cache.sqlite")
    earlier = ResponseCache(tmp_path / "cache.sqlite")  # another process's cache, its keys loaded before
    _wait_for_filter(earlier)
    try:
        cache.put("k1", "openai", "m", _reply("héllo \ud800 \U0001f600"))  # a lone surrogate: orjson cannot write it
        cache.put("k2", "openai", "m", _reply("second"))
        assert cache.get("k1") == _reply("héllo \ud800 \U0001f600")  # from memory, committed or not
        deadline = time.monotonic() + 5
        while cache._pending and time.monotonic() < deadline:
            time.sleep(0.01)
        assert not cache._pending  # once committed, no longer held in memory
        assert cache.get("k2") == _reply("second")  # read from the file
        assert cache.get("k3") is None and (cache.hits, cache.misses) == (2, 1)
        assert earlier.get("k1") is None  # stored after it was opened: that call is made again
    finally:
        cache.close()
        earlier.close()
    reopened = ResponseCache(tmp_path / "cache.sqlite")
    try:
        assert len(reopened) == 2 and reopened.get("k2") == _reply("second")
        found = reopened.get("k1")
        # stored as given; read back as every reply is made, its lone surrogate as U+FFFD
        assert found is not None and reply_from_json(found).text == "héllo \ufffd \U0001f600"
    finally:
        reopened.close()


def _wait_for_filter(cache: ResponseCache) -> None:
    """Ask until the filter holds the file's keys (it loads them after START_AFTER lookups)."""
    deadline = time.monotonic() + 5
    while cache._keys._ready is None and cache._keys.active and time.monotonic() < deadline:
        cache._keys.may_hold("probe")
        time.sleep(0.01)


def _filled(path: Path, count: int) -> None:
    cache = ResponseCache(path)
    for i in range(count):
        cache.put(f"key-{i}", "openai", "m", _reply(f"reply {i}"))
    cache.close()


def test_a_lookup_of_a_key_the_file_cannot_hold_reads_nothing(tmp_path: Path) -> None:
    _filled(tmp_path / "cache.sqlite", 500)
    cache = ResponseCache(tmp_path / "cache.sqlite")
    reads: list[str] = []
    try:
        cache.put("early", "openai", "m", _reply("early"))  # stored before the file's keys are loaded
        cache._reader.set_trace_callback(reads.append)
        assert [cache.get(f"absent-{i}") for i in range(_key_filter.START_AFTER)] == [None] * _key_filter.START_AFTER
        assert len(reads) == _key_filter.START_AFTER  # a short run reads the file: loading the keys would cost more
        reads.clear()
        _wait_for_filter(cache)
        cache._reader.set_trace_callback(reads.append)
        assert [cache.get(f"absent-{i}") for i in range(200)] == [None] * 200
        assert len(reads) < 10  # the filter lets a few through (slots shared with stored keys), no more
        reads.clear()
        assert [cache.get(f"key-{i}") == _reply(f"reply {i}") for i in range(500)] == [True] * 500
        assert len(reads) == 500  # every stored key is read from the file
        cache.put("new", "openai", "m", _reply("new"))
        deadline = time.monotonic() + 5
        while cache._pending and time.monotonic() < deadline:
            time.sleep(0.01)
        assert cache.get("new") == _reply("new")  # stored after opening: read from the file
        assert cache.get("early") == _reply("early")
    finally:
        cache.close()


def test_a_big_cache_file_is_read_at_every_lookup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _filled(tmp_path / "cache.sqlite", 20)
    monkeypatch.setattr(_key_filter, "MAX_FILE_BYTES", 1024)
    cache = ResponseCache(tmp_path / "cache.sqlite")
    reads: list[str] = []
    try:
        _wait_for_filter(cache)
        assert not cache._keys.active
        cache._reader.set_trace_callback(reads.append)
        assert cache.get("absent") is None and cache.get("key-3") == _reply("reply 3")
        assert len(reads) == 2
    finally:
        cache.close()


def test_durable_writes_from_many_tasks_are_each_committed_at_once(tmp_path: Path) -> None:
    path = tmp_path / "w.sqlite"
    writer = SqliteWriter(path, SCHEMA, group_s=60.0)  # only a durable write's wake-up commits here

    async def many() -> list[int]:
        async def one(k: int) -> int:
            await asyncio.sleep(k % 7 / 1000)
            return await writer.write(lambda c: c.execute(INSERT, (k, f"v{k}")).rowcount)

        return await asyncio.wait_for(asyncio.gather(*(one(k) for k in range(300))), timeout=20)

    try:
        started = time.monotonic()
        assert asyncio.run(many()) == [1] * 300
        assert len(_rows(path)) == 300 and time.monotonic() - started < 20
    finally:
        writer.close()


def test_tests_finishing_together_share_one_commit_and_each_is_on_disk_when_told(tmp_path: Path) -> None:
    path = tmp_path / "w.sqlite"
    writer = SqliteWriter(path, SCHEMA, group_s=60.0)  # only a durable write's wake-up commits here
    statements: list[str] = []
    writer._conn.set_trace_callback(statements.append)  # what the writer's connection runs

    async def together() -> None:
        async def one(k: int) -> None:
            time.sleep(0.002)  # what else a callback does (reading a socket...): the writer could run meanwhile
            await writer.write(lambda c: c.execute(INSERT, (k, f"v{k}")))
            with sqlite3.connect(path) as reader:  # committed before the write returns
                assert reader.execute("SELECT v FROM t WHERE k = ?", (k,)).fetchone() == (f"v{k}",)

        await asyncio.wait_for(asyncio.gather(*(one(k) for k in range(50))), timeout=20)
        # waited on from the loop's own thread, a durable write wakes the writer at once, even
        # while the wake-up of an awaited write is still to come from the loop
        task = asyncio.ensure_future(writer.write(lambda c: c.execute(INSERT, (50, "v50"))))
        await asyncio.sleep(0)  # the task queues its write; its wake-up waits for the next pass
        assert writer.submit(lambda c: c.execute(INSERT, (51, "v51")), durable=True).result(timeout=5)
        await task

    try:
        asyncio.run(together())
        assert statements.count("COMMIT") == 2  # the 50 writes queued in one pass of the loop, then the last two
        assert len(_rows(path)) == 52
    finally:
        writer.close()
