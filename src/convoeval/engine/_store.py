"""The run store: every run, its options, its results and its turns in one SQLite file (WAL).

Schema (`runs.sqlite` under `.convoeval/`):

    runs(id PK, started, finished, status running|finished, options JSON, summary JSON)
    owners(run_id PK, owner JSON)   the process running (or last running) the run: pid, host
    results(run_id, suite, test_id, target, seq, verdict, execution_status, score,
            cost_usd, judge_cost_usd, tokens, finished, data JSON,
            UNIQUE(run_id, suite, test_id, target))
    turns(run_id, suite, test_id, target, trial, turn, verdict, score, finished, reply, data JSON,
          UNIQUE(run_id, suite, test_id, target, trial, turn))
    trials(run_id, suite, test_id, target, trial, data JSON, UNIQUE(run_id, suite, test_id, target, trial))

`suite` is the suite file's absolute path; `seq` the test's position in the run (results are
exported in that order); `data` the EvaluationResult (or ScoreEntry) JSON, the same model as
results.jsonl. A result is committed in its own transaction before the run reports it done, so
a killed process loses no finished test, and the UNIQUE key makes a resumed run replace rather
than duplicate. `trials` holds the finished trials (TrialResult JSON) of a test of several
trials until its result is stored, so a resumed run runs only the trials it lacks. Options never hold secrets (the API records target specs, not keys).
"""

from __future__ import annotations

import json
import os
import secrets as _secrets
import sqlite3
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import overload

from pydantic import ValidationError

from .._secrets import redact
from ..errors import first_problem
from ..results import EvaluationResult, ScoreEntry, TrialResult, VerdictStatus
from ._options import RecordedOptions
from ._owner import Owner
from ._sqlite import SqliteWriter, StoreError, connect, store_error

STORE_FILE = "runs.sqlite"
#: The environment variable that moves the state folder (run store, cache, default results).
HOME_ENV = "CONVOEVAL_HOME"


def state_dir(given: str | Path | None = None) -> Path:
    """Where runs.sqlite, cache.sqlite and default results live: `given` (`--store DIR`),
    else `$CONVOEVAL_HOME`, else `./.convoeval`."""
    if given:
        return Path(given)
    return Path(os.environ.get(HOME_ENV) or ".convoeval")


