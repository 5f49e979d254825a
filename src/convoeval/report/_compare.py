"""Two runs compared test by test: win, loss, tie, new or gone, sorted by regression.

Tests are paired by (suite, test id, target). A result without a score (an execution error)
counts as 0. The score change decides when it exceeds the tolerance; within it, a verdict that
went from pass to anything else is a loss (and the reverse a win), else a tie.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from pydantic import Field

from .._base_model import Model
from ..results import EvaluationResult
from ._overview import suite_name

Outcome = Literal["win", "loss", "tie", "new", "gone"]
OUTCOMES: tuple[Outcome, ...] = ("loss", "win", "tie", "new", "gone")


class PairedResult(Model):
    """One test and target in run A and run B."""

    suite: str
    test_id: str
    target: str
    outcome: Outcome
    score_a: float | None = None
    score_b: float | None = None
    verdict_a: str | None = None
    verdict_b: str | None = None
    status_a: str | None = None
    status_b: str | None = None

    @property
    def delta(self) -> float | None:
        """B's score minus A's (a missing score counts as 0); None for new or gone tests."""
        if self.outcome in ("new", "gone"):
            return None
        return (self.score_b or 0.0) - (self.score_a or 0.0)


class Comparison(Model):
    """Run B compared with run A (the baseline)."""

    name_a: str
    name_b: str
    tolerance: float
    pairs: list[PairedResult] = Field(default_factory=list)

    def count(self, outcome: Outcome) -> int:
        return sum(p.outcome == outcome for p in self.pairs)

    @property
    def counts(self) -> dict[str, int]:
        return {outcome: self.count(outcome) for outcome in OUTCOMES}

    @property
    def regressions(self) -> list[PairedResult]:
        return [p for p in self.pairs if p.outcome == "loss"]


def _key(result: EvaluationResult) -> tuple[str, str, str]:
    return suite_name(result), result.test_id, result.target


def _outcome(a: EvaluationResult, b: EvaluationResult, tolerance: float) -> Outcome:
    delta = (b.score or 0.0) - (a.score or 0.0)
    if delta < -tolerance:
        return "loss"
    if delta > tolerance:
        return "win"
    if a.verdict == "pass" and b.verdict != "pass":
        return "loss"
    if a.verdict != "pass" and b.verdict == "pass":
        return "win"
    return "tie"


def _sort_key(pair: PairedResult) -> tuple[int, float, str, str, str]:
    rank = {"loss": 0, "gone": 1, "new": 2, "win": 3, "tie": 4}[pair.outcome]
    delta = pair.delta if pair.delta is not None else 0.0
    return rank, delta if pair.outcome != "win" else -delta, pair.suite, pair.test_id, pair.target


def compare_results(
    a: Iterable[EvaluationResult],
    b: Iterable[EvaluationResult],
    *,
    tolerance: float = 0.0,
    name_a: str = "A",
    name_b: str = "B",
) -> Comparison:
    """Pair the results of two runs and say, for each, whether B got better or worse than A.

    Args:
        a, b: the baseline run's results and the new run's.
        tolerance: score changes up to this much (either way) are ties.

    Returns:
        The pairs sorted by regression: losses first (the largest drop first), then gone and
        new tests, wins (the largest gain first), ties.

    Example:
        comparison = compare_results(read_results("old.jsonl"), read_results("new.jsonl"))
        if comparison.regressions: ...
    """
    first = {_key(r): r for r in a}
    second = {_key(r): r for r in b}
    pairs: list[PairedResult] = []
    for key in [*first, *(k for k in second if k not in first)]:
        ra, rb = first.get(key), second.get(key)
        outcome: Outcome = "new" if ra is None else "gone" if rb is None else _outcome(ra, rb, tolerance)
        pairs.append(
            PairedResult(
                suite=key[0],
                test_id=key[1],
                target=key[2],
                outcome=outcome,
                score_a=ra.score if ra else None,
                score_b=rb.score if rb else None,
                verdict_a=ra.verdict if ra else None,
                verdict_b=rb.verdict if rb else None,
                status_a=ra.execution_status if ra else None,
                status_b=rb.execution_status if rb else None,
            )
        )
    pairs.sort(key=_sort_key)
    return Comparison(name_a=name_a, name_b=name_b, tolerance=tolerance, pairs=pairs)
