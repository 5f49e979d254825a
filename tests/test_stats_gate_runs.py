"""The compare gate on real runs of a noisy suite against a loopback fake target (issue 32):
A/A pairs fail it at most its alpha share, a real drop fails it every time, flaky tests are
marked, intervals are in every report, and `--trials auto` stops once the verdict is settled."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
from collections import Counter
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

import convoeval
from convoeval.report import compare_results
from convoeval.testing import FakeOpenAIServer
from tests.conftest import write

TESTS = 40


def noisy_suite(tests: int = TESTS) -> str:
    lines = ["tests:"]
    for i in range(tests):
        lines += [
            f"  - id: q{i}",
            f"    input: question {i}",
            "    assertions:",
            "      - type: contains",
            f"        value: answer-{i}",
        ]
    return "\n".join(lines) + "\n"


class SeededReplies:
    """Answers `answer-N` to `question N` with probability `correct`, else something wrong. The
    k-th time a question is asked in a run, the draw is hash(seed, question, k): reproducible
    whatever order concurrent requests arrive in."""

    def __init__(self) -> None:
        self.correct = 0.7
        self.seed = "0"
        self.asked: Counter[str] = Counter()
        self.lock = threading.Lock()

    def start(self, seed: str, correct: float) -> None:
        with self.lock:
            self.seed, self.correct, self.asked = seed, correct, Counter()

    def __call__(self, body: dict[str, Any]) -> str:
        question = body["messages"][-1]["content"]
        with self.lock:
            self.asked[question] += 1
            k = self.asked[question]
        digest = hashlib.sha256(f"{self.seed}/{question}/{k}".encode()).digest()
        draw = int.from_bytes(digest[:8], "big") / 2**64
        number = question.rsplit(" ", 1)[-1]
        return f"answer-{number}" if draw < self.correct else "I am not sure."


@pytest.fixture
def noisy(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    replies = SeededReplies()
    suite = write(tmp_path / "noisy.eval.yaml", noisy_suite())
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CONVOEVAL_HOME", str(tmp_path / "home"))
    with FakeOpenAIServer(reply=replies) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key-0000")

        def run(seed: str, correct: float, trials: int | str = 3, **options: Any) -> list[convoeval.EvaluationResult]:
            replies.start(seed, correct)
            options = {"store": False, "cache": False, **options}
            report = convoeval.run([suite], target="openai:fake", trials=trials, concurrency=16, **options)
            return list(report.results)

        yield run


def test_a_a_pairs_fail_the_gate_at_most_alpha_and_a_real_drop_every_time(noisy) -> None:
    """Ten A/A pairs (p=0.7 both times, 40 tests x 3 trials): the significance gate fails at most
    2 (the old exact gate fails nearly all); five 0.9 -> 0.4 pairs: it fails all five (each run
    is 360 loopback calls, so five keep the test short)."""
    significance_fails, exact_fails = 0, 0
    for pair in range(10):
        a, b = noisy(f"aa-{pair}-a", 0.7), noisy(f"aa-{pair}-b", 0.7)
        significance_fails += compare_results(a, b).failed
        exact_fails += compare_results(a, b, gate="exact").failed
    assert significance_fails <= 2
    assert exact_fails >= 8  # the complaint: the per-test rule flags every A/A pair
    for pair in range(5):
        a, b = noisy(f"drop-{pair}-a", 0.9), noisy(f"drop-{pair}-b", 0.4)
        comparison = compare_results(a, b)
        assert comparison.failed, comparison.verdict_line()
        assert comparison.significance is not None and comparison.significance.mean_delta.value < -0.3


def test_compare_cli_on_stored_a_a_runs_reports_calibration_power_and_flaky_marks(noisy, cli, tmp_path: Path) -> None:
    store = tmp_path / "state"
    ids = []
    for seed in ("cli-a", "cli-b"):
        noisy(seed, 0.7, store=store / "runs.sqlite")
    code, stdout, _ = cli("runs", "--store", store, "--json")
    ids = [r["id"] for r in json.loads(stdout)["runs"]]
    code, stdout, stderr = cli(
        "compare", ids[1], ids[0], "--store", store, "--fail-on-regression", "--min-delta", "0.1"
    )
    assert code == 0, stdout + stderr
    assert "both runs ran the same suites unchanged" in stdout and "at most 5% (alpha)" in stdout
    assert "the exact per-test gate's 100.0% (1 - 2^-" in stdout  # with dozens of changed tests
    assert "McNemar exact" in stdout and "permutation" in stdout
    assert "too small: power" in stdout and "trials per test" in stdout
    assert "flaky" in stdout
    code, stdout, _ = cli("compare", ids[1], ids[0], "--store", store, "--format", "json")
    data = json.loads(stdout)
    assert data["same_fingerprint"] is True and data["failed"] is False
    code, stdout, _ = cli("compare", "last~1", "last", "--store", store, "--format", "json")  # the same two runs
    assert json.loads(stdout)["a"] == data["a"] and json.loads(stdout)["b"] == data["b"]
    assert data["significance"]["expected_false_alarm"]["significance"] == 0.05
    assert any(p["flaky"] for p in data["pairs"])
    code, stdout, _ = cli("compare", ids[1], ids[0], "--store", store, "--format", "markdown")
    assert "McNemar exact" in stdout and "flaky" in stdout
    code, _, stderr = cli("compare", ids[1], ids[0], "--store", store, "--fail-on-regression", "--gate", "exact")
    assert code == 1 and "exact gate" in stderr

    code, stdout, _ = cli("runs", "flaky", "--store", store, "--json")
    flaky = json.loads(stdout)["flaky"]
    assert code == 0 and flaky
    first = flaky[0]
    assert 0 < first["passes"] < first["verdicts"] and len(first["runs"]) == 2 and first["verdicts"] == 6
    assert first["pass_rate"]["ci_low"] < first["pass_rate"]["value"] < first["pass_rate"]["ci_high"]
    code, stdout, _ = cli("runs", "flaky", "--store", store)
    assert code == 0 and "Flaky tests" in stdout and first["test_id"] in stdout


def test_reports_carry_intervals_and_flaky_marks(noisy, cli, tmp_path: Path) -> None:
    results = noisy("reports", 0.7)
    path = tmp_path / "r.jsonl"
    path.write_text("".join(r.model_dump_json() + "\n" for r in results))
    flaky = next(r for r in results if r.pass_rate and 0 < r.pass_rate.passes < r.pass_rate.trials)
    assert flaky.pass_rate is not None and flaky.pass_rate.low < flaky.pass_rate.value < flaky.pass_rate.high
    code, _, stderr = cli("report", path, "--html", "r.html", "--markdown", "r.md")
    assert code == 0, stderr
    html = (tmp_path / "r.html").read_text()
    assert "95% CI" in html and 'class="badge flaky"' in html and "trial pass rate" in html
    markdown = (tmp_path / "r.md").read_text()
    assert "% [" in markdown and "### Flaky" in markdown and "Wilson" in markdown
    code, stdout, _ = cli("runs", "show", "last", "--store", tmp_path / "none")  # no store: a clear error
    assert code == 2


def test_trials_auto_stops_when_settled_and_says_how_many(noisy, cli, tmp_path: Path) -> None:
    always_wrong = noisy("auto-0", 0.0, trials="auto")
    assert {r.verdict for r in always_wrong} == {"fail"}
    for r in always_wrong:
        assert r.adaptive is not None and r.adaptive.stopped == "decided" and r.adaptive.decision == "fail"
        assert r.adaptive.run == len(r.trials) == 4 and r.adaptive.high < 0.8
        assert any("decided after 4 of at most 20" in note for note in r.notes)
    always_right = noisy("auto-1", 1.0, trials="auto")
    assert {r.verdict for r in always_right} == {"pass"}
    assert {r.adaptive.run for r in always_right if r.adaptive} == {17}
    coin = noisy("auto-2", 0.8, trials="auto")  # at the threshold: seldom decided before max
    assert any(r.adaptive and r.adaptive.stopped == "max" and len(r.trials) == 20 for r in coin)


def test_trials_auto_from_the_cli_and_the_suite_and_resume_with_the_cache(noisy, cli, tmp_path: Path) -> None:
    write(
        tmp_path / "small.eval.yaml",
        "execution:\n  trials: {max: 6, until: decided}\n" + noisy_suite(3),
    )
    code, stdout, stderr = cli("run", "small.eval.yaml", "-t", "openai:fake", "-o", "s.jsonl")
    results = [json.loads(line) for line in (tmp_path / "s.jsonl").read_text().splitlines()]
    assert all(r["adaptive"]["max"] == 6 and len(r["trials"]) <= 6 for r in results), stdout + stderr
    code, stdout, stderr = cli("run", "small.eval.yaml", "-t", "openai:fake", "--trials", "auto", "-o", "t.jsonl")
    again = [json.loads(line) for line in (tmp_path / "t.jsonl").read_text().splitlines()]
    # the same trials come from the cache and stop at the same place
    assert [len(r["trials"]) for r in again] == [len(r["trials"]) for r in results]
    assert [r["verdict"] for r in again] == [r["verdict"] for r in results]
    code, _, stderr = cli("run", "small.eval.yaml", "-t", "openai:fake", "--trials", "many")
    assert code == 2 and "nor auto" in stderr
    write(tmp_path / "bad.eval.yaml", "execution:\n  trials: {max: 6}\n" + noisy_suite(1))
    code, out, stderr = cli("validate", "bad.eval.yaml")
    assert code == 2 and "bad.eval.yaml:2" in out + stderr and "trials.max needs `until: decided`" in out + stderr
    write(tmp_path / "both.eval.yaml", "execution:\n  trials: {count: 3, until: decided}\n" + noisy_suite(1))
    code, out, stderr = cli("validate", "both.eval.yaml")
    assert code == 2 and "not both" in out + stderr
    write(tmp_path / "auto.eval.yaml", "execution:\n  trials: auto\n" + noisy_suite(2))
    code, out, stderr = cli("run", "auto.eval.yaml", "-t", "openai:fake", "-o", "u.jsonl")
    assert all(json.loads(line)["adaptive"]["max"] == 20 for line in (tmp_path / "u.jsonl").read_text().splitlines())


def test_trials_auto_resumes_a_run_that_lost_a_result(noisy, cli, tmp_path: Path) -> None:
    """A run with `--trials auto` that lost a result (a crash before it was saved) resumes with
    the recorded `auto`: the lost test runs again, from the cache, to the same stopping point."""
    write(tmp_path / "small.eval.yaml", noisy_suite(4))
    code, _, stderr = cli("run", "small.eval.yaml", "-t", "openai:fake", "--trials", "auto", "-o", "a.jsonl")
    first = {r["test_id"]: r for r in map(json.loads, (tmp_path / "a.jsonl").read_text().splitlines())}
    assert all(r["adaptive"]["run"] == len(r["trials"]) for r in first.values()), stderr
    with closing(sqlite3.connect(tmp_path / "home" / "runs.sqlite")) as db, db:
        db.execute("DELETE FROM results WHERE test_id = 'q2'")
    code, stdout, stderr = cli("run", "--resume", "last", "-o", "b.jsonl")
    assert "3 of 4 result(s) already stored" in stdout, stdout + stderr
    again = {r["test_id"]: r for r in map(json.loads, (tmp_path / "b.jsonl").read_text().splitlines())}
    for key in ("verdict", "adaptive", "pass_rate"):
        assert again["q2"][key] == first["q2"][key]
    assert [t["verdict"] for t in again["q2"]["trials"]] == [t["verdict"] for t in first["q2"]["trials"]]


def test_flaky_across_stored_runs_is_marked_in_compare_and_the_html_report(noisy, cli, tmp_path: Path) -> None:
    """One trial per run: a test that passed in one stored run and failed in another (same
    suite, unchanged) is flaky; compare, the report of a stored run and `runs flaky` say so."""
    store = tmp_path / "state"
    for seed in ("h1", "h2", "h3"):
        noisy(seed, 0.6, trials=1, store=store / "runs.sqlite")
    code, stdout, _ = cli("runs", "flaky", "--store", store, "--json")
    flaky = json.loads(stdout)["flaky"]
    assert flaky and all(len(f["runs"]) >= 2 and 0 < f["passes"] < f["verdicts"] for f in flaky)
    assert {f["suite"] for f in flaky} == {"noisy"}  # as the results name the suite
    ids = [r["id"] for r in json.loads(cli("runs", "--store", store, "--json")[1])["runs"]]
    code, stdout, _ = cli("compare", ids[1], ids[0], "--store", store, "--format", "json")
    pairs = {p["test_id"]: p for p in json.loads(stdout)["pairs"]}
    name = flaky[0]["test_id"]
    assert pairs[name]["flaky"] and pairs[name]["flaky_history"] == (
        f"passed {flaky[0]['passes']} of {flaky[0]['verdicts']} ({len(flaky[0]['runs'])} run(s))"
    )
    steady = {p for p in pairs} - {f["test_id"] for f in flaky}
    assert steady and not any(pairs[t]["flaky"] for t in steady)
    code, _, stderr = cli("report", ids[0], "--store", store, "--html", "r.html")
    assert code == 0, stderr
    html = (tmp_path / "r.html").read_text()
    assert html.count('class="badge flaky"') == len(flaky)


def test_trials_auto_honours_the_cost_limit(noisy, cli, tmp_path: Path) -> None:
    """Adaptive trials stop between waves once `trials.cost_limit_usd` is spent, and say so."""
    write(
        tmp_path / "targets.yaml",
        "targets:\n  - {name: priced, provider: openai, model: m, base_url: "
        f'"{os.environ["OPENAI_BASE_URL"]}", price_input_per_mtok: 100000, price_output_per_mtok: 100000}}\n',
    )
    write(tmp_path / "c.eval.yaml", "execution:\n  trials: {until: decided, cost_limit_usd: 0.5}\n" + noisy_suite(1))
    code, out, stderr = cli("run", "c.eval.yaml", "--target", "priced", "--no-cache", "-o", "c.jsonl")
    [result] = [json.loads(line) for line in (tmp_path / "c.jsonl").read_text().splitlines()]
    # the first wave is the fewest trials that could decide (4), each costing more than $0.5 in all
    assert result["adaptive"]["stopped"] == "cost_limit" and result["adaptive"]["run"] == 4, out + stderr
    assert any("trials.cost_limit_usd reached" in note for note in result["notes"])
