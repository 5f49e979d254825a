"""AgentV v5's trajectory and skill graders with AgentV's meaning (its `graders/trajectory.ts`,
`graders/skill-used.ts` and `providers/skill-calls.ts` at v5.3.1-next.1).

- `trajectory:tool-used`: NAME, [NAMES] (each used), or `{name | pattern, min, max}` (a count);
  `trajectory:tool-sequence`: `[STEPS]` or `{mode: in_order | exact, steps}`;
  `trajectory:tool-args-match`: `{name | pattern, args, mode: partial | exact, ignore, defaults}`.
- A tool name is a case-insensitive glob (`*`, `?`) matched against the whole name: `bash`
  matches Claude Code's `Bash`.
- A call of `shell`, `exec_command` or `local_shell` (any case) whose arguments hold a command
  (`cmd`, `command`, `commands`) is a command step, which none of these graders sees.
- Each check scores 1 or 0. The `not-` form (or `negate: true`, inverted once) passes
  when none of the listed tools is used, the sequence is not observed, the count is not met,
  or no call matches the arguments.
- `partial` arguments: an object matches by the keys it gives, an array item by item (same
  length); `exact`: deep equality. `ignore` keys (globs) and actual values equal to `defaults`
  are left out first.
- `skill-used` / `not-skill-used`: NAME, [NAMES] or `{name | pattern, min, max}` against the
  skills the calls show: a `skill` tool call (any case) naming it in `skill` or `name`, a `read`
  of `skills/NAME/SKILL.md` (`.agents/skills/...` too), a `bash` command or a tool output naming
  that path. Names compare exactly, patterns as case-insensitive globs. Failed calls do not count.
  `negate: true` is the inverse rule, then a negation of its result (AgentV inverts it twice).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Literal

from pydantic import Field, ValidationInfo, field_validator

from ..results import AssertionOutcome, ToolCall
from ._base import Assertion, Grade, GradeContext, assertion_type
from ._check import substitute_deep
from ._json import json_equal
from ._tools import calls_in

COMMAND_TOOLS = frozenset({"exec_command", "local_shell", "shell"})
STEP_TYPES = frozenset({"command", "message", "reasoning", "search", "span", "tool"})
#: What JavaScript's `.` matches (not a line end): the `*` and `?` of a glob.
_ANY = "[^\\n\\r\\u2028\\u2029]"


def glob(pattern: str) -> re.Pattern[str]:
    """AgentV's `matchesPattern`: `*` and `?` wildcards, the whole text, ignoring case."""
    body = "".join(f"{_ANY}*" if c == "*" else _ANY if c == "?" else re.escape(c) for c in pattern)
    return re.compile(f"{body}\\Z", re.IGNORECASE)


def _command(args: dict[str, object]) -> str | None:
    """The command a shell-style call runs (`commandFromInput`)."""
    command = next((args[k] for k in ("cmd", "command", "commands") if args.get(k) is not None), None)
    if isinstance(command, str):
        return command.strip() or None
    if isinstance(command, list):
        parts = [str(p).strip() for p in command]
        sep = "; " if args.get("cmd") is None and args.get("command") is None else " "
        return sep.join(p for p in parts if p) or None
    return None


def tool_steps(calls: list[ToolCall]) -> list[ToolCall]:
    """The calls AgentV's tool graders see: not the shell-style ones that run a command."""
    return [c for c in calls if not (c.name.lower() in COMMAND_TOOLS and _command(c.arguments))]


@dataclass(frozen=True)
class Matcher:
    """A step matcher: a glob over the tool's name (None: any), and whether its `type` admits tools."""

    pattern: str | None
    tools: bool = True

    def matches(self, call: ToolCall) -> bool:
        return self.tools and (not self.pattern or glob(self.pattern).match(call.name) is not None)

    @property
    def label(self) -> str:
        return self.pattern or "*"


def _matcher(raw: object, what: str = "", named: bool = True) -> Matcher:
    """A step: a name (glob) or `{name | pattern, type}` (`normalizeMatcher`, `requireNamedMatcher`);
    `what` names a step in messages (the value itself when empty)."""
    what = f"{what}: " if what else ""
    if isinstance(raw, str):
        if not raw:
            raise ValueError(f"{what}a tool name must not be empty")
        return Matcher(raw)
    if not isinstance(raw, dict):
        raise ValueError(f"{what}a step is a tool name or a mapping {{name | pattern, type}}")
    pattern = raw.get("pattern") if raw.get("pattern") is not None else raw.get("name")
    if pattern is not None and not isinstance(pattern, str):
        raise ValueError(f"{what}`name`/`pattern` must be a string")
    if named and not pattern:
        raise ValueError(f"{what}give a `name` or `pattern`")
    kinds = raw.get("type", "tool")
    kinds = [kinds] if isinstance(kinds, str) else kinds
    if not isinstance(kinds, list) or not kinds or not set(kinds) <= STEP_TYPES:
        raise ValueError(f"{what}`type` is one of (or a list of) {', '.join(sorted(STEP_TYPES))}")
    return Matcher(pattern or None, "tool" in kinds)


