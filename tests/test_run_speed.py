"""What the per-call speed work must not change: cache keys on disk, SQLite writes that reach
the file, and the garbage collector as the caller had it."""

from __future__ import annotations

import functools
import gc
import hashlib
import json
import sqlite3
import time
from pathlib import Path

import pytest

import convoeval
from convoeval.engine import RunEvents, cache_key
from convoeval.engine._sqlite import GROUP_S, SqliteWriter
from convoeval.targets import ChatRequest
from convoeval.testing import FakeOpenAIServer

from .conftest import write


def _material_key(identity: dict[str, object], request: ChatRequest) -> str:
    """The key as documented: SHA-256 of the whole key material as sorted, compact JSON."""
    material: dict[str, object] = {
        "v": 1,
        "target": identity,
        "messages": request.messages,
        "temperature": request.temperature,
        "max_tokens": request.max_tokens,
        "response_schema": request.response_schema,
        "schema_name": request.schema_name if request.response_schema is not None else None,
        "trial": request.trial,
    }
    if request.seed is not None:
        material["seed"] = request.seed
    if request.tools:
        material["tools"] = request.tools
    text = json.dumps(material, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


@pytest.mark.parametrize(
    "request_",
    [
        ChatRequest(messages=[{"role": "user", "content": 'héllo ,"temperature":1'}]),
        ChatRequest(
            messages=[{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}],
            temperature=0.7,
            max_tokens=12,
            trial=3,
            seed=5,
            response_schema={"type": "object", "properties": {"temperature": {"type": "number"}}},
            schema_name="verdict",
            tools=[{"type": "function", "function": {"name": "f", "parameters": {"temperature": 1}}}],
        ),
    ],
)
def test_cache_keys_stay_those_of_the_documented_material(request_: ChatRequest) -> None:
    identity: dict[str, object] = {"provider": "openai", "model": "m", "base_url": "http://x/v1", "zeta": ["é", 1]}
    serialised = json.dumps(identity, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert cache_key(identity, request_) == cache_key(serialised, request_) == _material_key(identity, request_)


def _insert(conn: sqlite3.Connection, key: int) -> None:
    conn.execute("INSERT INTO t VALUES (?)", (key,))


def _count(path: Path) -> int:
    with sqlite3.connect(path) as conn:
        return int(conn.execute("SELECT COUNT(*) FROM t").fetchone()[0])


def test_writes_reach_the_file_durable_ones_at_once(tmp_path: Path) -> None:
    path = tmp_path / "w.sqlite"
    writer = SqliteWriter(path, "CREATE TABLE IF NOT EXISTS t (k INTEGER PRIMARY KEY);")
    try:
        lazy = [writer.submit(functools.partial(_insert, key=k)) for k in range(100)]
        deadline = time.monotonic() + 5
        while _count(path) < 100 and time.monotonic() < deadline:  # committed within GROUP_S, give or take
            time.sleep(GROUP_S / 5)
        assert _count(path) == 100 and all(f.done() and f.exception() is None for f in lazy)
        started = time.monotonic()
        writer.submit(lambda c: c.execute("INSERT INTO t VALUES (1000)"), durable=True).result(timeout=5)
        assert _count(path) == 101 and time.monotonic() - started < 2
        writer.submit(lambda c: c.execute("INSERT INTO t VALUES (1001)"))
    finally:
        writer.close()
    assert _count(path) == 102  # close commits what was queued


@pytest.mark.parametrize("caller_froze", [False, True])
def test_a_run_paces_the_collector_only_while_its_calls_go_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caller_froze: bool
) -> None:
    suite = write(tmp_path / "s.eval.yaml", "tests:\n  - id: a\n    input: hi\n  - id: b\n    input: there\n")
    seen: list[int] = []

    class Watch(RunEvents):
        def turn(self, turn: object) -> None:
            seen.append(gc.isenabled())

    gc.unfreeze()
    if caller_froze:
        gc.freeze()
    before, frozen = gc.isenabled(), gc.get_freeze_count()
    try:
        with FakeOpenAIServer() as server:
            monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
            monkeypatch.setenv("OPENAI_API_KEY", "sk-dummy")
            report = convoeval.run(
                [suite], target="openai:m", store=tmp_path / "state", cache_dir=tmp_path / "cache", events=Watch()
            )
        after = gc.get_freeze_count()
    finally:
        gc.unfreeze()  # leave the test process's collector as tests expect it
    assert [r.verdict for r in report.results] == ["pass", "pass"]
    assert seen == [False, False]  # collected on the loop's clock, not by allocation counts
    assert before and gc.isenabled()
    # Unfrozen after, unless the caller had frozen objects of its own (then none is unfrozen).
    assert after == 0 if not caller_froze else after > frozen > 0


def test_the_collector_runs_on_the_clock_while_the_calls_go_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Automatic collection is off during the calls, but cyclic garbage is still collected:
    every COLLECT_EVERY_S, on the event loop."""
    from convoeval.engine import _runner

    monkeypatch.setattr(_runner, "COLLECT_EVERY_S", 0.05)
    suite = write(tmp_path / "s.eval.yaml", "tests:\n  - id: a\n    input: hi\n")
    paced: list[int] = []

    def watch(phase: str, info: dict[str, int]) -> None:
        if phase == "start" and not gc.isenabled():
            paced.append(info["generation"])

    gc.callbacks.append(watch)
    try:
        with FakeOpenAIServer(latency_s=0.4) as server:
            monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
            monkeypatch.setenv("OPENAI_API_KEY", "sk-dummy")
            report = convoeval.run([suite], target="openai:m", store=tmp_path / "state", cache_dir=tmp_path / "cache")
    finally:
        gc.callbacks.remove(watch)
        gc.unfreeze()
    assert [r.verdict for r in report.results] == ["pass"]
    assert len(paced) >= 3 and set(paced) == {1}  # young and middle generations, about every 0.05 s
    assert gc.isenabled()
