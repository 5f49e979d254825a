"""The arena: judge the conversations of every pair of targets on every test, then rate them.

For each test and each pair of targets (X, Y) that both have a result for it, the pairwise judge
(`convoeval.judging.judge_pair`) is asked twice: once with X's conversation shown as A, once with
Y's shown as A. When both orders name the same winner (or both say EQUAL) that is the battle's
outcome; when they disagree, the battle is a tie (position-bias control, as in MT-Bench and
TD-Eval) and counts towards the order-disagreement rate. A pair whose judge call failed in either
order (HTTP error, or an answer that was not A/B/EQUAL after the re-ask) is NOT a battle: it is
counted and reported as a judge error.

Battles are rated in the order of the tests and pairs (not in the order the judge answered, so
the online Elo is reproducible) by `leaderboard_from_battles`: online Elo with K, Bradley-Terry
with seeded bootstrap intervals. Next to the ratings each target gets its turn-level mean (the
mean of its `turn-N` scores): TD-Eval's two levels side by side.

Example:
    report = await judge_arena(results, judge_target, bootstrap=200)
    print(report.to_json())
    report.write_battles("battles.jsonl")   # re-rate later: convoeval arena --battles battles.jsonl
"""

from __future__ import annotations

import asyncio
import csv
import io
import itertools
import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.table import Table

from ..judging import JudgeError, PairwiseWinner, judge_pair
from ..results import EvaluationResult, Usage
from ..targets import Target
from ._battle import Battle, Winner
from ._leaderboard import Leaderboard, leaderboard_from_battles
from ._output import CSV_COLUMNS

TestKey = tuple[str | None, str]
"""A test in the arena: (suite name as in the results, test id)."""

#: Results with these statuses did not run; their test is left out of the arena for that target.
NOT_RUN = frozenset({"skipped", "budget_exhausted"})

ARENA_CSV_COLUMNS = (*CSV_COLUMNS, "turn_mean", "turn_scores", "test_score_mean", "tests", "passed")

_SHOWN_ERRORS = 20

# What each order's label means for the pair (model_a, model_b).
_A_FIRST: dict[str, Winner] = {"A": "model_a", "B": "model_b", "EQUAL": "tie"}
_B_FIRST: dict[str, Winner] = {"A": "model_b", "B": "model_a", "EQUAL": "tie"}


@dataclass(frozen=True)
class ArenaTest:
    """What the judge is told about a test besides the two conversations.

    Attributes:
        criteria: the test's goal.
        policy: the domain policy (test's or suite's).
        backend: per-turn backend results (turn number -> data).
    """

    criteria: str | None = None
    policy: Any = None
    backend: Mapping[int, Any] | None = None


@dataclass
class PairJudgment:
    """One pair of targets on one test, judged in both orders.

    Attributes:
        suite, test_id: the test.
        model_a, model_b: the two targets; model_a is shown first in the first order.
        a_first: the judge's label when model_a's conversation was A ("A" = model_a wins).
        b_first: the judge's label when model_b's conversation was A ("A" = model_b wins).
        reasoning_a_first, reasoning_b_first: the judge's reasoning in each order.
        errors: why an order failed (judge errors); a pair with an error is not a battle.
        usage, cost_usd: the judge calls of both orders.
    """

    suite: str | None
    test_id: str
    model_a: str
    model_b: str
    a_first: PairwiseWinner | None = None
    b_first: PairwiseWinner | None = None
    reasoning_a_first: str | None = None
    reasoning_b_first: str | None = None
    errors: list[str] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    cost_usd: float = 0.0

    @property
    def ok(self) -> bool:
        """Both orders were judged."""
        return self.a_first is not None and self.b_first is not None

    @property
    def consistent(self) -> bool | None:
        """Whether both orders gave the same outcome (None when an order failed)."""
        if not self.ok:
            return None
        return _A_FIRST[self.a_first] == _B_FIRST[self.b_first]  # type: ignore[index]

    @property
    def winner(self) -> Winner | None:
        """The battle's outcome for (model_a, model_b): the agreed winner, else a tie."""
        if not self.ok:
            return None
        first = _A_FIRST[self.a_first]  # type: ignore[index]
        return first if first == _B_FIRST[self.b_first] else "tie"  # type: ignore[index]

    def battle(self) -> Battle | None:
        """The battle for the ratings, or None when the judge failed in an order."""
        winner = self.winner
        return None if winner is None else Battle(self.model_a, self.model_b, winner)

    @property
    def question_id(self) -> str:
        return f"{self.suite}/{self.test_id}" if self.suite else self.test_id

    def to_record(self, judge: str | None = None) -> dict[str, Any]:
        """The battle in Chatbot Arena's JSONL format, with what the judge said in each order.

        `{model_a, model_b, winner: model_a|model_b|tie, question_id, test_id, suite, judge,
        judgments: {a_first, b_first}, consistent, reasoning: {a_first, b_first}}`.
        """
        return {
            "model_a": self.model_a,
            "model_b": self.model_b,
            "winner": self.winner,
            "question_id": self.question_id,
            "test_id": self.test_id,
            "suite": self.suite,
            "judge": judge,
            "judgments": {"a_first": self.a_first, "b_first": self.b_first},
            "consistent": self.consistent,
            "reasoning": {"a_first": self.reasoning_a_first, "b_first": self.reasoning_b_first},
        }


