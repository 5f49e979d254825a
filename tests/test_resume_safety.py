"""--resume that is safe (issue 10, items 5 and 6): a run still running in a live process is
refused, one on another host needs --takeover, an edited suite reuses only unchanged results,
and --retry-errors runs execution errors again. Real subprocesses, SQLite and the loopback fake."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import convoeval
from convoeval.testing import FakeOpenAIServer, Fault

from .conftest import read_jsonl, write
from .test_engine_store import SECRET, Gate, _rows, _stored, _suite, _wait_for


def test_resume_of_a_live_run_is_refused_until_its_process_is_gone(cli, tmp_path: Path, monkeypatch) -> None:
    gate = Gate({"t03"})
    suite = write(tmp_path / "s.eval.yaml", _suite(4, turns=1))
    db = tmp_path / ".convoeval" / "runs.sqlite"
    with FakeOpenAIServer(reply=gate) as server:
        env = {**os.environ, "OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": SECRET, "COLUMNS": "200"}
        process = subprocess.Popen(
            [sys.executable, "-m", "convoeval", "run", str(suite), "--target", "openai:m", "--concurrency", "1"],
            cwd=tmp_path,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", SECRET)
        try:
            # t03's request held by the gate (three results stored is not enough: the request may
            # still be on its way, and would then arrive during the refused resume below)
            _wait_for(
                lambda: len(_stored(db)) == 3 and "turn 1 of t03" in gate.seen and process.poll() is None,
                "the run to hang on t03",
            )
            [(run_id,)] = _rows(db, "SELECT id FROM runs")
            calls = len(server.requests)
            code, out, err = cli("run", "--resume", "last")
            assert code == 2
            assert err.strip() == (
                f"error: run {run_id} is still running in process {process.pid}; wait for it to "
                "finish (resuming now would send its prompts twice), or pass --takeover if that "
                "process is gone"
            )
            assert len(server.requests) == calls  # nothing was sent twice
            process.send_signal(signal.SIGKILL)
            process.wait(30)
        finally:
            if process.poll() is None:
                process.kill()
            gate.release.set()
        gate.blocked.clear()
        code, out, err = cli("run", "--resume", run_id, "-q")  # its process is gone: no --takeover needed
        assert code == 0, out + err
    assert sorted(_stored(db)) == ["t00", "t01", "t02", "t03"]
    assert _rows(db, "SELECT status FROM runs") == [("finished",)]


def test_a_run_owned_on_another_host_needs_takeover(cli, fake_openai: FakeOpenAIServer, tmp_path: Path) -> None:
    suite = write(tmp_path / "s.eval.yaml", _suite(2, turns=1))
    code, out, err = cli("run", suite, "--target", "openai:m", "-q")
    assert code == 0, err
    db = tmp_path / ".convoeval" / "runs.sqlite"
    [(run_id,)] = _rows(db, "SELECT id FROM runs")
    conn = sqlite3.connect(db)
    with conn:  # as a shared store shows a run that a process on another machine is running
        conn.execute("UPDATE runs SET status = 'running'")
        conn.execute("UPDATE owners SET owner = ?", (json.dumps({"pid": 4242, "host": "build-7"}),))
        conn.execute("DELETE FROM results WHERE test_id = 't01'")
    conn.close()
    code, out, err = cli("run", "--resume", "last")
    assert code == 2 and f"run {run_id} is still running in process 4242 on host build-7" in err
    code, out, err = cli("run", "--resume", "last", "--takeover", "-q")
    assert code == 0, out + err
    assert sorted(_stored(db)) == ["t00", "t01"]
    [(owner,)] = _rows(db, "SELECT owner FROM owners")
    assert json.loads(owner)["pid"] == os.getpid()


EDITED = {
    "before": "tests:\n"
    "  - {id: keep, input: 'same question'}\n"
    "  - {id: edit, input: 'old question'}\n"
    "  - {id: gone, input: 'deleted question'}\n",
    "after": "tests:\n"
    "  - {id: new, input: 'new question'}\n"
    "  - {id: keep, input: 'same question'}\n"
    "  - {id: edit, input: 'edited question', assertions: [{type: contains, value: nowhere}]}\n",
}


def test_resume_after_the_suite_was_edited_runs_the_new_suite(
    cli, fake_openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    suite = write(tmp_path / "s.eval.yaml", EDITED["before"])
    code, out, err = cli("run", suite, "--target", "openai:m", "--no-cache", "-o", "r.jsonl", "-q")
    assert code == 0, err
    suite.write_text(EDITED["after"])
    fake_openai.requests.clear()
    code, out, err = cli("run", "--resume", "last", "--no-cache")
    assert code == 1, out + err  # the edited test fails now; the deleted one no longer counts
    flat = " ".join(out.split())
    assert "changed since run" in flat and "reusing stored results only of tests that did not change" in flat
    assert "dropped 2 stored result(s)" in flat and "1 of 3 result(s) already stored" in flat
    sent = [r["messages"][-1]["content"] for r in fake_openai.target_requests()]
    assert sorted(sent) == ["edited question", "new question"]  # `keep` was reused, not sent again
    assert [r["test_id"] for r in read_jsonl(tmp_path / "r.jsonl")] == ["new", "keep", "edit"]
    report = convoeval.run(resume="last")  # nothing left to run: read the run back
    assert [r.test_id for r in report.results] == ["new", "keep", "edit"]
    assert [report.results[i].test_id for i in range(3)] == ["new", "keep", "edit"]
    assert [v for v, _ in report.outcomes or []] == ["pass", "pass", "fail"] and report.exit_code == 1


def test_retry_errors_runs_execution_errors_again(cli, fake_openai: FakeOpenAIServer, tmp_path: Path) -> None:
    suite = write(tmp_path / "s.eval.yaml", _suite(3, turns=1))
    fake_openai.faults.append(Fault(status=400, match="t01"))  # not retried: an execution error
    code, out, err = cli("run", suite, "--target", "openai:m", "-o", "r.jsonl", "-q")
    assert code == 1, out + err
    assert [r["execution_status"] for r in read_jsonl(tmp_path / "r.jsonl")] == ["ok", "execution_error", "ok"]
    fake_openai.requests.clear()
    code, out, err = cli("run", "--resume", "last", "-q")
    assert code == 1 and fake_openai.requests == []  # a plain resume keeps the stored error
    code, out, err = cli("run", "--resume", "last", "--retry-errors", "-q")
    assert code == 0, out + err
    assert [r["messages"][-1]["content"] for r in fake_openai.requests] == ["turn 1 of t01"]
    assert [r["execution_status"] for r in read_jsonl(tmp_path / "r.jsonl")] == ["ok", "ok", "ok"]
