"""The live conversation loop: one trial of one test against one target."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from ..graders import Assertion, GradeContext
from ..results import GraderScore, Message, ScoreEntry, TrialResult, Usage
from ..spec import substitute
from ..targets import ChatReply, ChatRequest, Target, TargetError
from ._plan import TestPlan, TurnPlan


@dataclass
class TrialContext:
    """What a trial needs besides its plan."""

    target: Target
    judge: Target | None
    trial: int = 0
    judge_repeats: int = 1
    judge_temperature: float = 0.0
    on_turn: Callable[[int, ScoreEntry, ChatReply], None] | None = None  # (turn, score, reply) when graded


async def run_trial(plan: TestPlan, ctx: TrialContext) -> TrialResult:
    """Run the conversation live: send each turn with the whole history, grade the ACTUAL reply
    and carry it forward; then grade the whole conversation.

    Grading of turn t runs while turn t+1 is generated, unless `on_turn_failure: stop` needs
    the verdict first.
    """
    started = time.perf_counter()
    transcript: list[Message] = list(plan.initial)
    replies: list[ChatReply] = []
    grading: list[Awaitable[ScoreEntry]] = []
    variables: dict[str, object] = {}
    error: str | None = None
    stopped_at: int | None = None

    for number, turn in enumerate(plan.turns, start=1):
        transcript.extend(
            m.model_copy(update={"content": substitute(m.content, variables), "turn": number})
            for m in turn.messages
        )
        history = _window(transcript, plan.window_size)
        request = ChatRequest(messages=[m.to_chat() for m in transcript], trial=ctx.trial)
        call_started = time.perf_counter()
        try:
            reply = await ctx.target.chat(request)
        except TargetError as exc:
            error = f"turn {number}: {exc}"
            break
        except Exception as exc:  # a provider bug must not end the run
            error = f"turn {number}: {type(exc).__name__}: {exc}"
            break
        if not reply.latency_ms:
            reply.latency_ms = (time.perf_counter() - call_started) * 1000
        replies.append(reply)
        transcript.append(Message(role="assistant", content=reply.text, source="target",
                                  turn=number, tool_calls=reply.tool_calls))
        grade_ctx = GradeContext(
            level="turn", output=reply.text, history=history, transcript=list(transcript),
            expected_output=turn.expected_output, criteria=plan.test.criteria, reply=reply,
            turn=number, variables=dict(variables), judge=ctx.judge, judge_repeats=ctx.judge_repeats,
            judge_temperature=ctx.judge_temperature,
            base_dir=plan.base_dir,
            threshold=plan.threshold, trial=ctx.trial, test_id=plan.id,
            extra={"context": turn.context, "policy": plan.policy},
        )
        task = asyncio.ensure_future(_grade_turn(number, turn, grade_ctx, plan.threshold, reply, ctx.on_turn))
        if plan.stop_on_failure:
            entry = await task
            grading.append(_done(entry))
            if entry.verdict == "fail" and number < len(plan.turns):
                stopped_at = number
                break
        else:
            grading.append(task)

    entries = list(await asyncio.gather(*grading))
    sent = len(entries)
    for number in range(sent + 1, len(plan.turns) + 1):
        # Turns after a stop are not sent and score 0; after an error they are simply not run.
        entries.append(ScoreEntry(name=f"turn-{number}", type="turn",
                                  score=0.0 if error is None else None, verdict="skip"))

    if error is None and plan.conversation_assertions:
        entries.append(await _grade_conversation(plan, ctx, transcript, replies, variables))

    return _trial_result(plan, ctx.trial, entries, transcript, replies, error, stopped_at,
                         (time.perf_counter() - started) * 1000)


async def _done(entry: ScoreEntry) -> ScoreEntry:
    return entry


async def _grade_turn(
    number: int, turn: TurnPlan, ctx: GradeContext, threshold: float, reply: ChatReply,
    on_turn: Callable[[int, ScoreEntry, ChatReply], None] | None = None,
) -> ScoreEntry:
    scores = await _evaluate_all(turn.assertions, ctx)
    entry = combine(f"turn-{number}", "turn", scores, threshold, latency_ms=reply.latency_ms)
    if on_turn is not None:
        on_turn(number, entry, reply)
    return entry


async def _grade_conversation(
    plan: TestPlan, ctx: TrialContext, transcript: list[Message], replies: list[ChatReply],
    variables: dict[str, object],
) -> ScoreEntry:
    usage = sum((r.usage for r in replies), Usage())
    grade_ctx = GradeContext(
        level="conversation",
        output="\n\n".join(r.text for r in replies),
        history=list(transcript), transcript=list(transcript),
        criteria=plan.test.criteria, variables=dict(variables), judge=ctx.judge,
        judge_repeats=ctx.judge_repeats, judge_temperature=ctx.judge_temperature, base_dir=plan.base_dir, threshold=plan.threshold, trial=ctx.trial, test_id=plan.id,
        extra={
            "latencies_ms": [r.latency_ms for r in replies],
            "usage": usage,
            "cost_usd": sum(r.cost_usd for r in replies),
            "policy": plan.policy,
        },
    )
    scores = await _evaluate_all(plan.conversation_assertions, grade_ctx)
    return combine("conversation", "conversation", scores, plan.threshold)


async def _evaluate_all(assertions: list[Assertion], ctx: GradeContext) -> list[GraderScore]:
    return list(await asyncio.gather(*(a.evaluate(ctx) for a in assertions)))


def combine(
    name: str, kind: str, scores: list[GraderScore], threshold: float, latency_ms: float | None = None
) -> ScoreEntry:
    """One turn's (or the conversation's) score from its graders.

    Weighted mean of the graders that decided (errors are left out); a failed `required`
    grader makes the score 0; no graders at all is a pass with score 1.
    """
    outcomes = [a for s in scores for a in s.assertions]
    decided = [s for s in scores if s.verdict != "error" and s.score is not None]
    if not scores:
        return ScoreEntry(name=name, type=kind, score=1.0, verdict="pass", latency_ms=latency_ms)  # type: ignore[arg-type]
    if not decided:
        return ScoreEntry(name=name, type=kind, score=None, verdict="error", assertions=outcomes,  # type: ignore[arg-type]
                          graders=scores, latency_ms=latency_ms)
    total_weight = sum(s.weight for s in decided)
    if total_weight > 0:
        score = sum(s.score * s.weight for s in decided) / total_weight  # type: ignore[operator]
    else:
        score = sum(s.score for s in decided) / len(decided)  # type: ignore[misc]
    if any(s.required and s.verdict == "fail" for s in decided):
        score = 0.0
    verdict = "pass" if score >= threshold else "fail"
    return ScoreEntry(name=name, type=kind, score=round(score, 6), verdict=verdict,  # type: ignore[arg-type]
                      assertions=outcomes, graders=scores, latency_ms=latency_ms)


def aggregate(values: list[float], how: str) -> float:
    """mean, min or max of the turn (and conversation) scores."""
    if how == "min":
        return min(values)
    if how == "max":
        return max(values)
    return sum(values) / len(values)


def _window(transcript: list[Message], window_size: int | None) -> list[Message]:
    """What per-turn graders see: system messages plus the last N exchanges, this one included."""
    if window_size is None:
        return list(transcript)
    system = [m for m in transcript if m.role == "system"]
    rest = [m for m in transcript if m.role != "system"]
    starts = [i for i, m in enumerate(rest) if m.role == "user" and (i == 0 or rest[i - 1].role != "user")]
    keep_from = starts[-window_size] if len(starts) >= window_size else 0
    return system + rest[keep_from:]


def _trial_result(
    plan: TestPlan, trial: int, entries: list[ScoreEntry], transcript: list[Message],
    replies: list[ChatReply], error: str | None, stopped_at: int | None, duration_ms: float,
) -> TrialResult:
    judge_usage = Usage()
    judge_cost = 0.0
    grader_errors = 0
    for entry in entries:
        for grader in entry.graders:
            grader_errors += grader.verdict == "error"
            details = grader.details or {}
            if "judge_usage" in details:
                judge_usage = judge_usage + Usage(**details["judge_usage"])
            judge_cost += float(details.get("judge_cost_usd", 0.0))
    notes = []
    if stopped_at is not None:
        notes.append(f"stopped after turn {stopped_at} (on_turn_failure: stop)")
    values = [e.score for e in entries if e.score is not None]
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
        trial=trial, score=score, verdict=verdict, execution_status=status,  # type: ignore[arg-type]
        scores=entries, output=transcript,
        token_usage=sum((r.usage for r in replies), Usage()),
        judge_token_usage=judge_usage,
        cost_usd=round(sum(r.cost_usd for r in replies), 8), judge_cost_usd=round(judge_cost, 8),
        duration_ms=round(duration_ms, 3), error=error, grader_errors=grader_errors, notes=notes,
    )
