"""The live conversation loop: one trial of one test against one target.

`run_trial` asks a turn source (`_turns.py`) for the user side of each turn and plays it with
`Conversation.play_turn`, the one place where a turn is sent, its reply and tool calls are
recorded, captures and post-conditions are applied, and the reply is handed to the graders
(`_grading.py`).

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

from ..graders import DomainSession, GradeContext, GraderError
from ..results import (
    Message,
    ScoreEntry,
    SessionKind,
    ToolCall,
    TrialResult,
)
from ..spec import Budget, substitute
from ..targets import ChatReply, ChatRequest, RecordedReplies, SessionMode, Target, TargetError, session_mode
from ._controls import apply_controls, budget_hit
from ._grading import done, grade_conversation, grade_fidelity, grade_turn, trial_result, window
from ._plan import TestPlan, TurnPlan
from ._scenario import apply_outcome, judge_scenario
from ._simulator import SimulatedTurns
from ._turns import SINGLE_SHOT_NOTE, ScriptedTurns, SingleShotTurns, TurnSource, is_multi_turn
from ._workspace import VerifiedTurns, WorkspaceError, close_workspace, file_changes, open_workspace, snapshot


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
    files_before: dict[str, str] | None = None  # the workspace as it was made (for `file_changes`)
    domain: DomainSession | None = None  # this trial's copy of the suite's backend
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
        history = window(self.transcript, self.plan.window_size)
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
            workdir=Path(self.ctx.workdir) if self.ctx.workdir else None,
            domain=self.ctx.domain,
        )
        record: dict[str, object] = {
            "session_id": reply.session_id,
            "tool_calls": list(reply.tool_calls),
            "captures": controls.captured,
            "note": controls.stop_note,
        }
        task = asyncio.ensure_future(
            grade_turn(number, turn, grade_ctx, self.plan.threshold, reply, self.ctx.on_turn, record, controls.scores)
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
            self.grading.append(done(entry))
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
            domain_tools=self.ctx.domain.domain.specs() if self.ctx.domain else None,
            call_domain_tool=self.ctx.domain.call if self.ctx.domain else None,
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
    """Run one trial; with a `workspace:`, in a folder of its own that lives across all turns;
    with the suite's `tools:`, on a copy of its backend of its own."""
    try:
        domain = plan.domain()
    except GraderError as exc:
        return TrialResult(
            trial=ctx.trial, score=None, verdict="error", execution_status="execution_error", error=str(exc)
        )
    if domain is not None:
        ctx = replace(ctx, domain=domain.session())
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
        result = await _play(plan, replace(ctx, workdir=str(root), files_before=snapshot(root)))
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
        else VerifiedTurns(
            base,
            plan.verify,
            Path(ctx.workdir or plan.base_dir),
            plan.hints,
            passed=plan.workspace.env if plan.workspace else [],
        )
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
    changes = (
        file_changes(ctx.files_before, Path(ctx.workdir)) if ctx.files_before is not None and ctx.workdir else None
    )
    if convo.error is None and (simulated is None or simulated.error is None):
        if plan.conversation_assertions:
            entries.append(
                await grade_conversation(plan, ctx, convo.transcript, convo.replies, convo.variables, changes)
            )
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
            entries.append(await grade_fidelity(plan, ctx, convo.transcript))

    if verified is not None and convo.error is None:
        entries.append(verified.entry())
    result = trial_result(
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
            "file_changes": changes,
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
