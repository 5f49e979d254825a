"""Two runs compared test by test: win, loss, tie, new or gone, sorted by regression; and the
gate that decides whether run B regressed.

Tests are paired by (suite, test id, target). A result without a score (an execution error)
counts as 0. The score change decides when it exceeds the tolerance; within it, a verdict that
went from pass to anything else is a loss (and the reverse a win), else a tie.

Two gates say whether B regressed (`Comparison.failed`):
- `significance` (the default): the change as a whole is tested (`stats.significance_gate`:
  permutation test on the score differences, McNemar's exact test on the verdict flips, Fisher's
  exact test per test with trials, Holm or Benjamini-Hochberg corrected); B regressed only when a
  drop is significant at `alpha` and at least `min_delta`.
- `exact`: any single loss is a regression (the rule before the significance gate).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from functools import cached_property
from pathlib import PurePosixPath
from typing import Literal

from pydantic import ConfigDict, Field

from .._base_model import Model
from ..results import EvaluationResult
from ..stats import Flaky, GateReport, PairData, fmt_interval, significance_gate, trial_verdicts
from ..stats._gate import NO_PAIRS, Correction
from ._overview import short_suite, suite_name

Outcome = Literal["win", "loss", "tie", "new", "gone"]
Gate = Literal["significance", "exact"]
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
    passes_a: int = 0
    trials_a: int = 0
    passes_b: int = 0
    trials_b: int = 0
    flaky_a: bool = False
    flaky_b: bool = False
    significant: bool = Field(False, description="The significance gate found this test's trial pass rate fell.")
    flaky_history: str | None = Field(
        None, description="The verdict varied across stored runs of the same suite: `passed 5 of 8 (3 runs)`."
    )

    @property
    def flaky(self) -> bool:
        """The verdict varied across the trials of either run, or across stored runs."""
        return self.flaky_a or self.flaky_b or self.flaky_history is not None

    def rate(self, side: Literal["a", "b"]) -> str:
        """`2/3` trial passes of run A or B, or `-`."""
        passes, trials = (self.passes_a, self.trials_a) if side == "a" else (self.passes_b, self.trials_b)
        return f"{passes}/{trials}" if trials else "-"

    @property
    def delta(self) -> float | None:
        """B's score minus A's (a missing score counts as 0); None for new or gone tests."""
        if self.outcome in ("new", "gone"):
            return None
        return _score_change(self.score_a, self.score_b)


class Comparison(Model):
    """Run B compared with run A (the baseline)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    name_a: str
    name_b: str
    tolerance: float
    pairs: list[PairedResult] = Field(default_factory=list)
    gate: Gate = "significance"
    significance: GateReport | None = Field(None, exclude=True)
    same_fingerprint: bool | None = Field(
        None, description="Both runs ran the same suites unchanged (an A/A comparison), when known."
    )

    def count(self, outcome: Outcome) -> int:
        return sum(p.outcome == outcome for p in self.pairs)

    @property
    def counts(self) -> dict[str, int]:
        return {outcome: self.count(outcome) for outcome in OUTCOMES}

    @property
    def regressions(self) -> list[PairedResult]:
        return [p for p in self.pairs if p.outcome == "loss"]

    @property
    def flaky(self) -> list[PairedResult]:
        return [p for p in self.pairs if p.flaky]

    @cached_property
    def several_suites(self) -> bool:
        return len({p.suite for p in self.pairs}) > 1

    def test_name(self, pair: PairedResult) -> str:
        """The pair's test as a report names it: `suite / test` when the tests are of several suites."""
        return f"{pair.suite} / {pair.test_id}" if self.several_suites else pair.test_id

    @property
    def undecidable(self) -> str | None:
        """Why the gate cannot decide whether B regressed (no test in both runs, or none judged in
        one of them; for the significance gate, too few tests or trials to reach alpha), or None."""
        paired = [p for p in self.pairs if p.outcome not in ("new", "gone")]
        if not paired:
            return NO_PAIRS
        for name, verdicts in (
            (self.name_a, [p.verdict_a for p in paired]),
            (self.name_b, [p.verdict_b for p in paired]),
        ):
            if not {"pass", "fail"} & set(verdicts):
                return f"no test of {name} in both runs was judged (each had an execution error or was skipped)"
        return self.significance.undecidable if self.gate == "significance" and self.significance else None

    @property
    def failed(self) -> bool:
        """B regressed by the comparison's gate."""
        if self.gate == "exact" or self.significance is None:
            return bool(self.regressions)
        return self.significance.regression

    def verdict_line(self) -> str:
        """One line saying whether B regressed, and why."""
        if self.undecidable:
            return f"cannot decide: {self.undecidable}"
        if self.gate == "exact" or self.significance is None:
            n = len(self.regressions)
            return f"{n} regression(s) beyond tolerance {self.tolerance:g} (exact gate)" if n else "no regression"
        report = self.significance
        if report.regression:
            return "significant regression: " + "; ".join(report.reasons)
        return f"no significant regression at alpha {report.alpha:g} (min delta {report.min_delta:g})"

    def to_json(self) -> dict[str, object]:
        """The comparison as JSON-ready data (what `compare --format json` prints)."""
        return {
            "a": self.name_a,
            "b": self.name_b,
            "tolerance": self.tolerance,
            "gate": self.gate,
            "failed": self.failed,
            "verdict": self.verdict_line(),
            "same_fingerprint": self.same_fingerprint,
            "counts": self.counts,
            "significance": self.significance.to_dict() if self.significance else None,
            "pairs": [{**p.model_dump(), "delta": p.delta, "flaky": p.flaky} for p in self.pairs],
        }


