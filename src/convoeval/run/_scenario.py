"""Scenario criteria (`success:` / `failure:`) judged on the whole transcript, and how a
trial's outcome, stop reason and simulator accounting end up in its result.

Outcome: `passed` when success holds and no failure criterion does, `failed` when a failure
criterion holds, `conflict` when both, `undecided` when neither. An undecided scenario is
reported as such (`execution_status: undecided`, verdict `error`): it is never folded into a
pass or a fail. A conflict fails the test (a failure criterion holds) and says so. The
scenario is a required check: a failed one fails the test whatever the mean, and the criteria
that decided it are its `failed_required`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from ..graders import combine_scores
from ..judging import (
    JudgeError,
    JudgePanel,
    JudgeSession,
    criterion_ids,
    scenario_messages,
    scenario_outcome,
    scenario_parser,
    scenario_schema,
    values_by_key,
)
from ..results import AssertionOutcome, GraderScore, Message, Outcome, ScoreEntry, TrialResult, Usage, Verdict
from ..targets import Target

_SCORES: dict[str, float | None] = {"passed": 1.0, "failed": 0.0, "conflict": 0.0, "undecided": None}


async def judge_scenario(
    success: list[str],
    failure: list[str],
    transcript: list[Message],
    judge: Target | None,
    *,
    trial: int = 0,
    temperature: float = 0.0,
    objective: str | None = None,
) -> tuple[ScoreEntry, Outcome | None]:
    """One judge call over the transcript: the `scenario` score entry and the outcome (None
    when the judge failed: the entry then has verdict `error`). A judge panel judges once per
    judge; their outcomes combine by the panel's rule (default: majority)."""
    if judge is None:
        return _error_entry("scenario criteria need a judge model; pass --judge"), None
    if isinstance(judge, JudgePanel):
        answers = await asyncio.gather(
            *(
                judge_scenario(
                    success, failure, transcript, j, trial=trial, temperature=temperature, objective=objective
                )
                for j in judge.judges
            )
        )
        return _panel_outcome(judge, answers)
    session = JudgeSession(judge, trial=trial, temperature=temperature)
    try:
        answer = await session.ask(
            scenario_messages(success, failure, transcript, objective),
            scenario_schema(success, failure),
            scenario_parser(success, failure),
            name="scenario",
        )
    except JudgeError as exc:
        return _error_entry(str(exc), exc.usage, exc.cost_usd, exc.judge_calls, exc.judge_reasks), None
    verdicts = values_by_key(answer)
    held = {cid: verdicts[cid].satisfied for cid, _, _ in criterion_ids(success, failure)}
    outcome = scenario_outcome(
        [held[c] for c, kind, _ in criterion_ids(success, failure) if kind == "success"],
        [held[c] for c, kind, _ in criterion_ids(success, failure) if kind == "failure"],
    )
    checks = [
        AssertionOutcome(
            text=f"{kind}: {text}", passed=held[cid] == (kind == "success"), evidence=verdicts[cid].reasoning
        )
        for cid, kind, text in criterion_ids(success, failure)
    ]
    score = _SCORES[outcome]
    verdict: Verdict = "error" if score is None else ("pass" if outcome == "passed" else "fail")
    grader = GraderScore(
        name="scenario",
        type="scenario",
        score=score,
        verdict=verdict,
        assertions=checks,
        error="undecided: neither the success nor a failure criterion holds" if outcome == "undecided" else None,
        judge_calls=session.calls,
        judge_reasks=session.reasks,
        judge_usage=session.usage,
        judge_cost_usd=round(session.cost_usd, 10),
        details={"outcome": outcome},
    )
    entry = ScoreEntry(
        name="scenario", type="scenario", score=score, verdict=verdict, assertions=checks, graders=[grader]
    )
    if outcome in ("failed", "conflict"):  # the scenario decides the task's outcome: required
        entry.failed_required = [check.text for check in checks if not check.passed]
    return entry, outcome


def _panel_outcome(
    panel: JudgePanel, answers: Sequence[tuple[ScoreEntry, Outcome | None]]
) -> tuple[ScoreEntry, Outcome | None]:
    """The panel's scenario entry and outcome: each judge that answered votes (an undecided
    judge votes "not passed"), the votes combine by the panel's rule (default majority; a tie
    does not pass). A scenario that does not pass is `failed` (or `conflict` when every judge
    against it said so) when a judge against it found a failure, else `undecided`; when no
    judge answered it is an error."""
    graders = []
    for entry, said in answers:
        grader = entry.graders[0]
        if said == "undecided":  # a vote against passing; the answer keeps why
            grader = grader.model_copy(update={"score": 0.0, "verdict": "fail"})
        graders.append(grader)
    rule = panel.rule or "majority"
    combined = combine_scores(graders, [j.name for j in panel.judges], rule, _MORE_THAN_HALF)
    outcomes = [said for _, said in answers]
    against = [o for o, g in zip(outcomes, graders, strict=True) if g.verdict == "fail"]
    outcome: Outcome | None = None
    if combined.verdict == "pass":
        outcome = "passed"
    elif combined.verdict == "fail":
        found = [o for o in against if o in ("failed", "conflict")]
        outcome = ("conflict" if all(o == "conflict" for o in found) else "failed") if found else "undecided"
    update: dict[str, object] = {"details": {**(combined.details or {}), "outcome": outcome}}
    if outcome == "undecided":
        update.update(
            score=None, verdict="error", error="undecided: no failure was found, and too few judges found success"
        )
    combined = combined.model_copy(update=update)
    entry = ScoreEntry(
        name="scenario",
        type="scenario",
        score=combined.score,
        verdict=combined.verdict,
        assertions=combined.assertions,
        graders=[combined],
    )
    return entry, outcome


#: The scenario passes on a mean vote above one half (a tie of two judges does not pass).
_MORE_THAN_HALF = 0.5 + 1e-6


def _error_entry(
    message: str, usage: Usage | None = None, cost_usd: float = 0.0, calls: int = 0, reasks: int = 0
) -> ScoreEntry:
    grader = GraderScore(
        name="scenario",
        type="scenario",
        score=None,
        verdict="error",
        error=message,
        judge_calls=calls,
        judge_reasks=reasks,
        judge_usage=usage,
        judge_cost_usd=cost_usd,
    )
    return ScoreEntry(name="scenario", type="scenario", score=None, verdict="error", graders=[grader])


def apply_outcome(result: TrialResult, outcome: Outcome | None) -> None:
    """The trial's verdict once its scenario was judged: the outcome decides whether it can
    pass; a scenario the judge could not decide is an error (`result` is changed in place)."""
    result.outcome = outcome
    if result.execution_status in ("execution_error", "simulator_error", "budget_exhausted"):
        return
    if outcome is None:
        error = next((g.error for e in result.scores if e.type == "scenario" for g in e.graders), None)
        result.score, result.verdict, result.execution_status = None, "error", "execution_error"
        result.error = f"scenario: {error}"
    elif outcome == "undecided":
        result.score, result.verdict, result.execution_status = None, "error", "undecided"
        result.notes.append("scenario undecided: neither success nor failure holds")
    elif outcome in ("failed", "conflict"):  # like a failed required grader: the trial scores 0
        result.score, result.verdict, result.execution_status = 0.0, "fail", "quality_failure"
        if outcome == "conflict":
            result.notes.append("scenario conflict: success and a failure criterion both hold")