_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id       TEXT PRIMARY KEY,
    started  TEXT NOT NULL,
    finished TEXT,
    status   TEXT NOT NULL,
    options  TEXT NOT NULL,
    summary  TEXT
);
CREATE TABLE IF NOT EXISTS owners (
    run_id TEXT PRIMARY KEY,
    owner  TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS results (
    run_id           TEXT NOT NULL REFERENCES runs(id),
    suite            TEXT NOT NULL,
    test_id          TEXT NOT NULL,
    target           TEXT NOT NULL,
    seq              INTEGER NOT NULL,
    verdict          TEXT NOT NULL,
    execution_status TEXT NOT NULL,
    score            REAL,
    cost_usd         REAL NOT NULL DEFAULT 0,
    judge_cost_usd   REAL NOT NULL DEFAULT 0,
    tokens           INTEGER NOT NULL DEFAULT 0,
    finished         TEXT NOT NULL,
    data             TEXT NOT NULL,
    UNIQUE (run_id, suite, test_id, target)
);
CREATE INDEX IF NOT EXISTS results_by_seq ON results (run_id, seq);
CREATE TABLE IF NOT EXISTS turns (
    run_id   TEXT NOT NULL,
    suite    TEXT NOT NULL,
    test_id  TEXT NOT NULL,
    target   TEXT NOT NULL,
    trial    INTEGER NOT NULL,
    turn     INTEGER NOT NULL,
    verdict  TEXT NOT NULL,
    score    REAL,
    finished TEXT NOT NULL,
    reply    TEXT,
    data     TEXT NOT NULL,
    UNIQUE (run_id, suite, test_id, target, trial, turn)
);
CREATE TABLE IF NOT EXISTS trials (
    run_id   TEXT NOT NULL,
    suite    TEXT NOT NULL,
    test_id  TEXT NOT NULL,
    target   TEXT NOT NULL,
    trial    INTEGER NOT NULL,
    data     TEXT NOT NULL,
    UNIQUE (run_id, suite, test_id, target, trial)
);
"""

#: The columns of the tables the store reads, each selected once when it opens.
_PROBES = (
    "SELECT id, started, finished, status, options, summary FROM runs LIMIT 1",
    "SELECT run_id, suite, test_id, target, seq, verdict, execution_status, score, cost_usd, judge_cost_usd,"
    " tokens, finished, data FROM results LIMIT 1",
)
_KEY = "run_id = ? AND suite = ? AND test_id = ? AND target = ?"
_INSERT_TRIAL = "INSERT OR REPLACE INTO trials (run_id, suite, test_id, target, trial, data) VALUES (?, ?, ?, ?, ?, ?)"
_INSERT_TURN = (
    "INSERT OR REPLACE INTO turns (run_id, suite, test_id, target, trial, turn, verdict, score, finished, reply, data)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


@dataclass(frozen=True)
class ResultKey:
    """Which result: suite (file path), test id and target name."""

    suite: str
    test_id: str
    target: str


@dataclass
class RunRecord:
    """One run as recorded."""

    id: str
    started: str
    finished: str | None
    status: str
    options: RecordedOptions
    summary: dict[str, object] | None


def _options_json(options: RecordedOptions) -> str:
    """The options as stored: JSON without the unset (None) options."""
    return options.model_dump_json(exclude_none=True)


_second: tuple[int, str] = (-1, "")  # the last second formatted, and its text
_MILLIS = tuple(f".{millis:03d}Z" for millis in range(1000))  # each millisecond's end of the text


def _now() -> str:
    """The time as `YYYY-mm-ddTHH:MM:SS.mmmZ` (UTC); each second is formatted once."""
    global _second
    second, millis = divmod(int(time.time() * 1000), 1000)  # one reading: the two parts agree
    if _second[0] != second:
        _second = (second, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second)))
    return _second[1] + _MILLIS[millis]


def _entry_json(entry: ScoreEntry) -> str:
    """`entry.model_dump_json()`, from the model's serializer itself (what that method calls,
    without handling its keyword arguments, which took 8% of the dump)."""
    return type(entry).__pydantic_serializer__.to_json(entry).decode()


def new_run_id() -> str:
    """`YYYYmmdd-HHMMSS-xxxxxx`: sortable, short, unique enough for one machine."""
    return time.strftime("%Y%m%d-%H%M%S") + "-" + _secrets.token_hex(3)


class RunStore:
    """Runs and their results in a SQLite file.

    Example:
        store = RunStore(".convoeval/runs.sqlite")
        run = store.new_run(RecordedOptions(paths=[...]))
        await store.save_result(run.id, ResultKey(suite, "t1", "openai:m"), 0, result)
        store.finish_run(run.id, {"calls": 10})
        for result in store.results(run.id): ...
    """

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._writer = SqliteWriter(self.path, _SCHEMA, name="convoeval-store", checkpoint_in_background=True)
        try:
            self._reader = connect(self.path)
            for probe in _PROBES:  # a file of another program (or damaged) fails here, not mid-command
                self._reader.execute(probe).fetchone()
        except sqlite3.Error as exc:
            self._writer.close()
            raise store_error(self.path, exc) from None

    # -- runs --------------------------------------------------------------------------
    def new_run(self, options: RecordedOptions, run_id: str | None = None, owner: Owner | None = None) -> RunRecord:
        record = RunRecord(
            id=run_id or new_run_id(), started=_now(), finished=None, status="running", options=options, summary=None
        )
        row = (record.id, record.started, record.status, _options_json(options))
        owned = (record.id, json.dumps((owner or Owner.this_process()).to_json()))

        def insert(conn: sqlite3.Connection) -> None:
            conn.execute("INSERT INTO runs (id, started, status, options) VALUES (?, ?, ?, ?)", row)
            conn.execute("INSERT OR REPLACE INTO owners (run_id, owner) VALUES (?, ?)", owned)

        self._writer.submit(insert, durable=True).result()
        return record

    def claim_run(self, run_id: str, owner: Owner | None = None, takeover: bool = False) -> Owner | None:
        """Make `owner` (this process) the run's owner and mark it running, unless it is still
        running in a process that lives (or may live, on another host) and `takeover` is not
        given: then nothing changes and that process is returned."""
        me = owner or Owner.this_process()

        def claim(conn: sqlite3.Connection) -> Owner | None:
            status = conn.execute("SELECT status FROM runs WHERE id = ?", (run_id,)).fetchone()
            held = conn.execute("SELECT owner FROM owners WHERE run_id = ?", (run_id,)).fetchone()
            if status and status[0] == "running" and held and not takeover:
                previous = Owner.from_json(json.loads(held[0]))
                if not previous.is_this_process() and previous.state() != "gone":
                    return previous
            conn.execute(
                "INSERT OR REPLACE INTO owners (run_id, owner) VALUES (?, ?)", (run_id, json.dumps(me.to_json()))
            )
            conn.execute("UPDATE runs SET status = 'running', finished = NULL WHERE id = ?", (run_id,))
            return None

        return self._writer.submit(claim, durable=True).result()

    def owner(self, run_id: str) -> Owner | None:
        """The process that runs (or last ran) the run, when recorded."""
        row = self._reader.execute("SELECT owner FROM owners WHERE run_id = ?", (run_id,)).fetchone()
        return Owner.from_json(json.loads(row[0])) if row else None

    def update_options(self, run_id: str, options: RecordedOptions) -> None:
        row = (_options_json(options), run_id)
        self._writer.submit(
            lambda conn: conn.execute("UPDATE runs SET options = ? WHERE id = ?", row), durable=True
        ).result()

    def result_files(self) -> list[Path]:
        """The results files (`-o`) the runs of this store wrote, where they still are: they hold
        those runs' answers, which a later run's sandboxed commands must not read (an eval folder's
        `results.jsonl`). Empty when the store cannot be read (the run itself says so)."""
        try:
            rows = self._reader.execute("SELECT DISTINCT json_extract(options, '$.output') FROM runs").fetchall()
        except sqlite3.Error:
            return []
        return [Path(path) for (path,) in rows if isinstance(path, str) and Path(path).exists()]

    def find_run(self, ref: str) -> RunRecord | None:
        """A run by id, or the one created last for `last` (by insertion, not by clock: a clock
        that steps back must not make an older run the last one)."""
        query = "SELECT id, started, finished, status, options, summary FROM runs "
        if ref == "last":
            row = self._reader.execute(query + "ORDER BY rowid DESC LIMIT 1").fetchone()
        else:
            row = self._reader.execute(query + "WHERE id = ?", (ref,)).fetchone()
        if row is None:
            return None
        return RunRecord(
            id=row[0],
            started=row[1],
            finished=row[2],
            status=row[3],
            options=self._recorded_options(row[0], row[4]),
            summary=json.loads(row[5]) if row[5] else None,
        )

    def _recorded_options(self, run_id: str, text: str) -> RecordedOptions:
        """A run's stored options as the model; rows written by older versions load too (keys
        this version does not know are kept as they are)."""
        try:
            return RecordedOptions.model_validate_json(text)
        except ValidationError as exc:
            problem = first_problem(exc, "options")
            raise StoreError(
                f"{self.path}: run {run_id}: the recorded options cannot be read: {problem.field}: {problem.message}"
            ) from None

    def finish_run(self, run_id: str, summary: dict[str, object]) -> None:
        row = (_now(), json.dumps(summary, default=str), run_id)
        self._writer.submit(
            lambda conn: conn.execute(
                "UPDATE runs SET status = 'finished', finished = ?, summary = ? WHERE id = ?", row
            ),
            durable=True,
        ).result()

    # -- results -----------------------------------------------------------------------
    def keep_results(self, run_id: str, places: dict[ResultKey, int], trials: Iterable[ResultKey] = ()) -> int:
        """Keep only the results (and turns) whose key is in `places`, each moved to its place
        (`seq`) there, and the stored trials of the keys in `trials`; returns how many stored
        results were dropped."""
        stored = self.stored_outcomes(run_id)
        dropped = [k for k in stored if k not in places]
        kept_trials = set(trials)
        rows = self._reader.execute("SELECT DISTINCT suite, test_id, target FROM trials WHERE run_id = ?", (run_id,))
        stale = [k for k in (ResultKey(*row) for row in rows) if k not in kept_trials]
        moved = [(seq, run_id, k.suite, k.test_id, k.target) for k, seq in places.items() if k in stored]

        def rewrite(conn: sqlite3.Connection) -> None:
            for key in dropped:
                where = (run_id, key.suite, key.test_id, key.target)
                conn.execute(f"DELETE FROM results WHERE {_KEY}", where)
                conn.execute(f"DELETE FROM turns WHERE {_KEY}", where)
            conn.executemany(
                f"DELETE FROM trials WHERE {_KEY}", [(run_id, k.suite, k.test_id, k.target) for k in stale]
            )
            conn.executemany(
                "UPDATE results SET seq = ? WHERE run_id = ? AND suite = ? AND test_id = ? AND target = ?", moved
            )

        self._writer.submit(rewrite, durable=True).result()
        return len(dropped)

    def stored_outcomes(self, run_id: str) -> dict[ResultKey, VerdictStatus]:
        """The verdict and execution status of every result stored for the run."""
        rows = self._reader.execute(
            "SELECT suite, test_id, target, verdict, execution_status FROM results WHERE run_id = ?", (run_id,)
        )
        return {ResultKey(s, t, g): VerdictStatus(v, e) for s, t, g, v, e in rows}

    def stored_costs(self, run_id: str) -> dict[ResultKey, float]:
        """The target's cost of every result stored for the run."""
        rows = self._reader.execute("SELECT suite, test_id, target, cost_usd FROM results WHERE run_id = ?", (run_id,))
        return {ResultKey(s, t, g): cost for s, t, g, cost in rows}

    def stored_trials(self, run_id: str, keys: Iterable[ResultKey]) -> dict[ResultKey, dict[int, TrialResult]]:
        """The stored trials of the tests of `keys`, by trial number."""
        wanted, found = set(keys), dict[ResultKey, dict[int, TrialResult]]()
        rows = self._reader.execute(
            "SELECT suite, test_id, target, trial, data FROM trials WHERE run_id = ?", (run_id,)
        )
        for suite, test_id, target, trial, data in rows:
            if (key := ResultKey(suite, test_id, target)) in wanted:
                found.setdefault(key, {})[trial] = TrialResult.model_validate_json(data)
        return found

    def save_trial(self, run_id: str, key: ResultKey, trial: int, data: str) -> None:
        """Record a finished trial (its JSON) of a test of several (in the background, as turns)."""
        self._writer.add(_INSERT_TRIAL, (run_id, key.suite, key.test_id, key.target, trial, redact(data)))

    async def save_result(
        self,
        run_id: str,
        key: ResultKey,
        seq: int,
        result: EvaluationResult,
        data: str | None = None,
        drop_trials: bool = False,
    ) -> None:
        """Commit one result (its own transaction); replaces a stored one with the same key.

        Args:
            data: the result's JSON when the caller already has it.
            drop_trials: delete the test's stored trials in the same transaction (the result holds them).
        """
        row = (
            run_id,
            key.suite,
            key.test_id,
            key.target,
            seq,
            result.verdict,
            result.execution_status,
            result.score,
            result.cost_usd,
            result.judge_cost_usd,
            result.token_usage.total_tokens + result.judge_token_usage.total_tokens,
            _now(),
            data if data is not None else result.model_dump_json(),
        )

        def insert(conn: sqlite3.Connection) -> None:
            conn.execute(
                "INSERT INTO results (run_id, suite, test_id, target, seq, verdict, execution_status, score,"
                " cost_usd, judge_cost_usd, tokens, finished, data) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
                " ON CONFLICT (run_id, suite, test_id, target) DO UPDATE SET seq = excluded.seq,"
                " verdict = excluded.verdict, execution_status = excluded.execution_status, score = excluded.score,"
                " cost_usd = excluded.cost_usd, judge_cost_usd = excluded.judge_cost_usd, tokens = excluded.tokens,"
                " finished = excluded.finished, data = excluded.data",
                row,
            )
            if drop_trials:
                conn.execute(f"DELETE FROM trials WHERE {_KEY}", row[:4])

        await self._writer.write(insert)

    def save_turn(
        self, run_id: str, key: ResultKey, trial: int, turn: int, entry: ScoreEntry, reply: str | None
    ) -> None:
        """Record a graded turn (in the background, grouped with other writes)."""
        row = (
            run_id,
            key.suite,
            key.test_id,
            key.target,
            trial,
            turn,
            entry.verdict,
            entry.score,
            _now(),
            None if reply is None else redact(reply),
            redact(_entry_json(entry)),
        )
        self._writer.add(_INSERT_TURN, row)

    def save_turn_rows(
        self, run_id: str, key: ResultKey, trial: int, rows: Iterable[tuple[int, str, float | None, str | None, str]]
    ) -> None:
        """Record graded turns given as (turn, verdict, score, reply, the entry's JSON), as
        `save_turn` records each (a worker process of `--processes` made the JSON)."""
        now = _now()
        for turn, verdict, score, reply, entry in rows:
            row = (run_id, key.suite, key.test_id, key.target, trial, turn, verdict, score, now)
            self._writer.add(_INSERT_TURN, (*row, None if reply is None else redact(reply), redact(entry)))

    def results(self, run_id: str, kept: Mapping[int, EvaluationResult] | None = None) -> StoredResults:
        """The run's results in run order, read from disk when used (not held in memory);
        `kept`: results this process saved, by place, served as they are instead of read again."""
        seqs = [
            row[0] for row in self._reader.execute("SELECT seq FROM results WHERE run_id = ? ORDER BY seq", (run_id,))
        ]
        return StoredResults(self.path, run_id, seqs, kept)

    def outcomes(self, run_id: str) -> list[VerdictStatus]:
        """The verdict and execution status of each result of the run, in run order."""
        rows = self._reader.execute(
            "SELECT verdict, execution_status FROM results WHERE run_id = ? ORDER BY seq", (run_id,)
        )
        return [VerdictStatus(v, e) for v, e in rows]

    def totals_by_target(self, run_id: str) -> dict[str, dict[str, float]]:
        """Per target: tests, target cost, judge cost and tokens of the run's results."""
        rows = self._reader.execute(
            "SELECT target, COUNT(*), SUM(cost_usd), SUM(judge_cost_usd), SUM(tokens) FROM results"
            " WHERE run_id = ? GROUP BY target ORDER BY MIN(seq)",
            (run_id,),
        )
        return {
            t: {"tests": n, "cost_usd": c or 0.0, "judge_cost_usd": j or 0.0, "tokens": k or 0}
            for t, n, c, j, k in rows
        }

    def close(self) -> None:
        self._writer.close()
        self._reader.close()


