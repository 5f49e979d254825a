"""The floor for workload W: the same model calls made by the plainest client, as a whole process.

Plain asyncio + aiohttp: CONVERSATIONS conversations at once, each sending TURNS turns in order
(the growing history each time) and, when `--judge`, one judge call per turn (structured output
asked, as convoeval's rubric judge does), with at most MAX requests in flight in total. No
grading, no results written: what remains of convoeval's time above this is its own overhead.

With `--state DIR`, the same client also keeps what an evaluation harness must keep, written as
leanly as this machine allows ("floor with state"): every reply in a SQLite response cache (key:
SHA-256 of the request; rows inserted on a thread, committed every 0.5 s), every graded turn and
every conversation's result as rows of a SQLite run store (committed every 0.05 s), the judge's
answer validated by a pydantic model, each result redacted of the environment's keys and written
as a JSONL line. It is not a harness (no retries, limits per endpoint, reports, resume), only
what such state costs: the part of convoeval's overhead that keeping it explains.

    python benchmarks/floor.py URL --conversations 100 --turns 5 --max 20 --judge [--state DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import os
import sqlite3
import threading
import time
from collections import deque
from pathlib import Path

import aiohttp

SCHEMA = {"type": "object", "properties": {"score": {"type": "number"}}, "required": ["score"]}


class _Writer:
    """A SQLite file written by one thread: rows queued by the caller, inserted with
    `executemany` and committed every `every_s` (what convoeval's writer does, minus its errors)."""

    def __init__(self, path: Path, schema: str, every_s: float):
        self.conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self.conn.execute("PRAGMA synchronous=NORMAL")
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.executescript(schema)
        self.rows: deque[tuple[str, tuple[object, ...]]] = deque()
        self.every_s, self.stopping, self.wake = every_s, False, threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def add(self, sql: str, row: tuple[object, ...]) -> None:
        self.rows.append((sql, row))

    def _run(self) -> None:
        while True:
            self.wake.wait(self.every_s)
            stopping = self.stopping
            batch = [self.rows.popleft() for _ in range(len(self.rows))]
            if batch:
                by_sql: dict[str, list[tuple[object, ...]]] = {}
                for sql, row in batch:
                    by_sql.setdefault(sql, []).append(row)
                self.conn.execute("BEGIN IMMEDIATE")
                for sql, rows in by_sql.items():
                    self.conn.executemany(sql, rows)
                self.conn.execute("COMMIT")
            if stopping:
                return

    def close(self) -> None:
        self.stopping = True
        self.wake.set()
        self.thread.join()
        self.conn.close()


class _State:
    """The cache, the run store and the results file of `--state DIR`."""

    def __init__(self, folder: Path):
        import orjson
        from pydantic import BaseModel

        class Verdict(BaseModel):
            score: float

        folder.mkdir(parents=True, exist_ok=True)
        self.dumps, self.loads, self.sorted, self.verdict = orjson.dumps, orjson.loads, orjson.OPT_SORT_KEYS, Verdict
        self.cache = _Writer(
            folder / "cache.sqlite",
            "CREATE TABLE IF NOT EXISTS cache(key TEXT PRIMARY KEY, value TEXT, created REAL);",
            0.5,
        )
        self.store = _Writer(
            folder / "runs.sqlite",
            "CREATE TABLE IF NOT EXISTS turns(conversation INT, "
            "turn INT, verdict TEXT, score REAL, created REAL, reply TEXT, data TEXT);"
            "CREATE TABLE IF NOT EXISTS results(conversation INT, data TEXT);",
            0.05,
        )
        self.out = (folder / "results.jsonl").open("wb")
        self.secrets = [v for k, v in os.environ.items() if "KEY" in k and len(v) >= 8]

    def key(self, payload: dict) -> str:
        return hashlib.sha256(self.dumps(payload, option=self.sorted)).hexdigest()

    def cached(self, key: str, raw: bytes) -> None:
        self.cache.add("INSERT OR REPLACE INTO cache VALUES (?, ?, ?)", (key, raw.decode(), time.time()))

    def redact(self, text: str) -> str:
        for secret in self.secrets:
            if secret in text:
                text = text.replace(secret, "[REDACTED]")
        return text

    def turn(self, conversation: int, turn: int, reply: str, judged: dict) -> dict:
        score = self.verdict.model_validate_json(judged["choices"][0]["message"]["content"]).score
        entry = {"turn": turn, "score": score, "verdict": "pass" if score >= 0.5 else "fail"}
        self.store.add(
            "INSERT INTO turns VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                conversation,
                turn,
                entry["verdict"],
                score,
                time.time(),
                self.redact(reply),
                self.redact(self.dumps(entry).decode()),
            ),
        )
        return entry

    def result(self, conversation: int, messages: list[dict], turns: list[dict]) -> None:
        data = self.redact(self.dumps({"conversation": conversation, "messages": messages, "turns": turns}).decode())
        self.store.add("INSERT INTO results VALUES (?, ?)", (conversation, data))
        self.out.write(data.encode() + b"\n")

    def close(self) -> None:
        self.cache.close()
        self.store.close()
        self.out.close()


async def main(url: str, conversations: int, turns: int, most: int, judge: bool, state: _State | None) -> None:
    limit = asyncio.Semaphore(most)
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=most)) as session:

        async def call(payload: dict) -> dict:
            if state is None:
                async with limit, session.post(url, json=payload) as response:
                    return await response.json()
            key = state.key(payload)
            async with (
                limit,
                session.post(url, data=state.dumps(payload), headers={"Content-Type": "application/json"}) as response,
            ):
                raw = await response.read()
            state.cached(key, raw)
            return state.loads(raw)

        async def conversation(i: int) -> None:
            messages: list[dict] = []
            graded: list[dict] = []
            for t in range(1, turns + 1):
                messages.append({"role": "user", "content": f"Question {t} of conversation {i}: what should I pack?"})
                data = await call({"model": "floor-target", "messages": messages})
                messages.append(data["choices"][0]["message"])
                if judge:
                    prompt = f"Does the reply answer question {t}? {messages[-1]['content']}"
                    judged = await call(
                        {
                            "model": "floor-judge",
                            "messages": [{"role": "user", "content": prompt}],
                            "response_format": {"type": "json_schema", "json_schema": {"name": "v", "schema": SCHEMA}},
                        }
                    )
                    if state is not None:
                        graded.append(state.turn(i, t, messages[-1]["content"], judged))
            if state is not None:
                state.result(i, messages, graded)

        await asyncio.gather(*(conversation(i) for i in range(conversations)))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("url", help="the chat-completions URL")
    parser.add_argument("--conversations", type=int, default=100)
    parser.add_argument("--turns", type=int, default=5)
    parser.add_argument("--max", type=int, default=20, help="requests in flight at most")
    parser.add_argument("--judge", action="store_true", help="one judge call after each turn")
    parser.add_argument("--state", type=Path, help="keep a cache, a run store and results here (a new folder)")
    args = parser.parse_args()
    kept = _State(args.state) if args.state else None
    try:
        asyncio.run(main(args.url, args.conversations, args.turns, args.max, args.judge, kept))
    finally:
        if kept is not None:
            kept.close()
