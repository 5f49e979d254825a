"""Deterministic assertion types: text, regex, JSON, latency, token usage and cost checks.

Every check here is pass/fail: the score is 1.0 or 0.0 and the outcomes say exactly what was
looked for and what was found. Names follow promptfoo, including its `not-` variants
(`not-icontains`, `not-regex`, ...), which pass when the positive check fails.

Levels: at turn level a check looks at this reply. At conversation level (`ctx.output` is
all target replies joined):

- text checks (`contains`, `regex`, `equals`, ...) look at the joined text, so `contains`
  means "somewhere in the conversation" and `not-contains` "nowhere in it";
- per-reply checks (`is-json`, `json-schema`, `jsonpath`, `latency`) must hold for every
  target reply, with one outcome per reply;
- `token-usage` and `cost` check the conversation totals.

String values may use captured variables as `{{ name }}`; in `regex` a variable's value is
inserted escaped, i.e. matched literally.
"""

from __future__ import annotations

from abc import abstractmethod

import math
import re
from typing import Annotated, Any, Literal

import jsonschema
from jsonpath_ng.ext import parse as parse_jsonpath
from pydantic import (
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

from ..results import AssertionOutcome, Usage
from ._base import Assertion, Grade, GradeContext, GraderError, assertion_type
from ._text import (
    NoJson,
    blank_template_refs,
    describe_json,
    has_template_refs,
    json_equal,
    noun,
    parse_json,
    quote,
    replies,
    short_json,
    substitute,
    substitute_deep,
)


def _scalar_to_str(value: Any) -> Any:
    """YAML `value: 42` means the text "42"."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    return value


def _split_list(value: Any) -> Any:
    """promptfoo accepts `value: "a, b, c"` for the -any/-all types."""
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    if isinstance(value, list):
        return [_scalar_to_str(v) for v in value]
    return _scalar_to_str(value)


NonEmptyText = Annotated[str, BeforeValidator(_scalar_to_str), Field(min_length=1)]
TextList = Annotated[
    list[Annotated[str, Field(min_length=1)]], BeforeValidator(_split_list), Field(min_length=1)
]


def _invert(outcome: AssertionOutcome) -> AssertionOutcome:
    return AssertionOutcome(
        text=f"NOT {outcome.text}", passed=not outcome.passed, evidence=outcome.evidence
    )


class _BinaryCheck(Assertion):
    """A pass/fail check; a `not-` type name inverts it."""

    @abstractmethod
    def check(self, ctx: GradeContext) -> tuple[bool, list[AssertionOutcome]]:
        """Whether the check holds, and the outcomes that show it."""

    async def grade(self, ctx: GradeContext) -> Grade:
        passed, outcomes = self.check(ctx)
        if self.type.startswith("not-"):
            passed = not passed
            outcomes = [_invert(o) for o in outcomes]
        return Grade(score=1.0 if passed else 0.0, assertions=outcomes)


def _find(haystack: str, needle: str, ignore_case: bool) -> int:
    if ignore_case:
        return haystack.lower().find(needle.lower())
    return haystack.find(needle)


def _contains_outcome(ctx: GradeContext, needle: str, ignore_case: bool) -> AssertionOutcome:
    at = _find(ctx.output, needle, ignore_case)
    return AssertionOutcome(
        text=f"contains {quote(needle)}" + (" (ignoring case)" if ignore_case else ""),
        passed=at >= 0,
        evidence=(
            f"found at char {at}" if at >= 0
            else f"not found in {len(ctx.output)}-char {noun(ctx)}"
        ),
    )


def _ignores_case(type_name: str) -> bool:
    return type_name.removeprefix("not-").startswith("i")


# -- substrings ---------------------------------------------------------------------------


@assertion_type
class Contains(_BinaryCheck):
    """The reply contains a substring (`icontains`: ignoring case; `not-`: does not contain it).

    Example: `{type: icontains, value: "paris"}`
    """

    type: Literal["contains", "icontains", "not-contains", "not-icontains"]
    value: NonEmptyText = Field(
        description="The substring to look for; may use captured variables as {{ name }}."
    )

    def check(self, ctx: GradeContext) -> tuple[bool, list[AssertionOutcome]]:
        outcome = _contains_outcome(
            ctx, substitute(self.value, ctx.variables), _ignores_case(self.type)
        )
        return outcome.passed, [outcome]


@assertion_type
class ContainsSet(_BinaryCheck):
    """The reply contains any (`-any`) or all (`-all`) of several substrings.

    `icontains-*` ignore case; `not-contains-any` passes when none is present and
    `not-contains-all` when at least one is missing.

    Example: `{type: contains-all, value: [flight, hotel]}` or `value: "flight, hotel"`
    """

    type: Literal[
        "contains-any", "contains-all", "icontains-any", "icontains-all",
        "not-contains-any", "not-contains-all", "not-icontains-any", "not-icontains-all",
    ]
    value: TextList = Field(
        description="The substrings: a list, or one comma-separated string (promptfoo style; "
        "use a list when a substring contains a comma)."
    )

    def check(self, ctx: GradeContext) -> tuple[bool, list[AssertionOutcome]]:
        ignore_case = _ignores_case(self.type)
        outcomes = [
            _contains_outcome(ctx, substitute(v, ctx.variables), ignore_case) for v in self.value
        ]
        hits = [o.passed for o in outcomes]
        return (all(hits) if self.type.endswith("-all") else any(hits)), outcomes


# -- prefix, suffix, equality -------------------------------------------------------------

_TRIM_DESCRIPTION = (
    "Strip surrounding whitespace from the reply and the value before comparing "
    "(default: compare exactly, as promptfoo does)."
)


@assertion_type
class StartsWith(_BinaryCheck):
    """The reply starts with a prefix (exactly; set `trim` to ignore leading whitespace).

    At conversation level the joined text is checked, i.e. the first reply.
    """

    type: Literal["starts-with", "not-starts-with"]
    value: NonEmptyText = Field(description="The prefix; may use {{ name }} variables.")
    trim: bool = Field(False, description=_TRIM_DESCRIPTION)

    def check(self, ctx: GradeContext) -> tuple[bool, list[AssertionOutcome]]:
        prefix = substitute(self.value, ctx.variables)
        text = ctx.output
        if self.trim:
            prefix, text = prefix.strip(), text.strip()
        passed = text.startswith(prefix)
        evidence = (
            f"the {noun(ctx)} starts with it" if passed
            else f"the {noun(ctx)} starts with {quote(text[: len(prefix) + 10], 70)}"
        )
        return passed, [AssertionOutcome(text=f"starts with {quote(prefix)}", passed=passed, evidence=evidence)]


@assertion_type
class EndsWith(_BinaryCheck):
    """The reply ends with a suffix (exactly; set `trim` to ignore trailing whitespace).

    At conversation level the joined text is checked, i.e. the last reply.
    """

    type: Literal["ends-with", "not-ends-with"]
    value: NonEmptyText = Field(description="The suffix; may use {{ name }} variables.")
    trim: bool = Field(False, description=_TRIM_DESCRIPTION)

    def check(self, ctx: GradeContext) -> tuple[bool, list[AssertionOutcome]]:
        suffix = substitute(self.value, ctx.variables)
        text = ctx.output
        if self.trim:
            suffix, text = suffix.strip(), text.strip()
        passed = text.endswith(suffix)
        tail = text[-(len(suffix) + 10):]
        evidence = (
            f"the {noun(ctx)} ends with it" if passed
            else f"the {noun(ctx)} ends with {quote(tail if len(tail) <= 70 else '…' + tail[-69:], 70)}"
        )
        return passed, [AssertionOutcome(text=f"ends with {quote(suffix)}", passed=passed, evidence=evidence)]


@assertion_type
class Equals(_BinaryCheck):
    """The reply equals a value.

    A string value is compared exactly (set `trim: true` to ignore surrounding whitespace).
    Any other value (number, boolean, null, mapping, list) is compared as JSON: the reply must
    parse as JSON equal to it (`1` equals `1.0`, key order does not matter).
    """

    type: Literal["equals", "not-equals"]
    value: Any = Field(
        description="The expected reply: a string (text comparison) or a JSON value; "
        "strings may use {{ name }} variables."
    )
    trim: bool = Field(False, description=_TRIM_DESCRIPTION + " Text comparison only.")

    def check(self, ctx: GradeContext) -> tuple[bool, list[AssertionOutcome]]:
        expected = substitute_deep(self.value, ctx.variables)
        if isinstance(expected, str):
            return self._check_text(ctx, expected)
        text = f"equals the JSON value {short_json(expected, 60)}"
        try:
            found = parse_json(ctx.output)
        except NoJson as exc:
            return False, [AssertionOutcome(text=text, passed=False, evidence=f"the {noun(ctx)} is not JSON: {exc}")]
        passed = json_equal(found.value, expected)
        evidence = (
            f"the {noun(ctx)} parses to an equal JSON value" if passed
            else f"the {noun(ctx)} is {short_json(found.value)}"
        )
        return passed, [AssertionOutcome(text=text, passed=passed, evidence=evidence)]

    def _check_text(self, ctx: GradeContext, expected: str) -> tuple[bool, list[AssertionOutcome]]:
        actual = ctx.output
        if self.trim:
            actual, expected = actual.strip(), expected.strip()
        passed = actual == expected
        if passed:
            evidence = f"exact match ({len(actual)} chars)"
        else:
            first = next(
                (k for k, (a, b) in enumerate(zip(actual, expected)) if a != b),
                min(len(actual), len(expected)),
            )
            evidence = (
                f"the {noun(ctx)} is {quote(actual, 80)} ({len(actual)} chars); "
                f"first difference at char {first}"
            )
            if not self.trim and actual.strip() == expected.strip():
                evidence += "; they differ only in surrounding whitespace (set `trim: true`)"
        return passed, [AssertionOutcome(text=f"equals {quote(expected)}", passed=passed, evidence=evidence)]


# -- regex --------------------------------------------------------------------------------

_REGEX_FLAGS = {
    "i": re.IGNORECASE, "m": re.MULTILINE, "s": re.DOTALL, "x": re.VERBOSE,
    "a": re.ASCII, "u": re.UNICODE, "g": 0,  # g: JavaScript habit; a search stops at the first match anyway
}


def _flag_bits(flags: str) -> int:
    bits = 0
    for c in flags:
        bits |= _REGEX_FLAGS.get(c, 0)
    return bits


@assertion_type
class Regex(_BinaryCheck):
    """The reply matches a regular expression (Python `re.search`: anywhere in the reply).

    Example: `{type: regex, value: "^Booking ref: [A-Z0-9]{6}$", flags: "m"}`
    """

    type: Literal["regex", "not-regex"]
    flags: str = Field(
        "",
        description="Flag letters: i (ignore case), m (multiline ^ $), s (dot matches "
        "newline), x (verbose), a (ASCII); g is accepted and ignored.",
    )
    value: str | None = Field(
        None,
        description="The regular expression (Python syntax). Captured variables {{ name }} "
        "are inserted escaped, i.e. matched literally.",
    )
    pattern: str | None = Field(None, description="Same as `value`; give one of them.")

    @field_validator("flags")
    @classmethod
    def _check_flags(cls, flags: str) -> str:
        unknown = sorted({c for c in flags if c not in _REGEX_FLAGS})
        if unknown:
            raise ValueError(f"unknown regex flag(s) {''.join(unknown)!r}; use i, m, s, x, a")
        return flags

    @field_validator("value", "pattern")
    @classmethod
    def _check_regex(cls, source: str | None, info: ValidationInfo) -> str | None:
        if source is None:
            return None
        if not source:
            raise ValueError("the regular expression must not be empty")
        try:
            re.compile(blank_template_refs(source), _flag_bits(info.data.get("flags") or ""))
        except re.error as exc:
            raise ValueError(f"invalid regular expression {source!r}: {exc}") from None
        return source

    @model_validator(mode="after")
    def _check_one(self) -> Regex:
        if (self.value is None) == (self.pattern is None):
            raise ValueError("give the regular expression as `value` or `pattern` (exactly one)")
        return self

    @property
    def regex_source(self) -> str:
        return self.value if self.value is not None else self.pattern or ""

    @property
    def flag_bits(self) -> int:
        return _flag_bits(self.flags)

    def check(self, ctx: GradeContext) -> tuple[bool, list[AssertionOutcome]]:
        source = substitute(
            self.regex_source, {k: re.escape(str(v)) for k, v in ctx.variables.items()}
        )
        try:
            compiled = re.compile(source, self.flag_bits)
        except re.error as exc:  # only possible after substitution
            raise GraderError(f"regular expression {source!r} is invalid: {exc}") from None
        match = compiled.search(ctx.output)
        shown = f"/{source}/{self.flags}" if len(source) <= 60 else f"/{source[:59]}…/{self.flags}"
        if match:
            evidence = f"matched {quote(match.group(0))} at char {match.start()}"
        else:
            evidence = f"no match in {len(ctx.output)}-char {noun(ctx)}"
        return bool(match), [AssertionOutcome(text=f"matches {shown}", passed=bool(match), evidence=evidence)]


# -- JSON ---------------------------------------------------------------------------------


def _check_schema(schema: dict[str, Any] | None) -> dict[str, Any] | None:
    if schema is None:
        return None
    try:
        jsonschema.validators.validator_for(schema).check_schema(schema)
    except jsonschema.SchemaError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "(root)"
        raise ValueError(f"invalid JSON Schema at {where}: {exc.message}") from None
    return schema


def _schema_errors(schema: dict[str, Any], value: Any) -> list[str]:
    validator_cls = jsonschema.validators.validator_for(schema)
    validator = validator_cls(schema, format_checker=validator_cls.FORMAT_CHECKER)
    errors = sorted(validator.iter_errors(value), key=lambda e: [str(p) for p in e.absolute_path])
    return [f"{e.json_path}: {e.message}" for e in errors]


_FENCED_DESCRIPTION = (
    "Also accept a reply whose JSON is inside a ```json fenced block "
    "(default: the whole reply must be JSON, as in promptfoo)."
)
_SCHEMA_DESCRIPTION = "A JSON Schema (inline mapping) the JSON must validate against."


class _JsonCheck(_BinaryCheck):
    model_config = ConfigDict(extra="forbid", validate_by_name=True, validate_by_alias=True)

    allow_fenced: bool = Field(False, description=_FENCED_DESCRIPTION)

    def _schema(self) -> dict[str, Any] | None:  # pragma: no cover - overridden
        return None

    def check(self, ctx: GradeContext) -> tuple[bool, list[AssertionOutcome]]:
        schema = self._schema()
        outcomes = []
        for reply in replies(ctx):
            label = "is JSON matching the schema" if schema is not None else "is valid JSON"
            text = label + reply.suffix()
            try:
                found = parse_json(reply.text, fenced=self.allow_fenced)
            except NoJson as exc:
                outcomes.append(AssertionOutcome(text=text, passed=False, evidence=f"not JSON: {exc}"))
                continue
            parsed = f"parsed {describe_json(found.value)}"
            if found.where != "the whole reply":
                parsed += f" from {found.where}"
            errors = _schema_errors(schema, found.value) if schema is not None else []
            if errors:
                more = f" (and {len(errors) - 3} more)" if len(errors) > 3 else ""
                evidence = f"{parsed}; schema violations: {'; '.join(errors[:3])}{more}"
            else:
                evidence = parsed + ("; valid against the schema" if schema is not None else "")
            outcomes.append(AssertionOutcome(text=text, passed=not errors, evidence=evidence))
        return all(o.passed for o in outcomes), outcomes


@assertion_type
class IsJson(_JsonCheck):
    """The reply is valid JSON, optionally matching a JSON Schema.

    At conversation level every target reply must be.
    """

    type: Literal["is-json", "not-is-json"]
    json_schema: dict[str, Any] | None = Field(None, alias="schema", description=_SCHEMA_DESCRIPTION)

    @field_validator("json_schema")
    @classmethod
    def _validate_schema(cls, schema: dict[str, Any] | None) -> dict[str, Any] | None:
        return _check_schema(schema)

    def _schema(self) -> dict[str, Any] | None:
        return self.json_schema


@assertion_type
class JsonSchema(_JsonCheck):
    """The reply is JSON that validates against a JSON Schema (checked with `jsonschema`).

    At conversation level every target reply must.

    Example: `{type: json-schema, schema: {type: object, required: [city]}}`
    """

    type: Literal["json-schema"]
    json_schema: dict[str, Any] = Field(alias="schema", description=_SCHEMA_DESCRIPTION)

    @field_validator("json_schema")
    @classmethod
    def _validate_schema(cls, schema: dict[str, Any] | None) -> dict[str, Any] | None:
        return _check_schema(schema)

    def _schema(self) -> dict[str, Any] | None:
        return self.json_schema


@assertion_type
class JsonPath(_BinaryCheck):
    """A JSONPath matches the JSON in the reply, and its first match equals `value` if given.

    The JSON is the whole reply, else a ```json fenced block, else the first JSON object or
    array in the text. Paths use jsonpath-ng's extended syntax (filters like
    `$.items[?(@.id == 3)]`). At conversation level every target reply must match.

    Example: `{type: jsonpath, path: "$.booking.status", value: confirmed}`
    """

    type: Literal["jsonpath"]
    path: str = Field(description="The JSONPath, e.g. `$.flights[0].price`; may use {{ name }}.")
    value: Any = Field(
        None,
        description="The value the first match must equal (compared as JSON: 1 == 1.0, "
        "'42' != 42). Without it the path only has to match.",
    )
    expected: Any = Field(None, description="Same as `value`; give at most one of them.")

    @field_validator("path")
    @classmethod
    def _check_path(cls, path: str) -> str:
        if not path.strip():
            raise ValueError("the JSONPath must not be empty")
        if not has_template_refs(path):  # with variables it is checked once they are known
            _compile_path(path, ValueError)
        return path

    @model_validator(mode="after")
    def _check_expected(self) -> JsonPath:
        if {"value", "expected"} <= self.model_fields_set:
            raise ValueError("give the expected value as `value` or `expected`, not both")
        return self

    def check(self, ctx: GradeContext) -> tuple[bool, list[AssertionOutcome]]:
        path = substitute(self.path, ctx.variables)
        compiled = _compile_path(path, GraderError)
        has_expected = bool({"value", "expected"} & self.model_fields_set)
        expected = substitute_deep(
            self.value if "value" in self.model_fields_set else self.expected, ctx.variables
        )
        label = f"{path} == {short_json(expected, 60)}" if has_expected else f"{path} matches"
        outcomes = []
        for reply in replies(ctx):
            passed, evidence = self._check_reply(reply.text, compiled, path, has_expected, expected)
            outcomes.append(AssertionOutcome(text=label + reply.suffix(), passed=passed, evidence=evidence))
        return all(o.passed for o in outcomes), outcomes

    @staticmethod
    def _check_reply(
        text: str, compiled: Any, path: str, has_expected: bool, expected: Any
    ) -> tuple[bool, str]:
        try:
            found = parse_json(text, fenced=True, embedded=True)
        except NoJson:
            return False, f"no JSON in the {len(text)}-char reply"
        try:
            matches = [m.value for m in compiled.find(found.value)]
        except Exception as exc:  # jsonpath-ng raises plain exceptions on odd data
            raise GraderError(f"JSONPath {path!r} failed on the reply's JSON: {exc}") from None
        source = "" if found.where == "the whole reply" else f" (JSON from {found.where})"
        if not matches:
            return False, f"no match in {describe_json(found.value)}{source}"
        count = f"first of {len(matches)} matches" if len(matches) > 1 else "the match"
        if not has_expected:
            return True, f"{count}: {short_json(matches[0])}{source}"
        return json_equal(matches[0], expected), f"{count} is {short_json(matches[0])}{source}"


def _compile_path(path: str, error: type[Exception]) -> Any:
    try:
        return parse_jsonpath(path)
    except Exception as exc:  # jsonpath-ng: JsonPathLexerError, JsonPathParserError, Exception
        raise error(f"invalid JSONPath {path!r}: {exc}") from None


# -- latency, tokens, cost ----------------------------------------------------------------


def _exactly_one(model: Assertion, names: tuple[str, ...], what: str) -> float:
    given = [n for n in names if getattr(model, n) is not None]
    if len(given) != 1:
        options = ", ".join(f"`{n}`" for n in names)
        raise ValueError(f"give the {what} as exactly one of {options}")
    return float(getattr(model, given[0]))


def _as_number(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        raise GraderError(f"{what} is {value!r}, not a number")
    return float(value)


@assertion_type
class Latency(_BinaryCheck):
    """The reply came within a time limit (the target's measured latency).

    At conversation level every turn must (from the run's per-turn latencies). A reply served
    from the cache without a recorded latency cannot be checked: that is an error, not a pass.
    """

    type: Literal["latency"]
    threshold_ms: float | None = Field(None, ge=0, description="Maximum latency in milliseconds.")
    max_ms: float | None = Field(None, ge=0, description="Same as `threshold_ms`.")
    threshold: float | None = Field(None, ge=0, description="Same as `threshold_ms` (promptfoo's name).")

    @model_validator(mode="after")
    def _check_limit(self) -> Latency:
        _exactly_one(self, ("threshold_ms", "max_ms", "threshold"), "latency limit")
        return self

    @property
    def limit_ms(self) -> float:
        return _exactly_one(self, ("threshold_ms", "max_ms", "threshold"), "latency limit")

    def check(self, ctx: GradeContext) -> tuple[bool, list[AssertionOutcome]]:
        limit = self.limit_ms
        if ctx.reply is not None:
            if ctx.reply.cached and not ctx.reply.latency_ms:
                raise GraderError(
                    "the reply came from the cache and has no recorded latency; "
                    "run without the cache to check latency"
                )
            measured = [("", _as_number(ctx.reply.latency_ms, "the reply's latency"))]
        elif ctx.level == "conversation" and ctx.extra.get("latencies_ms") is not None:
            latencies = list(ctx.extra["latencies_ms"])
            if not latencies:
                raise GraderError("the conversation has no measured turn latencies")
            measured = [
                (f"turn {k}", _as_number(v, f"turn {k}'s latency"))
                for k, v in enumerate(latencies, start=1)
            ]
        else:
            raise GraderError(
                "no latency was measured for this "
                + ("reply" if ctx.level == "turn" else "conversation")
            )
        outcomes = [
            AssertionOutcome(
                text=f"latency <= {limit:g} ms" + (f" ({label})" if label else ""),
                passed=value <= limit,
                evidence=f"{value:.0f} ms",
            )
            for label, value in measured
        ]
        return all(o.passed for o in outcomes), outcomes


@assertion_type
class TokenUsage(_BinaryCheck):
    """The target's token usage stays within limits (this reply, or the whole conversation).

    A target that reports no token usage cannot be checked: that is an error, not a pass.

    Example: `{type: token-usage, max_tokens: 2000, max_output_tokens: 500}`
    """

    type: Literal["token-usage"]
    max_tokens: int | None = Field(None, ge=0, description="Maximum input + output tokens.")
    max_input_tokens: int | None = Field(None, ge=0, description="Maximum input (prompt) tokens.")
    max_output_tokens: int | None = Field(None, ge=0, description="Maximum output (completion) tokens.")

    @model_validator(mode="after")
    def _check_limits(self) -> TokenUsage:
        if self.max_tokens is None and self.max_input_tokens is None and self.max_output_tokens is None:
            raise ValueError("give at least one of `max_tokens`, `max_input_tokens`, `max_output_tokens`")
        return self

    def check(self, ctx: GradeContext) -> tuple[bool, list[AssertionOutcome]]:
        if ctx.reply is not None:
            usage = ctx.reply.usage
        elif ctx.level == "conversation" and ctx.extra.get("usage") is not None:
            raw = ctx.extra["usage"]
            try:
                usage = raw if isinstance(raw, Usage) else Usage.model_validate(raw)
            except ValueError as exc:
                raise GraderError(f"the conversation's token usage is unreadable: {exc}") from None
        else:
            raise GraderError(
                "no token usage was recorded for this "
                + ("reply" if ctx.level == "turn" else "conversation")
            )
        if usage.total_tokens == 0:
            raise GraderError("the target reported no token usage, so token-usage cannot be checked")
        scope = "" if ctx.level == "turn" else " (conversation total)"
        checks = [
            ("total tokens", self.max_tokens, usage.total_tokens,
             f"{usage.total_tokens} ({usage.input_tokens} input + {usage.output_tokens} output)"),
            ("input tokens", self.max_input_tokens, usage.input_tokens, str(usage.input_tokens)),
            ("output tokens", self.max_output_tokens, usage.output_tokens, str(usage.output_tokens)),
        ]
        outcomes = [
            AssertionOutcome(text=f"{name} <= {limit}{scope}", passed=used <= limit, evidence=evidence)
            for name, limit, used, evidence in checks
            if limit is not None
        ]
        return all(o.passed for o in outcomes), outcomes


@assertion_type
class Cost(_BinaryCheck):
    """The target's cost in USD stays within a limit (this reply, or the whole conversation).

    Cost comes from the target's prices (`price_input_per_mtok`, `price_output_per_mtok`); a
    target without prices reports $0.
    """

    type: Literal["cost"]
    max_usd: float | None = Field(None, ge=0, description="Maximum cost in US dollars.")
    threshold: float | None = Field(None, ge=0, description="Same as `max_usd` (promptfoo's name).")

    @model_validator(mode="after")
    def _check_limit(self) -> Cost:
        _exactly_one(self, ("max_usd", "threshold"), "cost limit")
        return self

    def check(self, ctx: GradeContext) -> tuple[bool, list[AssertionOutcome]]:
        limit = _exactly_one(self, ("max_usd", "threshold"), "cost limit")
        if ctx.reply is not None:
            cost = _as_number(ctx.reply.cost_usd, "the reply's cost")
        elif ctx.level == "conversation" and ctx.extra.get("cost_usd") is not None:
            cost = _as_number(ctx.extra["cost_usd"], "the conversation's cost")
        else:
            raise GraderError(
                "no cost was recorded for this "
                + ("reply" if ctx.level == "turn" else "conversation")
            )
        evidence = f"${cost:.6f}"
        if cost == 0:
            evidence += " (the target reported no cost; set its prices to measure it)"
        scope = "" if ctx.level == "turn" else " (conversation total)"
        return cost <= limit, [
            AssertionOutcome(text=f"cost <= ${limit:g}{scope}", passed=cost <= limit, evidence=evidence)
        ]
