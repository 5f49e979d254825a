"""Adaptive trials (`trials: {until: decided, max: N}`, `--trials auto`): run trials of a test
until its pass rate is surely above or below the threshold, or until `max`.

The stopping rule is the confidence sequence of `convoeval._binomial` (a beta-binomial mixture
martingale, Robbins 1970; Howard et al. 2021): it may be checked after every trial, and the
chance that it ever puts the pass rate on the wrong side of the threshold is at most `alpha`.

Trials run in waves: each wave is the fewest further trials that could settle the verdict (all
passing or all failing), at most `width` at once, numbered on from the last (0, 1, 2, ...), so
a re-run with the cache gets the same answers for the same trials and stops at the same place.
Trials whose verdict is neither pass nor fail (execution errors) do not count towards the
decision but do count towards `max`. `trials.cost_limit_usd` stops them too, between waves.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from .._binomial import confidence_sequence, sequential_decision, trials_until_decidable
from ..results import AdaptiveTrials, EvaluationResult, TrialResult
from ._plan import TestPlan


async def adaptive_trials(
    one: Callable[[int], Awaitable[TrialResult | None]], plan: TestPlan, width: int
) -> tuple[list[TrialResult | None], AdaptiveTrials]:
    """Run trials with `one(index)` until decided or `plan.trials.most`; None outcomes (the
    run's budget refused a trial) stop them too."""
    most, alpha, threshold = plan.trials.most, plan.trials.alpha, plan.threshold
    limit = plan.trials.cost_limit_usd
    outcomes: list[TrialResult | None] = []
    while True:
        passes, counted = _counts(outcomes)
        decision = sequential_decision(passes, counted, threshold, alpha)
        left = most - len(outcomes)
        if decision is not None or left <= 0 or None in outcomes or _spent(outcomes) >= (limit or float("inf")):
            break
        wave = min(max(1, width), trials_until_decidable(passes, counted, threshold, alpha, left))
        start = len(outcomes)
        outcomes += await asyncio.gather(*(one(start + i) for i in range(wave)))
    low, high = confidence_sequence(passes, counted, threshold, alpha)
    stopped = (
        "decided"
        if decision is not None
        else "budget"
        if None in outcomes
        else "max"
        if len(outcomes) >= most
        else "cost_limit"
    )
    record = AdaptiveTrials(
        run=sum(t is not None for t in outcomes),
        max=most,
        stopped=stopped,
        decision=decision,
        alpha=alpha,
        low=round(low, 6),
        high=round(high, 6),
    )
    return outcomes, record


def _spent(outcomes: list[TrialResult | None]) -> float:
    return sum(t.cost_usd + t.judge_cost_usd + t.simulator_cost_usd for t in outcomes if t is not None)


def _counts(outcomes: list[TrialResult | None]) -> tuple[int, int]:
    decided = [t.verdict for t in outcomes if t is not None and t.verdict in ("pass", "fail")]
    return decided.count("pass"), len(decided)


def apply_decision(result: EvaluationResult, record: AdaptiveTrials, threshold: float) -> EvaluationResult:
    """The result of adaptive trials: the decision is the verdict when trials settled it (and
    the trials ran without execution errors or budgets), and a note says how they stopped."""
    update: dict[str, object] = {"adaptive": record}
    interval = f"pass rate in [{record.low:.2f}, {record.high:.2f}] ({1 - record.alpha:.0%} confidence sequence)"
    if record.stopped == "decided" and result.execution_status in ("ok", "quality_failure"):
        side = "above" if record.decision == "pass" else "below"
        note = f"adaptive trials: decided after {record.run} of at most {record.max}: {interval}, {side} {threshold:g}"
        update["verdict"] = record.decision
        update["execution_status"] = "ok" if record.decision == "pass" else "quality_failure"
    elif record.stopped == "max":
        note = (
            f"adaptive trials: not decided after {record.max} (the most): {interval} holds {threshold:g}; "
            "the verdict is the mean score's"
        )
    elif record.stopped == "cost_limit":
        note = f"adaptive trials: stopped after {record.run}: trials.cost_limit_usd reached: {interval}"
    else:
        note = f"adaptive trials: stopped after {record.run} by the run's budget: {interval}"
    update["notes"] = [*result.notes, note]
    return result.model_copy(update=update)