Key = tuple[str, str, str]


def pairing(*runs: Sequence[EvaluationResult]) -> Callable[[EvaluationResult], Key]:
    """How the results of `runs` are paired: (suite, test id, target), the suite named by its
    name (`x` for `evals/x.eval.yaml`); where a run holds two suite files of one name
    (`d1/x.eval.yaml`, `d2/x.eval.yaml`), by as many of their folders as tell them apart in every
    run (`d1/x`, `d2/x`), and by its file when that is not its name (`name: shared` in `d/x.eval.yaml`
    and `d/y.eval.yaml`: `shared (x)`, `shared (y)`), so that no result hides another."""
    depth: dict[str, int] = {}
    for run in runs:
        files: dict[str, set[tuple[str, ...]]] = {}
        for result in run:
            if parts := _file_parts(result):
                files.setdefault(suite_name(result), set()).add(parts)
        for name, found in files.items():
            if len(found) > 1:
                apart = next(
                    n for n in range(1, max(map(len, found)) + 1) if len({p[-n:] for p in found}) == len(found)
                )
                depth[name] = max(depth.get(name, 0), apart)

    def key(result: EvaluationResult) -> Key:
        name, parts = suite_name(result), _file_parts(result)
        if name in depth and parts:
            where = "/".join((*parts[-depth[name] : -1], short_suite(parts[-1])))
            name = where if short_suite(parts[-1]) == name else f"{name} ({where})"
        return name, result.test_id, result.target

    return key


def _file_parts(result: EvaluationResult) -> tuple[str, ...]:
    """The parts of the path of the suite file the result came from (none when not recorded)."""
    file = (result.checks or {}).get("file")
    return PurePosixPath(file.replace("\\", "/")).parts if isinstance(file, str) and file else ()


def _score_change(a: float | None, b: float | None) -> float:
    """B's score minus A's (a missing score counts as 0), at the 6 decimals scores are kept at:
    0.75 -> 0.70 is a change of exactly -0.05, within a tolerance of 0.05."""
    return round((b or 0.0) - (a or 0.0), 6)


def _outcome(a: EvaluationResult, b: EvaluationResult, tolerance: float) -> Outcome:
    delta = _score_change(a.score, b.score)
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


def _pair_data(label: str, ra: EvaluationResult, rb: EvaluationResult) -> PairData:
    va, vb = trial_verdicts(ra), trial_verdicts(rb)
    return PairData(
        label=label,
        score_a=ra.score,
        score_b=rb.score,
        passed_a=ra.verdict == "pass",
        passed_b=rb.verdict == "pass",
        passes_a=sum(va),
        trials_a=len(va),
        passes_b=sum(vb),
        trials_b=len(vb),
    )


