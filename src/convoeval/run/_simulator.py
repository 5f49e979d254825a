"""Simulated users: an LLM plays the user from a persona and an objective until it stops.

`UserSimulator.step` is one structured call (`{message, stop, stop_reason}`) through the
same engine as every model call (cache, retries, limits, metering under purpose
`simulator`). A step that fails, or breaks the role, raises `SimulatorError`: the trial then
ends with `execution_status: simulator_error`, never as a failed test. Role breaks caught
without a model:

- an empty message that does not stop the conversation;
- lines written for the agent (`Assistant: ...`, `Agent: ...`) or the agent's last reply
  repeated back;
- a `knowledge` value given before the agent asked for it: with `knowledge` as a mapping, a
  value may appear in a user message only once an agent message has named its key
  (`order_number` is asked for by a message saying "order" or "number"). Facts given as a
  string or a list are left to the `simulator-fidelity` judge.

`SimulatedTurns` is the turn source of a test with `simulated_user:`: the scripted `turns`
first, then one simulator step per turn until the simulator stops, `max_turns` simulated
turns were sent, the target fails, or the run's budget is spent. It records why it stopped.

A user with tools of its own (the suite's domain lists them in `USER_TOOLS`: tau2-bench's
telecom user acts on its phone) may answer a step with calls of them instead of a message:
they run on the trial's domain session, the one the agent's tools act on, and the simulator is
asked again, seeing their results, until it writes a message or stops (at most
`MAX_TOOL_ROUNDS` rounds a turn), as tau2-bench's user simulator does. Each round is a user
message of its own with the calls and their results (`tool_calls`, empty text): kept in the
transcript (tau-reward replays it, tau2's step count counts it) but never sent to the agent.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from pydantic import JsonValue

from .._text import shorten
from ..graders import Assertion
from ..judging import JudgeError, JudgeSession, Persona, UserStep, user_step_messages, user_step_schema
from ..registry import lookup, names, register
from ..results import Message, StopReason, ToolCall, TrialResult, Usage
from ..spec import SimulatedUser
from ..targets import Target
from ._plan import TurnPlan

if TYPE_CHECKING:
    from ..graders import DomainSession
    from ._conversation import Conversation

#: A line that speaks for someone other than the user.
_FOREIGN_SPEAKER = re.compile(r"^\s*(?:assistant|agent|ai|bot|support(?: agent)?|system)\s*:", re.I | re.M)
_KEY_WORDS = re.compile(r"[A-Za-z0-9]+")
_IGNORED_KEY_WORDS = {"the", "my", "your", "of", "a", "an", "and", "or", "to", "is"}


class SimulatorError(Exception):
    """The simulated user failed or broke its role (the reason is shown in the result)."""


#: Rounds of tool calls a simulated user may make before it writes a message (more: it broke its role).
MAX_TOOL_ROUNDS = 10


@runtime_checkable
class Simulator(Protocol):
    """What plays the user: built with `(config, model, trial)` and registered under kind
    `simulator` (`simulated_user.type` names it; `llm` is `UserSimulator`). One with a `tools`
    attribute gets the user's own tools (OpenAI `tools` entries) there before its first step;
    its steps may then call them (`UserStep.tool_calls`)."""

    usage: Usage
    cost_usd: float

    async def step(self, transcript: list[Message]) -> UserStep:
        """The user's next message (or a stop) after `transcript`; raises SimulatorError."""
        ...


@runtime_checkable
class ToolUser(Protocol):
    """A simulator that can call the user's own tools (given as OpenAI `tools` entries)."""

    tools: list[dict[str, JsonValue]]


@dataclass
class UserSimulator:
    """The simulated user of one trial.

    Args:
        config: the test's `simulated_user:`.
        model: the model playing the user (default chosen by the run: the judge).
        trial: the trial index (part of the cache key, so trials differ; added to `seed`).
    """

    config: SimulatedUser
    model: Target
    trial: int = 0
    tools: list[dict[str, JsonValue]] = field(default_factory=list)  # the user's own tools
    session: JudgeSession = field(init=False)

    def __post_init__(self) -> None:
        self.session = JudgeSession(
            self.model,
            trial=self.trial,
            temperature=self.config.temperature,  # type: ignore[arg-type]
            purpose="simulator",
            seed=None if self.config.seed is None else self.config.seed + self.trial,  # trials independent
        )
        self.persona = Persona(
            persona=self.config.persona,
            objective=self.config.objective,
            knowledge=self.config.knowledge,
            stop=self.config.stop_conditions,
        )
        # the facts it keeps until asked: not those its persona or objective already states
        told = f"{self.config.persona}\n{self.config.objective}".lower()
        knowledge = self.config.knowledge
        self.hidden = (
            {k: v for k, v in knowledge.items() if not _mentions(told, str(v).strip().lower())}
            if isinstance(knowledge, dict)
            else knowledge
        )

    @property
    def usage(self) -> Usage:
        return self.session.usage

    @property
    def cost_usd(self) -> float:
        return self.session.cost_usd

    async def step(self, transcript: list[Message]) -> UserStep:
        """The user's next message (or a stop) after `transcript`.

        Raises:
            SimulatorError: the call failed, the answer did not parse after a re-ask, or the
                message breaks the role.
        """
        said = [m for m in transcript if m.role == "assistant" or (m.role == "user" and not m.tool_calls)]
        opening = not said
        messages = user_step_messages(self.persona, transcript, opening=opening, tools=self.tools)
        try:
            answer: UserStep = await self.session.ask(
                messages, user_step_schema(self.tools), UserStep, name="user_step"
            )
        except JudgeError as exc:
            raise SimulatorError(str(exc).replace("judge", "simulator")) from None
        if answer.tool_calls:  # its own tools: it speaks once it has seen what they did
            return answer
        if opening and answer.stop:
            raise SimulatorError("role break: stopped before saying anything")
        problem = role_break(answer.message, transcript, self.hidden, stopping=answer.stop)
        if problem:
            raise SimulatorError(f"role break: {problem}")
        return answer


