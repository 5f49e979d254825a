"""The live conversation loop: one trial of one test against one target.

A trial is a pipeline (`play`): the turns, their grading and the conversation's, then the
test's steps (`_steps.py`: scenario, fidelity, verify, simulated user, budget, workspace
changes), each adding score entries and adjusting the result. `Conversation.play` asks a turn
source (`_turns.py`) for the user side of each turn and plays it with `play_turn`, the one
place where a turn is sent, its reply and tool calls are recorded, captures and
post-conditions are applied, and the reply is handed to the graders (`_grading.py`).

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
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from ..graders import GraderError
from ..results import Message, ScoreEntry, SessionKind, StopReason, ToolCall, TrialResult
from ..spec import Budget, substitute, unfilled
from ..targets import (
    AgentContext,
    ChatReply,
    ChatRequest,
    RecordedReplies,
    SessionMode,
    Target,
    TargetError,
    capabilities,
    session_mode,
)
from ._agentv import agentv_turn_scores, agentv_window
from ._controls import ControlError, apply_controls, budget_hit
from ._grading import TurnRecord, done, grade_conversation, grade_turn, trial_result, turn_context, window
from ._jobs import GradedTurn, Job, JobEvents
from ._plan import TestPlan, TurnPlan
from ._turns import SINGLE_SHOT_NOTE, ScriptedTurns, SingleShotTurns, TurnSource, is_multi_turn
from ._workspace import WorkspaceError, close_workspace, open_workspace, snapshot

if TYPE_CHECKING:
    from ..graders import DomainSession

#: The note of a turn the conversation did not grade because it ended with an error (the
#: result's `error` says which): the turn that failed and those after it.
ENDED_BY_ERROR = "not graded: the conversation ended with an error (see the test's error)"


@dataclass
class TrialContext:
    """What a trial needs besides its plan."""

    target: Target
    judge: Target | None
    judges: Mapping[str, Target] = field(default_factory=dict)  # checks' own judges, by the names they give
    trial: int = 0
    judge_repeats: int = 1
    judge_temperature: float = 0.0
    turns: TurnSource | None = None  # default: `turn_source(plan, ctx)`
    workdir: str | None = None  # the conversation's working directory, for agent targets
    files_before: dict[str, str] | None = None  # the workspace as it was made (for `file_changes`)
    domain: DomainSession | None = None  # this trial's copy of the suite's backend (default: a fresh one)
    simulator: Target | None = None  # the model playing a simulated user (default: none)
    may_continue: Callable[[], bool] | None = None  # False once the run's budget is spent
    events: JobEvents | None = None  # told of each graded turn (as `job`'s test at `position`)
    job: Job | None = None
    position: int = 0

    def report_turn(self, number: int, entry: ScoreEntry, reply: ChatReply) -> None:
        if self.events is not None and self.job is not None:
            self.events.turn(GradedTurn(self.job, self.position, self.trial, number, entry, reply))


def turn_source(plan: TestPlan, ctx: TrialContext, mode: SessionMode | None = None) -> TurnSource:
    """The user side of a trial: `ctx.turns` when given, else the test's scripted turns
    (folded into one prompt for a target that cannot resume, but in AgentV's files, where
    AgentV sends them one by one). A step may play it instead
    (a simulated user: `TrialStep.source`). `mode`: the target's session mode, when known."""
    if ctx.turns is not None:
        return ctx.turns
    source = ScriptedTurns(plan.turns)
    if (mode or session_mode(ctx.target)) == "single_shot" and is_multi_turn(source) and not plan.agentv:
        return SingleShotTurns(plan.turns)
    return source


