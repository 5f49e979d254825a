"""`convoeval runs` and `convoeval cache` on a store with several runs (issue 18): list with
sizes, show, delete by id and by age (never a live run), VACUUM; cache stats and clear."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

from convoeval.testing import FakeOpenAIServer

from .conftest import write

SUITE = "tests:\n  - {id: a, input: 'one'}\n  - {id: b, input: 'two', assertions: [{type: contains, value: zz}]}\n"


def _sql(db: Path, query: str, *args: object) -> list[tuple]:
    conn = sqlite3.connect(db)
    try:
        with conn:
            return conn.execute(query, args).fetchall()
    finally:
        conn.close()


def test_runs_list_show_and_delete(cli, fake_openai: FakeOpenAIServer, tmp_path: Path) -> None:
    suite = write(tmp_path / "s.eval.yaml", SUITE)
    for model in ("m1", "m2", "m3"):
        assert cli("run", suite, "-t", f"openai:{model}", "-q")[0] == 1
    db = tmp_path / ".convoeval" / "runs.sqlite"
    ids = [r for (r,) in _sql(db, "SELECT id FROM runs ORDER BY rowid")]
    code, out, err = cli("runs")
    assert code == 0, err
    assert all(run_id in out for run_id in ids) and "3 run(s)" in out and " MB on disk" in out
    assert "s.eval.yaml" in out and "openai:m2" in out and "50%" in out
    code, out, err = cli("runs", "--json")
    listed = json.loads(out)
    assert [r["id"] for r in listed["runs"]] == ids[::-1] and listed["bytes"] > 0
    assert [(r["tests"], r["passed"]) for r in listed["runs"]] == [(2, 1)] * 3

    code, out, err = cli("runs", "show", ids[1])
    assert code == 0, err
    assert f"run {ids[1]}" in out and "openai:m2" in out and "status finished; suites s.eval.yaml" in out
    assert cli("run", "--rerun-failed", ids[1], "-q")[0] == 1
    code, out, err = cli("runs", "show", "last")
    assert f"re-run of the tests that did not pass in run {ids[1]}" in out
    [(rerun,)] = _sql(db, "SELECT id FROM runs ORDER BY rowid DESC LIMIT 1")
    assert cli("runs", "delete", rerun)[0] == 0
    assert cli("runs", "show", "nope")[0] == 2

    _sql(db, "UPDATE runs SET started = '2020-01-01T00:00:00.000Z' WHERE id = ?", ids[0])
    _sql(db, "UPDATE runs SET status = 'running' WHERE id = ?", ids[2])  # owned by this (live) process
    code, out, err = cli("runs", "delete", ids[2], "--older-than", "30d")
    assert code == 0, err
    assert f"run {ids[2]} is still running; not deleted" in err and "deleted 1 run(s)" in out
    assert [r for (r,) in _sql(db, "SELECT id FROM runs ORDER BY rowid")] == ids[1:]
    assert _sql(db, "SELECT COUNT(*) FROM results WHERE run_id = ?", ids[0]) == [(0,)]
    assert _sql(db, "SELECT COUNT(*) FROM turns WHERE run_id = ?", ids[0]) == [(0,)]
    code, out, err = cli("runs", "delete", "no-such-run")
    assert code == 2 and "no run 'no-such-run'" in err
    assert cli("runs", "delete", "--older-than", "soon")[0] == 2


def test_cache_stats_and_clear(cli, fake_openai: FakeOpenAIServer, tmp_path: Path) -> None:
    code, out, err = cli("cache", "clear", "--older-than", "soon")  # before any cache exists
    assert code == 2 and "age 'soon'" in err and "deleted" not in out
    suite = write(tmp_path / "s.eval.yaml", SUITE)
    cli("run", suite, "-t", "openai:m1", "-q")
    cli("run", suite, "-t", "openai:m2", "-q")
    code, out, err = cli("cache", "stats")
    assert code == 0, err
    assert "4 entries" in out and "m1" in out and "m2" in out
    cache = tmp_path / ".convoeval" / "cache.sqlite"
    _sql(cache, "UPDATE responses SET created = created - 40 * 86400 WHERE model = 'm1'")
    code, out, err = cli("cache", "clear", "--older-than", "30d")
    assert code == 0 and "deleted 2 cached replies" in out
    assert _sql(cache, "SELECT DISTINCT model FROM responses") == [("m2",)]
    fake_openai.requests.clear()
    cli("run", suite, "-t", "openai:m2", "-q")
    assert fake_openai.requests == []  # what is left still answers
    code, out, err = cli("cache", "clear")
    assert code == 0 and "deleted 2 cached replies" in out and _sql(cache, "SELECT COUNT(*) FROM responses") == [(0,)]
    assert os.path.getsize(cache) < 64 * 1024
