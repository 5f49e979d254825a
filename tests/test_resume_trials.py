"""A resumed run runs only the trials a test lacks: those it finished are kept in the store
(killed with SIGKILL, or stopped by --max-cost), and its result equals an uninterrupted run's."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from convoeval.testing import FakeOpenAIServer, echo_reply

from .conftest import read_jsonl, write

PRICEY = "targets:\n  - {name: pricey, provider: openai, model: m, price_input_per_mtok: 1000000, price_output_per_mtok: 1000000}\n"


def _suite(tests: list[str]) -> str:
    body = "".join(
        f"  - id: {t}\n    mode: conversation\n    turns:\n      - input: 'one {t}'\n      - input: 'two {t}'\n"
        for t in tests
    )
    return "execution:\n  trials: 3\ntests:\n" + body


def _rows(db: Path, sql: str) -> list[tuple]:
    conn = sqlite3.connect(db)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def _comparable(value: object) -> object:
    """A result without what differs from run to run (times) or from folder to folder (its file)."""
    if isinstance(value, dict):
        return {k: _comparable(v) for k, v in value.items() if k not in ("duration_ms", "latency_ms", "file")}
    return [_comparable(v) for v in value] if isinstance(value, list) else value


def _uninterrupted(cli, tmp_path: Path, suite_text: str) -> dict[str, dict]:
    other = tmp_path / "whole"
    other.mkdir()
    write(other / "targets.yaml", PRICEY)
    suite = write(other / "s.eval.yaml", suite_text)
    code, out, err = cli("run", suite, "--target", "pricey", "--no-cache", "--store", other, "-o", other / "r.jsonl")
    assert code == 0, out + err
    return {r["test_id"]: _comparable(r) for r in read_jsonl(other / "r.jsonl")}


def _asked(server: FakeOpenAIServer) -> Counter[str]:
    """How many first turns each test sent (one per trial)."""
    firsts = [r["messages"][-1]["content"] for r in server.requests]
    return Counter(text.split()[-1] for text in firsts if text.lower().startswith("one "))


def test_max_cost_then_resume_runs_only_the_missing_trials(cli, fake_openai, tmp_path: Path) -> None:
    """--max-cost stops t1 after its first trial: the resumed run sends its two other trials and
    t2's three (the old code sent t1's first trial again: its result was kept per test only)."""
    write(tmp_path / "targets.yaml", PRICEY)
    text = _suite(["t1", "t2"])
    suite = write(tmp_path / "s.eval.yaml", text)
    args = ("--target", "pricey", "--concurrency", "1", "--no-cache", "-o", tmp_path / "r.jsonl")
    code, out, _ = cli("run", suite, *args, "--max-cost", "0.5")
    assert code == 1 and "budget reached" in out
    assert _asked(fake_openai) == {"t1": 1}

    code, out, err = cli("run", "--resume", "last", "--max-cost", "1000", "--no-cache")
    assert code == 0, out + err
    assert _asked(fake_openai) == {"t1": 3, "t2": 3}
    assert "1 finished trial(s) of 1 unfinished test(s)" in out
    # The run's totals count this session's calls only, and say so (before: nothing said).
    assert "not counted here: the 0 result(s) and 1 trial(s) from before the resume" in " ".join(out.split())
    resumed = {r["test_id"]: _comparable(r) for r in read_jsonl(tmp_path / "r.jsonl")}
    assert resumed == _uninterrupted(cli, tmp_path, text)
    assert _rows(tmp_path / ".convoeval" / "runs.sqlite", "SELECT COUNT(*) FROM trials") == [(0,)]  # results hold them


def test_resume_of_an_edited_suite_reuses_only_trials_of_unchanged_tests(cli, fake_openai, tmp_path: Path) -> None:
    """t1 finished two trials, then was edited (t3 added): its three trials run as it is now;
    resumed without t1, its trials are dropped with it."""
    write(tmp_path / "targets.yaml", PRICEY)
    db = tmp_path / ".convoeval" / "runs.sqlite"
    for edited, expected in (
        (_suite(["t1", "t2"]).replace("one t1", "ONE t1") + "  - id: t3\n    input: 'one t3'\n", ["t1", "t2", "t3"]),
        (_suite(["t2"]), ["t2"]),
    ):
        fake_openai.requests.clear()
        suite = write(tmp_path / "s.eval.yaml", _suite(["t1", "t2"]))
        code, out, _ = cli("run", suite, "--target", "pricey", "--concurrency", "2", "--no-cache", "--max-cost", "0.5")
        assert code == 1 and _asked(fake_openai) == {"t1": 2}
        assert len(_rows(db, "SELECT * FROM trials")) == 2
        [(run_id,)] = _rows(db, "SELECT id FROM runs ORDER BY rowid DESC LIMIT 1")

        write(suite, edited)
        code, out, err = cli("run", "--resume", "last", "--max-cost", "1000", "--no-cache")
        assert code == 0, out + err
        assert "finished trial(s)" not in out
        assert [
            t for (t,) in _rows(db, f"SELECT test_id FROM results WHERE run_id = '{run_id}' ORDER BY test_id")
        ] == expected
        assert _rows(db, "SELECT COUNT(*) FROM trials") == [(0,)]
        assert _asked(fake_openai) == +Counter(
            {"t1": 2 + 3 * ("t1" in expected), "t2": 3, "t3": 3 * ("t3" in expected)}
        )


class _Holding:
    """Replies at once, except to t1's third first turn (its third trial): that request waits
    until released."""

    def __init__(self) -> None:
        self.firsts = Counter[str]()
        self.release = threading.Event()
        self.lock = threading.Lock()

    def __call__(self, body: dict) -> str:
        text = body["messages"][-1]["content"]
        if text.startswith("one "):
            with self.lock:
                self.firsts[text] += 1
            if self.firsts[text] == 3 and text == "one t1":
                self.release.wait(30)
        return echo_reply(body)


def test_kill_9_mid_test_then_resume_runs_only_the_trials_it_lacks(cli, monkeypatch, tmp_path: Path) -> None:
    """A real `convoeval run` is killed (SIGKILL) while t1's third trial waits for its reply:
    the resumed run sends that trial and t2's, not t1's first two again."""
    write(tmp_path / "targets.yaml", PRICEY)
    text = _suite(["t1", "t2"])
    suite = write(tmp_path / "s.eval.yaml", text)
    db = tmp_path / ".convoeval" / "runs.sqlite"
    holding = _Holding()
    with FakeOpenAIServer(reply=holding) as server:
        env = {**os.environ, "OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "sk-test-x", "COLUMNS": "200"}
        command = [sys.executable, "-m", "convoeval", "run", str(suite), "--target", "pricey", "--concurrency", "1"]
        process = subprocess.Popen(
            [*command, "--no-cache"], cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        try:
            deadline = time.monotonic() + 60
            # t1's third trial waits (and holds the only slot); every trial begun before it has ended
            while not (holding.firsts["one t1"] == 3 and _on_disk(db, 2 + holding.firsts["one t2"])):
                assert process.poll() is None and time.monotonic() < deadline, "the run never reached trial 3"
                time.sleep(0.02)
            process.send_signal(signal.SIGKILL)
            process.wait(30)
        finally:
            if process.poll() is None:
                process.kill()
            holding.release.set()
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-x")
        code, out, err = cli("run", "--resume", "last", "--no-cache", "-o", tmp_path / "r.jsonl")
        assert code == 0, out + err
        assert _asked(server) == {"t1": 4, "t2": 3}  # t1's third trial again (it never finished), nothing else
    resumed = {r["test_id"]: _comparable(r) for r in read_jsonl(tmp_path / "r.jsonl")}
    with FakeOpenAIServer() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        assert resumed == _uninterrupted(cli, tmp_path, text)


def _on_disk(db: Path, trials: int) -> bool:
    """Whether the turns of `trials` finished trials (and those trials, where the store keeps
    them) are committed."""
    try:
        if _rows(db, "SELECT COUNT(*) FROM turns") != [(2 * trials,)]:
            return False
    except sqlite3.OperationalError:  # no store yet
        return False
    try:
        return _rows(db, "SELECT COUNT(*) FROM trials") == [(trials,)]
    except sqlite3.OperationalError:  # a store that keeps no trials (before they were kept)
        return True


def test_deleting_a_run_deletes_its_stored_trials(cli, fake_openai, tmp_path: Path) -> None:
    write(tmp_path / "targets.yaml", PRICEY)
    suite = write(tmp_path / "s.eval.yaml", _suite(["t1"]))
    code, out, _ = cli("run", suite, "--target", "pricey", "--concurrency", "1", "--no-cache", "--max-cost", "0.5")
    db = tmp_path / ".convoeval" / "runs.sqlite"
    [(run_id,)] = _rows(db, "SELECT id FROM runs")
    assert code == 1 and _rows(db, "SELECT COUNT(*) FROM trials") == [(1,)]
    assert cli("runs", "delete", run_id)[0] == 0
    assert _rows(db, "SELECT COUNT(*) FROM trials") == [(0,)]


@pytest.mark.parametrize(
    ("change", "said", "sent"),
    [
        ("model: m2,", "openai:m, now openai:m2", lambda r: r["model"]),
        (
            "model: m, temperature: 0.9,",
            "its temperature, max_tokens or provider settings",
            lambda r: r.get("temperature"),
        ),
    ],
    ids=["model", "temperature"],
)
def test_resume_after_the_targets_file_changed_a_target_runs_it_again(
    cli, fake_openai, tmp_path: Path, change: str, said: str, sent: Callable[[dict], object]
) -> None:
    """The stored results and trials of model m are not reused for model m2 (the old code mixed
    both models' trials in one result, and in one run, without a word), nor those answered at
    the default temperature for a target now at 0.9 (the recorded target named only its
    provider, model and URL)."""
    write(tmp_path / "targets.yaml", PRICEY)
    suite = write(tmp_path / "s.eval.yaml", _suite(["t1", "t2"]))
    code, out, _ = cli("run", suite, "--target", "pricey", "--concurrency", "1", "--no-cache", "--max-cost", "0.5")
    assert code == 1 and _asked(fake_openai) == {"t1": 1}
    first = sent(fake_openai.requests[0])
    write(tmp_path / "targets.yaml", PRICEY.replace("model: m,", change))
    code, out, err = cli("run", "--resume", "last", "--no-cache", "--max-cost", "1000")
    assert code == 0, out + err
    assert "target pricey changed since run" in out and said in out
    assert Counter(sent(r) for r in fake_openai.requests)[first] == 2  # all six trials on the new target
    assert len(fake_openai.requests) == 14
    assert _rows(tmp_path / ".convoeval" / "runs.sqlite", "SELECT COUNT(*) FROM trials") == [(0,)]
    code, out, err = cli("run", "--resume", "last", "--no-cache")  # finished as it is now: nothing to run
    assert code == 0 and "changed" not in out and len(fake_openai.requests) == 14
