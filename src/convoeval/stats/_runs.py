"""Judges compared through stored runs: judge vs judge, and one judge's consistency over K runs.

Both start from EvaluationResults (the lines of `convoeval run -o results.jsonl`). Every judge
grader score becomes one ITEM, keyed by

    (suite, test_id, target, score entry name (`turn-2`, `conversation`), grader name)

Only graders that called a judge count (their `judge_calls` is not 0); deterministic
checks (`contains`, `regex`...) give the same score whoever the judge is and would inflate
agreement. A TD-Eval grader gives one item per dimension (`td-eval/policy_compliance`), each
with its raw 1-5 Likert value; an `mt-bench-judge` item keeps its raw 1-10 rating. A grader that
errored has no score: the item is missing in that run. A grader name used twice in one score
entry gets `#2`, `#3`... The first trial of a test is used (`scores` of the result).

Categories for judge vs judge (declared, never inferred; default 1-5):
- A raw value is used when the declared categories hold both ends of the grader's scale
  (TD-Eval dimensions 1-5 with the default 1-5; MT-Bench ratings 1-10 with 1-10, which binning
  would not give back: its score is rating / 10), as the nearest category (a decimal MT-Bench
  rating such as 7.4 -> 7, 7.5 -> 8). On a narrower scale the score is binned, as below: taken
  as is there, MT-Bench's [[5]] was the top category of 1-5, above [[6]]..[[8]] (binned to 3-4),
  and level with [[10]].
- Otherwise the grader's 0-1 score is binned into the declared numeric categories, spaced
  evenly: category index = floor(score * (q - 1) + 0.5). With 1-5 a TD-Eval score (s - 1) / 4
  maps back to s exactly; with 0-10 an llm-grader or conversation-metric score maps back to the
  judge's raw 0-10 answer; a rubric's weighted share is rounded to the nearest category.
- With the categories `pass,fail` the graders' verdicts are compared instead.
Spearman's rho is also given on the unbinned 0-1 scores (`spearman_scores`).

Consistency (K runs of the same judge on the same conversations - use `--no-cache`, or the
cache answers every repeat identically) uses the 0-1 scores: `judge_consistency` per item,
then per grader name the mean score, the mean and largest standard deviation over its items,
and the share of items scored identically in every run.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from ..graders._fastchat import HIGHEST as MT_BENCH_HIGHEST
from ..graders._fastchat import LOWEST as MT_BENCH_LOWEST
from ..judging._tdeval import LIKERT_HIGH, LIKERT_LOW
from ..results import EvaluationResult
from ._consistency import Consistency, judge_consistency
from ._correlation import spearman
from ._data import AgreementInputError, Category, check_categories
from ._estimate import Estimate, undefined
from ._krippendorff import MeasurementLevel
from ._report import agreement_estimates

ItemKey = tuple[str | None, str, str, str, str]
"""(suite, test_id, target, score entry name, grader name)."""

VERDICT_CATEGORIES = ("fail", "pass")
DEFAULT_CATEGORIES: tuple[Category, ...] = (1, 2, 3, 4, 5)


@dataclass(frozen=True)
class JudgeScore:
    """One judge grader score of one run.

    Attributes:
        score: the 0-1 score (None when the grader errored).
        likert: the judge's raw value, when recorded: a TD-Eval dimension's 1-5, an
            `mt-bench-judge` rating (1-10).
        verdict: pass, fail or error.
        judged: the grader called a judge.
        scale: the lowest and highest raw value the grader can give (with `likert`).
    """

    score: float | None
    likert: float | None
    verdict: str
    judged: bool
    scale: tuple[float, float] | None = None


def item_label(key: ItemKey) -> str:
    """`suite/test @ target turn-2 td-eval/policy_compliance`."""
    suite, test_id, target, entry, grader = key
    test = f"{suite}/{test_id}" if suite else test_id
    return f"{test} @ {target} {entry} {grader}"


def judge_scores(results: Iterable[EvaluationResult]) -> dict[ItemKey, JudgeScore]:
    """Every grader score of the results, keyed by item (see the module docstring).

    Deterministic graders are included with `judged=False`, so callers can tell them apart.
    """
    items: dict[ItemKey, JudgeScore] = {}
    for result in results:
        for entry in result.scores:
            used: dict[str, int] = {}
            for grader in entry.graders:
                used[grader.name] = used.get(grader.name, 0) + 1
                name = grader.name if used[grader.name] == 1 else f"{grader.name}#{used[grader.name]}"
                judged = grader.judge_calls > 0 or grader.judge_usage is not None
                base = (result.suite, result.test_id, result.target, entry.name)
                if grader.dimensions and grader.score is not None:
                    for key, value in grader.dimensions.items():
                        items[(*base, f"{name}/{key}")] = JudgeScore(
                            score=value.score,
                            likert=value.likert if isinstance(value.likert, int) else None,
                            verdict=grader.verdict,
                            judged=True,
                            scale=(LIKERT_LOW, LIKERT_HIGH),
                        )
                    continue
                rating = (grader.details or {}).get("rating") if grader.type == "mt-bench-judge" else None
                items[(*base, name)] = JudgeScore(
                    score=grader.score,
                    likert=float(rating) if isinstance(rating, (int, float)) and grader.score is not None else None,
                    verdict=grader.verdict,
                    judged=judged,
                    scale=(MT_BENCH_LOWEST, MT_BENCH_HIGHEST) if rating is not None else None,
                )
    return items


def _numeric(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_verdicts(categories: Sequence[Category]) -> bool:
    return {str(c).lower() for c in categories} == set(VERDICT_CATEGORIES) and len(categories) == 2


def check_run_categories(categories: Sequence[Category]) -> tuple[Category, ...]:
    """Declared categories usable for run scores: ascending numbers, or `pass,fail`."""
    declared = check_categories(categories)
    if _is_verdicts(declared):
        return declared
    if not all(_numeric(c) for c in declared):
        raise AgreementInputError(
            "for judge scores declare numeric categories (e.g. 1-5, 0-10) or pass,fail; got "
            + ", ".join(map(str, declared))
        )
    if list(declared) != sorted(declared, key=float):
        raise AgreementInputError("declare the categories from low to high (they bin 0-1 scores)")
    return declared


def categorise(score: JudgeScore, categories: Sequence[Category]) -> Category | None:
    """The declared category of a judge score (None when it has none: the grader errored)."""
    if _is_verdicts(categories):
        if score.verdict not in VERDICT_CATEGORIES:
            return None
        return next(c for c in categories if str(c).lower() == score.verdict)
    if score.likert is not None and _raw_fits(score, categories):
        likert = score.likert  # the nearest category; halfway: the higher, as binning rounds
        return min(reversed(categories), key=lambda c: abs(float(c) - likert))
    if score.score is None:
        return None
    q = len(categories)
    index = min(q - 1, max(0, math.floor(score.score * (q - 1) + 0.5)))
    return categories[index]


def _raw_fits(score: JudgeScore, categories: Sequence[Category]) -> bool:
    """Whether the declared numeric categories hold both ends of the grader's raw scale (without
    a known scale: whether they hold the raw value itself)."""
    values = {float(c) for c in categories}
    ends = score.scale or (score.likert, score.likert)
    return all(end is not None and float(end) in values for end in ends)


@dataclass
class RunsAgreement:
    """Agreement of two runs' judge scores on the same tests and targets.

    Attributes:
        items: items scored in both runs (the statistics are over these).
        only_a, only_b: judge items scored in one run only (missing from the other, or its
            grader errored there); left out of the statistics.
        categories: the declared categories.
        estimates: the agreement statistics on the categorised scores (`agreement_estimates`).
        spearman_scores: Spearman's rho on the unbinned 0-1 scores.
        graders: items per grader name.
    """

    items: int
    only_a: int
    only_b: int
    categories: tuple[Category, ...]
    level: str
    estimates: dict[str, Estimate]
    spearman_scores: Estimate
    graders: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, object]:
        return {
            "items": self.items,
            "only_a": self.only_a,
            "only_b": self.only_b,
            "categories": list(self.categories),
            "level": self.level,
            "statistics": {k: e.to_dict() for k, e in self.estimates.items()},
            "spearman_scores": self.spearman_scores.to_dict(),
            "graders": self.graders,
        }


def _grader_of(key: ItemKey) -> str:
    name = key[4]
    return name.split("#", 1)[0]


def runs_agreement(
    run_a: Iterable[EvaluationResult],
    run_b: Iterable[EvaluationResult],
    categories: Sequence[Category] = DEFAULT_CATEGORIES,
    level: MeasurementLevel = "ordinal",
    *,
    bootstrap: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> RunsAgreement:
    """How well two judges agree: the judge scores of two runs of the same tests and targets.

    Args:
        run_a, run_b: the results of the two runs (e.g. judged by two different models).
        categories: declared categories (see the module docstring for how scores map to them).
        level: level of measurement ("ordinal" adds weighted kappa, ordinal alpha, Spearman,
            Kendall; "nominal" for pass,fail).
        bootstrap, seed, confidence: intervals of the statistics without a variance formula.

    Raises:
        AgreementInputError: the runs share fewer than two scored judge items, or the
            categories cannot bin scores.

    Example:
        report = runs_agreement(read_results("gpt4o.jsonl"), read_results("claude.jsonl"))
        report.estimates["gwet_ac1"].value
    """
    declared = check_run_categories(categories)
    a, b = judge_scores(run_a), judge_scores(run_b)
    judged = {k for k in a.keys() | b.keys() if (k in a and a[k].judged) or (k in b and b[k].judged)}
    if not judged:
        raise AgreementInputError("no judge grader scores in the runs (only deterministic graders?)")
    scored_a = {k for k in judged if k in a and a[k].score is not None}
    scored_b = {k for k in judged if k in b and b[k].score is not None}
    both = sorted(scored_a & scored_b, key=lambda k: tuple("" if p is None else p for p in k))
    only_a, only_b = len(scored_a - scored_b), len(scored_b - scored_a)
    matrix = [[categorise(a[k], declared), categorise(b[k], declared)] for k in both]
    if len(both) < 2:
        raise AgreementInputError(
            f"the runs share {len(both)} scored judge item(s); agreement needs at least two "
            "(same tests and targets, judged by both)"
        )
    estimates = agreement_estimates(matrix, declared, level, bootstrap=bootstrap, seed=seed, confidence=confidence)
    raw = [[a[k].score, b[k].score] for k in both]
    values = sorted({v for row in raw for v in row})  # type: ignore[type-var]
    if len(values) < 2:
        rho = undefined("Spearman's rho is undefined: every score is the same", len(both))
    else:
        rho = spearman(raw, values, bootstrap=bootstrap, seed=seed, confidence=confidence)  # type: ignore[arg-type]
    graders: dict[str, int] = {}
    for key in both:
        graders[_grader_of(key)] = graders.get(_grader_of(key), 0) + 1
    return RunsAgreement(
        items=len(both),
        only_a=only_a,
        only_b=only_b,
        categories=declared,
        level=level,
        estimates=estimates,
        spearman_scores=rho,
        graders=graders,
    )


@dataclass(frozen=True)
class GraderConsistency:
    """One grader's consistency over K runs, summarised over its items.

    Attributes:
        items: items of this grader with at least two scores.
        mean: mean of the items' mean scores (0-1).
        mean_std: mean over items of the standard deviation of their K scores.
        max_std: the largest of those standard deviations.
        identical: share of items scored identically in every run.
        missing: runs without a score for an item (grader errors, missing results), summed.
    """

    grader: str
    items: int
    mean: float
    mean_std: float
    max_std: float
    identical: float
    missing: int

    def to_dict(self) -> dict[str, object]:
        return {
            "grader": self.grader,
            "items": self.items,
            "mean": self.mean,
            "mean_std": self.mean_std,
            "max_std": self.max_std,
            "identical": self.identical,
            "missing": self.missing,
        }


@dataclass
class RunsConsistency:
    """A judge's consistency over K runs: per item (`judge_consistency`) and per grader."""

    runs: int
    graders: dict[str, GraderConsistency]
    items: dict[ItemKey, Consistency]
    overall: GraderConsistency

    def to_dict(self) -> dict[str, object]:
        return {
            "runs": self.runs,
            "graders": [g.to_dict() for g in self.graders.values()],
            "overall": self.overall.to_dict(),
            "items": [
                {"item": item_label(k), "mean": c.mean, "std": c.std, "n": c.n, "missing": c.missing}
                for k, c in self.items.items()
            ],
        }