register("simulator", "llm", UserSimulator)


def role_break(message: str, transcript: list[Message], knowledge: object, *, stopping: bool = False) -> str | None:
    """Why `message` is not something the simulated user may say next, or None."""
    text = message.strip()
    if not text:
        return None if stopping else "empty turn"
    if _FOREIGN_SPEAKER.search(text):
        return f"answered for the agent: {_quote(text)}"
    agent = [m.content for m in transcript if m.role == "assistant"]
    if agent and _normal(text) == _normal(agent[-1]) and len(text) > 20:
        return "repeated the agent's reply"
    if isinstance(knowledge, dict):
        asked = " ".join(agent).lower()
        said = " ".join(m.content for m in transcript if m.role == "user").lower()
        for key, value in knowledge.items():
            shown = str(value).strip().lower()
            if not shown or not _mentions(text.lower(), shown) or _mentions(said, shown):
                continue
            words = [w for w in _KEY_WORDS.findall(str(key).lower()) if w not in _IGNORED_KEY_WORDS]
            if not any(re.search(rf"\b{re.escape(w)}", asked) for w in words):
                return f"revealed {key!r} before the agent asked for it"
    return None


def _mentions(text: str, fact: str) -> bool:
    """`fact` appears in `text` as a whole token: a short fact such as `42` or `B7` counts in
    "seat 42" and not in "1420"."""
    return re.search(rf"(?<!\w){re.escape(fact)}(?!\w)", text) is not None


def _normal(text: str) -> str:
    return " ".join(text.lower().split())


def _quote(text: str, limit: int = 80) -> str:
    return repr(shorten(text, limit))