@dataclass
class Conversation:
    """The state of one trial while it runs: what turn sources and graders may look at."""

    plan: TestPlan
    ctx: TrialContext
    transcript: list[Message]
    source: TurnSource | None = None  # the user side, before steps wrapped it
    mode: SessionMode = "history"
    replies: list[ChatReply] = field(default_factory=list)
    variables: dict[str, object] = field(default_factory=dict)
    session_id: str | None = None
    grading: list[Awaitable[ScoreEntry]] = field(default_factory=list)
    last_entry: ScoreEntry | None = None  # the last graded turn, when the loop waited for it
    turns_sent: int = 0
    error: str | None = None
    stop_note: str | None = None  # why the conversation ended before its source ran out
    budget_hit: str | None = None  # the first budget a turn reached
    stop_reason: StopReason | None = None  # why it ended: the simulated user's reason, or a budget
    gradable: bool = True  # False: a step says the conversation cannot be graded (broken simulation)
    file_changes: str | None = None  # what the trial changed in its workspace (set by its step)
    chat: list[dict[str, str]] = field(init=False)  # the transcript as sent (tool messages left out)
    agent: AgentContext | None = field(default=None, init=False)  # the same every turn without a backend
    end_session: Callable[[str], Awaitable[None]] | None = None  # the target's, read once a trial

    def __post_init__(self) -> None:
        self.chat = [m.to_chat() for m in self.transcript if sent(m)]

    @property
    def session_kind(self) -> SessionKind:
        if isinstance(self.source, SingleShotTurns):
            return "single_shot"
        return "resumed" if self.mode == "resume" else "history"

    async def play(self, source: TurnSource) -> list[ScoreEntry]:
        """Play every turn `source` hands out, then wait for their grades: one score entry per
        turn, planned turns that were not sent included (skipped)."""
        try:
            number = 0
            while (turn := await source.next_turn(self)) is not None:
                number += 1
                if not await self.play_turn(number, turn):
                    break
            entries = list(await asyncio.gather(*self.grading))
        finally:
            await self.close()
        last_sent = self.turns_sent == number and not source.unsent()
        if self.stop_note and last_sent and source is self.source and isinstance(source, ScriptedTurns):
            self.stop_note = None  # the last scripted turn failed: nothing was left to stop
        if isinstance(self.source, SingleShotTurns):
            return self._single_shot(entries, self.source.planned)
        # Turns not sent (after a stop, whatever stopped it, or after an error) are skipped:
        # not scored, left out of the test's score.
        note = self.stop_note or (ENDED_BY_ERROR if self.error else None)
        for offset in range(len(entries) + 1, max(number, len(entries)) + len(source.unsent()) + 1):
            entries.append(ScoreEntry(name=f"turn-{offset}", type="turn", verdict="skip", score=None, note=note))
        return entries

    def _single_shot(self, entries: list[ScoreEntry], planned: int) -> list[ScoreEntry]:
        """All turns went in one prompt: no turn has a score of its own; without conversation
        assertions nothing can grade the single reply."""
        if self.error is None and not self.plan.conversation_assertions:
            self.error = (
                "single_shot fallback: the target cannot resume a session and this test has only "
                "per-turn assertions; add conversation-level assertions to grade the single reply"
            )
        skipped = [
            ScoreEntry(name=f"turn-{n}", type="turn", score=None, verdict="skip", note=SINGLE_SHOT_NOTE)
            for n in range(len(entries) + 1, planned + 1)
        ]
        for entry in entries:
            entry.verdict, entry.score, entry.note = "skip", None, SINGLE_SHOT_NOTE
        return entries + skipped

    async def play_turn(self, number: int, turn: TurnPlan) -> bool:
        """Send one turn, record the reply, grade it. False ends the conversation."""
        variables = self.variables
        new = [m.numbered(substitute(m.content, variables), number) for m in turn.messages]
        for m in new:
            if "{{" in m.content:  # a placeholder left: sent only once every name it uses was captured
                if missing := [name for m in new for name in unfilled(m.content, self.plan.captured_names)]:
                    self._not_sent(number, missing)
                    return False
                break
        self.transcript.extend(new)
        self.chat.extend(m.to_chat() for m in new if sent(m))
        history = window(self.transcript, self.plan.window_size)
        reply = await self._send(number, new)
        if reply is None:
            return False
        self.turns_sent = number
        self._record(number, reply)
        try:
            controls = apply_controls(number, turn.captures, turn.post_condition, reply, self.variables)
            hit = budget_hit(self.plan.budget, number, reply, self.replies)
        except ControlError as exc:  # a regex or budget that could not be decided: this test is an error
            self.error = f"turn {number}: {exc}"
            return False
        record = TurnRecord(reply.session_id, reply.tool_calls, controls.captured, controls.stop_note)
        task = asyncio.ensure_future(
            grade_turn(
                turn_context(self, number, turn, reply, history), turn, record, controls.scores, self.ctx.report_turn
            )
        )
        if hit is not None and self.budget_hit is None:
            self.budget_hit = hit
            if self.plan.budget is None or self.plan.budget.on_budget == "stop":
                controls.stop_note = controls.stop_note or f"budget exhausted: {hit}"
                self.stop_reason = self.stop_reason or "budget_exhausted"
        if controls.stop_note:  # a capture, post-condition or budget says: send nothing more
            self.grading.append(task)
            self.stop_note = controls.stop_note
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

    def _not_sent(self, number: int, missing: list[str]) -> None:
        """A turn that still names a variable no capture set is never sent: it ends the
        conversation (an error in a single-shot prompt, which cannot capture anything)."""
        names = ", ".join("{{ " + name + " }}" for name in dict.fromkeys(missing))
        if isinstance(self.source, SingleShotTurns):
            self.error = (
                f"single_shot fallback: the turns use {names}, captured from a reply, which one prompt "
                "cannot fill; the target cannot resume a session"
            )
        else:
            self.stop_note = f"turn {number} not sent: {names} was never captured"

    async def _send(self, number: int, new: list[Message]) -> ChatReply | None:
        if self.mode == "resume" and self.session_id is not None:
            messages = [m.to_chat() for m in new if sent(m)]
        else:
            messages = [dict(m) for m in self.chat]  # each request's own: a target may change them
            if self.plan.agentv and self.plan.window_size:
                messages = agentv_window(messages, self.plan.window_size)
        request = ChatRequest(
            messages=messages,
            temperature=self.plan.temperature,
            max_tokens=self.plan.max_tokens,
            trial=self.ctx.trial,
            session_id=self.session_id,
            test_id=self.plan.id,
            agent=self.agent or self._agent(),
        )
        started = time.perf_counter()
        try:
            reply = await self.ctx.target.chat(request)
        except TargetError as exc:
            self.error = f"turn {number}: {exc}"
            if exc.spent or exc.text:  # what the failed turn spent, ran and said still counts, and shows
                self.replies.append(
                    ChatReply(text=exc.text, usage=exc.usage, cost_usd=exc.cost_usd, tool_calls=exc.tool_calls)
                )
                self.transcript.extend(_tool_message(call, number) for call in exc.tool_calls)
                if exc.text:
                    self.transcript.append(Message.trusted("assistant", exc.text, "target", number))
            return None
        except Exception as exc:  # a provider bug must not end the run
            self.error = f"turn {number}: {type(exc).__name__}: {exc}"
            return None
        if not reply.latency_ms:
            reply.latency_ms = (time.perf_counter() - started) * 1000
        return reply

    def _agent(self) -> AgentContext:
        """What an agent target needs this turn: the same for every turn of a trial without a
        backend (kept), made anew with one (its tools' specs are the backend's)."""
        domain = self.ctx.domain
        budget = self.plan.budget
        agent = AgentContext(
            workdir=self.ctx.workdir,
            max_tool_calls=_turn_tool_calls(budget, self.replies),
            max_seconds=_turn_seconds(budget, self.replies),
            domain_tools=domain.domain.specs() if domain else None,
            call_domain_tool=domain.call if domain else None,
            eval_dir=str(self.plan.base_dir) if self.plan.agentv else None,
            input_files=tuple(self.plan.test.attachments) if self.plan.agentv else (),
            agentv_turns=self.plan.agentv and self.plan.mode == "conversation",
        )
        counted = budget and budget.conversation and (budget.conversation.tool_calls or budget.conversation.seconds)
        if domain is None and not counted:
            self.agent = agent  # the same every turn: no backend, no tool calls or seconds left to count down
        return agent

    def _record(self, number: int, reply: ChatReply) -> None:
        """The reply and its tool calls (one `source: tool` message each) join the transcript."""
        self.replies.append(reply)
        if reply.session_id:
            self.session_id = reply.session_id
        if reply.tool_calls:
            self.transcript.extend(_tool_message(call, number) for call in reply.tool_calls)
        text = reply.text
        if type(text) is str:  # what validation would check: the rest is ours
            answer = Message.trusted("assistant", text, "target", number)
        else:  # a target's bug: refused as before
            answer = Message(role="assistant", content=text, source="target", turn=number)
        self.transcript.append(answer)
        self.chat.append(answer.to_chat())

    async def close(self) -> None:
        """End the target's session for this conversation, when it has one to end."""
        end = self.end_session
        if self.session_id is not None and end is not None:
            try:
                await end(self.session_id)
            except Exception:  # cleanup must not turn a finished trial into an error
                pass