def _summarise(name: str, consistencies: list[Consistency]) -> GraderConsistency:
    stds = [c.std for c in consistencies if c.std is not None]
    return GraderConsistency(
        grader=name,
        items=len(consistencies),
        mean=round(math.fsum(c.mean for c in consistencies) / len(consistencies), 6),
        mean_std=round(math.fsum(stds) / len(stds), 6) if stds else 0.0,
        max_std=round(max(stds), 6) if stds else 0.0,
        identical=round(sum(s <= 1e-12 for s in stds) / len(stds), 6) if stds else 1.0,
        missing=sum(c.missing for c in consistencies),
    )


def runs_consistency(runs: Sequence[Iterable[EvaluationResult]], *, ddof: int = 1) -> RunsConsistency:
    """A judge's consistency over K runs of the same tests and targets.

    Args:
        runs: the results of each run (K >= 2).
        ddof: of the standard deviations (1: sample, as `judge_consistency`).

    Raises:
        AgreementInputError: fewer than two runs, or no judge item scored in two of them.
    """
    if len(runs) < 2:
        raise AgreementInputError(f"consistency needs at least two runs, got {len(runs)}")
    scored = [judge_scores(run) for run in runs]
    judged = {k for run in scored for k, s in run.items() if s.judged}
    ordered = sorted(judged, key=lambda k: tuple("" if p is None else p for p in k))
    series = {k: [run[k].score if k in run else None for run in scored] for k in ordered}
    usable = {k: v for k, v in series.items() if sum(s is not None for s in v) >= 2}
    if not usable:
        raise AgreementInputError("no judge grader was scored in two of the runs")
    items = {k: judge_consistency({"item": v}, ddof=ddof)["item"] for k, v in usable.items()}
    by_grader: dict[str, list[Consistency]] = {}
    for key, consistency in items.items():
        by_grader.setdefault(_grader_of(key), []).append(consistency)
    graders = {name: _summarise(name, found) for name, found in by_grader.items()}
    return RunsConsistency(
        runs=len(runs), graders=graders, items=items, overall=_summarise("(all)", list(items.values()))
    )