class SimulatedTurns:
    """A turn source: the scripted opening turns, then the simulated user.

    Args:
        scripted: the test's scripted turns (sent first, as they are).
        config: the test's `simulated_user:`.
        model: the model playing the user (None: every simulator step fails, saying why).
        assertions: what grades each simulated turn (the test's and suite's `turn_assertions`).
        trial: the trial index.
        may_continue: asked before each simulator step; False stops with `budget_exhausted`.
        domain: the trial's domain session: the user's own tools (`USER_TOOLS`) run on it.
    """

    def __init__(
        self,
        scripted: list[TurnPlan],
        config: SimulatedUser,
        model: Target | None,
        assertions: list[Assertion],
        *,
        trial: int = 0,
        may_continue: Callable[[], bool] | None = None,
        domain: DomainSession | None = None,
    ):
        self.scripted = list(scripted)
        self.domain = domain
        self.calls: list[Message] = []  # the user's tool calls not yet in the transcript
        self.config = config
        self.model = model
        self.trial = trial
        self.simulator: Simulator | None = None  # made at its first step, once the scripted turns captured
        self.error: str | None = None
        self.factory = lookup("simulator", config.type)
        if self.factory is None:
            self.error = f"simulator: unknown simulator {config.type!r} (known: {', '.join(names('simulator'))})"
        self.assertions = list(assertions)
        self.may_continue = may_continue
        self.sent_scripted = 0
        self.simulated = 0
        self.stop_reason: StopReason | None = None
        self.goodbye: str | None = None  # a last user message said while stopping (not sent)
        self.target_failed = False

    async def next_turn(self, convo: Conversation) -> TurnPlan | None:
        if self.sent_scripted < len(self.scripted):
            self.sent_scripted += 1
            return self.scripted[self.sent_scripted - 1]
        if self.simulated >= self.config.max_turns:
            return self._stop("max_turns")
        if self.may_continue is not None and not self.may_continue():
            return self._stop("budget_exhausted")
        if self.simulated == 0 and self.config.opening:
            return self._turn(self.config.opening)
        if self.simulator is None:
            if self.factory is None or self.model is None:
                self.error = self.error or (
                    "simulator: no model for the simulated user (set simulated_user.model or pass --judge)"
                )
                return self._stop("simulator_error")
            self.simulator = self.factory(self.config.filled(convo.variables), self.model, self.trial)
            if self.domain is not None and self.domain.domain.user_functions and isinstance(self.simulator, ToolUser):
                self.simulator.tools = self.domain.domain.specs("user")
        try:
            step = await self._step(convo)
        except SimulatorError as exc:
            self.error = f"simulator: {exc}"
            return self._stop("simulator_error")
        if step.stop:
            self.goodbye = step.message.strip() or None
            return self._stop("objective_met" if step.stop_reason == "objective_met" else "objective_impossible")
        return self._turn(step.message.strip())

    async def _step(self, convo: Conversation) -> UserStep:
        """The simulator's next message or stop, after the rounds of calls it makes on its own
        tools first (kept in `self.calls` until they join the transcript)."""
        assert self.simulator is not None
        for rounds in range(MAX_TOOL_ROUNDS + 1):
            step = await self.simulator.step([*convo.transcript, *self.calls])
            if not step.tool_calls:
                return step
            if rounds == MAX_TOOL_ROUNDS:
                break  # its calls are not run
            if self.domain is None or not self.domain.domain.user_functions:
                raise SimulatorError("role break: called tools, but the suite's domain gives the user none")
            made = [
                await self.domain.call(ToolCall(name=c.name, arguments=c.arguments), side="user")
                for c in step.tool_calls
            ]
            self.calls.append(Message(role="user", content="", source="simulator", tool_calls=made))
        raise SimulatorError(f"role break: {MAX_TOOL_ROUNDS} rounds of tool calls without a message")

    def unsent(self) -> list[TurnPlan]:
        return self.scripted[self.sent_scripted :]

    def finish(self, convo: Conversation) -> None:
        """After the last turn: a target failure is the stop reason; a goodbye said while
        stopping joins the transcript (it was not sent)."""
        self.target_failed = convo.error is not None
        if self.stop_reason is None and self.target_failed:
            self.stop_reason = "target_error"
        convo.transcript += self.calls  # calls made before a stop (or a failure) happened too
        self.calls = []
        if self.goodbye:
            convo.transcript.append(Message(role="user", content=self.goodbye, source="simulator"))

    def record(self, result: TrialResult, stop_reason: StopReason | None, stopped: str | None = None) -> None:
        """Put into the trial's result the stop reason (the conversation's: the simulator's, or
        the test's `budget:` that ended it; else `stopped`, the note of what else ended it: a
        verify, a capture, `on_turn_failure`), the simulator's usage and cost, and the
        simulator's failures as `simulator_error` (never as a failed test)."""
        result.stop_reason = stop_reason
        why = f"stopped: {stop_reason}" if stop_reason else stopped or "stopped"
        result.notes.append(f"simulated user: {self.simulated} turn(s), {why}")
        if self.simulator is not None:
            result.simulator_token_usage = self.simulator.usage
            result.simulator_cost_usd = round(self.simulator.cost_usd, 8)
        fidelity = [g for e in result.scores if e.type == "simulator" for g in e.graders]
        unfaithful = [g for g in fidelity if g.verdict == "fail"]
        if self.error is None and unfaithful:
            evidence = "; ".join(a.evidence for g in unfaithful for a in g.assertions if a.evidence)
            self.error = f"simulator-fidelity: the simulated user broke its role ({evidence or 'no reason given'})"
        undecided = next((g for g in fidelity if g.verdict == "error"), None)
        if self.error is not None and not self.target_failed:
            result.score, result.verdict, result.execution_status = None, "error", "simulator_error"
            result.error = self.error
        elif self.stop_reason == "budget_exhausted":
            result.verdict, result.execution_status = "skip", "budget_exhausted"
            result.error = "the run's --max-cost budget was reached during the conversation"
        elif undecided is not None and result.execution_status in ("ok", "quality_failure"):
            # had it found a role break, the trial would be a simulator_error: neither pass nor fail holds
            result.score, result.verdict, result.execution_status = None, "error", "undecided"
            result.error = (
                f"simulator-fidelity could not decide whether the simulated user kept its role: {undecided.error}"
            )

    def _turn(self, text: str) -> TurnPlan:
        """The user's message, after its own tool calls (which the agent is not sent)."""
        self.simulated += 1
        calls, self.calls = self.calls, []
        return TurnPlan(
            messages=[*calls, Message(role="user", content=text, source="simulator")], assertions=list(self.assertions)
        )

    def _stop(self, reason: StopReason) -> TurnPlan | None:
        """End the conversation (the first reason given is kept); always None."""
        if self.stop_reason is None:
            self.stop_reason = reason
        return None
