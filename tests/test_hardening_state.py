"""Failing state: a held write lock, a full disk, damaged or misplaced state files (issue 10, items 1 and 11)."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from convoeval.engine import RecordedOptions, ResponseCache, ResultKey, RunStore, StoreError, _sqlite
from convoeval.results import EvaluationResult
from convoeval.testing import FakeOpenAIServer, echo_reply

from .conftest import write

SUITE = "tests:\n" + "".join(f"  - id: t{i}\n    input: 'question {i}'\n" for i in range(3))

_HOLD_LOCK = """
import sqlite3, sys, time
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN IMMEDIATE")
print("locked", flush=True)
time.sleep(float(sys.argv[2]))
"""


def _hold_lock(db: Path, seconds: float = 30.0) -> subprocess.Popen[str]:
    """A real second process that holds the database's write lock."""
    proc = subprocess.Popen(
        [sys.executable, "-c", _HOLD_LOCK, str(db), str(seconds)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "locked"
    return proc


def _result(test_id: str) -> EvaluationResult:
    return EvaluationResult(
        test_id=test_id, target="t", score=1.0, verdict="pass", execution_status="ok", threshold=0.8
    )


def test_a_held_write_lock_fails_every_save_in_bounded_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_sqlite, "WRITE_TIMEOUT_S", 0.3)
    store = RunStore(tmp_path / "runs.sqlite")
    run = store.new_run(RecordedOptions())
    asyncio.run(store.save_result(run.id, ResultKey("s", "before", "t"), 0, _result("before")))
    locker = _hold_lock(store.path)
    try:
        started = time.monotonic()
        with pytest.raises(StoreError, match=r"cannot write .*runs\.sqlite: database is locked"):
            asyncio.run(store.save_result(run.id, ResultKey("s", "t1", "t"), 1, _result("t1")))
        assert time.monotonic() - started < 5
        # The writer gave up: later saves fail at once with the same error instead of waiting forever.
        started = time.monotonic()
        with pytest.raises(StoreError, match="database is locked"):
            asyncio.run(store.save_result(run.id, ResultKey("s", "t2", "t"), 2, _result("t2")))
        assert time.monotonic() - started < 0.5
    finally:
        locker.kill()
        locker.wait()
        store.close()
    reopened = RunStore(store.path)
    assert [r.test_id for r in reopened.results(run.id)] == ["before"]  # committed results survive
    reopened.close()


def test_a_lock_released_within_the_bound_is_retried(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "runs.sqlite")
    run = store.new_run(RecordedOptions())
    locker = _hold_lock(store.path, seconds=0.3)
    try:
        asyncio.run(store.save_result(run.id, ResultKey("s", "t1", "t"), 0, _result("t1")))
    finally:
        locker.wait()
        store.close()
    reopened = RunStore(store.path)
    assert len(reopened.results(run.id)) == 1
    reopened.close()


def test_a_full_disk_fails_the_save_with_the_cause(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_sqlite, "WRITE_TIMEOUT_S", 0.2)
    store = RunStore(tmp_path / "runs.sqlite")
    run = store.new_run(RecordedOptions())
    pages = store._writer._conn.execute("PRAGMA page_count").fetchone()[0]
    store._writer._conn.execute(f"PRAGMA max_page_count = {pages}")  # SQLITE_FULL on the next new page
    big = _result("big").model_copy(update={"error": "x" * 200_000})
    try:
        with pytest.raises(StoreError, match="full"):
            asyncio.run(store.save_result(run.id, ResultKey("s", "big", "t"), 0, big))
        with pytest.raises(StoreError):
            store.finish_run(run.id, {})
    finally:
        store.close()


def _locking_reply(db: Path, lockers: list[subprocess.Popen[str]]):
    """Answers normally; the second question first has another process take the store's write lock."""

    def reply(body: dict) -> str:
        if "question 1" in str(body["messages"]) and not lockers:
            lockers.append(_hold_lock(db))
        return echo_reply(body)

    return reply


def test_a_run_whose_store_is_locked_mid_run_exits_2_and_stays_resumable(
    cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_sqlite, "WRITE_TIMEOUT_S", 0.3)
    suite = write(tmp_path / "s.eval.yaml", SUITE)
    db = tmp_path / ".convoeval" / "runs.sqlite"
    lockers: list[subprocess.Popen[str]] = []
    with FakeOpenAIServer(reply=_locking_reply(db, lockers)) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-dummy")
        try:
            started = time.monotonic()
            code, out, err = cli("run", suite, "--target", "openai:m", "--concurrency", "1", "--no-cache")
            elapsed = time.monotonic() - started
        finally:
            for proc in lockers:
                proc.kill()
                proc.wait()
        assert code == 2 and elapsed < 20
        assert len(err.strip().splitlines()) == 1, err
        assert f"cannot write {Path('.convoeval') / 'runs.sqlite'}: database is locked" in err
        assert "Traceback" not in out + err
        run_id = err.split("--resume ")[1].strip()
        stored = sqlite3.connect(db).execute("SELECT test_id FROM results").fetchall()
        assert stored == [("t0",)]
        server.requests.clear()
        code, out, err = cli("run", "--resume", run_id, "--no-cache")
        assert code == 0, err
        assert len(server.target_requests()) == 2  # only t1 and t2 ran again
        assert "resuming run" in out


def test_store_option_and_convoeval_home_move_the_state(
    cli, fake_openai, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    suite = write(tmp_path / "s.eval.yaml", SUITE)
    code, _, err = cli("run", suite, "--target", "openai:m", "--store", tmp_path / "state")
    assert code == 0, err
    assert {p.name for p in (tmp_path / "state").iterdir()} >= {"runs.sqlite", "cache.sqlite", "results"}
    monkeypatch.setenv("CONVOEVAL_HOME", str(tmp_path / "home"))
    code, _, err = cli("run", suite, "--target", "openai:m")
    assert code == 0, err
    assert (tmp_path / "home" / "runs.sqlite").is_file() and (tmp_path / "home" / "cache.sqlite").is_file()
    assert not (tmp_path / ".convoeval").exists()


def test_a_read_only_working_directory_is_one_line_exit_2(
    cli, fake_openai, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    suite = write(tmp_path / "s.eval.yaml", SUITE)
    if os.geteuid() == 0:
        readonly = Path("/sys")  # root ignores permissions; sysfs refuses new folders even to root
    else:
        readonly = tmp_path / "ro"
        readonly.mkdir()
        readonly.chmod(0o555)
    monkeypatch.chdir(readonly)
    code, out, err = cli("run", suite, "--target", "openai:m", "-o", tmp_path / "r.jsonl")
    assert code == 2
    assert len(err.strip().splitlines()) == 1 and "runs.sqlite" in err and "--store" in err, err
    assert "Traceback" not in out + err


def test_a_state_folder_that_is_a_file_is_one_line_exit_2(cli, fake_openai, tmp_path: Path) -> None:
    suite = write(tmp_path / "s.eval.yaml", SUITE)
    write(tmp_path / ".convoeval", "not a folder")
    code, _, err = cli("run", suite, "--target", "openai:m", "-o", tmp_path / "r.jsonl")
    assert code == 2
    assert err.strip().count("\n") == 0 and "a file stands where a folder is needed" in err, err


def test_a_damaged_run_store_is_one_line_exit_2(cli, fake_openai, tmp_path: Path) -> None:
    suite = write(tmp_path / "s.eval.yaml", SUITE)
    write(tmp_path / ".convoeval" / "runs.sqlite", "garbage " * 1000)
    code, _, err = cli("run", suite, "--target", "openai:m", "-o", tmp_path / "r.jsonl")
    assert code == 2
    assert err.strip().count("\n") == 0 and "runs.sqlite: file is not a database" in err, err


def test_a_damaged_cache_is_set_aside_and_the_run_goes_on(cli, fake_openai, tmp_path: Path) -> None:
    suite = write(tmp_path / "s.eval.yaml", SUITE)
    write(tmp_path / ".convoeval" / "cache.sqlite", "garbage " * 1000)
    code, out, err = cli("run", suite, "--target", "openai:m", "-o", tmp_path / "r.jsonl")
    assert code == 0, err
    assert "the response cache was damaged" in out
    aside = [p.name for p in (tmp_path / ".convoeval").iterdir() if ".damaged-" in p.name]
    assert len(aside) == 1 and aside[0].startswith("cache.sqlite.damaged-")
    assert len(ResponseCache(tmp_path / ".convoeval" / "cache.sqlite")) == 3


@pytest.mark.parametrize("where", ["under-a-file", "a-folder", "dev-full"])
def test_a_bad_output_place_is_one_line_exit_2_and_records_no_run(cli, fake_openai, tmp_path: Path, where: str) -> None:
    suite = write(tmp_path / "s.eval.yaml", SUITE)
    blocker = write(tmp_path / "plain.txt", "x")
    output = {"under-a-file": blocker / "r.jsonl", "a-folder": tmp_path, "dev-full": Path("/dev/full")}[where]
    code, out, err = cli("run", suite, "--target", "openai:m", "-o", output)
    assert code == 2
    assert err.startswith(f"error: cannot write results to {output}") and err.strip().count("\n") == 0, err
    assert not fake_openai.requests
    db = tmp_path / ".convoeval" / "runs.sqlite"
    assert not db.exists() or sqlite3.connect(db).execute("SELECT COUNT(*) FROM runs").fetchone() == (0,)


@pytest.fixture
def two_stored_runs(cli, tmp_path: Path) -> Path:
    """Two runs of a scripted bot in ./st; returns the store file."""
    write(tmp_path / "targets.yaml", "targets:\n  - {name: bot, provider: scripted, default: hi}\n")
    write(tmp_path / "s.eval.yaml", "tests:\n  - {id: t, input: hi, assertions: [{type: contains, value: hi}]}\n")
    for _ in range(2):
        assert cli("run", "s.eval.yaml", "-t", "bot", "--store", "st", "-q")[0] == 0
    return tmp_path / "st" / "runs.sqlite"


#: The commands that only read the run store.
READERS = [
    ("runs",),
    ("runs", "--json"),
    ("runs", "flaky"),
    ("runs", "show", "last"),
    ("report", "last", "--html", "o.html"),
    ("compare", "last", "last~1"),
]


@pytest.mark.parametrize("args", READERS, ids=" ".join)
def test_a_damaged_run_store_read_is_one_line_exit_2(cli, two_stored_runs: Path, args: tuple[str, ...]) -> None:
    """Before: `runs`, `runs --json` and `runs flaky` ended in `sqlite3.DatabaseError: database disk
    image is malformed` (a traceback); the others said `cannot write` a store they only read."""
    data = two_stored_runs.read_bytes()
    two_stored_runs.write_bytes(data[: len(data) // 2])
    code, _, err = cli(*args, "--store", "st")
    assert code == 2 and err.count("\n") == 1 and "runs.sqlite" in err and "malformed" in err, err
    assert "use another --store" in err


@pytest.mark.parametrize(
    ("damage", "args", "said"),
    [
        (
            "UPDATE results SET data = '{}'",
            ("runs", "show", "last"),
            "run last: cannot be read (test_id: Field required)",
        ),
        ("UPDATE results SET data = '{}'", ("report", "last", "--html", "o.html"), "run last: cannot be read"),
        ("UPDATE results SET data = '{}'", ("compare", "last", "last~1"), "run last: cannot be read"),
        ("UPDATE results SET data = 'not json'", ("runs", "flaky"), "cannot read st/runs.sqlite: malformed JSON"),
        ("UPDATE runs SET summary = 'not json'", ("runs", "show", "last"), "run last: its summary cannot be read"),
        (
            "UPDATE runs SET id = NULL",
            ("runs",),
            "st/runs.sqlite: a run cannot be read (id: Input should be a valid string)",
        ),
        ("DROP TABLE results", ("runs",), "cannot read st/runs.sqlite: no such table: results"),
    ],
)
def test_a_run_store_convoeval_did_not_write_is_one_line_exit_2(
    cli, two_stored_runs: Path, damage: str, args: tuple[str, ...], said: str
) -> None:
    """Before: tracebacks (pydantic's ValidationError, JSONDecodeError, sqlite3.OperationalError)."""
    with sqlite3.connect(two_stored_runs) as conn:
        conn.execute(damage)
    conn.close()
    code, _, err = cli(*args, "--store", "st")
    assert code == 2 and err.count("\n") == 1 and said in err, err


def test_an_owner_convoeval_did_not_write_is_unknown(cli, two_stored_runs: Path) -> None:
    """Before: `AttributeError: 'int' object has no attribute 'get'` listing the runs."""
    with sqlite3.connect(two_stored_runs) as conn:
        conn.execute("UPDATE runs SET status = 'running'")
        conn.execute("UPDATE owners SET owner = '1'")
    conn.close()
    code, out, err = cli("runs", "--store", "st", "--json")
    assert code == 0 and out.count('"status": "running"') == 2, err
