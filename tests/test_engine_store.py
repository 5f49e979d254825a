"""The run store: what a run records, --resume, exports from the store, and a real kill -9."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from convoeval.engine import RecordedOptions, ResultKey, RunStore, StoreError
from convoeval.results import EvaluationResult
from convoeval.testing import FakeOpenAIServer, echo_reply

from .conftest import read_jsonl, write

SECRET = "sk-test-SECRET-never-stored-1234"


def _suite(n: int, turns: int = 2) -> str:
    tests = "".join(
        f"  - id: t{i:02d}\n    mode: conversation\n    turns:\n"
        + "".join(f"      - input: 'turn {k} of t{i:02d}'\n" for k in range(1, turns + 1))
        for i in range(n)
    )
    return "tests:\n" + tests


def _rows(db: Path, sql: str, *args: object) -> list[tuple]:
    conn = sqlite3.connect(db)
    try:
        return conn.execute(sql, args).fetchall()
    finally:
        conn.close()


def test_a_run_records_options_results_and_turns(cli, fake_openai, tmp_path: Path) -> None:
    suite = write(tmp_path / "s.eval.yaml", _suite(3))
    code, out, _ = cli("run", suite, "--target", "openai:m", "-o", tmp_path / "r.jsonl", "--trials", "2")
    assert code == 0
    db = tmp_path / ".convoeval" / "runs.sqlite"
    [(run_id, status, options)] = _rows(db, "SELECT id, status, options FROM runs")
    assert status == "finished"
    assert out.count(run_id) >= 2  # printed at the start and at the end
    options = json.loads(options)
    assert options["paths"] == [str(suite.resolve())] and options["target"] == ["openai:m"]
    assert options["trials"] == 2 and SECRET not in json.dumps(options)
    results = _rows(db, "SELECT test_id, seq, verdict FROM results WHERE run_id = ? ORDER BY seq", run_id)
    assert results == [("t00", 0, "pass"), ("t01", 1, "pass"), ("t02", 2, "pass")]
    turns = _rows(db, "SELECT test_id, trial, turn, verdict FROM turns WHERE run_id = ? ORDER BY 1, 2, 3", run_id)
    # The turns have no assertions: recorded as not graded (issue 24).
    assert len(turns) == 3 * 2 * 2 and turns[:2] == [("t00", 0, 1, "skip"), ("t00", 0, 2, "skip")]
    # The exported file comes from the store, in run order.
    assert [r["test_id"] for r in read_jsonl(tmp_path / "r.jsonl")] == ["t00", "t01", "t02"]


def test_resume_a_finished_run_runs_nothing(cli, fake_openai, tmp_path: Path) -> None:
    suite = write(tmp_path / "s.eval.yaml", _suite(2))
    cli("run", suite, "--target", "openai:m", "-o", tmp_path / "r.jsonl")
    calls = len(fake_openai.requests)
    code, out, _ = cli("run", "--resume", "last", "-o", tmp_path / "again.json")
    assert code == 0 and len(fake_openai.requests) == calls
    assert "2 of 2 result(s) already stored" in out
    exported = json.loads((tmp_path / "again.json").read_text())
    assert [r["test_id"] for r in exported] == ["t00", "t01"]
    assert exported == read_jsonl(tmp_path / "r.jsonl")


def test_a_run_recorded_by_the_previous_version_loads_and_resumes(cli, fake_openai, tmp_path: Path) -> None:
    """The previous version stored the options as a plain dict: every option (None ones too),
    and keys of its own; such a row loads as RecordedOptions, resumes (in the sandbox it
    recorded), and keys this version does not know are kept when the run's suites are recorded again."""
    suite = write(tmp_path / "s.eval.yaml", _suite(2))
    cli("run", suite, "--target", "openai:m", "-o", tmp_path / "r.jsonl")
    db = tmp_path / ".convoeval" / "runs.sqlite"
    [(run_id, stored)] = _rows(db, "SELECT id, options FROM runs")
    suites = json.loads(stored)["suites"]
    old = {
        "paths": [str(suite.resolve())],
        "target": ["openai:m"],
        "judge": None,
        "targets_file": None,
        "threshold": None,
        "trials": None,
        "judge_repeats": None,
        "test_ids": None,
        "tags": None,
        "limit": None,
        "shard": None,
        "concurrency": None,
        "max_connections": None,
        "max_cost": None,
        "output": str((tmp_path / "r.jsonl").resolve()),
        "cache": True,
        "sandbox": "none",
        "a_later_key": {"kept": True},
        "resolved_targets": [{"name": "openai:m", "provider": "openai", "model": "m", "base_url": None}],
        "cwd": str(tmp_path),
        "convoeval": "0.0.1",
        "suites": suites,
    }
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("UPDATE runs SET options = ?, status = 'running' WHERE id = ?", (json.dumps(old), run_id))
        conn.execute("DELETE FROM results WHERE run_id = ? AND test_id = 't01'", (run_id,))
    conn.close()
    store = RunStore(db)
    record = store.find_run(run_id)
    store.close()
    assert record is not None and isinstance(record.options, RecordedOptions)
    assert record.options.target == ["openai:m"] and record.options.judge is None
    assert record.options.resolved_targets[0].provider == "openai"
    assert record.options.sandbox == "none" and record.options.model_extra == {"a_later_key": {"kept": True}}
    code, out, _ = cli("run", "--resume", run_id)
    assert code == 0 and "1 of 2 result(s) already stored" in out and "sandbox: none" in out
    assert _rows(db, "SELECT test_id FROM results ORDER BY seq") == [("t00",), ("t01",)]
    [(again,)] = _rows(db, "SELECT options FROM runs")
    again = json.loads(again)
    assert again["sandbox"] == "none" and again["a_later_key"] == {"kept": True}
    assert again["suites"] == suites and "judge" not in again  # None is not stored


