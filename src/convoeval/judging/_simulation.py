"""Prompts and answer schemas of simulated users and of scenario judging.

Three structured calls:

- a user step: the simulated user writes its next message and says whether to stop,
  `{"message", "stop", "stop_reason"}`;
- scenario criteria: every `success:` and `failure:` criterion judged on the whole transcript
  in one call, one `{"reasoning", "satisfied"}` verdict per criterion id;
- simulator fidelity: did the simulated user stay in role (`{"reasoning", "in_role"}`).

The user prompt follows the shape of tau-bench's user simulator and DeepEval's conversation
simulator: the model is told who it is and what it wants, sees the conversation with the
roles named from its point of view, writes one short message at a time, reveals facts only
when asked, and never plays, evaluates or helps the agent.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from pydantic import ConfigDict, Field, JsonValue, StrictBool, StrictStr, field_validator, model_validator

from .._base_model import Model
from ..results import Message, ToolCall
from ._format import clip, format_data, format_transcript
from ._schemas import CriterionAnswer, KeyedAnswer, keyed_model, keyed_schema, verdict_schema

StepReason = Literal["none", "objective_met", "objective_impossible"]

USER_SYSTEM = (
    "You play a USER who talks to an AI agent (an assistant or a support bot). You are not the "
    "agent and you are not an evaluator: you never answer as the agent, never judge, grade or "
    "coach it, and never write its lines. Write only what this user would type next, in the "
    "first person, short and natural (one or two sentences). Reply with one JSON object only."
)


@dataclass
class Persona:
    """Who the simulated user is and what it wants (the `simulated_user:` of a test)."""

    persona: str
    objective: str
    knowledge: object = None
    stop: list[str] = field(default_factory=list)

    def sections(self) -> list[str]:
        parts = [f"Who you are: {self.persona.strip()}", f"What you want: {self.objective.strip()}"]
        known = _facts(self.knowledge)
        if known:
            parts.append(
                "Facts you know. Give one ONLY when the agent asks for it (or clearly needs it for "
                f"its last question); never volunteer the others:\n{known}"
            )
        return parts


def _facts(knowledge: object) -> str | None:
    """Knowledge as lines: `- key: value` for a mapping, `- item` for a list, a string as is."""
    if knowledge in (None, "", [], {}):
        return None
    if isinstance(knowledge, dict):
        return "\n".join(f"- {key}: {_plain(value)}" for key, value in knowledge.items())
    if isinstance(knowledge, list):
        return "\n".join(f"- {_plain(item)}" for item in knowledge)
    return clip(str(knowledge))


def _plain(value: object) -> str:
    return value if isinstance(value, str) else (format_data(value) or "")


def user_step_schema(tools: Sequence[Mapping[str, object]] = ()) -> dict[str, JsonValue]:
    """`{"message": string, "stop": boolean, "stop_reason": none|objective_met|objective_impossible}`,
    and with `tools` (OpenAI `tools` entries: the user's own) `"tool_calls": [{"name", "arguments"}]`."""
    properties: dict[str, JsonValue] = {
        "message": {"type": "string"},
        "stop": {"type": "boolean"},
        "stop_reason": {"type": "string", "enum": ["none", "objective_met", "objective_impossible"]},
    }
    required: list[JsonValue] = ["message", "stop", "stop_reason"]
    if tools:
        call: dict[str, JsonValue] = {
            "type": "object",
            "properties": {
                "name": {"type": "string", "enum": [tool_name(t) for t in tools]},
                "arguments": {"type": "string", "description": "The arguments: a JSON object, as text."},
            },
            "required": ["name", "arguments"],
            "additionalProperties": False,
        }
        properties["tool_calls"] = {"type": "array", "items": call}
        required.append("tool_calls")
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


def tool_name(spec: Mapping[str, object]) -> str:
    """The function name of an OpenAI `tools` entry."""
    function = spec.get("function")
    return str(function.get("name", "")) if isinstance(function, dict) else ""


def _tool_lines(tools: Sequence[Mapping[str, object]]) -> str:
    lines = []
    for spec in tools:
        function = spec.get("function")
        function = function if isinstance(function, dict) else {}
        parameters = function.get("parameters")
        properties = parameters.get("properties") if isinstance(parameters, dict) else None
        names = ", ".join(properties) if isinstance(properties, dict) else ""
        lines.append(f"- {tool_name(spec)}({names}): {function.get('description', '')}")
    return "\n".join(lines)


class UserToolCall(Model):
    """A call the simulated user makes on one of its own tools (`arguments`: a JSON object,
    written as text in the answer: a strict schema allows no free-form object)."""

    model_config = ConfigDict(extra="forbid")

    name: StrictStr
    arguments: dict[str, JsonValue]

    @field_validator("arguments", mode="before")
    @classmethod
    def _decoded(cls, value: object) -> object:
        if not isinstance(value, str):
            return value
        try:
            return json.loads(value) if value.strip() else {}
        except ValueError:
            raise ValueError("arguments: expected a JSON object written as text") from None


class UserStep(Model):
    """A simulated user's answer: its next message, or a stop with the reason, or calls of its
    own tools (then the message and the stop are not used: it answers again once it has seen
    their results, as tau2-bench's user does)."""

    model_config = ConfigDict(extra="forbid")

    message: StrictStr
    stop: StrictBool
    stop_reason: StepReason
    tool_calls: list[UserToolCall] = Field(default_factory=list)

    @model_validator(mode="after")
    def _reason_with_stop(self) -> UserStep:
        if self.tool_calls:
            self.stop, self.stop_reason = False, "none"
            return self
        if self.stop and self.stop_reason == "none":
            raise ValueError("stop is true: stop_reason must be objective_met or objective_impossible")
        if not self.stop:
            self.stop_reason = "none"
        return self


def user_step_messages(
    persona: Persona,
    transcript: Sequence[Message],
    *,
    opening: bool,
    tools: Sequence[Mapping[str, object]] = (),
) -> list[dict[str, str]]:
    """The prompt of one user step: persona, objective, knowledge, stop rules, the user's own
    tools (when it has some), the conversation (with its tool calls and their results)."""
    stop_rules = [
        "objective_met: the agent has done what you want (or clearly confirmed it will be done)",
        "objective_impossible: the agent has clearly and finally said it cannot be done",
        *persona.stop,
    ]
    sections = [
        *persona.sections(),
        "Stop (stop: true) only when one of these holds, and say which in stop_reason:\n"
        + "\n".join(f"- {rule}" for rule in stop_rules),
    ]
    if tools:
        sections.append(
            "You have tools of your own (on your own device or account; the agent cannot use them):\n"
            + _tool_lines(tools)
            + '\nTo use them, list the calls in `tool_calls` (`arguments`: a JSON object as text, "{}" for '
            "none) and leave `message` empty: you will see their results and answer again. The agent does not "
            "see your calls; tell it what you did or saw. With no call to make, `tool_calls` is []."
        )
    if opening:
        if any(m.tool_calls for m in transcript if m.role == "user"):  # it used its tools before speaking
            sections.append("What you did on your tools so far:\n" + _as_user_view(transcript))
        sections.append(
            "The conversation has not started. Write your first message to the agent "
            '(stop: false, stop_reason: "none").'
        )
    else:
        sections.append("The conversation so far (you are `user`, the agent is `agent`):\n" + _as_user_view(transcript))
        sections.append("Write your next message as the user. If you stop, `message` may be a short goodbye or empty.")
    calls = ', "tool_calls": [{"name": "...", "arguments": "{...}"}]' if tools else ""
    sections.append(
        'Answer with JSON: {"message": "...", "stop": true|false, '
        f'"stop_reason": "none"|"objective_met"|"objective_impossible"{calls}}}'
    )
    return [{"role": "system", "content": USER_SYSTEM}, {"role": "user", "content": "\n\n".join(sections)}]


def _as_user_view(transcript: Sequence[Message]) -> str:
    shown = []
    for message in transcript:  # the user sees what was said and its own tools, not the agent's tools
        if message.role == "user" and message.tool_calls:  # its own calls, with their results
            shown += [f"user (your tool call): {_call_line(call)}" for call in message.tool_calls]
        elif message.source == "hint":  # the test's words to the agent, not the user's
            shown.append(f"hint (the test's, to the agent; not yours): {clip(message.content)}")
        elif message.role in ("user", "assistant"):
            shown.append(f"{'user' if message.role == 'user' else 'agent'}: {clip(message.content)}")
    return "\n".join(shown) or "(nothing yet)"


def _call_line(call: ToolCall) -> str:
    arguments = ", ".join(f"{k}={json.dumps(v, default=str)}" for k, v in call.arguments.items())
    result = f"error: {call.error}" if call.error is not None else format_data(call.output) or "(no output)"
    return f"{call.name}({arguments}) -> {clip(result)}"


# -- scenario criteria ------------------------------------------------------------------

ScenarioOutcome = Literal["passed", "failed", "undecided", "conflict"]


def criterion_ids(success: Sequence[str], failure: Sequence[str]) -> list[tuple[str, str, str]]:
    """`(id, kind, text)` of each criterion: `success_1`..., `failure_1`..."""
    return [(f"success_{i}", "success", t) for i, t in enumerate(success, 1)] + [
        (f"failure_{i}", "failure", t) for i, t in enumerate(failure, 1)
    ]


def scenario_schema(success: Sequence[str], failure: Sequence[str]) -> dict[str, JsonValue]:
    """One `{"reasoning", "satisfied"}` verdict per criterion id."""
    return keyed_schema({cid: verdict_schema() for cid, _, _ in criterion_ids(success, failure)})


def scenario_parser(success: Sequence[str], failure: Sequence[str]) -> type[KeyedAnswer[CriterionAnswer]]:
    return keyed_model("ScenarioAnswer", {cid: CriterionAnswer for cid, _, _ in criterion_ids(success, failure)})


def scenario_messages(
    success: Sequence[str], failure: Sequence[str], transcript: Sequence[Message], objective: str | None = None
) -> list[dict[str, str]]:
    """Judge every criterion on the whole transcript: satisfied only when the conversation shows it."""
    listed = "\n".join(f"- {cid} ({kind}): {text.strip()}" for cid, kind, text in criterion_ids(success, failure))
    sections = [
        f"Conversation to evaluate (turns are numbered):\n{format_transcript(list(transcript))}",
        *([f"The user's objective: {objective.strip()}"] if objective else []),
        "For each criterion below, decide whether it holds in this conversation. `satisfied` is true "
        "only when the conversation clearly shows it; when it is not shown, it is false.\n" + listed,
        f"Answer with JSON whose keys are exactly {', '.join(json.dumps(c) for c, _, _ in criterion_ids(success, failure))}"
        ', each {"reasoning": "...", "satisfied": true|false}.',
    ]
    return [{"role": "system", "content": _JUDGE}, {"role": "user", "content": "\n\n".join(sections)}]


def scenario_outcome(success_held: Sequence[bool], failure_held: Sequence[bool]) -> ScenarioOutcome:
    """passed: success holds and no failure criterion does; failed: a failure criterion holds;
    conflict: both; undecided: neither.

    Success holds when every success criterion does (with none given, when no failure
    criterion holds); failure holds when any failure criterion does.
    """
    failed = any(failure_held)
    succeeded = all(success_held) if success_held else not failed
    if succeeded and failed:
        return "conflict"
    if failed:
        return "failed"
    return "passed" if succeeded else "undecided"


# -- simulator fidelity -----------------------------------------------------------------

_JUDGE = (
    "You are a careful, impartial evaluator of conversations between a user and an AI agent. "
    "Judge only what is written. Reply with one JSON object and nothing else."
)


class FidelityAnswer(Model):
    model_config = ConfigDict(extra="forbid")

    reasoning: StrictStr
    in_role: StrictBool


def fidelity_schema() -> dict[str, JsonValue]:
    """`{"reasoning": string, "in_role": boolean}`."""
    return {
        "type": "object",
        "properties": {"reasoning": {"type": "string"}, "in_role": {"type": "boolean"}},
        "required": ["reasoning", "in_role"],
        "additionalProperties": False,
    }


def fidelity_messages(persona: Persona, transcript: Sequence[Message]) -> list[dict[str, str]]:
    """Did the simulated user (messages marked `user (simulated)`) stay in its role?"""
    sections = [
        "The user messages marked `user (simulated)` were written by a model playing this user:",
        *persona.sections(),
        f"Conversation (turns are numbered):\n{format_transcript(list(transcript))}",
        "The simulated user stayed in role (in_role: true) when it: only spoke as this user, never "
        "answered or wrote lines for the agent, never evaluated, graded or coached the agent, gave "
        "the listed facts only when asked for them, and kept to the persona and the objective. "
        "Otherwise in_role is false; cite the turn in the reasoning.",
        'Answer with JSON: {"reasoning": "...", "in_role": true|false}',
    ]
    return [{"role": "system", "content": _JUDGE}, {"role": "user", "content": "\n\n".join(sections)}]
