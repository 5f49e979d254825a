"""Grading and scoring a trial: each turn's graders, the conversation's and the simulator's,
one score per turn (`combine`), and the trial's result from its entries (`trial_result`)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from ..graders import Assertion, GradeContext
from ..judging import Persona
from ..results import (
    ExecutionStatus,
    GraderScore,
    Message,
    ScoreEntry,
    ScoreKind,
    TrialResult,
    Usage,
    Verdict,
)
from ..targets import ChatReply
from ._plan import TestPlan, TurnPlan

if TYPE_CHECKING:
    from ._conversation import TrialContext


async def done(entry: ScoreEntry) -> ScoreEntry:
    return entry


async def grade_turn(
    number: int,
    turn: TurnPlan,
    ctx: GradeContext,
    threshold: float,
    reply: ChatReply,
    on_turn: Callable[[int, ScoreEntry, ChatReply], None] | None = None,
    record: dict[str, object] | None = None,
    extra: list[GraderScore] | None = None,
) -> ScoreEntry:
    scores = await evaluate_all(turn.assertions, ctx) + list(extra or [])
    entry = combine(f"turn-{number}", "turn", scores, threshold, latency_ms=reply.latency_ms)
    entry.token_usage, entry.cost_usd = reply.usage, reply.cost_usd
    if record:
        entry = entry.model_copy(update=record)
    if on_turn is not None:
        on_turn(number, entry, reply)
    return entry


async def grade_conversation(
    plan: TestPlan,
    ctx: TrialContext,
    transcript: list[Message],
    replies: list[ChatReply],
    variables: dict[str, object],
    changes: str | None = None,
) -> ScoreEntry:
    usage = sum((r.usage for r in replies), Usage())
    grade_ctx = GradeContext(
        level="conversation",
        output="\n\n".join(r.text for r in replies),
        history=list(transcript),
        transcript=list(transcript),
        criteria=plan.test.criteria,
        variables=dict(variables),
        judge=ctx.judge,
        judge_repeats=ctx.judge_repeats,
        judge_temperature=ctx.judge_temperature,
        base_dir=plan.base_dir,
        threshold=plan.threshold,
        trial=ctx.trial,
        test_id=plan.id,
        latencies_ms=[r.latency_ms for r in replies],
        usage=usage,
        cost_usd=sum(r.cost_usd for r in replies),
        policy=plan.policy,
        metadata=dict(plan.metadata),
        workdir=Path(ctx.workdir) if ctx.workdir else None,
        file_changes=changes,
        domain=ctx.domain,
    )
    scores = await evaluate_all(plan.conversation_assertions, grade_ctx)
    return combine("conversation", "conversation", scores, plan.threshold)


async def grade_fidelity(plan: TestPlan, ctx: TrialContext, transcript: list[Message]) -> ScoreEntry:
    """The simulator-fidelity checks: they judge the simulated user, so their entry (`type:
    simulator`) never counts in the test's score."""
    simulated = plan.simulated_user
    persona = (
        Persona(simulated.persona, simulated.objective, simulated.knowledge, simulated.stop_conditions)
        if simulated
        else None
    )
    grade_ctx = GradeContext(
        level="conversation",
        output="",
        history=list(transcript),
        transcript=list(transcript),
        judge=ctx.judge,
        judge_repeats=ctx.judge_repeats,
        judge_temperature=ctx.judge_temperature,
        base_dir=plan.base_dir,
        threshold=plan.threshold,
        trial=ctx.trial,
        test_id=plan.id,
        simulated_user=persona,
    )
    scores = await evaluate_all(plan.fidelity, grade_ctx)
    return combine("simulator-fidelity", "simulator", scores, plan.threshold)


async def evaluate_all(assertions: list[Assertion], ctx: GradeContext) -> list[GraderScore]:
    return list(await asyncio.gather(*(a.evaluate(ctx) for a in assertions)))