async def run_trial(plan: TestPlan, ctx: TrialContext) -> TrialResult:
    """Run one trial; with a `workspace:`, in a folder of its own that lives across all turns;
    with the suite's `tools:`, on a copy of its backend of its own (after the test's
    `initial_actions`; `ctx.domain` when given); with a `transcript:`, replaying its replies
    (no target is called); a recorded run that failed is an execution error with its error."""
    if plan.failed_run is not None:
        return TrialResult.not_run(ctx.trial, f"the recorded run failed: {plan.failed_run}")
    if plan.recorded is not None:
        ctx = replace(ctx, target=RecordedReplies(plan.recorded, ctx.target.name))
    try:
        domain = plan.domain()
        if domain is not None and ctx.domain is None:  # from the test's initial actions
            ctx = replace(ctx, domain=domain.session(plan.test.initial_actions))
    except GraderError as exc:
        return TrialResult.not_run(ctx.trial, str(exc))
    if plan.workspace is None:
        return await play(plan, ctx)
    try:
        root = await open_workspace(plan.workspace, plan.base_dir, plan.id)
    except (WorkspaceError, OSError) as exc:
        return TrialResult.not_run(ctx.trial, f"workspace: {exc}")
    result: TrialResult | None = None
    try:
        result = await play(plan, replace(ctx, workdir=str(root), files_before=snapshot(root)))
    finally:
        kept = await close_workspace(plan.workspace, root, passed=result is not None and result.verdict == "pass")
    if kept:
        result.workspace = kept
        result.notes.append(f"workspace kept at {kept}")
    return result


