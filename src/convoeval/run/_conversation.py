"""The live conversation loop: one trial of one test against one target.

`run_trial` asks a turn source (`_turns.py`) for the user side of each turn and plays it with
`Conversation.play_turn`, the one place where a turn is sent, its reply and tool calls are
recorded, captures and post-conditions are applied, and the reply is graded.

A new source of user messages plugs in as a `TurnSource` (`next_turn(convo) -> TurnPlan |
None`, `unsent() -> list[TurnPlan]`): give it as `TrialContext.turns`, or return it from
`turn_source` below for the tests that ask for it. The loop does not care whether a turn
was scripted, simulated or is a hint; it sends what the source hands out, in order.

Targets with `session = "resume"` get only the new messages plus the session id they returned
last turn; `single_shot` targets get all scripted turns in one prompt (see `SingleShotTurns`).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..graders import Assertion, GradeContext
from ..judging import Persona
from ..results import (
    ExecutionStatus,
    GraderScore,
    Message,
    ScoreEntry,
    ScoreKind,
    SessionKind,
    ToolCall,
    TrialResult,
    Usage,
    Verdict,
)
from ..spec import Budget, substitute
from ..targets import ChatReply, ChatRequest, RecordedReplies, SessionMode, Target, TargetError, session_mode
from ._controls import apply_controls, budget_hit
from ._plan import TestPlan, TurnPlan
from ._scenario import apply_outcome, judge_scenario
from ._simulator import SimulatedTurns
from ._turns import SINGLE_SHOT_NOTE, ScriptedTurns, SingleShotTurns, TurnSource, is_multi_turn
from ._workspace import VerifiedTurns, WorkspaceError, close_workspace, open_workspace


@dataclass
class TrialContext:
    """What a trial needs besides its plan."""

    target: Target
    judge: Target | None
    trial: int = 0
    judge_repeats: int = 1
    judge_temperature: float = 0.0
    on_turn: Callable[[int, ScoreEntry, ChatReply], None] | None = None  # (turn, score, reply) when graded
    turns: TurnSource | None = None  # default: `turn_source(plan, ctx)`
    workdir: str | None = None  # the conversation's working directory, for agent targets
    simulator: Target | None = None  # the model playing a simulated user (default: none)
    may_continue: Callable[[], bool] | None = None  # False once the run's budget is spent


def turn_source(plan: TestPlan, ctx: TrialContext) -> TurnSource:
    """The user side of a trial: `ctx.turns` when given, else the test's scripted turns
    (folded into one prompt for a target that cannot resume)."""
    if ctx.turns is not None:
        return ctx.turns
    if plan.simulated_user is not None:
        return SimulatedTurns(
            plan.turns,
            plan.simulated_user,
            ctx.simulator,
            plan.turn_assertions,
            trial=ctx.trial,
            may_continue=ctx.may_continue,
        )
    source = ScriptedTurns(plan.turns)
    if session_mode(ctx.target) == "single_shot" and is_multi_turn(source):
        return SingleShotTurns(plan.turns)
    return source


@dataclass
class Conversation:
    """The state of one trial while it runs: what turn sources and graders may look at."""

    plan: TestPlan
    ctx: TrialContext
    transcript: list[Message]
    mode: SessionMode = "history"
    replies: list[ChatReply] = field(default_factory=list)
    variables: dict[str, object] = field(default_factory=dict)
    session_id: str | None = None
    grading: list[Awaitable[ScoreEntry]] = field(default_factory=list)
    last_entry: ScoreEntry | None = None  # the last graded turn, when the loop waited for it
    turns_sent: int = 0
    error: str | None = None
    stop_note: str | None = None  # why the conversation ended before its source ran out
    skip_score: float | None = 0.0  # the score of turns not sent after a stop (None: left out)
    budget_hit: str | None = None  # the first budget a turn reached

    async def play_turn(self, number: int, turn: TurnPlan) -> bool:
        """Send one turn, record the reply, grade it. False ends the conversation."""
        new = [
            m.model_copy(update={"content": substitute(m.content, self.variables), "turn": number})
            for m in turn.messages
        ]
        self.transcript.extend(new)
        history = _window(self.transcript, self.plan.window_size)
        reply = await self._send(number, new)
        if reply is None:
            return False
        self.turns_sent = number
        self._record(number, reply)
        controls = apply_controls(number, turn.captures, turn.post_condition, reply, self.variables)
        grade_ctx = GradeContext(
            level="turn",
            output=reply.text,
            history=history,
            transcript=list(self.transcript),
            expected_output=turn.expected_output,
            criteria=self.plan.test.criteria,
            reply=reply,
            turn=number,
            variables=dict(self.variables),
            judge=self.ctx.judge,
            judge_repeats=self.ctx.judge_repeats,
            judge_temperature=self.ctx.judge_temperature,
            base_dir=self.plan.base_dir,
            threshold=self.plan.threshold,
            trial=self.ctx.trial,
            test_id=self.plan.id,
            latencies_ms=[reply.latency_ms],
            usage=reply.usage,
            cost_usd=reply.cost_usd,
            context=turn.context if turn.context is not None else _tool_results(reply.tool_calls),
            policy=self.plan.policy,
            metadata=dict(self.plan.metadata),
        )
        record: dict[str, object] = {
            "session_id": reply.session_id,
            "tool_calls": list(reply.tool_calls),
            "captures": controls.captured,
            "note": controls.stop_note,
        }
        task = asyncio.ensure_future(
            _grade_turn(number, turn, grade_ctx, self.plan.threshold, reply, self.ctx.on_turn, record, controls.scores)
        )
        hit = budget_hit(self.plan.budget, number, reply, self.replies)
        if hit is not None and self.budget_hit is None:
            self.budget_hit = hit
            if self.plan.budget is None or self.plan.budget.on_budget == "stop":
                controls.stop_note = controls.stop_note or f"budget exhausted: {hit}"
        if controls.stop_note:  # a capture, post-condition or budget says: send nothing more
            self.grading.append(task)
            self.stop_note, self.skip_score = controls.stop_note, None
            return False
        if self.plan.stop_on_failure:
            entry = await task
            self.last_entry = entry
            self.grading.append(_done(entry))
            if entry.verdict == "fail":
                self.stop_note = f"stopped after turn {number} (on_turn_failure: stop)"
                return False
        else:
            self.grading.append(task)
        return True

    async def _send(self, number: int, new: list[Message]) -> ChatReply | None:
        if self.mode == "resume" and self.session_id is not None:
            messages = [m.to_chat() for m in new]
        else:
            messages = [m.to_chat() for m in self.transcript if m.source != "tool"]
        request = ChatRequest(
            messages=messages,
            trial=self.ctx.trial,
            session_id=self.session_id,
            workdir=self.ctx.workdir,
            test_id=self.plan.id,
            max_tool_calls=_turn_tool_calls(self.plan.budget),
        )
        started = time.perf_counter()
        try:
            reply = await self.ctx.target.chat(request)
        except TargetError as exc:
            self.error = f"turn {number}: {exc}"
            return None
        except Exception as exc:  # a provider bug must not end the run
            self.error = f"turn {number}: {type(exc).__name__}: {exc}"
            return None
        if not reply.latency_ms:
            reply.latency_ms = (time.perf_counter() - started) * 1000
        return reply

    def _record(self, number: int, reply: ChatReply) -> None:
        """The reply and its tool calls (one `source: tool` message each) join the transcript."""
        self.replies.append(reply)
        if reply.session_id:
            self.session_id = reply.session_id
        self.transcript.extend(_tool_message(call, number) for call in reply.tool_calls)
        self.transcript.append(Message(role="assistant", content=reply.text, source="target", turn=number))

    async def close(self) -> None:
        """End the target's session for this conversation, when it has one to end."""
        end = getattr(self.ctx.target, "end_session", None)
        if self.session_id is not None and end is not None:
            try:
                await end(self.session_id)
            except Exception:  # cleanup must not turn a finished trial into an error
                pass