def combine(
    name: str, kind: ScoreKind, scores: list[GraderScore], threshold: float, latency_ms: float | None = None
) -> ScoreEntry:
    """One turn's (or the conversation's) score from its graders.

    Weighted mean of the graders that decided (errors are left out); a failed `required`
    grader, or a grader that failed on a required criterion (`failed_required`),
    makes the score 0; a `required` grader that could not decide makes the verdict `error`
    (score None): the required check never passed. No graders at all is a pass with score 1.
    """
    outcomes = [a for s in scores for a in s.assertions]
    decided = [s for s in scores if s.verdict != "error" and s.score is not None]
    if not scores:
        return ScoreEntry(name=name, type=kind, score=1.0, verdict="pass", latency_ms=latency_ms)
    if not decided or undecided_required(scores):
        return ScoreEntry(
            name=name,
            type=kind,
            score=None,
            verdict="error",
            assertions=outcomes,
            graders=scores,
            latency_ms=latency_ms,
        )
    total_weight = sum(s.weight for s in decided)
    if total_weight > 0:
        score = sum((s.score or 0.0) * s.weight for s in decided) / total_weight
    else:
        score = sum(s.score or 0.0 for s in decided) / len(decided)
    if any(s.verdict == "fail" and (s.required or s.failed_required) for s in decided):
        score = 0.0
    verdict: Verdict = "pass" if score >= threshold else "fail"
    return ScoreEntry(
        name=name,
        type=kind,
        score=round(score, 6),
        verdict=verdict,
        assertions=outcomes,
        graders=scores,
        latency_ms=latency_ms,
    )


def undecided_required(scores: list[GraderScore]) -> list[str]:
    """`grader: why` for each `required` grader that could not decide."""
    return [
        f"required grader {s.name!r} could not decide: {s.error or 'no score'}"
        for s in scores
        if s.required and (s.verdict == "error" or s.score is None)
    ]


def aggregate(values: list[float], how: str) -> float:
    """mean, min or max of the turn (and conversation) scores."""
    if how == "min":
        return min(values)
    if how == "max":
        return max(values)
    return sum(values) / len(values)


def window(transcript: list[Message], window_size: int | None) -> list[Message]:
    """What per-turn graders see: system messages plus the last N exchanges, this one included."""
    if window_size is None:
        return list(transcript)
    system = [m for m in transcript if m.role == "system"]
    rest = [m for m in transcript if m.role != "system"]
    starts = [i for i, m in enumerate(rest) if m.role == "user" and (i == 0 or rest[i - 1].role != "user")]
    keep_from = starts[-window_size] if len(starts) >= window_size else 0
    return system + rest[keep_from:]


def trial_result(
    plan: TestPlan,
    trial: int,
    entries: list[ScoreEntry],
    transcript: list[Message],
    replies: list[ChatReply],
    error: str | None,
    stop_note: str | None,
    duration_ms: float,
) -> TrialResult:
    judge_usage = Usage()
    judge_cost = 0.0
    grader_errors = 0
    for entry in entries:
        for grader in entry.graders:
            grader_errors += grader.verdict == "error"
            if grader.judge_usage is not None:
                judge_usage = judge_usage + grader.judge_usage
            judge_cost += grader.judge_cost_usd
    notes = [stop_note] if stop_note else []
    values = [e.score for e in entries if e.score is not None and e.type != "simulator"]
    undecided = [f"{e.name}: {why}" for e in entries for why in undecided_required(e.graders)]
    if error is None and undecided:
        error = "; ".join(undecided)
    score: float | None
    verdict: Verdict
    status: ExecutionStatus
    if error is not None:
        score, verdict, status = None, "error", "execution_error"
    elif not values:
        score, verdict, status = None, "error", "execution_error"
        error = "every grader failed: " + "; ".join(
            g.error or "" for e in entries for g in e.graders if g.verdict == "error"
        )
    else:
        score = round(aggregate(values, plan.aggregation), 6)
        passed = score >= plan.threshold
        verdict, status = ("pass", "ok") if passed else ("fail", "quality_failure")
    return TrialResult(
        trial=trial,
        score=score,
        verdict=verdict,
        execution_status=status,
        scores=entries,
        output=transcript,
        token_usage=sum((r.usage for r in replies), Usage()),
        judge_token_usage=judge_usage,
        cost_usd=round(sum(r.cost_usd for r in replies), 8),
        judge_cost_usd=round(judge_cost, 8),
        duration_ms=round(duration_ms, 3),
        error=error,
        grader_errors=grader_errors,
        notes=notes,
    )
