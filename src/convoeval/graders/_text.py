"""Text assertion types: substrings, prefix/suffix, equality and regular expressions.

Names follow promptfoo, including its `not-` variants (`not-icontains`, `not-regex`, ...),
which pass when the positive check fails. At turn level a check looks at this reply; at
conversation level at all target replies joined, so `contains` means "somewhere in the
conversation" and `not-contains` "nowhere in it".

String values may use captured variables as `{{ name }}`; in `regex` a variable's value is
inserted escaped, i.e. matched literally.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AliasChoices, BeforeValidator, Field, ValidationInfo, field_validator

from .. import _regex
from .._json_in_text import NoJson, parse_json
from .._secrets import redact
from ..results import AssertionOutcome
from ._base import GradeContext, GraderError, assertion_type
from ._check import Check, blank_template_refs, noun, quote, substitute, substitute_deep, substitute_regex
from ._json import json_equal, short_json


def _scalar_to_str(value: object) -> object:
    """YAML `value: 42` means the text "42"."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    return value


def _split_list(value: object) -> object:
    """promptfoo accepts `value: "a, b, c"` for the -any/-all types."""
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    if isinstance(value, list):
        return [_scalar_to_str(v) for v in value]
    return _scalar_to_str(value)


NonEmptyText = Annotated[str, BeforeValidator(_scalar_to_str), Field(min_length=1)]
TextList = Annotated[list[Annotated[str, Field(min_length=1)]], BeforeValidator(_split_list), Field(min_length=1)]


def _find(haystack: str, needle: str, ignore_case: bool) -> int:
    if ignore_case:
        return haystack.lower().find(needle.lower())
    return haystack.find(needle)


def _contains_outcome(ctx: GradeContext, needle: str, ignore_case: bool) -> AssertionOutcome:
    at = _find(ctx.output, needle, ignore_case)
    return AssertionOutcome(
        text=f"contains {quote(needle)}" + (" (ignoring case)" if ignore_case else ""),
        passed=at >= 0,
        evidence=(f"found at char {at}" if at >= 0 else f"not found in {len(ctx.output)}-char {noun(ctx)}"),
    )


# -- substrings ---------------------------------------------------------------------------


@assertion_type
class Contains(Check):
    """The reply contains a substring (`icontains`: ignoring case; `not-`: does not contain it).

    Example: `{type: icontains, value: "paris"}`
    """

    type: Literal["contains", "icontains", "not-contains", "not-icontains"]
    value: NonEmptyText = Field(description="The substring to look for; may use captured variables as {{ name }}.")

    def check(self, ctx: GradeContext) -> tuple[bool, list[AssertionOutcome]]:
        outcome = _contains_outcome(ctx, substitute(self.value, ctx.variables), self.positive_type.startswith("i"))
        return outcome.passed, [outcome]


@assertion_type
class ContainsSet(Check):
    """The reply contains any (`-any`) or all (`-all`) of several substrings.

    `icontains-*` ignore case; `not-contains-any` passes when none is present and
    `not-contains-all` when at least one is missing.

    Example: `{type: contains-all, value: [flight, hotel]}` or `value: "flight, hotel"`
    """

    type: Literal[
        "contains-any",
        "contains-all",
        "icontains-any",
        "icontains-all",
        "not-contains-any",
        "not-contains-all",
        "not-icontains-any",
        "not-icontains-all",
    ]
    value: TextList = Field(
        description="The substrings: a list, or one comma-separated string (promptfoo style; "
        "use a list when a substring contains a comma)."
    )

    def check(self, ctx: GradeContext) -> tuple[bool, list[AssertionOutcome]]:
        ignore_case = self.positive_type.startswith("i")
        outcomes = [_contains_outcome(ctx, substitute(v, ctx.variables), ignore_case) for v in self.value]
        hits = [o.passed for o in outcomes]
        return (all(hits) if self.type.endswith("-all") else any(hits)), outcomes


# -- prefix, suffix, equality -------------------------------------------------------------

_TRIM_DESCRIPTION = (
    "Strip surrounding whitespace from the reply and the value before comparing "
    "(default: compare exactly, as promptfoo does)."
)


@assertion_type
class StartsWith(Check):
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
            f"the {noun(ctx)} starts with it"
            if passed
            else f"the {noun(ctx)} starts with {quote(text, min(len(prefix) + 11, 70))}"
        )
        return passed, [AssertionOutcome(text=f"starts with {quote(prefix)}", passed=passed, evidence=evidence)]


