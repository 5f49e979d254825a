"""Tool-call assertions: `tool-called`, `tool-not-called`, `tool-trajectory`, and skill-up's
per-turn aliases (`tool_called_in_turn`, `tool_not_called_in_turn`, `turn_response_contains`,
`turn_response_not_contains`).

At turn level they look at the tool calls of this reply; at conversation level at every tool
call of the conversation (the `source: tool` messages), or of one turn when `turn:` is given.
Argument matching (`args`) is a subset match by default (only the keys given are checked,
deeply), `exact` (the arguments are exactly these), or `regex` (each given value is a regular
expression searched in the actual value's text). String values may use captured variables as
`{{ name }}`.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from typing import Literal

from pydantic import AliasChoices, ConfigDict, Field, field_validator, model_validator

from .. import _regex
from .._base_model import Model
from ..results import AssertionOutcome, ToolCall
from ._base import Assertion, Grade, GradeContext, GraderError, assertion_type
from ._check import quote, regex_values, substitute, substitute_deep
from ._json import json_equal

ArgsMatch = Literal["subset", "exact", "regex"]


def calls_in(ctx: GradeContext, turn: int | None = None) -> list[ToolCall]:
    """The tool calls an assertion looks at: this reply's, or the conversation's (one turn's);
    calls that did not run (denied, blocked) do not count."""
    if ctx.level == "turn" and turn is None:
        return [c for c in ctx.reply.tool_calls if c.ran] if ctx.reply is not None else []
    return [
        call
        for m in ctx.transcript
        if m.source == "tool" and (turn is None or m.turn == turn)
        for call in m.tool_calls
        if call.ran
    ]


def _args_subset(expected: object, actual: object) -> bool:
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(k in actual and _args_subset(v, actual[k]) for k, v in expected.items())
    return json_equal(expected, actual)


def _text(value: object) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def args_match(expected: Mapping[str, object] | None, actual: Mapping[str, object], how: ArgsMatch) -> bool:
    """Whether a call's arguments match `expected` (None matches any arguments)."""
    if expected is None:
        return True
    if how == "exact":
        return json_equal(expected, actual)
    if how == "regex":
        return all(k in actual and _arg_search(k, _text(v), _text(actual[k])) for k, v in expected.items())
    return _args_subset(expected, actual)


def _arg_search(key: str, pattern: str, value: str) -> bool:
    """Whether `pattern` is found in an argument's text, searched with a time bound: a pattern
    that cannot be decided (stopped after `_regex.REGEX_TIMEOUT_S`, invalid) is a grader error."""
    try:
        return _regex.search(pattern, value, field=f"args.{key}: regular expression", what="argument") is not None
    except _regex.RegexTimeout as exc:
        raise GraderError(str(exc)) from None
    except _regex.PatternError as exc:  # only possible after {{ name }} substitution
        raise GraderError(f"args.{key}: regular expression {pattern!r} is invalid: {exc}") from None


def show(call: ToolCall) -> str:
    return f"{call.name}({json.dumps(call.arguments, ensure_ascii=False, default=str)})"


def _shown(calls: list[ToolCall]) -> str:
    return ", ".join(show(c) for c in calls[:8]) + (f" and {len(calls) - 8} more" if len(calls) > 8 else "") or "none"


def _check_regexes(args: Mapping[str, object] | None, how: str) -> None:
    if how == "regex" and args:
        for key, value in args.items():
            try:
                _regex.check_pattern(_text(value))
            except ValueError as exc:
                raise ValueError(f"args.{key}: {exc}") from None


@assertion_type
class ToolCalled(Assertion):
    """A tool was (or was not) called, optionally with matching arguments and a count range.

    Example: `{type: tool-called, tool: search, args: {query: "paris"}, min: 1, max: 2}`;
    `{type: tool_called_in_turn, turn: 2, tool: Read}` at conversation level.
    """

    type: Literal["tool-called", "tool-not-called"]
    tool: str = Field(min_length=1, description="The tool's name (as the target reports it).")
    args: dict[str, object] | None = Field(None, description="Arguments the call must have (see args_match).")
    args_match: ArgsMatch = Field("subset", description="subset (default), exact, or regex per field.")
    min: int | None = Field(None, ge=0, description="Matching calls needed at least (default 1).")
    max: int | None = Field(None, ge=0, description="Matching calls allowed at most.")
    turn: int | None = Field(None, ge=1, description="At conversation level: only this turn's calls.")

    @model_validator(mode="after")
    def _consistent(self) -> ToolCalled:
        if self.type.endswith("-in-turn") and self.turn is None:
            raise ValueError(f"{self.type} needs `turn:` (the turn number whose tool calls are checked)")
        if self.min is not None and self.max is not None and self.min > self.max:
            raise ValueError("min must not exceed max")
        if "not-called" in self.type and (self.min is not None or self.max is not None):
            raise ValueError(f"{self.type} takes no min/max (it passes when no call matches)")
        _check_regexes(self.args, self.args_match)
        return self

    async def grade(self, ctx: GradeContext) -> Grade:
        tool = substitute(self.tool, ctx.variables)
        # A regex argument gets captured values escaped: matched as the text they are.
        variables = regex_values(ctx.variables) if self.args_match == "regex" else ctx.variables
        args = substitute_deep(self.args, variables) if self.args is not None else None
        calls = calls_in(ctx, self.turn)
        matching = [c for c in calls if c.name == tool and args_match(args, c.arguments, self.args_match)]
        wanted = f"{tool}" + (f" with args {self.args_match} {json.dumps(args, default=str)}" if args else "")
        where = f"turn {self.turn}" if self.turn else ("this reply" if ctx.level == "turn" else "the conversation")
        evidence = f"{len(matching)} matching of {len(calls)} call(s) in {where}: {_shown(calls)}"
        if "not-called" in self.type:
            passed = not matching
            return Grade(
                score=float(passed),
                passed=passed,
                assertions=[AssertionOutcome(text=f"{wanted} not called", passed=passed, evidence=evidence)],
            )
        low = 1 if self.min is None else self.min
        passed = len(matching) >= low and (self.max is None or len(matching) <= self.max)
        bounds = f"at least {low}" + (f", at most {self.max}" if self.max is not None else "")
        return Grade(
            score=float(passed),
            passed=passed,
            assertions=[AssertionOutcome(text=f"{wanted} called {bounds} time(s)", passed=passed, evidence=evidence)],
        )


@assertion_type
class ToolCalledInTurn(ToolCalled):
    """skill-up's `tool_called_in_turn` / `tool_not_called_in_turn`: `tool-called` at
    conversation level for the turn named by `turn:`."""

    type: Literal["tool-called-in-turn", "tool-not-called-in-turn"]  # type: ignore[assignment]

    levels = ("conversation",)


@assertion_type
class TurnResponseContains(Assertion):
    """skill-up's `turn_response_contains` / `turn_response_not_contains`: the reply of turn N
    (checked at conversation level) contains / does not contain `value`."""

    type: Literal["turn-response-contains", "turn-response-not-contains"]
    turn: int = Field(ge=1, description="The turn whose reply is checked.")
    value: str = Field(min_length=1)
    ignore_case: bool = False

    levels = ("conversation",)

    async def grade(self, ctx: GradeContext) -> Grade:
        replies = [m.content for m in ctx.transcript if m.source == "target" and m.turn == self.turn]
        if not replies:
            raise GraderError(f"turn {self.turn} has no reply (it was not sent or failed)")
        reply = replies[-1]
        value = substitute(self.value, ctx.variables)
        found = (value.lower() in reply.lower()) if self.ignore_case else (value in reply)
        negate = "not-contains" in self.type
        passed = found != negate
        text = f"turn {self.turn} reply {'does not contain' if negate else 'contains'} {quote(value)}"
        evidence = f"{'found' if found else 'not found'} in {len(reply)}-char reply {quote(reply)}"
        return Grade(
            score=float(passed),
            passed=passed,
            assertions=[AssertionOutcome(text=text, passed=passed, evidence=evidence)],
        )


#: AgentV's argument matching of a trajectory: `exact` (equal), `superset` (the call has at least
#: the expected keys and values), `subset` (the call has no key beyond the expected ones, with
#: their values), `ignore`, or a list of fields (dot paths) compared one by one.
TrajectoryArgsMatch = Literal["exact", "superset", "subset", "ignore"] | list[str]


class ExpectedCall(Model):
    """One entry of a trajectory's `expected`: `{tool, args?, args_match?, max_duration_ms?}`."""

    model_config = ConfigDict(extra="forbid")

    tool: str = Field(min_length=1)
    args: dict[str, object] | Literal["any"] | None = Field(
        None, validation_alias=AliasChoices("args", "input"), description="`input` is AgentV's trace name for it."
    )
    args_match: TrajectoryArgsMatch | None = Field(None, description="Overrides the trajectory's args_match.")
    max_duration_ms: float | None = Field(None, gt=0)
    name: str | None = Field(None, description="A label (AgentV); not checked.")
    output: object = Field(None, description="AgentV accepts it and does not check it; neither does convoeval.")

    def matches(self, call: ToolCall, variables: dict[str, object], default: TrajectoryArgsMatch | None = None) -> bool:
        if call.name != substitute(self.tool, variables):
            return False
        how = self.args_match if self.args_match is not None else default
        if self.args in (None, "any") or how == "ignore":
            return True
        expected = substitute_deep(self.args, variables)
        if how == "exact":
            return json_equal(expected, call.arguments)
        if how == "subset":
            return _args_subset(call.arguments, expected)
        if isinstance(how, list):
            return all(_at(expected, field) == _at(call.arguments, field) for field in how)
        return _args_subset(expected, call.arguments)  # superset (and the default)


_MISSING = object()


def _at(value: object, dotted: str) -> object:
    """The value at a dot path (`a.b.0`), or a marker when it is absent."""
    for part in dotted.split("."):
        if isinstance(value, dict) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return _MISSING
    return value


@assertion_type
class ToolTrajectory(Assertion):
    """AgentV's `tool-trajectory`: the sequence of tool calls against an expected one.

    Modes: `in_order` (expected calls appear in this order, others may come between),
    `exact` (exactly these calls in this order), `any_order` (each expected call, or each
    tool's `minimums` count, appears in any order), `subset` (every actual call is one of the
    expected), `superset` (the actual calls include every expected one). `max_duration_ms`
    adds a latency check per matched call. Score: passed checks / checks (AgentV's rule); it
    passes when every check passes (`strict: false`, AgentV's verdict: when the score reaches
    the pass mark).
    """

    type: Literal["tool-trajectory"]
    mode: Literal["in_order", "any_order", "exact", "subset", "superset"] = "in_order"
    expected: list[ExpectedCall] = Field(default_factory=list)
    minimums: dict[str, int] = Field(default_factory=dict, description="any_order: tool -> calls needed.")
    turn: int | None = Field(None, ge=1, description="At conversation level: only this turn's calls.")
    args_match: TrajectoryArgsMatch | None = Field(
        None,
        description="How expected args are compared: exact, superset (the default here), subset, ignore, "
        "or a list of fields.",
    )
    strict: bool = Field(
        True,
        description="Pass only when every check passes (false, as in AgentV: when the score reaches the pass mark).",
    )

    @field_validator("minimums")
    @classmethod
    def _positive(cls, value: dict[str, int]) -> dict[str, int]:
        if any(n < 1 for n in value.values()):
            raise ValueError("each minimum must be at least 1")
        return value

    @model_validator(mode="after")
    def _something_expected(self) -> ToolTrajectory:
        if not self.expected and not self.minimums:
            raise ValueError("give `expected` (a list of {tool, args?, max_duration_ms?}) or `minimums`")
        if self.minimums and self.mode != "any_order":
            raise ValueError("`minimums` needs mode: any_order")
        return self

    async def grade(self, ctx: GradeContext) -> Grade:
        calls = calls_in(ctx, self.turn)
        outcomes = _MATCHERS[self.mode](self, calls, ctx.variables)
        passed = sum(o.passed for o in outcomes)
        first = next((o for o in outcomes if not o.passed), None)
        details: dict[str, object] = {"actual": [show(c) for c in calls]}
        if first is not None:
            details["first_mismatch"] = f"{first.text}: {first.evidence}"
        return Grade(
            score=passed / len(outcomes) if outcomes else 1.0,
            passed=first is None if self.strict else None,
            assertions=outcomes,
            details=details,
        )


def _latency(entry: ExpectedCall, call: ToolCall) -> list[AssertionOutcome]:
    if entry.max_duration_ms is None or call.duration_ms is None:
        return []
    ok = call.duration_ms <= entry.max_duration_ms
    return [
        AssertionOutcome(
            text=f"{call.name} within {entry.max_duration_ms:g} ms", passed=ok, evidence=f"took {call.duration_ms:g} ms"
        )
    ]


def _in_order(spec: ToolTrajectory, calls: list[ToolCall], variables: dict[str, object]) -> list[AssertionOutcome]:
    outcomes, at = [], 0
    for k, entry in enumerate(spec.expected, start=1):
        found = next((i for i in range(at, len(calls)) if entry.matches(calls[i], variables, spec.args_match)), None)
        if found is None:
            rest = calls[at:]
            outcomes.append(
                AssertionOutcome(
                    text=f"step {k}: {entry.tool}",
                    passed=False,
                    evidence=f"not found after position {at}; remaining calls: {_shown(rest)}",
                )
            )
            continue
        outcomes.append(AssertionOutcome(text=f"step {k}: {entry.tool}", passed=True, evidence=f"call {found + 1}"))
        outcomes += _latency(entry, calls[found])
        at = found + 1
    return outcomes


def _exact(spec: ToolTrajectory, calls: list[ToolCall], variables: dict[str, object]) -> list[AssertionOutcome]:
    outcomes = []
    for k, entry in enumerate(spec.expected, start=1):
        call = calls[k - 1] if k <= len(calls) else None
        ok = call is not None and entry.matches(call, variables, spec.args_match)
        evidence = "no call at this position" if call is None else f"call {k} was {show(call)}"
        outcomes.append(AssertionOutcome(text=f"position {k}: {entry.tool}", passed=ok, evidence=evidence))
        if ok and call is not None:
            outcomes += _latency(entry, call)
    if len(calls) > len(spec.expected):
        extra = calls[len(spec.expected) :]
        outcomes.append(
            AssertionOutcome(
                text=f"no calls after position {len(spec.expected)}",
                passed=False,
                evidence=f"{len(extra)} extra: {_shown(extra)}",
            )
        )
    return outcomes


def _superset(spec: ToolTrajectory, calls: list[ToolCall], variables: dict[str, object]) -> list[AssertionOutcome]:
    """Each expected call is matched by a distinct actual call, in any order."""
    used: set[int] = set()
    outcomes = []
    for entry in spec.expected:
        found = next(
            (i for i, c in enumerate(calls) if i not in used and entry.matches(c, variables, spec.args_match)), None
        )
        if found is None:
            outcomes.append(
                AssertionOutcome(
                    text=f"{entry.tool} called",
                    passed=False,
                    evidence=f"no unmatched call fits; calls: {_shown(calls)}",
                )
            )
            continue
        used.add(found)
        outcomes.append(AssertionOutcome(text=f"{entry.tool} called", passed=True, evidence=f"call {found + 1}"))
        outcomes += _latency(entry, calls[found])
    return outcomes


def _any_order(spec: ToolTrajectory, calls: list[ToolCall], variables: dict[str, object]) -> list[AssertionOutcome]:
    counts = Counter(c.name for c in calls)
    outcomes = [
        AssertionOutcome(
            text=f"{tool} called at least {n} time(s)",
            passed=counts[tool] >= n,
            evidence=f"called {counts[tool]} time(s)",
        )
        for tool, n in spec.minimums.items()
    ]
    return outcomes + (_superset(spec, calls, variables) if spec.expected else [])


def _subset_mode(spec: ToolTrajectory, calls: list[ToolCall], variables: dict[str, object]) -> list[AssertionOutcome]:
    """Every actual call is one of the expected ones (no call outside the allowed set)."""
    outcomes = [
        AssertionOutcome(
            text=f"call {i}: {show(call)} is expected",
            passed=any(e.matches(call, variables, spec.args_match) for e in spec.expected),
            evidence="allowed"
            if any(e.matches(call, variables, spec.args_match) for e in spec.expected)
            else f"not among {', '.join(e.tool for e in spec.expected)}",
        )
        for i, call in enumerate(calls, start=1)
    ]
    return outcomes


_MATCHERS = {
    "in_order": _in_order,
    "exact": _exact,
    "any_order": _any_order,
    "subset": _subset_mode,
    "superset": _superset,
}


@assertion_type
class SkillTrigger(Assertion):
    """AgentV's `skill-trigger`: the agent used the skill `skill` (a `Skill` tool call naming
    it, a `Read` of `skills/<skill>/...`, or a tool output mentioning that path); with
    `should_trigger: false`, it did not. Read from AgentV's `skill-trigger.ts` (v4.15.0)."""

    type: Literal["skill-trigger"]
    skill: str = Field(min_length=1, description="The skill's name.")
    should_trigger: bool = True

    async def grade(self, ctx: GradeContext) -> Grade:
        calls = calls_in(ctx)
        evidence = _skill_evidence(calls, self.skill)
        passed = (evidence is not None) == self.should_trigger
        if passed and self.should_trigger:
            text = evidence or f'Skill "{self.skill}" triggered as expected'
        elif passed:
            text = f'Skill "{self.skill}" correctly did not trigger'
        elif self.should_trigger:
            text = f'Skill "{self.skill}" not found in {len(calls)} tool call(s)' if calls else "No tool calls recorded"
        else:
            text = evidence or f'Skill "{self.skill}" triggered unexpectedly'
        return Grade(score=float(passed), passed=passed, assertions=[AssertionOutcome(text=text, passed=passed)])


def _skill_evidence(calls: list[ToolCall], skill: str) -> str | None:
    """How the calls show that `skill` was used (None when they do not)."""
    marker = f"skills/{skill}/"
    for call in calls:
        if call.name == "Skill" and skill in str(call.arguments.get("skill", "")):
            return f'Skill tool invoked with skill="{call.arguments.get("skill")}"'
        if call.name == "Read" and marker in str(call.arguments.get("file_path", "")):
            return f"Read tool loaded skill file: {call.arguments.get('file_path')}"
        if call.output is not None:
            shown = call.output if isinstance(call.output, str) else json.dumps(call.output, default=str)
            if marker in shown:
                return f'Tool "{call.name}" output referenced skill file for "{skill}"'
    return None