async def play(plan: TestPlan, ctx: TrialContext) -> TrialResult:
    """One trial as a pipeline: the turns -> their grading and the conversation's -> the
    test's steps (`_steps.py`), which add score entries and adjust the result."""
    started = time.perf_counter()
    steps = [make(plan, ctx) for make in plan.steps]
    features = capabilities(ctx.target)  # read once: a wrapped target answers through each wrapper
    base = next((s for step in steps if (s := step.source()) is not None), None) or turn_source(
        plan, ctx, features.session
    )
    source = base
    for step in steps:
        source = step.turns(source)
    convo = Conversation(
        plan=plan,
        ctx=ctx,
        transcript=list(plan.initial),
        source=base,
        mode=features.session,
        end_session=features.end_session,
    )
    if plan.recorded is not None:  # a recorded conversation ended as its recording says
        convo.stop_reason, convo.budget_hit = plan.test.stop_reason, plan.test.budget_hit
    entries = await convo.play(source)
    if plan.recorded is not None:
        convo.error = convo.error or plan.test.error
    if plan.agentv and plan.mode == "conversation":
        agentv_turn_scores(entries)
    for step in steps:
        step.after_turns(convo)
    if convo.gradable and convo.error is None and plan.conversation_assertions:
        entries.append(await grade_conversation(convo))
    for step in steps:
        entries += await step.entries(convo)
    result = trial_result(convo, entries, (time.perf_counter() - started) * 1000)
    for step in steps:
        step.adjust(result, convo)
    return result


def sent(message: Message) -> bool:
    """Whether the target sees `message`: not a tool call's record, nor a simulated user's own
    tool calls (its turn on its tools, as tau2-bench's telecom user acts on its phone)."""
    return message.source != "tool" and not (message.role == "user" and message.tool_calls)


def _turn_tool_calls(budget: Budget | None, replies: list[ChatReply]) -> int | None:
    """The tool calls the next turn may make under the test's budget: the turn's limit, and
    what the conversation's leaves of its own (a tool agent stops there)."""
    if budget is None:
        return None
    most = [budget.turn.tool_calls] if budget.turn is not None and budget.turn.tool_calls else []
    if budget.conversation is not None and budget.conversation.tool_calls:
        most.append(max(0, budget.conversation.tool_calls - sum(len(r.tool_calls) for r in replies)))
    return min(most, default=None)


def _turn_seconds(budget: Budget | None, replies: list[ChatReply]) -> float | None:
    """The seconds the next turn may take under the test's budget: the turn's limit, and what
    the conversation's leaves of its own (an agent CLI is stopped there; not with `on_budget:
    continue`, whose later turns would then have no time at all)."""
    if budget is None or budget.on_budget == "continue":
        return None
    most = [budget.turn.seconds] if budget.turn is not None and budget.turn.seconds else []
    if budget.conversation is not None and budget.conversation.seconds:
        most.append(max(0.0, budget.conversation.seconds - sum(r.latency_ms for r in replies) / 1000))
    return min(most, default=None)


def _tool_message(call: ToolCall, turn: int) -> Message:
    output = call.output
    if output is None:
        text = call.error or ""
    elif isinstance(output, str):
        text = output
    else:
        text = json.dumps(output, ensure_ascii=False, default=str)
    return Message(role="tool", content=text, source="tool", turn=turn, tool_calls=[call])