async def run_trial(plan: TestPlan, ctx: TrialContext) -> TrialResult:
    """Run one trial; with a `workspace:`, in a folder of its own that lives across all turns."""
    if plan.workspace is None:
        return await _play(plan, ctx)
    try:
        root = await open_workspace(plan.workspace, plan.base_dir, plan.id)
    except (WorkspaceError, OSError) as exc:
        return TrialResult(
            trial=ctx.trial, score=None, verdict="error", execution_status="execution_error", error=f"workspace: {exc}"
        )
    result: TrialResult | None = None
    try:
        result = await _play(plan, replace(ctx, workdir=str(root)))
    finally:
        kept = await close_workspace(plan.workspace, root, passed=result is not None and result.verdict == "pass")
    notes = [*result.notes, f"workspace kept at {kept}"] if kept else result.notes
    return result.model_copy(update={"workspace": kept, "notes": notes})


async def _play(plan: TestPlan, ctx: TrialContext) -> TrialResult:
    """Run the conversation live: send each turn (the whole history, or the new messages to a
    resumed session), grade the ACTUAL reply and carry it forward; then grade the whole
    conversation.

    Grading of turn t runs while turn t+1 is generated, unless `on_turn_failure: stop` needs
    the verdict first.
    """
    started = time.perf_counter()
    if plan.recorded is not None:  # a stored conversation: replay its replies, call no target
        ctx = replace(ctx, target=RecordedReplies(plan.recorded, ctx.target.name))
    base = turn_source(plan, ctx)
    verified = (
        None
        if plan.verify is None
        else VerifiedTurns(base, plan.verify, Path(ctx.workdir or plan.base_dir), plan.hints)
    )
    source: TurnSource = verified or base
    convo = Conversation(plan=plan, ctx=ctx, transcript=list(plan.initial), mode=session_mode(ctx.target))
    try:
        number = 0
        while (turn := await source.next_turn(convo)) is not None:
            number += 1
            if not await convo.play_turn(number, turn):
                break
        entries = list(await asyncio.gather(*convo.grading))
    finally:
        await convo.close()
    if convo.stop_note and not source.unsent() and isinstance(base, ScriptedTurns) and verified is None:
        convo.stop_note = None  # the last scripted turn failed: nothing was left to stop

    single_shot = isinstance(base, SingleShotTurns)
    if isinstance(base, SingleShotTurns):
        entries = [e.model_copy(update={"verdict": "skip", "score": None, "note": SINGLE_SHOT_NOTE}) for e in entries]
        entries += [
            ScoreEntry(name=f"turn-{n}", type="turn", score=None, verdict="skip", note=SINGLE_SHOT_NOTE)
            for n in range(len(entries) + 1, base.planned + 1)
        ]
    else:
        # Turns after a stop are not sent and score 0; after an error (including the turn that
        # failed) they are simply not run.
        for offset in range(len(entries) + 1, max(number, len(entries)) + len(source.unsent()) + 1):
            entries.append(
                ScoreEntry(
                    name=f"turn-{offset}",
                    type="turn",
                    verdict="skip",
                    score=convo.skip_score if convo.error is None else None,
                    note=convo.stop_note,
                )
            )

    if single_shot and convo.error is None and not plan.conversation_assertions:
        convo.error = (
            "single_shot fallback: the target cannot resume a session and this test has only "
            "per-turn assertions; add conversation-level assertions to grade the single reply"
        )
    simulated = base if isinstance(base, SimulatedTurns) else None
    if simulated is not None:
        simulated.finish(convo)
    outcome = None
    if convo.error is None and (simulated is None or simulated.error is None):
        if plan.conversation_assertions:
            entries.append(await _grade_conversation(plan, ctx, convo.transcript, convo.replies, convo.variables))
        if plan.success or plan.failure:
            entry, outcome = await judge_scenario(
                plan.success,
                plan.failure,
                convo.transcript,
                ctx.judge,
                trial=ctx.trial,
                temperature=ctx.judge_temperature,
                objective=plan.simulated_user.objective if plan.simulated_user else None,
            )
            entries.append(entry)
        if plan.fidelity:
            entries.append(await _grade_fidelity(plan, ctx, convo.transcript))

    if verified is not None and convo.error is None:
        entries.append(verified.entry())
    result = _trial_result(
        plan,
        ctx.trial,
        entries,
        convo.transcript,
        convo.replies,
        convo.error,
        convo.stop_note,
        (time.perf_counter() - started) * 1000,
    )
    result = apply_outcome(result, outcome, judged=bool(plan.success or plan.failure))
    if verified is not None and verified.verified_at is None and result.execution_status in ("ok", "quality_failure"):
        # verify is required: a conversation that never verified fails, whatever else passed.
        result = result.model_copy(update={"score": 0.0, "verdict": "fail", "execution_status": "quality_failure"})
    if simulated is not None:
        result = simulated.record(result)
    if convo.budget_hit is not None and result.execution_status != "execution_error":
        result = result.model_copy(
            update={
                "execution_status": "budget_exhausted",
                "verdict": "fail",
                "budget_hit": convo.budget_hit,
                "notes": [*result.notes, f"budget exhausted: {convo.budget_hit}"],
            }
        )
    kind: SessionKind = "single_shot" if single_shot else ("resumed" if convo.mode == "resume" else "history")
    return result.model_copy(
        update={
            "provider": getattr(ctx.target, "provider_name", None),
            "session": kind,
            "fallback": "single_shot" if single_shot else None,
            "variables": dict(convo.variables),
        }
    )


