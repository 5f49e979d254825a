"""Progress display, the run summary, --quiet, and results streamed rather than held."""

from __future__ import annotations

import io
import time
from pathlib import Path

from rich.console import Console

import convoeval
from convoeval.engine import RunMeter, StoredResults
from convoeval.report import RunProgress, meter_line
from convoeval.results import Usage
from convoeval.run import GradedTurn, Job, run_jobs
from convoeval.spec import load_suite
from convoeval.targets import ChatReply, ChatRequest, TargetConfig, create_target

from .conftest import write


def _meter() -> RunMeter:
    meter = RunMeter(run_id="r1", tests_total=10, tests_done=4, turns=9, max_cost_usd=2.0)
    request = ChatRequest(messages=[])
    meter.record_call(
        "t", request, ChatReply(text="x", usage=Usage(input_tokens=1000, output_tokens=234), cost_usd=0.5)
    )
    meter.record_call("t", request, ChatReply(text="x", cost_usd=0.25, cached=True))
    meter.record_call("t", request, None)
    return meter


def test_meter_line_says_everything_at_once() -> None:
    line = meter_line(_meter())
    assert line == (
        "4/10 tests, 9 turns, 1 calls, 1 cached, 1 errors, 1,234 tokens, $0.7500 (spent $0.5000), budget $2"
    )


def test_plain_lines_when_not_a_terminal() -> None:
    buffer = io.StringIO()
    progress = RunProgress(Console(file=buffer, width=200), "lines", interval_s=0.01)
    progress.start(_meter())
    deadline = time.monotonic() + 30
    while "progress" not in buffer.getvalue() and time.monotonic() < deadline:
        time.sleep(0.01)
    progress.stop()
    assert "4/10 tests, 9 turns, 1 calls, 1 cached, 1 errors" in buffer.getvalue()


def test_bar_on_a_terminal() -> None:
    buffer = io.StringIO()
    meter = _meter()
    progress = RunProgress(Console(file=buffer, width=200, force_terminal=True), "bar")
    progress.start(meter)
    meter.tests_done = 10
    progress.advance()
    progress.stop()
    text = buffer.getvalue()
    assert "10/10" in text and "9 turns" in text and "1 cached" in text and "$0.7500" in text


def test_quiet_prints_no_per_test_lines(cli, fake_openai, tmp_path: Path) -> None:
    suite = write(tmp_path / "s.eval.yaml", "tests:\n  - id: a\n    input: hi\n")
    _, out, _ = cli("run", suite, "--target", "openai:m", "-o", tmp_path / "r.jsonl")
    assert "done a @ openai:m" in out and "run " in out
    _, out, _ = cli("run", suite, "--target", "openai:m", "-o", tmp_path / "r.jsonl", "--quiet")
    assert "done a @" not in out and "1 cache hit(s)" in out


def test_api_results_come_from_the_store_lazily(fake_openai, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    suite = write(
        tmp_path / "s.eval.yaml",
        "tests:\n  - id: a\n    input: hi\n  - id: b\n    input: nope\n"
        "    assertions: [{type: contains, value: nothing}]\n",
    )
    started: list[RunMeter] = []
    report = convoeval.run(suite, target="openai:m", on_start=started.append)
    assert isinstance(report.results, StoredResults) and len(report.results) == 2
    assert [r.test_id for r in report.results] == ["a", "b"] and report.results[1].verdict == "fail"
    assert report.run_id == started[0].run_id and report.exit_code == 1
    assert report.summary["calls"] == 2 and report.summary["verdicts"] == {"pass": 1, "fail": 1}
    in_memory = convoeval.run(suite, target="openai:m", store=False, cache=False)
    assert isinstance(in_memory.results, list) and in_memory.run_id is None and in_memory.exit_code == 1


async def test_scheduler_keeps_only_a_window_of_tests_alive(tmp_path: Path) -> None:
    tests = "".join(f"  - id: t{i}\n    input: q{i}\n" for i in range(60))
    suite = load_suite(write(tmp_path / "s.eval.yaml", "tests:\n" + tests))
    target = create_target(TargetConfig(name="slow", provider="scripted", delay_s=0.001))
    alive = peak = 0

    class CountingJob(Job):
        def plan(self, test):  # type: ignore[no-untyped-def]
            nonlocal alive, peak
            alive += 1
            peak = max(peak, alive)
            return super().plan(test)

    class Finished:
        def turn(self, turn: GradedTurn) -> None:
            pass

        async def result(self, job: Job, position: int, result: object) -> None:
            nonlocal alive
            alive -= 1

    kept = await run_jobs(
        [CountingJob(target=target, suite=suite)], judge=None, concurrency=2, events=Finished(), keep_results=False
    )
    assert kept == [] and alive == 0
    assert peak <= 18  # never all 60 tests at once


def test_absorbing_a_workers_calls_adds_every_count() -> None:
    """A worker's (or a Ray task's) counts reach the run's totals field by field, every field:
    one added to `CallTotals` and not to `merge` would be lost here."""
    from dataclasses import fields

    from convoeval.engine._meter import CallTotals

    names = [f.name for f in fields(CallTotals)]
    worker = CallTotals(**{name: i + 1 for i, name in enumerate(names)})
    meter = RunMeter()
    meter.absorb({"bench-target": worker, "bench-judge (judge)": worker})
    meter.absorb({"bench-target": worker})
    assert {n: getattr(meter.totals, n) for n in names} == {n: 3 * (i + 1) for i, n in enumerate(names)}
    assert {n: getattr(meter.by_model["bench-target"], n) for n in names} == {
        n: 2 * (i + 1) for i, n in enumerate(names)
    }
