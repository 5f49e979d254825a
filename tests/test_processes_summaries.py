"""`--processes N` on a run of more results than the recorder keeps in memory: the workers
finish each test (its stored JSON, its turns' rows) and the command stores them as they came.
The store, the results file and the totals are still those of one process, secrets are still
redacted, and the caller's events get what they asked for (summaries, or whole results)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

import convoeval
from convoeval.engine import RunEvents
from convoeval.engine._recorder import KEPT_UP_TO
from convoeval.results import EvaluationResult
from convoeval.run import GradedTurn
from convoeval.testing import FakeOpenAIServer

from .conftest import read_jsonl, write
from .test_processes import _stored, _without_timings

#: More tests than a run keeps in memory (a smaller run hands its listeners whole results).
TESTS = KEPT_UP_TO + 12
SECRET = "sk-procs-summaries-0123456789"


class _Told(RunEvents):
    """What a run told: the results and the number of turns."""

    summaries_only = True

    def __init__(self) -> None:
        self.results: list[EvaluationResult] = []
        self.turns = 0

    def turn(self, turn: GradedTurn) -> None:
        self.turns += 1

    async def result(self, job: object, position: int, result: EvaluationResult) -> None:
        self.results.append(result)


class _ToldWhole(_Told):
    summaries_only = False


def _suite(tmp_path: Path) -> Path:
    """Conversations of a turn, with a contains check failing on odd tests; a few with a rubric
    the judge grades, or a second turn; one test that depends on another, one whose input
    (echoed) holds a secret, one of two trials (which the command combines itself)."""
    lines = ["tests:"]
    for i in range(TESTS):
        checks = [{"type": "contains", "value": "a" if i % 2 == 0 else "zzz"}]
        if i < 4:
            checks.append("Says something useful")  # type: ignore[arg-type]
        asked = f"a{i} {SECRET}" if i == 5 else f"a{i}"
        lines.append(f"  - id: t{i}\n    mode: conversation")
        if i == 1:
            lines.append("    depends_on: [t0]")
        if i == 7:
            lines.append("    execution: {trials: 2}")
        lines.append("    turns:")
        lines.append(f"      - {{input: '{asked}', assertions: {json.dumps(checks)}}}")
        if i in (2, 9):
            lines.append(f"      - {{input: 'b{i}', assertions: [{{type: contains, value: 'b'}}]}}")
    return write(tmp_path / "s.eval.yaml", "\n".join(lines) + "\n")


@pytest.fixture
def bench(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("PROCS_SUMMARIES_API_KEY", SECRET)
    with FakeOpenAIServer() as fake:
        write(
            tmp_path / "targets.yaml",
            f"targets:\n  - {{name: bot, provider: openai, model: m, base_url: '{fake.base_url}'}}\n"
            f"  - {{name: grader, provider: openai, model: j, base_url: '{fake.base_url}'}}\n",
        )
        yield _suite(tmp_path)


def _run(path: Path, tmp_path: Path, processes: int, events: RunEvents) -> convoeval.RunReport:
    return convoeval.run(
        path,
        target="bot",
        judge="grader",
        processes=processes,
        concurrency=64,
        cache=False,
        store=tmp_path / f"runs-{processes}.sqlite",
        output=tmp_path / f"r{processes}.jsonl",
        events=events,
    )


def test_workers_finish_the_tests_and_the_store_is_that_of_one_process(bench: Path, tmp_path: Path) -> None:
    told = {1: _Told(), 2: _Told()}
    reports = {n: _run(bench, tmp_path, n, told[n]) for n in (1, 2)}
    one, two = (_without_timings(read_jsonl(tmp_path / f"r{n}.jsonl")) for n in (1, 2))
    assert len(one) == TESTS  # type: ignore[arg-type]
    assert sorted(two, key=lambda r: r["test_id"]) == sorted(one, key=lambda r: r["test_id"])  # type: ignore[arg-type, index]
    assert _stored(tmp_path / "runs-2.sqlite") == _stored(tmp_path / "runs-1.sqlite")
    for key in ("calls", "turns", "input_tokens", "output_tokens", "by_model", "verdicts", "by_target"):
        assert reports[2].summary[key] == reports[1].summary[key], key
    assert reports[2].summary["verdicts"] == {"pass": TESTS // 2, "fail": TESTS // 2}
    assert reports[2].exit_code == reports[1].exit_code == 1

    # the secret the target echoed is redacted in the store, the file and what the events got
    with sqlite3.connect(tmp_path / "runs-2.sqlite") as db:
        texts = [row[0] for row in db.execute("SELECT data FROM results UNION ALL SELECT data FROM turns")]
        texts += [row[0] for row in db.execute("SELECT reply FROM turns")]
    assert not any(SECRET in text for text in texts) and any("[REDACTED]" in text for text in texts)
    assert SECRET not in (tmp_path / "r2.jsonl").read_text()

    # the events read summaries: told every result (its keys, verdict and score), no turn but
    # those of the test of two trials, which the command combined (its result is whole)
    assert told[2].turns == 2 and told[1].turns == TESTS + 3  # (t7's trials, combined by the command)
    summaries = {r.test_id: r for r in told[2].results}
    whole = {r.test_id: r for r in told[1].results}
    assert len(summaries) == TESTS
    for test_id, result in whole.items():
        assert (summaries[test_id].verdict, summaries[test_id].score) == (result.verdict, result.score)
    assert len(summaries["t7"].trials) == 2 and summaries["t3"].trials == []
    assert "[REDACTED]" in json.dumps(summaries["t5"].model_dump(mode="json"))


def test_events_that_read_whole_results_get_them(bench: Path, tmp_path: Path) -> None:
    told = _ToldWhole()
    _run(bench, tmp_path, 2, told)
    assert told.turns == TESTS + 3 and len(told.results) == TESTS
    assert all(r.trials and r.scores for r in told.results)
