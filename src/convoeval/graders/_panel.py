"""One check graded by every judge of a panel, and the panel's combined `GraderScore`.

`Assertion.evaluate` hands a judged check here when `ctx.judge` is a `JudgePanel`: the check
is evaluated once per judge (negate and min_score applied as for one judge), each judge's
answer is kept in `GraderScore.panel`, and `judging.combine` decides by the panel's rule.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, TypedDict

from ..judging import Decision, JudgePanel, PanelRule, Vote, combine, settled
from ..results import AssertionOutcome, DimensionScore, GraderScore, JudgeAnswer, Usage

if TYPE_CHECKING:
    from ._base import GradeContext

#: Longest reasoning kept per judge answer.
_REASONING_CHARS = 2000
#: What a judge that failed could have answered, at the extremes (every rule is monotone in a vote).
_EITHER = (Vote(0.0, False), Vote(1.0, True))


class _Spent(TypedDict):
    """What the panel's judges spent together, and how they were combined."""

    judge_calls: int
    judge_reasks: int
    judge_usage: Usage | None
    judge_cost_usd: float
    duration_ms: float
    panel: list[JudgeAnswer]
    panel_rule: PanelRule


async def evaluate_by_panel(
    ctx: GradeContext,
    panel: JudgePanel,
    evaluate_one: Callable[[GradeContext], Awaitable[GraderScore]],
    rule: PanelRule,
    pass_mark: float,
) -> GraderScore:
    """Evaluate with each judge concurrently, then combine (see `combine_scores`)."""
    scores = await asyncio.gather(*(evaluate_one(replace(ctx, judge=judge)) for judge in panel.judges))
    return combine_scores(list(scores), [j.name for j in panel.judges], rule, pass_mark)


def combine_scores(
    scores: Sequence[GraderScore], judges: Sequence[str], rule: PanelRule, pass_mark: float
) -> GraderScore:
    """The panel's GraderScore from each judge's GraderScore of the same check.

    Judges that failed (verdict `error`) are kept in `panel` and left out of the decision when
    their answers, failing or passing, could not change it; otherwise, and when every judge
    failed, the check is an error. Tokens, cost and calls add up.
    """
    first = scores[0]
    answers = [
        JudgeAnswer(judge=name, score=s.score, verdict=s.verdict, reasoning=_reasoning(s), error=s.error)
        for name, s in zip(judges, scores, strict=True)
    ]
    usage = Usage.total(s.judge_usage for s in scores if s.judge_usage is not None)
    spent: _Spent = {
        "judge_calls": sum(s.judge_calls for s in scores),
        "judge_reasks": sum(s.judge_reasks for s in scores),
        "judge_usage": usage if usage.total_tokens else None,
        "judge_cost_usd": round(sum(s.judge_cost_usd for s in scores), 10),
        "duration_ms": max((s.duration_ms or 0.0) for s in scores),
        "panel": answers,
        "panel_rule": rule,
    }
    common = {"name": first.name, "type": first.type, "weight": first.weight, "required": first.required}
    decided = [s for s in scores if s.verdict in ("pass", "fail") and s.score is not None]
    votes = [Vote(float(s.score or 0.0), s.verdict == "pass") for s in decided]
    missing = len(scores) - len(decided)
    if not decided or settled(lambda v: combine(v, rule, pass_mark).passed, votes, missing, _EITHER) is None:
        errors = "; ".join(f"{a.judge}: {a.error or a.verdict}" for a in answers if a.verdict not in ("pass", "fail"))
        what = (
            "no judge of the panel decided"
            if not decided
            else f"the judges that failed could change the panel's verdict ({rule})"
        )
        common["required"] = any(s.required for s in scores)  # a judge's error says whether it could fail the test
        return GraderScore(**common, score=None, verdict="error", error=f"{what} ({errors})", **spent)
    decision = combine(votes, rule, pass_mark)  # the same verdict whatever the failed judges said
    names = [n for n, s in zip(judges, scores, strict=True) if s in decided]
    failed = sorted({r for s in decided if s.verdict == "fail" for r in s.failed_required})
    details = {n: s.details for n, s in zip(names, decided, strict=True) if s.details}
    return GraderScore(
        **common,
        score=round(decision.score, 6),
        verdict="pass" if decision.passed else "fail",
        assertions=_outcomes(decided, names, decision, rule),
        dimensions=_dimensions(decided, rule),
        failed_required=[] if decision.passed else failed,
        details={"by_judge": details} if details else None,
        **spent,
    )


def _reasoning(score: GraderScore) -> str:
    """A judge's reasons in one text: its checks' evidence (or its error)."""
    if score.error:
        return ""
    parts = [o.evidence if len(score.assertions) == 1 else f"{o.text}: {o.evidence}" for o in score.assertions]
    text = "\n".join(p for p in parts if p)
    return text if len(text) <= _REASONING_CHARS else text[: _REASONING_CHARS - 1] + "…"


def _outcomes(
    decided: Sequence[GraderScore], names: Sequence[str], decision: Decision, rule: PanelRule
) -> list[AssertionOutcome]:
    """Each check (rubric criterion...) decided by the panel: `min` needs every judge, the
    other rules a strict majority (a check with one outcome: the panel's verdict); the evidence
    quotes every judge. When the judges' checks
    differ (they should not), the deciding judges' own checks are kept, marked with their name."""
    texts = [tuple(o.text for o in s.assertions) for s in decided]
    if len(set(texts)) != 1:
        return [
            AssertionOutcome(text=f"[{names[i]}] {o.text}", passed=o.passed, evidence=o.evidence)
            for i in decision.deciding
            for o in decided[i].assertions
        ]
    outcomes = []
    for k, text in enumerate(texts[0]):
        said = [s.assertions[k] for s in decided]
        yes = sum(o.passed for o in said)
        if len(texts[0]) == 1:  # the check's only outcome is the check: the panel's verdict
            passed = decision.passed
        else:
            passed = yes == len(said) if rule == "min" else yes * 2 > len(said)
        evidence = "; ".join(
            f"{n}: {'yes' if o.passed else 'no'}: {o.evidence}" for n, o in zip(names, said, strict=True)
        )
        outcomes.append(AssertionOutcome(text=text, passed=passed, evidence=evidence))
    return outcomes


def _dimensions(decided: Sequence[GraderScore], rule: PanelRule) -> dict[str, DimensionScore] | None:
    """TD-Eval dimensions over the judges: every judge's Likert ratings, the score by the rule
    (the mean, or the lowest for `min`)."""
    if not decided or any(s.dimensions is None for s in decided):
        return None
    keys = [k for k in decided[0].dimensions or {} if all(k in (s.dimensions or {}) for s in decided)]
    combined: dict[str, DimensionScore] = {}
    for key in keys:
        given = [(s.dimensions or {})[key] for s in decided]
        likerts = [v for d in given for v in (d.likert if isinstance(d.likert, list) else [d.likert])]
        values = [d.score for d in given]
        score = min(values) if rule == "min" else sum(values) / len(values)
        justification = " | ".join(d.justification for d in given if d.justification)
        combined[key] = DimensionScore(likert=likerts, score=round(score, 6), justification=justification)
    return combined
