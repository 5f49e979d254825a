"""The `-o` JSONL after a run whose tests finish out of order: in run order, byte for byte what
the run store holds (it is streamed as the tests finish, then written again from the store, as
stored bytes: never decoded and encoded again)."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest

from convoeval._result_files import export_jsonl, export_results
from convoeval.engine import RecordedOptions, ResultKey, RunStore
from convoeval.testing import FakeOpenAIServer, echo_reply

from .conftest import passing_result, write


def _store_export(db: Path) -> bytes:
    """The results of the (only) run as the store exports them: data in run order, one a line."""
    conn = sqlite3.connect(db)
    try:
        rows = conn.execute("SELECT data FROM results ORDER BY seq").fetchall()
    finally:
        conn.close()
    return b"".join(data.encode("utf-8") + b"\n" for (data,) in rows)


def _finish_order(db: Path) -> list[str]:
    conn = sqlite3.connect(db)
    try:
        return [t for (t,) in conn.execute("SELECT test_id FROM results ORDER BY finished, rowid")]
    finally:
        conn.close()


def test_results_finishing_out_of_order_are_written_in_run_order(cli, tmp_path: Path, monkeypatch) -> None:
    ids = [f"t{i}" for i in range(5)]

    def slow_first(body: dict) -> str:  # t0 answers last, t4 first
        time.sleep(0.08 * (4 - int(body["messages"][-1]["content"][-1])))
        return echo_reply(body)

    tests = "".join(f"  - id: {t}\n    input: 'question {t[1]}'\n" for t in ids)
    suite = write(tmp_path / "s.eval.yaml", "tests:\n" + tests)
    with FakeOpenAIServer(reply=slow_first) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-SECRET-never-stored-1234")
        code, out, err = cli("run", suite, "--target", "openai:m", "--concurrency", "5", "-o", "r.jsonl", "-q")
    assert code == 0, out + err
    db = tmp_path / ".convoeval" / "runs.sqlite"
    assert _finish_order(db) != ids  # they did finish out of order
    assert (tmp_path / "r.jsonl").read_bytes() == _store_export(db)


@pytest.mark.parametrize("encoding", ["UTF-8", "UTF-16le"])
async def test_a_jsonl_export_from_the_store_is_the_results_json_in_utf8(tmp_path: Path, encoding: str) -> None:
    db = tmp_path / "runs.sqlite"
    conn = sqlite3.connect(db)
    conn.execute(f"PRAGMA encoding = '{encoding}'")  # before any table: the file's text encoding
    conn.execute("CREATE TABLE t (x)")
    conn.close()
    store = RunStore(db)
    try:
        run = store.new_run(RecordedOptions(paths=["s.yaml"]))
        made = [
            passing_result(i, note, suite="s")
            for i, note in enumerate(["plain", 'ünïcødé ✓ 長い \\u2028 "quoted"', "emoji 🎉"])
        ]
        for seq, result in reversed(list(enumerate(made))):  # saved out of order
            await store.save_result(run.id, ResultKey("s", result.test_id, "m"), seq, result)
        results = store.results(run.id)
        export_jsonl(tmp_path / "fast.jsonl", results.iter_json_bytes())
        export_results(tmp_path / "plain.jsonl", results.iter_json())
    finally:
        store.close()
    expected = "".join(r.model_dump_json() + "\n" for r in made).encode("utf-8")
    assert (tmp_path / "fast.jsonl").read_bytes() == (tmp_path / "plain.jsonl").read_bytes() == expected
