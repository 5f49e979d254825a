"""Grading and scoring a trial: each turn's graders, the conversation's and the simulator's,
one score per turn (`combine`), and the trial's result from its entries (`trial_result`)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..graders import Assertion, GradeContext
from ..judging import Persona
from ..results import (
    ExecutionStatus,
    GraderScore,
    Message,
    ScoreEntry,
    ScoreKind,
    ToolCall,
    TrialResult,
    Usage,
    Verdict,
    decided_despite,
    meets,
)
from ..spec import agentv_transcript
from ..targets import ChatReply, capabilities
from ._plan import TestPlan, TurnPlan

if TYPE_CHECKING:
    from ._conversation import Conversation, TrialContext


async def done(entry: ScoreEntry) -> ScoreEntry:
    return entry


@dataclass
class TurnRecord:
    """What a turn's score entry records besides its grades: the session the reply belongs to,
    its tool calls, what its captures found, and why it ended the conversation (if it did: it
    wins over the entry's own note)."""

    session_id: str | None = None
    tool_calls: list[ToolCall] = field(default_factory=list)
    captures: dict[str, object] = field(default_factory=dict)
    note: str | None = None


def _grade_context(plan: TestPlan, ctx: TrialContext, **fields: Any) -> GradeContext:
    """The fields every grade context shares (the test, the judge, the trial), plus `fields`."""
    return GradeContext(
        judge=ctx.judge,
        judges=ctx.judges,
        judge_repeats=ctx.judge_repeats,
        judge_temperature=ctx.judge_temperature,
        base_dir=plan.base_dir,
        threshold=plan.threshold,
        trial=ctx.trial,
        test_id=plan.id,
        input_files=plan.test.attachments,
        captured_names=plan.captured_names,
        **fields,
    )


def turn_context(
    convo: Conversation, number: int, turn: TurnPlan, reply: ChatReply, history: list[Message]
) -> GradeContext:
    """What a turn's graders see: this reply, `history` (the transcript up to this turn's user
    messages, in the test's window), the turn's backend result (its own `context`, else the
    reply's tool results)."""
    plan, ctx = convo.plan, convo.ctx
    return _grade_context(
        plan,
        ctx,
        level="turn",
        output=reply.text,
        history=history,
        transcript=list(convo.transcript),
        expected_output=turn.expected_output,
        expected_messages=turn.expected_messages,
        criteria=plan.test.criteria,
        reply=reply,
        turn=number,
        variables=dict(convo.variables),
        latencies_ms=[reply.latency_ms],
        usage=reply.usage,
        cost_usd=reply.cost_usd,
        context=turn.context if turn.context is not None else tool_results(reply.tool_calls),
        policy=plan.policy,
        metadata=dict(plan.metadata),
        workdir=Path(ctx.workdir) if ctx.workdir else None,
        domain=ctx.domain,
    )


def conversation_context(convo: Conversation) -> GradeContext:
    """What conversation-level graders see: the whole transcript, every reply joined, their
    summed usage and cost, and what changed in the workspace."""
    plan, ctx, replies = convo.plan, convo.ctx, convo.replies
    return _grade_context(
        plan,
        ctx,
        level="conversation",
        output=agentv_transcript(convo.transcript) if plan.agentv else "\n\n".join(r.text for r in replies),
        history=list(convo.transcript),
        transcript=list(convo.transcript),
        criteria=plan.test.criteria,
        variables=dict(convo.variables),
        latencies_ms=[r.latency_ms for r in replies],
        usage=Usage.total(r.usage for r in replies),
        cost_usd=sum(r.cost_usd for r in replies),
        cost_known=bool(replies) and all(r.cost_known for r in replies),
        policy=plan.policy,
        metadata=dict(plan.metadata),
        workdir=Path(ctx.workdir) if ctx.workdir else None,
        file_changes=convo.file_changes,
        domain=ctx.domain,
        stop_reason=convo.stop_reason,
    )


def simulator_context(convo: Conversation) -> GradeContext:
    """What simulator-fidelity checks see: the transcript and the simulated user's persona."""
    simulated = convo.plan.simulated_user.filled(convo.variables) if convo.plan.simulated_user else None
    persona = (
        Persona(simulated.persona, simulated.objective, simulated.knowledge, simulated.stop_conditions)
        if simulated
        else None
    )
    transcript = list(convo.transcript)
    return _grade_context(
        convo.plan,
        convo.ctx,
        level="conversation",
        output="",
        history=transcript,
        transcript=list(transcript),
        simulated_user=persona,
    )


async def grade_turn(
    ctx: GradeContext,
    turn: TurnPlan,
    record: TurnRecord,
    extra: list[GraderScore],
    report: Callable[[int, ScoreEntry, ChatReply], None] | None = None,
) -> ScoreEntry:
    """A turn's score entry: its assertions and the `extra` checks (captures, post-condition);
    `report(number, entry, reply)` is told once it is graded."""
    reply = ctx.reply
    assert reply is not None and ctx.turn is not None
    scores = await evaluate_all(turn.assertions, ctx) + extra
    entry = combine(
        f"turn-{ctx.turn}",
        "turn",
        scores,
        ctx.threshold,
        latency_ms=reply.latency_ms,
        note=record.note,
        token_usage=reply.usage,
        cost_usd=reply.cost_usd if reply.cost_usd or reply.cost_known else None,
        session_id=record.session_id,
        tool_calls=list(record.tool_calls),
        captures=dict(record.captures),
    )
    if report is not None:
        report(ctx.turn, entry, reply)
    return entry


async def grade_conversation(convo: Conversation) -> ScoreEntry:
    scores = await evaluate_all(convo.plan.conversation_assertions, conversation_context(convo))
    return combine("conversation", "conversation", scores, convo.plan.threshold)


async def grade_fidelity(convo: Conversation) -> ScoreEntry:
    """The simulator-fidelity checks: they judge the simulated user, so their entry (`type:
    simulator`) never counts in the test's score."""
    scores = await evaluate_all(convo.plan.fidelity, simulator_context(convo))
    return combine("simulator-fidelity", "simulator", scores, convo.plan.threshold)


def tool_results(calls: list[ToolCall]) -> list[dict[str, object]] | None:
    """A turn's tool calls and their results: the backend result graders see when the turn
    gives none of its own (`context` / `db_result`)."""
    if not calls:
        return None
    return [
        {"tool": c.name, "arguments": c.arguments, **({"error": c.error} if c.error else {"output": c.output})}
        for c in calls
    ]


async def evaluate_all(assertions: list[Assertion], ctx: GradeContext) -> list[GraderScore]:
    if len(assertions) == 1:  # the usual turn: no task to gather
        return [await assertions[0].evaluate(ctx)]
    return list(await asyncio.gather(*(a.evaluate(ctx) for a in assertions)))


#: The note of a turn that has no check of its own: it is not scored.
NOT_GRADED = "not graded: the turn has no assertions"
#: The note of a turn whose checks all weigh 0: they report, never score.
UNWEIGHTED = "not graded: its checks all weigh 0 (a check of weight 0 reports, never scores)"
#: The note of a trial in which nothing was graded: it passes (it ran), with no score.
NOTHING_GRADED = "nothing graded: the test has no checks; it passes when it runs without error"


def combine(
    name: str,
    kind: ScoreKind,
    scores: list[GraderScore],
    threshold: float,
    latency_ms: float | None = None,
    note: str | None = None,
    **fields: Any,
) -> ScoreEntry:
    """One turn's (or the conversation's) score from its graders.

    Weighted mean of the graders that decided (errors are left out); a failed `required`
    grader, or a grader that failed on a required criterion, is recorded in
    `failed_required` (it fails the test whatever the mean) and makes the score 0; a
    `required` grader that could not decide makes the verdict `error` (score None): the
    required check never passed. No grader that counts (none, or only zero-weight ones such as
    a capture) is not graded: verdict `skip`, score None, left out of the test's score.
    `note` (why the turn ended the conversation) wins over the entry's own; `fields` are more
    fields of the entry (a turn's session, tool calls, captures, usage).
    """
    failed_required = [
        f"{s.name} ({'; '.join(s.failed_required)})" if s.failed_required else s.name
        for s in scores
        if s.verdict == "fail" and (s.required or s.failed_required)
    ]
    score, verdict, own_note = _combined(scores, threshold, failed_required)
    return ScoreEntry(
        name=name,
        type=kind,
        score=score,
        verdict=verdict,
        assertions=[a for s in scores for a in s.assertions],
        graders=scores,
        latency_ms=latency_ms,
        note=note or own_note,
        failed_required=failed_required,
        **fields,
    )


def _combined(
    scores: list[GraderScore], threshold: float, failed_required: list[str]
) -> tuple[float | None, Verdict, str | None]:
    """The score, verdict and note of `combine`."""
    counted = [s for s in scores if s.weight > 0 or s.required or s.failed_required]
    if not counted and any(s.verdict == "error" for s in scores):  # nothing decided: never a pass
        return None, "error", None
    if not counted:
        return None, "skip", UNWEIGHTED if scores else NOT_GRADED
    decided = [s for s in counted if s.verdict != "error" and s.score is not None]
    if not decided or undecided_required(scores):
        return None, "error", None
    if failed_required:
        return 0.0, "fail", None
    unknown = [s for s in counted if s.verdict == "error" or s.score is None]  # might have scored 0 or 1
    by_weight = sum(s.weight for s in decided) > 0
    weights = [s.weight if by_weight else 1.0 for s in decided]
    unknown_weight = sum(s.weight if by_weight else 1.0 for s in unknown)
    total = sum((s.score or 0.0) * w for s, w in zip(decided, weights, strict=True))
    score = total / sum(weights)
    whole = sum(weights) + unknown_weight
    passed = decided_despite(total / whole, (total + unknown_weight) / whole, lambda s: meets(s, threshold))
    if passed is None:
        return None, "error", None
    return round(score, 6), "pass" if passed else "fail", None


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


def _bounds(values: list[float], unknown: list[ScoreEntry], plan: TestPlan) -> tuple[float, float]:
    """The test's lowest and highest possible score: each undecided entry counted as 0, then as 1."""
    return (
        aggregate(values + [0.0] * len(unknown), plan.aggregation),
        aggregate(values + [1.0] * len(unknown), plan.aggregation),
    )


def trial_result(convo: Conversation, entries: list[ScoreEntry], duration_ms: float) -> TrialResult:
    """The trial's result from its score entries: the aggregated score and its verdict, what
    the replies and judges used, and how the conversation was held."""
    plan, replies, error = convo.plan, convo.replies, convo.error
    graders = [grader for entry in entries for grader in entry.graders]
    grader_errors = sum(grader.verdict == "error" for grader in graders)
    judge_cost = sum((grader.judge_cost_usd for grader in graders), 0.0)
    notes = [convo.stop_note] if convo.stop_note else []
    counted = [e for e in entries if e.type != "simulator"]
    values = [e.score for e in counted if e.score is not None]
    failed_required = [f"{e.name}: {check}" for e in counted for check in e.failed_required]
    undecided = [f"{e.name}: {why}" for e in entries for why in undecided_required(e.graders)]
    unknown = [e for e in counted if e.verdict == "error" and e.type != "scenario"]
    score: float | None
    verdict: Verdict
    status: ExecutionStatus
    if error is not None:
        score, verdict, status = None, "error", "execution_error"
    elif failed_required:  # a required check failed: the test fails whatever the mean
        score, verdict, status = 0.0, "fail", "quality_failure"
    elif undecided and (values or unknown) and not meets(_bounds(values, unknown, plan)[1], plan.threshold):
        # a required check could not decide, but even its pass (and a 1 for every undecided turn)
        # leaves the test below its threshold: it fails whatever that check would have said
        score, verdict, status = (
            round(aggregate(values, plan.aggregation), 6) if values else 0.0,
            "fail",
            "quality_failure",
        )
        notes.append(f"failed whatever the undecided required checks say ({'; '.join(undecided)})")
    elif undecided:
        score, verdict, status, error = None, "error", "execution_error", "; ".join(undecided)
    elif not values and not any(e.verdict == "error" for e in counted if e.type != "scenario"):
        # No check at all (a scenario the judge could not decide is its step's to report): nothing failed.
        score, verdict, status = None, "pass", "ok"
        notes.append(NOTHING_GRADED)
    elif not values and not any(g.verdict != "error" for e in counted for g in e.graders):
        score, verdict, status = None, "error", "execution_error"
        error = "every grader failed: " + "; ".join(
            g.error or "" for e in entries for g in e.graders if g.verdict == "error"
        )
    else:
        low, high = _bounds(values, unknown, plan)
        passed = decided_despite(low, high, lambda s: meets(s, plan.threshold))
        if passed is None:
            score, verdict, status = None, "error", "undecided"
            why = next((g.error for e in unknown for g in e.graders if g.error), None)
            error = f"{', '.join(e.name for e in unknown)} could not be decided, and the verdict depends on it"
            error += f" ({why})" if why else ""
        else:
            score = round(aggregate(values, plan.aggregation), 6)
            verdict, status = ("pass", "ok") if passed else ("fail", "quality_failure")
    return TrialResult(
        trial=convo.ctx.trial,
        score=score,
        verdict=verdict,
        execution_status=status,
        scores=entries,
        output=convo.transcript,
        token_usage=Usage.total(r.usage for r in replies),
        judge_token_usage=Usage.total(g.judge_usage for g in graders if g.judge_usage is not None),
        cost_usd=round(sum(r.cost_usd for r in replies), 8),
        judge_cost_usd=round(judge_cost, 8),
        duration_ms=round(duration_ms, 3),
        error=error,
        grader_errors=grader_errors,
        notes=notes,
        failed_required=failed_required,
        provider=capabilities(convo.ctx.target).provider_name,
        session=convo.session_kind,
        fallback="single_shot" if convo.session_kind == "single_shot" else None,
        variables=dict(convo.variables),
    )