def _known(raw: dict, keys: set[str]) -> None:
    unknown = sorted(set(raw) - keys, key=str)
    if unknown:
        raise ValueError(f"unknown field {unknown[0]!r} ({', '.join(sorted(keys))})")


def _count(raw: dict, field: str) -> int | None:
    value = raw.get(field)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"`{field}` must be a whole number of at least 0")
    return value


@dataclass(frozen=True)
class Counted:
    matcher: Matcher
    low: int | None
    high: int | None


def _listed(value: object, kind: str) -> list[str] | Counted:
    """The value of `tool-used` / `skill-used`: names (each must match), or a counted matcher."""
    if isinstance(value, str) and value.strip():
        return [value]
    if isinstance(value, list) and value and all(isinstance(v, str) and v.strip() for v in value):
        return list(value)
    if isinstance(value, dict):
        _known(value, {"name", "pattern", "type", "min", "max"})
        low, high = _count(value, "min"), _count(value, "max")
        if low is not None and high is not None and high < low:
            raise ValueError("`max` must be at least `min`")
        return Counted(_matcher(value), low, high)
    raise ValueError(f"{kind} needs a tool name, a list of names, or {{name | pattern, min, max}}")


@dataclass(frozen=True)
class Sequence:
    steps: list[Matcher]
    exact: bool


def _sequence(value: object) -> Sequence:
    steps, mode = (value, "in_order") if isinstance(value, list) else (None, None)
    if isinstance(value, dict):
        _known(value, {"mode", "steps"})
        steps, mode = value.get("steps"), value.get("mode", "in_order")
    if mode not in ("in_order", "exact") or not isinstance(steps, list) or not steps:
        raise ValueError("trajectory:tool-sequence needs `steps` (a non-empty list) and `mode: in_order | exact`")
    return Sequence([_matcher(s, f"steps[{i}]") for i, s in enumerate(steps)], mode == "exact")


@dataclass(frozen=True)
class ArgsSpec:
    matcher: Matcher
    args: object
    exact: bool
    defaults: dict[str, object]
    ignore: list[str]


def _args_spec(value: object) -> ArgsSpec:
    if not isinstance(value, dict):
        raise ValueError("trajectory:tool-args-match needs a mapping {name | pattern, args, mode}")
    _known(value, {"name", "pattern", "type", "args", "arguments", "mode", "defaults", "ignore"})
    if "args" not in value and "arguments" not in value:
        raise ValueError("trajectory:tool-args-match needs `args` (or `arguments`)")
    mode = value.get("mode", "partial")
    if mode not in ("partial", "exact"):
        raise ValueError('`mode` must be "partial" or "exact"')
    defaults = value.get("defaults", {})
    if not isinstance(defaults, dict):
        raise ValueError("`defaults` must map argument names to default values")
    ignore = value.get("ignore", [])
    ignore = [ignore] if isinstance(ignore, str) else ignore
    if not isinstance(ignore, list) or not all(isinstance(k, str) and k.strip() for k in ignore):
        raise ValueError("`ignore` must be a non-empty string or a list of them")
    expected = value["args"] if "args" in value else value["arguments"]
    return ArgsSpec(_matcher(value), expected, mode == "exact", defaults, ignore)


def _partial(actual: object, expected: object) -> bool:
    """AgentV's `matchesExpectedArgsPartial`."""
    if isinstance(expected, list):
        return (
            isinstance(actual, list)
            and len(actual) == len(expected)
            and all(_partial(a, e) for a, e in zip(actual, expected, strict=True))
        )
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(k in actual and _partial(actual[k], v) for k, v in expected.items())
    return json_equal(actual, expected)


def _strip(value: object, spec: ArgsSpec, defaults: bool) -> object:
    """The arguments without the ignored keys (and, for the actual ones, the values equal to `defaults`)."""
    if not isinstance(value, dict):
        return value
    globs = [glob(k) if any(c in k for c in "*?") else None for k in spec.ignore]

    def left_out(key: str, item: object) -> bool:
        if any(g.match(key) if g else key == k for g, k in zip(globs, spec.ignore, strict=True)):
            return True
        return defaults and key in spec.defaults and json_equal(item, spec.defaults[key])

    return {k: v for k, v in value.items() if not left_out(k, v)}