def test_options_that_cannot_be_read_are_a_store_error_naming_the_run(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "runs.sqlite")
    run = store.new_run(RecordedOptions(paths=["x"]))
    store.close()
    conn = sqlite3.connect(tmp_path / "runs.sqlite")
    with conn:
        conn.execute("UPDATE runs SET options = ? WHERE id = ?", (json.dumps({"trials": "many"}), run.id))
    conn.close()
    store = RunStore(tmp_path / "runs.sqlite")
    try:
        with pytest.raises(StoreError, match=rf"run {run.id}: the recorded options cannot be read: trials"):
            store.find_run("last")
    finally:
        store.close()


def test_resume_refuses_other_suites_or_options(cli, fake_openai, tmp_path: Path) -> None:
    suite = write(tmp_path / "s.eval.yaml", _suite(1))
    other = write(tmp_path / "o.eval.yaml", _suite(1))
    cli("run", suite, "--target", "openai:m", "-o", tmp_path / "r.jsonl")
    code, _, err = cli("run", other, "--resume", "last")
    assert code == 2 and "recorded with paths" in err
    code, _, err = cli("run", "--resume", "last", "--threshold", "0.1")
    assert code == 2 and "threshold" in err
    code, _, err = cli("run", "--resume", "no-such-run")
    assert code == 2 and "no run 'no-such-run'" in err
    code, _, err = cli("run")
    assert code == 2 and "--resume" in err


async def test_results_are_unique_per_run_suite_test_and_target(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "runs.sqlite")
    run = store.new_run(RecordedOptions(paths=["x"]))
    key = ResultKey("/s.yaml", "t", "openai:m")
    for verdict in ("fail", "pass"):
        result = EvaluationResult(
            test_id="t", target="openai:m", score=1.0, verdict=verdict, execution_status="ok", threshold=0.8
        )
        await store.save_result(run.id, key, 0, result)
    stored = store.results(run.id)
    assert len(stored) == 1 and stored[0].verdict == "pass" and [r.verdict for r in stored] == ["pass"]
    assert store.find_run("last").id == run.id and store.find_run(run.id).options == RecordedOptions(paths=["x"])
    store.close()


class Gate:
    """A fake-server reply that holds every request naming a blocked test until released."""

    def __init__(self, blocked: set[str]):
        self.blocked = blocked
        self.release = threading.Event()
        self.seen: list[str] = []
        self.lock = threading.Lock()

    def __call__(self, body: dict) -> str:
        last = body["messages"][-1]["content"]
        with self.lock:
            self.seen.append(last)
        if last.split()[-1] in self.blocked:
            self.release.wait(30)
        return echo_reply(body)


def _wait_for(condition, what: str, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def _stored(db: Path) -> dict[str, tuple[str, str]]:
    if not db.exists():
        return {}
    try:
        return {t: (f, d) for t, f, d in _rows(db, "SELECT test_id, finished, data FROM results")}
    except sqlite3.OperationalError:  # the schema is not there yet
        return {}


@pytest.mark.parametrize("finished_before_kill", [0, 10])
def test_kill_9_then_resume_loses_and_duplicates_nothing(
    cli, tmp_path: Path, monkeypatch, finished_before_kill: int
) -> None:
    n = 24
    gate = Gate({f"t{i:02d}" for i in range(finished_before_kill, n)})
    suite = write(tmp_path / "s.eval.yaml", _suite(n))
    db = tmp_path / ".convoeval" / "runs.sqlite"
    with FakeOpenAIServer(reply=gate) as server:
        env = {**os.environ, "OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": SECRET, "COLUMNS": "200"}
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "convoeval",
                "run",
                str(suite),
                "--target",
                "openai:m",
                "--concurrency",
                "3",
                "-o",
                str(tmp_path / "r.jsonl"),
            ],
            cwd=tmp_path,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        try:
            # Every unblocked test finishes; three blocked conversations hang in flight.
            _wait_for(
                lambda: (
                    len(_stored(db)) == finished_before_kill and len(server.requests) >= 3 and process.poll() is None
                ),
                "the run to reach the blocked tests",
            )
            process.send_signal(signal.SIGKILL)
            process.wait(30)
        finally:
            if process.poll() is None:
                process.kill()
            gate.release.set()
        assert process.returncode == -signal.SIGKILL
        before = _stored(db)
        assert sorted(before) == [f"t{i:02d}" for i in range(finished_before_kill)]
        # the -o file already holds every result the store committed, as the store has it
        streamed = {r["test_id"]: r for r in read_jsonl(tmp_path / "r.jsonl")}
        assert streamed == {t: json.loads(data) for t, (_, data) in before.items()}
        [(run_id, status)] = _rows(db, "SELECT id, status FROM runs")
        assert status == "running"  # killed: never marked finished

        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", SECRET)
        seen_before = len(gate.seen)
        gate.blocked.clear()
        code, out, err = cli("run", "--resume", run_id)
        assert code == 0, out + err

    after = _stored(db)
    assert sorted(after) == [f"t{i:02d}" for i in range(n)]  # nothing lost
    assert _rows(db, "SELECT COUNT(*) FROM results") == [(n,)]  # nothing duplicated
    for test_id, stored in before.items():  # finished results were kept, not re-run
        assert after[test_id] == stored
    resumed_calls = gate.seen[seen_before:]
    assert not [c for c in resumed_calls if int(c.split()[-1][1:]) < finished_before_kill]
    assert [r["test_id"] for r in read_jsonl(tmp_path / "r.jsonl")] == [f"t{i:02d}" for i in range(n)]
    assert _rows(db, "SELECT status FROM runs") == [("finished",)]
    assert SECRET.encode() not in db.read_bytes()