@dataclass(frozen=True)
class TargetSummary:
    """A target's turn-level scores, to show next to its arena ratings.

    Attributes:
        turn_mean: mean of the `turn-N` scores over all its results (None without any).
        turn_scores: how many turn scores that mean is over.
        test_score_mean: mean of its test scores.
        tests: its results; passed: how many passed.
    """

    target: str
    turn_mean: float | None
    turn_scores: int
    test_score_mean: float | None
    tests: int
    passed: int

    def to_dict(self) -> dict[str, Any]:
        return {"turn_mean": self.turn_mean, "turn_scores": self.turn_scores,
                "test_score_mean": self.test_score_mean, "tests": self.tests, "passed": self.passed}


def summarise_target(target: str, results: Iterable[EvaluationResult]) -> TargetSummary:
    """The turn-level mean (mean of every `turn-N` score) and test scores of one target."""
    turn_scores: list[float] = []
    test_scores: list[float] = []
    tests = passed = 0
    for result in results:
        if result.target != target:
            continue
        tests += 1
        passed += result.verdict == "pass"
        if result.score is not None:
            test_scores.append(result.score)
        for entry in result.scores:
            if entry.type == "turn" and entry.name.startswith("turn-") and entry.score is not None:
                turn_scores.append(entry.score)
    return TargetSummary(
        target=target,
        turn_mean=round(math.fsum(turn_scores) / len(turn_scores), 6) if turn_scores else None,
        turn_scores=len(turn_scores),
        test_score_mean=round(math.fsum(test_scores) / len(test_scores), 6) if test_scores else None,
        tests=tests,
        passed=passed,
    )