def _shown(calls: list[ToolCall]) -> str:
    return ", ".join(f"tool:{c.name}" for c in calls) or "(none)"


def _args_text(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def _graded(passed: bool, text: str) -> Grade:
    return Grade(score=float(passed), passed=passed, assertions=[AssertionOutcome(text=text, passed=passed)])


def _trajectory_spec(kind: str, value: object) -> list[str] | Counted | Sequence | ArgsSpec:
    kind = kind.removeprefix("not-")
    if kind == "trajectory:tool-used":
        return _listed(value, kind)
    if kind == "trajectory:tool-sequence":
        return _sequence(value)
    return _args_spec(value)


class _AgentvInverse(Assertion):
    """An AgentV grader whose `not-` form (or `negate`) is its own inverse rule (`inverse || negate`)."""

    @property
    def inverse(self) -> bool:
        return self.type.startswith("not-") or self.negate


@assertion_type
class Trajectory(_AgentvInverse):
    """AgentV v5's `trajectory:tool-used`, `trajectory:tool-sequence`, `trajectory:tool-args-match`
    and their `not-` forms (the module docstring).

    Example: `{type: not-trajectory:tool-used, value: bash}`."""

    type: Literal[
        "trajectory:tool-used",
        "trajectory:tool-sequence",
        "trajectory:tool-args-match",
        "not-trajectory:tool-used",
        "not-trajectory:tool-sequence",
        "not-trajectory:tool-args-match",
    ]
    value: object = Field(None, validate_default=True)

    @property
    def negated(self) -> bool:
        return False  # AgentV folds `negate` into the inverse rule (`grader-parser.ts`): inverted once

    @field_validator("value")
    @classmethod
    def _readable(cls, value: object, info: ValidationInfo) -> object:
        _trajectory_spec(str(info.data.get("type", "")), value)
        return value

    def _spec(self, value: object) -> list[str] | Counted | Sequence | ArgsSpec:
        return _trajectory_spec(self.type, value)

    async def grade(self, ctx: GradeContext) -> Grade:
        spec = self._spec(substitute_deep(self.value, ctx.variables))
        calls = tool_steps(calls_in(ctx))
        if isinstance(spec, Sequence):
            return self._sequence(spec, calls)
        if isinstance(spec, ArgsSpec):
            return self._args(spec, calls)
        return self._used(spec, calls)

    def _used(self, spec: list[str] | Counted, calls: list[ToolCall]) -> Grade:
        actual = _shown(calls)
        if isinstance(spec, Counted):
            found = [c for c in calls if spec.matcher.matches(c)]
            low = 1 if spec.low is None else spec.low
            met = len(found) >= low and (spec.high is None or len(found) <= spec.high)
            label = spec.matcher.label
            if self.inverse:
                if met:
                    return _graded(
                        False, f'Tool "{label}" matched {len(found)} time(s), which violates the inverse assertion'
                    )
                return _graded(True, f'Tool "{label}" did not satisfy the forbidden match condition')
            bounds = f"at least {low}" if spec.high is None else f"{low}-{spec.high}"
            text = f'Matched tool "{label}" {len(found)} time(s) (expected {bounds})'
            return _graded(met, text + (f". Matches: {_shown(found)}" if found else ""))
        matched = [n for n in spec if any(Matcher(n).matches(c) for c in calls)]
        missing = [n for n in spec if n not in matched]
        if self.inverse:
            if matched:
                return _graded(False, f"Forbidden tool(s) were used: {', '.join(matched)}. Actual tools: {actual}")
            return _graded(True, f"Forbidden tool(s) were not used: {', '.join(spec)}")
        if missing:
            return _graded(False, f"Missing required tool(s): {', '.join(missing)}. Actual tools: {actual}")
        return _graded(True, f"Observed required tool(s): {', '.join(spec)}. Actual tools: {actual}")

    def _sequence(self, spec: Sequence, calls: list[ToolCall]) -> Grade:
        actual = _shown(calls)
        if spec.exact:
            seen = len(calls) == len(spec.steps) and all(m.matches(c) for m, c in zip(spec.steps, calls, strict=False))
            labels = ", ".join(m.label for m in spec.steps)
            why = (
                f"Observed exact tool sequence: {actual}"
                if seen
                else f"Expected exact tool sequence of {labels}, but actual tools were {actual}"
            )
        else:
            at = 0
            for call in calls:
                if at < len(spec.steps) and spec.steps[at].matches(call):
                    at += 1
            seen = at == len(spec.steps)
            why = (
                f"Observed tool sequence in order. Actual tools: {actual}"
                if seen
                else f'Expected tool "{spec.steps[at].label}" was not observed in order. Actual tools: {actual}'
            )
        if self.inverse:
            text = f"Forbidden tool sequence was observed. Actual tools: {actual}" if seen else ""
            return _graded(not seen, text or "Forbidden tool sequence was not observed")
        return _graded(seen, why)

    def _args(self, spec: ArgsSpec, calls: list[ToolCall]) -> Grade:
        label = spec.matcher.label
        named = [c for c in calls if spec.matcher.matches(c)]
        expected = _strip(spec.args, spec, defaults=False)

        def fits(call: ToolCall) -> bool:
            actual = _strip(_strip(call.arguments, spec, defaults=False), spec, defaults=True)
            return json_equal(actual, expected) if spec.exact else _partial(actual, expected)

        hit = next((c for c in named if fits(c)), None)
        mode = "exact" if spec.exact else "partial"
        observed = ", ".join(_args_text(c.arguments) for c in named) or "(none)"
        if self.inverse:
            if hit is not None:
                text = f'Forbidden argument match for tool "{label}" was observed on tool:{hit.name}. Args: '
                return _graded(False, text + _args_text(hit.arguments))
            if not named:
                return _graded(
                    True,
                    f'Forbidden argument match for tool "{label}" was not observed because no tool call matched it',
                )
            return _graded(
                True, f'Forbidden argument match for tool "{label}" was not observed. Observed args: {observed}'
            )
        if hit is not None:
            text = f'Tool "{label}" matched expected arguments ({mode}) on tool:{hit.name}. Args: '
            return _graded(True, text + _args_text(hit.arguments))
        if not named:
            return _graded(False, f'No tool call matched "{label}". Actual tools: {_shown(calls)}')
        text = f'No call to tool "{label}" matched expected arguments ({mode}): {_args_text(spec.args)}. '
        return _graded(False, text + f"Observed args: {observed}")


# -- skills ------------------------------------------------------------------------------------

_SKILL_FILE = re.compile(r"(?:^|/)(?:\.agents/)?skills/([^/\s]+)/SKILL\.md\Z")
_SKILL_IN_TEXT = re.compile(r"(?:^|[/\"'\s])(?:\.agents/)?skills/([^/\"'\s]+)/SKILL\.md(?:\Z|[)\"'\s,;:])")
_SKILL_PATH = re.compile(r"(?:\.agents/)?skills/([^/\"'\s]+)/SKILL\.md")
_TOKEN_EDGES = re.compile(r"^[`\"'(\[{<]+|[`\"',;:)\]}>]+\Z")
_SKILL_NAME = re.compile(r"[A-Za-z0-9._:-]+")


@dataclass(frozen=True)
class SkillCall:
    """A skill the calls show (AgentV's `SkillCall`): `source` is `tool` or `heuristic`."""

    name: str
    source: str
    path: str | None = None

    @property
    def shown(self) -> str:
        details = ", ".join(d for d in (self.source, self.path) if d)
        return f"{self.name} ({details})" if details else self.name


def _text_of(value: object) -> str | None:
    return value.strip() or None if isinstance(value, str) else None


def _first(args: dict[str, object], *keys: str) -> object:
    """JavaScript's `a ?? b ?? c` over the keys."""
    return next((args[k] for k in keys if args.get(k) is not None), None)


def _skill_paths(text: str) -> list[tuple[str, str]]:
    """(name, path) of each `skills/NAME/SKILL.md` a text names (`skillPathCandidates`)."""
    found: dict[str, tuple[str, str]] = {}
    for raw in re.split(r"\s+", text):
        token = _TOKEN_EDGES.sub("", raw).replace("\\", "/")
        match = _SKILL_FILE.search(token)
        if match and _SKILL_NAME.fullmatch(match.group(1)):
            found[token] = (match.group(1), token)
    for match in _SKILL_IN_TEXT.finditer(text.replace("\\", "/")):
        path = _SKILL_PATH.search(match.group(0))
        if path and _SKILL_NAME.fullmatch(path.group(1)):
            found[path.group(0)] = (path.group(1), path.group(0))
    return list(found.values())


def skill_calls(calls: list[ToolCall]) -> list[SkillCall]:
    """The skills the tool calls show (`deriveSkillCallsFromToolCalls`), failed calls left out."""
    found: list[SkillCall] = []
    for call in calls:
        if call.error is not None:
            continue
        name, args = call.name.lower(), call.arguments
        if name == "skill":
            if skill := _text_of(_first(args, "skill", "name")):
                found.append(SkillCall(skill, "tool"))
            continue
        if name == "read":
            path = _text_of(_first(args, "file_path", "path", "filePath"))
            match = _SKILL_FILE.search(path.replace("\\", "/")) if path else None
            if path and match and _SKILL_NAME.fullmatch(match.group(1)):
                found.append(SkillCall(match.group(1), "heuristic", path))
            continue
        if name == "bash" and (command := _text_of(args.get("command"))):
            found += [SkillCall(n, "heuristic", p) for n, p in _skill_paths(command)]
        if call.output is not None:
            text = call.output if isinstance(call.output, str) else _args_text(call.output)
            found += [SkillCall(n, "heuristic", p) for n, p in _skill_paths(text)]
    unique: list[SkillCall] = []
    for entry in found:  # heuristic finds are kept once (`pushHeuristic`); tool calls each time
        if entry.source == "tool" or entry not in unique:
            unique.append(entry)
    return unique


def _skill_spec(value: object, inverse: bool) -> list[str] | tuple[str | None, str | None, int | None, int | None]:
    """The value of `skill-used`: names, or (name, pattern, min, max)."""
    if isinstance(value, str) and value.strip():
        return [value.strip()]
    if isinstance(value, list) and value and all(isinstance(v, str) and v.strip() for v in value):
        return [v.strip() for v in value]
    if not isinstance(value, dict):
        raise ValueError("skill-used needs a skill name, a list of names, or {name | pattern, min, max}")
    _known(value, {"name", "pattern", "min", "max"})
    name, pattern = _text_of(value.get("name")), _text_of(value.get("pattern"))
    if not name and not pattern:
        raise ValueError("give a `name` or `pattern`")
    low, high = _count(value, "min"), _count(value, "max")
    if low is not None and high is not None and high < low:
        raise ValueError("`max` must be at least `min`")
    if inverse and (low is not None or high not in (None, 0)):
        raise ValueError("not-skill-used takes a name or pattern with no count bounds, or `max: 0`")
    return (name, pattern, low, high)


@assertion_type
class SkillUsed(_AgentvInverse):
    """AgentV v5's `skill-used` / `not-skill-used` (the module docstring).

    Example: `{type: skill-used, value: csv-analyzer}`."""

    type: Literal["skill-used", "not-skill-used"]
    value: object = Field(None, validate_default=True)

    @property
    def negated(self) -> bool:
        """AgentV keeps `negate` on a skill-used grader: its orchestrator negates the result
        (`negateScore`) after the grader's own inverse rule, so `negate: true` inverts twice."""
        return self.negate

    @field_validator("value")
    @classmethod
    def _readable(cls, value: object, info: ValidationInfo) -> object:
        _skill_spec(value, inverse=str(info.data.get("type", "")).startswith("not-") or info.data.get("negate", False))
        return value

    def _spec(self, value: object) -> list[str] | tuple[str | None, str | None, int | None, int | None]:
        return _skill_spec(value, self.inverse)

    async def grade(self, ctx: GradeContext) -> Grade:
        spec = self._spec(substitute_deep(self.value, ctx.variables))
        skills = skill_calls(calls_in(ctx))
        actual = ", ".join(s.shown for s in skills) or "(none)"
        if isinstance(spec, list):
            matched = [n for n in spec if any(s.name == n for s in skills)]
            missing = [n for n in spec if n not in matched]
            if self.inverse:
                if matched:
                    return _graded(
                        False, f"Forbidden skill(s) were used: {', '.join(matched)}. Actual skills: {actual}"
                    )
                return _graded(True, f"Forbidden skill(s) were not used: {', '.join(spec)}")
            if missing:
                return _graded(False, f"Missing required skill(s): {', '.join(missing)}. Actual skills: {actual}")
            return _graded(True, f"Observed required skill(s): {', '.join(spec)}. Actual skills: {actual}")
        name, pattern, low, high = spec
        found = [s for s in skills if (not name or s.name == name) and (not pattern or glob(pattern).match(s.name))]
        label = pattern or name or "*"
        matches = ", ".join(s.shown for s in found)
        if self.inverse:
            if found:
                return _graded(False, f'Forbidden skill "{label}" was used {len(found)} time(s). Matches: {matches}')
            return _graded(True, f'Forbidden skill "{label}" was not used. Actual skills: {actual}')
        least = low if low is not None else (0 if high is not None else 1)
        met = len(found) >= least and (high is None or len(found) <= high)
        bounds = f"at least {least}" if high is None else f"{least}-{high}"
        text = f'Matched skill "{label}" {len(found)} time(s) (expected {bounds})'
        return _graded(met, text + (f". Matches: {matches}" if found else ""))