def compare_results(
    a: Iterable[EvaluationResult],
    b: Iterable[EvaluationResult],
    *,
    tolerance: float = 0.0,
    name_a: str = "A",
    name_b: str = "B",
    gate: Gate = "significance",
    alpha: float = 0.05,
    min_delta: float = 0.0,
    correction: Correction = "holm",
    seed: int = 0,
) -> Comparison:
    """Pair the results of two runs and say, for each, whether B got better or worse than A,
    and whether B regressed as a whole (`Comparison.failed`, by `gate`).

    Args:
        a, b: the baseline run's results and the new run's.
        tolerance: score changes up to this much (either way) are ties.
        gate: "significance" (test the change as a whole) or "exact" (any loss fails).
        alpha, min_delta, correction, seed: of the significance gate (`stats.significance_gate`).

    Returns:
        The pairs sorted by regression: losses first (the largest drop first), then gone and
        new tests, wins (the largest gain first), ties.

    Example:
        comparison = compare_results(read_results("old.jsonl"), read_results("new.jsonl"))
        if comparison.regressions: ...
    """
    a, b = list(a), list(b)
    key_of = pairing(a, b)
    first = {key_of(r): r for r in a}
    second = {key_of(r): r for r in b}
    pairs: list[PairedResult] = []
    data: list[PairData] = []
    for key in [*first, *(k for k in second if k not in first)]:
        ra, rb = first.get(key), second.get(key)
        outcome: Outcome = "new" if ra is None else "gone" if rb is None else _outcome(ra, rb, tolerance)
        va, vb = trial_verdicts(ra) if ra else [], trial_verdicts(rb) if rb else []
        if ra is not None and rb is not None:
            data.append(_pair_data(" / ".join(key), ra, rb))
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
                passes_a=sum(va),
                trials_a=len(va),
                passes_b=sum(vb),
                trials_b=len(vb),
                flaky_a=len(set(va)) == 2,
                flaky_b=len(set(vb)) == 2,
            )
        )
    report = None
    if gate == "significance" and data:
        report = significance_gate(data, alpha=alpha, min_delta=min_delta, correction=correction, seed=seed)
        worse = {t.label for t in report.tests if t.significant}
        for pair in pairs:
            pair.significant = " / ".join((pair.suite, pair.test_id, pair.target)) in worse
    pairs.sort(key=_sort_key)
    return Comparison(name_a=name_a, name_b=name_b, tolerance=tolerance, pairs=pairs, gate=gate, significance=report)


def significance_lines(comparison: Comparison) -> list[str]:
    """The significance gate's findings as sentences: scores, verdicts, per test, power, and the
    expected false-alarm rate when both runs ran the same suites (A/A)."""
    report = comparison.significance
    if report is None:
        return []
    delta = report.mean_delta
    interval = (
        f" [{delta.ci_low:+.3f}, {delta.ci_high:+.3f}]"
        if delta.ci_low is not None and delta.ci_high is not None
        else ""
    )
    lines = [
        f"scores: mean change {delta.value:+.3f}{interval} over {report.pairs} paired test(s) (paired bootstrap), "
        f"p={report.score_p:.3g} (sign-flip permutation test, one-sided)",
        f"verdicts: pass rate {fmt_interval(report.pass_rate_a, percent=True)} -> "
        f"{fmt_interval(report.pass_rate_b, percent=True)}; {report.losses} pass->not pass, {report.wins} "
        f"not pass->pass, p={report.mcnemar_p:.3g} (McNemar exact, one-sided)",
    ]
    if report.tests:
        worse = sum(t.significant for t in report.tests)
        lines.append(
            f"per test: {worse} of {len(report.tests)} test(s) with trials pass significantly less often "
            f"(Fisher exact, {report.correction} corrected, smallest p={report.tests_p:.3g})"
        )
    lines.append(
        "gate: Holm-adjusted p "
        + ", ".join(f"{name} {p:.3g}" for name, p in report.adjusted.items())
        + f"; alpha {report.alpha:g}, min delta {report.min_delta:g}"
    )
    if report.power is not None and not comparison.undecidable:
        lines.append(report.power.sentence(report.pairs, found=report.regression))
    if comparison.same_fingerprint:
        lines.append(
            f"calibration: both runs ran the same suites unchanged; if nothing else changed (an A/A test) this "
            f"gate's expected false-alarm rate is at most {report.alpha:.0%} (alpha), the exact per-test gate's "
            f"{report.exact_gate_false_alarm:.1%} (1 - 2^-{report.changed}: {report.changed} test(s) changed)"
        )
    flaky = comparison.flaky
    if flaky:
        lines.append(f"flaky: {len(flaky)} test(s) whose verdict varied across trials or stored runs (marked)")
    return lines


def history_marks(flaky: Iterable[Flaky]) -> dict[tuple[str, str, str], str]:
    """(short suite, test id, target) -> `passed 5 of 8 (3 runs)` of the store's flaky tests."""
    return {
        (short_suite(f.suite), f.test_id, f.target): f"passed {f.passes} of {f.verdicts} ({len(f.runs)} run(s))"
        for f in flaky
    }


def mark_flaky_history(comparison: Comparison, flaky: Iterable[Flaky]) -> None:
    """Mark the pairs whose verdict varied across stored runs (`stats.flaky_in_store`)."""
    marks = history_marks(flaky)
    for pair in comparison.pairs:
        pair.flaky_history = marks.get((pair.suite, pair.test_id, pair.target))