@dataclass
class ArenaReport:
    """What an arena produced.

    Attributes:
        judgments: every pair judged (or attempted), in test and pair order.
        leaderboard: ratings from the battles (None when no pair could be judged).
        summaries: per target (every target, in order), the turn-level scores.
        judge: the judge's name.
        skipped: why some pairs were not judged (a target has no result for a test, or the
            test did not run for it).
        usage, cost_usd, judge_calls: of all pairwise judge calls.
        notes: one-line notes (defaults chosen, the run's id...).
        run_id: the run store id when the suites were run for this arena.
    """

    judgments: list[PairJudgment]
    leaderboard: Leaderboard | None
    summaries: dict[str, TargetSummary]
    judge: str
    skipped: list[str] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    cost_usd: float = 0.0
    judge_calls: int = 0
    notes: list[str] = field(default_factory=list)
    run_id: str | None = None

    @property
    def battles(self) -> list[Battle]:
        """The battles rated, in test and pair order."""
        return [b for b in (j.battle() for j in self.judgments) if b is not None]

    @property
    def judged_pairs(self) -> int:
        return sum(j.ok for j in self.judgments)

    @property
    def disagreements(self) -> int:
        """Pairs whose two orders gave different outcomes (rated as ties)."""
        return sum(j.consistent is False for j in self.judgments)

    @property
    def order_disagreement_rate(self) -> float | None:
        """Share of the judged pairs whose two orders disagreed (None without a judged pair)."""
        judged = self.judged_pairs
        return self.disagreements / judged if judged else None

    @property
    def failed_pairs(self) -> int:
        return sum(not j.ok for j in self.judgments)

    @property
    def judge_errors(self) -> int:
        """Judge calls (one per order) that failed; their pairs are left out of the battles."""
        return sum(len(j.errors) for j in self.judgments)

    @property
    def errors(self) -> list[str]:
        return [f"{j.question_id} {j.model_a} vs {j.model_b}: {e}" for j in self.judgments for e in j.errors]

    @property
    def warnings(self) -> list[str]:
        warnings = list(self.leaderboard.warnings) if self.leaderboard else []
        if self.judge_errors:
            warnings.insert(0, f"{self.judge_errors} judge call(s) failed; {self.failed_pairs} pair(s) "
                               "left out of the battles")
        rate = self.order_disagreement_rate
        if rate is not None and rate > 0.5:
            warnings.append(f"the judge changed its mind when the order was swapped in {rate:.0%} of "
                            "the pairs (rated as ties): it is mostly guessing; use a stronger judge")
        return warnings

    def rows(self) -> list[dict[str, Any]]:
        """Leaderboard rows (best first) with each target's turn-level summary; targets that have
        no battle come last with null ratings."""
        rows: list[dict[str, Any]] = []
        rated = set()
        if self.leaderboard is not None:
            for row in self.leaderboard.rows:
                rated.add(row.target)
                rows.append({**row.to_dict(), **self._summary(row.target)})
        for target in self.summaries:
            if target not in rated:
                rows.append({"target": target, "elo": None, "bt": None, "ci_low": None, "ci_high": None,
                             "votes": 0, "wins": 0, "losses": 0, "ties": 0, "rank": None,
                             **self._summary(target)})
        return rows

    def _summary(self, target: str) -> dict[str, Any]:
        summary = self.summaries.get(target)
        return summary.to_dict() if summary else TargetSummary(target, None, 0, None, 0, 0).to_dict()

    def to_dict(self) -> dict[str, Any]:
        """`{"leaderboard": [...], "order_disagreement_rate": x, "battles": n, ...}`."""
        board = self.leaderboard
        return {
            "leaderboard": self.rows(),
            "order_disagreement_rate": self.order_disagreement_rate,
            "pairs": len(self.judgments),
            "judged_pairs": self.judged_pairs,
            "disagreements": self.disagreements,
            "battles": len(self.battles),
            "judge_errors": self.judge_errors,
            "failed_pairs": self.failed_pairs,
            "errors": self.errors[:_SHOWN_ERRORS],
            "skipped_pairs": len(self.skipped),
            "skipped": self.skipped[:_SHOWN_ERRORS],
            "judge": self.judge,
            "judge_calls": self.judge_calls,
            "judge_usage": self.usage.model_dump(),
            "judge_cost_usd": round(self.cost_usd, 8),
            "k": board.k if board else None,
            "bootstrap": board.bootstrap if board else None,
            "seed": board.seed if board else None,
            "confidence": board.confidence if board else None,
            "mle_exists": board.mle_exists if board else None,
            "warnings": self.warnings,
            "run_id": self.run_id,
        }

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    def to_csv(self) -> str:
        """One header line and one line per target, columns as in `ARENA_CSV_COLUMNS`."""
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, fieldnames=ARENA_CSV_COLUMNS, lineterminator="\n", extrasaction="ignore")
        writer.writeheader()
        for row in self.rows():
            writer.writerow({key: ("" if value is None else value) for key, value in row.items()})
        return buffer.getvalue()

    def to_table(self) -> Table:
        """A rich Table: the leaderboard (wins, losses, ties) with each target's turn-level mean
        and tests passed beside its ratings."""
        board = self.leaderboard
        level = f"{board.confidence:.0%} CI" if board else "95% CI"
        table = Table(title="Arena leaderboard", caption=self.caption())
        table.add_column("#", justify="right", no_wrap=True)
        rows = self.rows()
        table.add_column("Target", overflow="fold", min_width=min(12, max(len(r["target"]) for r in rows)))
        for name in ("BT", level, "Elo", "W", "L", "T", "Turn", "Pass"):
            table.add_column(name, justify="right", no_wrap=True)
        for row in rows:
            table.add_row(
                "-" if row["rank"] is None else str(row["rank"]),
                row["target"],
                _number(row["bt"]),
                _interval(row["ci_low"], row["ci_high"]),
                _number(row["elo"]),
                str(row["wins"]), str(row["losses"]), str(row["ties"]),
                "-" if row["turn_mean"] is None else f"{row['turn_mean']:.2f}",
                f"{row['passed']}/{row['tests']}",
            )
        return table

    def caption(self) -> str:
        board = self.leaderboard
        parts = [f"{len(self.battles)} battles from {len(self.judgments)} pairs judged in both orders "
                 f"by {self.judge}"]
        rate = self.order_disagreement_rate
        if rate is not None:
            parts.append(f"order disagreement {rate:.0%} ({self.disagreements} rated as ties)")
        if self.judge_errors:
            parts.append(f"{self.judge_errors} judge error(s)")
        if board:
            parts.append(f"Elo K={board.k:g}")
            parts.append(f"{board.bootstrap} bootstrap rounds, seed {board.seed}" if board.bootstrap
                         else "no bootstrap")
        parts.append("Turn: mean of the target's turn-N scores; Pass: tests passed")
        return "; ".join(parts)

    def battle_records(self) -> list[dict[str, Any]]:
        """The battles as Chatbot Arena records (pairs with a judge error are left out)."""
        return [j.to_record(self.judge) for j in self.judgments if j.ok]

    def write_battles(self, path: str | Path) -> Path:
        """Write the battles as JSONL, one Chatbot Arena record a line (`convoeval arena --battles`
        reads it back)."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("w", encoding="utf-8") as out:
            for record in self.battle_records():
                out.write(json.dumps(record, ensure_ascii=False) + "\n")
        return path

    def plot(self, path: str | Path) -> Path:
        """Draw the ratings with their intervals (.svg, .png or .pdf)."""
        if self.leaderboard is None:
            raise ValueError("no battles to plot")
        return self.leaderboard.plot(path)


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def _interval(low: float | None, high: float | None) -> str:
    return "-" if low is None or high is None else f"{low:.0f}-{high:.0f}"


def group_results(
    results: Iterable[EvaluationResult], targets: Sequence[str] | None = None
) -> tuple[list[str], dict[TestKey, dict[str, EvaluationResult]]]:
    """The targets (given order, else first appearance) and each test's result per target.

    Raises:
        ValueError: two results for the same test and target, or a given target without results.
    """
    by_test: dict[TestKey, dict[str, EvaluationResult]] = {}
    seen: dict[str, None] = {}
    for result in results:
        if targets is not None and result.target not in targets:
            continue
        seen.setdefault(result.target)
        per_target = by_test.setdefault((result.suite, result.test_id), {})
        if result.target in per_target:
            where = f"{result.suite}/{result.test_id}" if result.suite else result.test_id
            raise ValueError(f"two results for test {where} and target {result.target!r}: "
                             "give the results of one run per target")
        per_target[result.target] = result
    if targets is not None:
        missing = [t for t in targets if t not in seen]
        if missing:
            found = ", ".join(seen) or "none"
            raise ValueError(f"no results for target(s) {', '.join(missing)} (targets with results: {found})")
        order = list(dict.fromkeys(targets))
    else:
        order = list(seen)
    return order, by_test


async def judge_arena(
    results: Iterable[EvaluationResult],
    judge: Target,
    *,
    targets: Sequence[str] | None = None,
    tests: Mapping[TestKey, ArenaTest] | None = None,
    prompt: str | None = None,
    k: float = 32.0,
    bootstrap: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
    concurrency: int = 8,
    on_judgment: Callable[[PairJudgment], None] | None = None,
) -> ArenaReport:
    """Judge every pair of targets on every test in both orders, and rate the battles.

    Args:
        results: EvaluationResults of the same tests against two or more targets (one per
            test and target). The conversation judged is each result's `output` (its first
            trial). Results that did not run (skipped, budget exhausted) are left out.
        judge: the pairwise judge (any Target; structured output).
        targets: the targets to compare, in order (default: all, in order of appearance).
        tests: criteria, policy and backend results per (suite, test_id), shown to the judge.
        prompt: a custom pairwise prompt TEXT (see `convoeval.judging.load_pairwise_prompt`).
        k: Elo K-factor; bootstrap, seed, confidence: of the Bradley-Terry intervals.
        concurrency: judge calls in flight at once.
        on_judgment: called with each pair once both its orders are done.

    Raises:
        ValueError: fewer than two targets, or duplicate results for a test and target.
    """
    if concurrency < 1:
        raise ValueError(f"concurrency must be at least 1, got {concurrency}")
    results = list(results)
    order, by_test = group_results(results, targets)
    if len(order) < 2:
        found = ", ".join(order) or "none"
        raise ValueError(f"the arena needs results of at least two targets (found: {found})")
    tests = tests or {}
    semaphore = asyncio.Semaphore(concurrency)
    judgments: list[PairJudgment] = []
    skipped: list[str] = []
    work: list[tuple[PairJudgment, EvaluationResult, EvaluationResult, ArenaTest]] = []
    for (suite, test_id), per_target in by_test.items():
        info = tests.get((suite, test_id)) or tests.get((None, test_id)) or ArenaTest()
        where = f"{suite}/{test_id}" if suite else test_id
        for x, y in itertools.combinations(order, 2):
            rx, ry = per_target.get(x), per_target.get(y)
            missing = [t for t, r in ((x, rx), (y, ry)) if r is None]
            not_run = [t for t, r in ((x, rx), (y, ry)) if r is not None and r.execution_status in NOT_RUN]
            if missing or not_run:
                reason = (f"no result for {', '.join(missing)}" if missing
                          else f"did not run for {', '.join(not_run)}")
                skipped.append(f"{where} {x} vs {y}: {reason}")
                continue
            judgment = PairJudgment(suite=suite, test_id=test_id, model_a=x, model_b=y)
            judgments.append(judgment)
            work.append((judgment, rx, ry, info))  # type: ignore[arg-type]

    totals = {"calls": 0}

    async def one_order(judgment: PairJudgment, first: EvaluationResult, second: EvaluationResult,
                        info: ArenaTest, a_first: bool) -> None:
        async with semaphore:
            try:
                verdict = await judge_pair(
                    judge, first.output, second.output, criteria=info.criteria, policy=info.policy,
                    test_id=judgment.test_id, backend=info.backend, prompt=prompt,
                )
            except JudgeError as exc:
                judgment.errors.append(f"{'a_first' if a_first else 'b_first'}: {exc}")
                judgment.usage = judgment.usage + exc.usage
                judgment.cost_usd += exc.cost_usd
                totals["calls"] += getattr(exc, "calls", 1)
                return
            except Exception as exc:  # a judge target's bug must not end the arena
                judgment.errors.append(f"{'a_first' if a_first else 'b_first'}: judge crashed: "
                                       f"{type(exc).__name__}: {exc}")
                return
        totals["calls"] += verdict.calls
        judgment.usage = judgment.usage + verdict.usage
        judgment.cost_usd += verdict.cost_usd
        if a_first:
            judgment.a_first, judgment.reasoning_a_first = verdict.winner, verdict.reasoning
        else:
            judgment.b_first, judgment.reasoning_b_first = verdict.winner, verdict.reasoning

    async def one_pair(judgment: PairJudgment, rx: EvaluationResult, ry: EvaluationResult,
                       info: ArenaTest) -> None:
        await asyncio.gather(one_order(judgment, rx, ry, info, True), one_order(judgment, ry, rx, info, False))
        if on_judgment:
            on_judgment(judgment)

    await asyncio.gather(*(one_pair(*item) for item in work))
    battles = [b for b in (j.battle() for j in judgments) if b is not None]
    board = (leaderboard_from_battles(battles, k=k, bootstrap=bootstrap, seed=seed, confidence=confidence)
             if battles else None)
    usage = sum((j.usage for j in judgments), Usage())
    return ArenaReport(
        judgments=judgments,
        leaderboard=board,
        summaries={t: summarise_target(t, results) for t in order},
        judge=judge.name,
        skipped=skipped,
        usage=usage,
        cost_usd=sum(j.cost_usd for j in judgments),
        judge_calls=totals["calls"],
    )