@assertion_type
class EndsWith(Check):
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
        evidence = f"the {noun(ctx)} ends with it"
        if not passed:
            tail = redact(text)[-(len(suffix) + 10) :]  # redacted before the cut, which no redaction finds
            evidence = f"the {noun(ctx)} ends with {quote(tail if len(tail) <= 70 else '…' + tail[-69:], 70)}"
        return passed, [AssertionOutcome(text=f"ends with {quote(suffix)}", passed=passed, evidence=evidence)]


@assertion_type
class Equals(Check):
    """The reply equals a value.

    A string value is compared exactly (set `trim: true` to ignore surrounding whitespace).
    Any other value (number, boolean, null, mapping, list) is compared as JSON: the reply must
    parse as JSON equal to it (`1` equals `1.0`, key order does not matter).
    """

    type: Literal["equals", "not-equals"]
    value: object = Field(
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
            f"the {noun(ctx)} parses to an equal JSON value"
            if passed
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
                (k for k, (a, b) in enumerate(zip(actual, expected, strict=False)) if a != b),
                min(len(actual), len(expected)),
            )
            evidence = f"the {noun(ctx)} is {quote(actual, 80)} ({len(actual)} chars); first difference at char {first}"
            if not self.trim and actual.strip() == expected.strip():
                evidence += "; they differ only in surrounding whitespace (set `trim: true`)"
        return passed, [AssertionOutcome(text=f"equals {quote(expected)}", passed=passed, evidence=evidence)]


# -- regex --------------------------------------------------------------------------------

#: Seconds a regex search may take: a pattern that backtracks catastrophically (`^(a+)+$`)
#: is stopped and becomes a grader error naming it, instead of hanging the run.
REGEX_TIMEOUT_S = _regex.REGEX_TIMEOUT_S


@assertion_type
class Regex(Check):
    """The reply matches a regular expression (Python syntax, searched anywhere in the reply
    with the `regex` module and a time bound: a search over `timeout_s` is a grader error).

    Example: `{type: regex, value: "^Booking ref: [A-Z0-9]{6}$", flags: "m"}`
    """

    type: Literal["regex", "not-regex"]
    flags: str = Field(
        "",
        description="Flag letters: i (ignore case), m (multiline ^ $), s (dot matches "
        "newline), x (verbose), a (ASCII); g is accepted and ignored.",
    )
    timeout_s: float = Field(
        REGEX_TIMEOUT_S, gt=0, le=600, description="Seconds the search may take before it is a grader error."
    )
    value: str = Field(
        validation_alias=AliasChoices("value", "pattern"),
        description="The regular expression (Python syntax). Captured variables {{ name }} "
        "are inserted escaped, i.e. matched literally.",
    )

    @field_validator("flags")
    @classmethod
    def _check_flags(cls, flags: str) -> str:
        unknown = sorted({c for c in flags if c not in _regex.FLAG_LETTERS})
        if unknown:
            raise ValueError(f"unknown regex flag(s) {''.join(unknown)!r}; use i, m, s, x, a")
        return flags

    @field_validator("value")
    @classmethod
    def _check_regex(cls, source: str, info: ValidationInfo) -> str:
        if not source:
            raise ValueError("the regular expression must not be empty")
        try:
            _regex.compile_pattern(blank_template_refs(source), _regex.flag_bits(info.data.get("flags") or ""))
        except _regex.PatternError as exc:
            raise ValueError(f"invalid regular expression {source!r}: {exc}") from None
        return source

    def check(self, ctx: GradeContext) -> tuple[bool, list[AssertionOutcome]]:
        source = substitute_regex(self.value, ctx.variables)
        try:
            compiled = _regex.compile_pattern(source, _regex.flag_bits(self.flags))
        except _regex.PatternError as exc:  # only possible after substitution
            raise GraderError(f"regular expression {source!r} is invalid: {exc}") from None
        shown = _regex.shown(source, self.flags)
        try:
            match = _regex.search(
                compiled, ctx.output, field="regular expression", timeout_s=self.timeout_s, what=noun(ctx)
            )
        except _regex.RegexTimeout as exc:
            raise GraderError(str(exc)) from None
        if match:
            evidence = f"matched {quote(match.group(0))} at char {match.start()}"
        else:
            evidence = f"no match in {len(ctx.output)}-char {noun(ctx)}"
        return bool(match), [AssertionOutcome(text=f"matches {shown}", passed=bool(match), evidence=evidence)]
