"""How tau-bench and tau2-bench end an episode: only an episode that ended their way gets a reward.

tau-bench (sierra-research/tau-bench 59a200c; tau_bench/envs/base.py `Env.step`,
tau_bench/agents/tool_calling_agent.py `solve`): an episode is done when the simulated user's
reply contains ###STOP### or the agent calls a terminate tool (`transfer_to_human_agents` in
airline and retail); the reward is computed only then, from the state at that moment. The
agent's loop runs at most `max_num_steps` = 30 actions (each tool call is one, each reply to
the user one); an episode still running then keeps reward 0.

tau2-bench (sierra-research/tau2-bench a2c0247; src/tau2/orchestrator/orchestrator.py,
src/tau2/evaluator/evaluator.py `evaluate_simulation`): only episodes that ended by
`user_stop` or `agent_stop` are evaluated, every other termination (max_steps,
too_many_errors, timeout, an error) gets reward 0. The user stops by saying ###STOP###,
###TRANSFER### or ###OUT-OF-SCOPE### (src/tau2/user/user_simulator.py `is_stop`); the
conversational LLM agent never stops on its own (only the solo agent does). The orchestrator
counts one step per message (user message, agent message, batch of tool results) and ends the
episode with `max_steps` as soon as the count reaches the limit (200 by the CLI's default;
checked after the user's stop message too, so a stop at the limit is max_steps), and with
`too_many_errors` once `max_errors` (10) tool calls failed.

A user who calls tools (tau2's telecom) makes two steps a message of calls (the message and
its results), and its failed calls count as errors, as the agent's do.

convoeval's simulated user stops with a structured `stop` (stop reason `objective_met` or
`objective_impossible`) instead of a token: that is the user's stop. A conversation that ended
otherwise (max_turns, a budget, the agent's failure) without a terminate tool did not end.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import ConfigDict, Field

from .._base_model import Model
from ..results import Message, ToolCall
from ._base import GradeContext
from ._tau_backend import Side

#: Stop reasons of a simulated user that are the user's own stop (its stop token).
USER_STOPS = {"objective_met", "objective_impossible"}

#: Why a conversation that was not stopped by its user ended, by the trial's stop reason.
NOT_STOPPED = {
    "max_turns": "the simulated user never stopped: the conversation ran out of max_turns",
    "budget_exhausted": "a budget ended the conversation before the user stopped",
    "target_error": "the agent failed before the user stopped",
    "simulator_error": "the simulated user failed",
}


@dataclass(frozen=True)
class Ending:
    """Whether (and why not) an episode ended as the benchmark ends one, and what belongs to it:
    the first `calls` tool calls and the first `messages` messages of the transcript."""

    ended: bool
    why: str
    calls: int
    messages: int


class EpisodeEnd(Model):
    """How the benchmark tells that an episode ended: the user said a `stop_token` (a simulated
    user's structured stop counts as one), or the agent called one of `terminate_tools`, within
    the step limit (`max_steps`, counted as `count_steps` says) and before `max_errors` tool
    calls failed. The benchmark computes a reward only then; any other episode keeps 0."""

    model_config = ConfigDict(extra="forbid")

    stop_token: str | list[str] = Field(
        "###STOP###", description="What the user says to end the episode (one token or a list of them)."
    )
    terminate_tools: list[str] = Field(default_factory=list, description="Tools whose call ends the episode.")
    max_steps: int | None = Field(
        None, ge=1, description="The step limit: an episode not ended within it gets 0 (none: no limit)."
    )
    count_steps: Literal["actions", "messages"] = Field(
        "actions",
        description="`actions` (tau-bench): each tool call and each agent reply is a step, an end within "
        "`max_steps` counts; `messages` (tau2-bench): each user and agent message is a step, each tool call "
        "two (the agent's call and its result; calls made at once count apart), and the episode must end "
        "below `max_steps`.",
    )
    max_errors: int | None = Field(
        None, ge=1, description="The episode ends without a reward once this many tool calls failed (tau2-bench)."
    )

    @property
    def tokens(self) -> list[str]:
        return [self.stop_token] if isinstance(self.stop_token, str) else list(self.stop_token)

    def describe(self) -> str:
        said = " or ".join(self.tokens)
        tools = " or ".join(self.terminate_tools)
        limit = f" within {self.max_steps} steps" if self.max_steps is not None else ""
        return f"the episode ended (the user said {said}" + (f", or {tools} was called" if tools else "") + f"){limit}"

    def end(self, ctx: GradeContext) -> Ending:
        """Walk the transcript to the episode's end (the first stop token or terminate call;
        else the simulated user's stop), counting steps and failed calls on the way."""
        transcript = ctx.transcript
        tool_messages = any(m.source == "tool" for m in transcript)
        steps = errors = calls = 0
        for index, message in enumerate(transcript):
            if message.role == "user" and message.source != "tool":
                steps += self.count_steps == "messages"
                if message.tool_calls:  # the user's own tool calls (tau2's telecom): their results are a step
                    calls += len(message.tool_calls)
                    steps += self.count_steps == "messages"
                    errors += sum(call.error is not None for call in message.tool_calls)
                said = next((t for t in self.tokens if t in message.content), None)
                if said is not None:
                    return self._within(f"the user said {said}", steps, errors, calls, index)
                continue
            if message.source == "tool" or (message.source == "target" and not tool_messages):
                for call in message.tool_calls:
                    calls += 1
                    steps += 1 if self.count_steps == "actions" else 2
                    errors += call.error is not None
                    if call.name in self.terminate_tools:
                        return self._within(f"the agent called {call.name}", steps, errors, calls, index)
            if message.role == "assistant":
                steps += 1
        if ctx.stop_reason in USER_STOPS:
            stop = f"the simulated user stopped ({ctx.stop_reason})"
            if self.count_steps == "messages" and not _ends_with_user(transcript):
                steps += 1  # its stop is a message of its own
            return self._within(stop, steps, errors, calls, len(transcript) - 1)
        why = NOT_STOPPED.get(ctx.stop_reason or "", "the conversation ended without the user's stop")
        if self.terminate_tools:
            why += f" and {' or '.join(self.terminate_tools)} was never called"
        return Ending(False, why, calls, len(transcript))

    def _within(self, how: str, steps: int, errors: int, calls: int, index: int) -> Ending:
        """The end `how`, if it came within the step and error limits."""
        over = self._over(steps, errors)
        if over is not None:
            return Ending(False, f"{how}, but {over}", calls, index + 1)
        limit = f" after {steps} of at most {self.max_steps} steps" if self.max_steps is not None else ""
        return Ending(True, how + limit, calls, index + 1)

    def _over(self, steps: int, errors: int) -> str | None:
        """Which limit the episode had reached when it ended, if any."""
        if self.max_errors is not None and errors >= self.max_errors:
            return f"{errors} tool calls had failed (the episode ends at {self.max_errors})"
        if self.max_steps is None:
            return None
        if self.count_steps == "actions" and steps > self.max_steps:
            return f"only after {steps} agent actions (the step limit is {self.max_steps})"
        if self.count_steps == "messages" and steps >= self.max_steps:
            return f"only at step {steps} (the episode ends when the count reaches {self.max_steps})"
        return None


def _ends_with_user(transcript: list[Message]) -> bool:
    return bool(transcript) and transcript[-1].role == "user"


def episode_calls(transcript: list[Message]) -> list[tuple[Side, ToolCall]]:
    """The trial's tool calls in order, each with who made it: the agent's (those its `tool`
    messages record, else those on the agent's messages: a transcript recorded without tool
    messages) and the user's (those on its own messages, as tau2-bench's telecom user makes)."""
    agent_messages = "tool" if any(m.source == "tool" for m in transcript) else "target"
    calls: list[tuple[Side, ToolCall]] = []
    for message in transcript:
        if message.source == agent_messages:
            calls += [("assistant", call) for call in message.tool_calls]
        elif message.role == "user" and message.source != "tool":
            calls += [("user", call) for call in message.tool_calls]
    return calls