def _turn_tool_calls(budget: Budget | None) -> int | None:
    """The tool calls one turn may make under the test's budget (a tool agent stops there)."""
    limits = budget.turn if budget is not None else None
    return limits.tool_calls if limits is not None else None


def _tool_results(calls: list[ToolCall]) -> list[dict[str, object]] | None:
    """A turn's tool calls and their results: the backend result graders see when the turn
    gives none of its own (`context` / `db_result`)."""
    if not calls:
        return None
    return [
        {"tool": c.name, "arguments": c.arguments, **({"error": c.error} if c.error else {"output": c.output})}
        for c in calls
    ]


def _tool_message(call: ToolCall, turn: int) -> Message:
    output = call.output
    if output is None:
        text = call.error or ""
    elif isinstance(output, str):
        text = output
    else:
        text = json.dumps(output, ensure_ascii=False, default=str)
    return Message(role="tool", content=text, source="tool", turn=turn, tool_calls=[call])


async def _done(entry: ScoreEntry) -> ScoreEntry:
    return entry


async def _grade_turn(
    number: int,
    turn: TurnPlan,
    ctx: GradeContext,
    threshold: float,
    reply: ChatReply,
    on_turn: Callable[[int, ScoreEntry, ChatReply], None] | None = None,
    record: dict[str, object] | None = None,
    extra: list[GraderScore] | None = None,
) -> ScoreEntry:
    scores = await _evaluate_all(turn.assertions, ctx) + list(extra or [])
    entry = combine(f"turn-{number}", "turn", scores, threshold, latency_ms=reply.latency_ms)
    if record:
        entry = entry.model_copy(update=record)
    if on_turn is not None:
        on_turn(number, entry, reply)
    return entry


async def _grade_conversation(
    plan: TestPlan,
    ctx: TrialContext,
    transcript: list[Message],
    replies: list[ChatReply],
    variables: dict[str, object],
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
    )
    scores = await _evaluate_all(plan.conversation_assertions, grade_ctx)
    return combine("conversation", "conversation", scores, plan.threshold)


async def _grade_fidelity(plan: TestPlan, ctx: TrialContext, transcript: list[Message]) -> ScoreEntry:
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
    scores = await _evaluate_all(plan.fidelity, grade_ctx)
    return combine("simulator-fidelity", "simulator", scores, plan.threshold)


async def _evaluate_all(assertions: list[Assertion], ctx: GradeContext) -> list[GraderScore]:
    return list(await asyncio.gather(*(a.evaluate(ctx) for a in assertions)))


def combine(
    name: str, kind: ScoreKind, scores: list[GraderScore], threshold: float, latency_ms: float | None = None
) -> ScoreEntry:
    """One turn's (or the conversation's) score from its graders.

    Weighted mean of the graders that decided (errors are left out); a failed `required`
    grader, or a grader that failed on a required criterion (`details.failed_required`),
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
    if any(s.verdict == "fail" and (s.required or (s.details or {}).get("failed_required")) for s in decided):
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