class StoredResults(Sequence[EvaluationResult]):
    """A run's results as a read-only sequence backed by the store (each read parses one row).

    Iterating streams rows in run order, so a 10,000-test run can be exported or summarised
    without holding its transcripts in memory. The results a small run saved in this process
    (`kept`, by place) are handed out as they were saved, not parsed again from their JSON:
    a summary of 100 results would otherwise spend 40-100 ms validating them.
    """

    def __init__(self, path: Path, run_id: str, seqs: list[int], kept: Mapping[int, EvaluationResult] | None = None):
        self.path = path
        self.run_id = run_id
        self._seqs = seqs
        self._kept = dict(kept or {})

    def __len__(self) -> int:
        return len(self._seqs)

    @overload
    def __getitem__(self, index: int) -> EvaluationResult: ...
    @overload
    def __getitem__(self, index: slice) -> list[EvaluationResult]: ...
    def __getitem__(self, index: int | slice) -> EvaluationResult | list[EvaluationResult]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        seq = self._seqs[index]
        if seq in self._kept:
            return self._kept[seq]
        with closing(sqlite3.connect(self.path)) as conn:
            row = conn.execute("SELECT data FROM results WHERE run_id = ? AND seq = ?", (self.run_id, seq)).fetchone()
        return EvaluationResult.model_validate_json(row[0])

    def __iter__(self) -> Iterator[EvaluationResult]:
        if all(seq in self._kept for seq in self._seqs):
            yield from (self._kept[seq] for seq in self._seqs)
            return
        with closing(sqlite3.connect(self.path)) as conn:
            rows = conn.execute("SELECT seq, data FROM results WHERE run_id = ? ORDER BY seq", (self.run_id,))
            for seq, data in rows:
                kept = self._kept.get(seq)
                yield kept if kept is not None else EvaluationResult.model_validate_json(data)

    def iter_json(self) -> Iterator[str]:
        """Each result's JSON text, in run order (what results.jsonl holds)."""
        with closing(sqlite3.connect(self.path)) as conn:
            for (data,) in conn.execute("SELECT data FROM results WHERE run_id = ? ORDER BY seq", (self.run_id,)):
                yield data

    def iter_json_bytes(self) -> Iterator[bytes]:
        """Each result's JSON in UTF-8 bytes, in run order: as stored, not decoded (a store that
        is not a UTF-8 database, which convoeval never makes, has its texts encoded)."""
        with closing(sqlite3.connect(self.path)) as conn:
            if conn.execute("PRAGMA encoding").fetchone()[0] != "UTF-8":
                for (text,) in conn.execute("SELECT data FROM results WHERE run_id = ? ORDER BY seq", (self.run_id,)):
                    yield text.encode("utf-8")
                return
            rows = conn.execute("SELECT CAST(data AS BLOB) FROM results WHERE run_id = ? ORDER BY seq", (self.run_id,))
            for (data,) in rows:
                yield data

    def __repr__(self) -> str:
        return f"StoredResults({self.run_id!r}, {len(self)} results)"
