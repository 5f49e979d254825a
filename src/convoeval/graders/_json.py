"""JSON assertion types (`is-json`, `json-schema`, `jsonpath`) and how JSON values compare and show.

These check every target reply on its own: at conversation level each reply must hold, with
one outcome per reply.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from functools import cache
from typing import Any, Literal, Protocol

from pydantic import AliasChoices, ConfigDict, Field, field_validator

from .. import _regex
from .._json_in_text import NoJson, parse_json
from .._jsonpath import parse_jsonpath
from .._text import shorten
from ..results import AssertionOutcome
from ._base import GradeContext, GraderError, assertion_type
from ._check import Check, has_template_refs, replies, substitute, substitute_deep


def describe_json(value: object) -> str:
    """'a JSON object with 3 keys', 'a JSON array of 2 items', 'the JSON number 42'."""
    if isinstance(value, dict):
        return f"a JSON object with {len(value)} key{'s' if len(value) != 1 else ''}"
    if isinstance(value, list):
        return f"a JSON array of {len(value)} item{'s' if len(value) != 1 else ''}"
    return f"the JSON {type_name(value)} {short_json(value)}"


def type_name(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def short_json(value: object, limit: int = 80) -> str:
    return shorten(json.dumps(value, ensure_ascii=False, default=str), limit)


def json_equal(a: object, b: object) -> bool:
    """Equality of JSON values: 1 == 1.0, but true != 1 and "42" != 42."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


class JsonPathMatch(Protocol):
    """One match of a JSONPath expression (jsonpath-ng's `DatumInContext`)."""

    @property
    def value(self) -> object: ...


class JsonPathExpression(Protocol):
    """A parsed JSONPath expression (jsonpath-ng's `JSONPath`)."""

    def find(self, data: object) -> list[JsonPathMatch]: ...


# -- assertion types --------------------------------------------------------------------


def _check_schema(schema: dict[str, object] | None) -> dict[str, object] | None:
    if schema is None:
        return None
    import jsonschema  # loaded by the suites that check a schema, not at every start-up

    try:
        jsonschema.validators.validator_for(schema).check_schema(schema)
    except jsonschema.SchemaError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "(root)"
        raise ValueError(f"invalid JSON Schema at {where}: {exc.message}") from None
    return schema


def _schema_errors(schema: dict[str, object], value: object) -> list[str]:
    """The schema's violations; a `pattern` search over its time bound is a grader error."""
    import jsonschema

    validator_cls = _bounded(jsonschema.validators.validator_for(schema))
    validator = validator_cls(schema, format_checker=validator_cls.FORMAT_CHECKER)
    try:
        errors = sorted(validator.iter_errors(value), key=lambda e: [str(p) for p in e.absolute_path])
    except _regex.RegexTimeout as exc:
        raise GraderError(str(exc)) from None
    return [f"{e.json_path}: {e.message}" for e in errors]


@cache
def _bounded(validator_cls: Any) -> Any:
    """`validator_cls` whose `pattern` and `patternProperties` search the reply's strings and
    keys with a time bound (jsonschema's own use `re` without one)."""
    import jsonschema

    def pattern(validator: Any, source: str, instance: object, schema: object) -> Iterator[Any]:
        if validator.is_type(instance, "string"):
            assert isinstance(instance, str)
            if _regex.search(source, instance, field="schema pattern", what="string") is None:
                yield jsonschema.ValidationError(f"{instance!r} does not match {source!r}")

    def pattern_properties(validator: Any, patterns: dict[str, Any], instance: object, schema: object) -> Iterator[Any]:
        if validator.is_type(instance, "object"):
            assert isinstance(instance, dict)
            for source, subschema in patterns.items():
                for key, value in instance.items():
                    if _regex.search(source, key, field="schema patternProperties", what="key") is not None:
                        yield from validator.descend(value, subschema, path=key, schema_path=source)

    return jsonschema.validators.extend(validator_cls, {"pattern": pattern, "patternProperties": pattern_properties})


_FENCED_DESCRIPTION = (
    "Also accept a reply whose JSON is inside a ```json fenced block "
    "(default: the whole reply must be JSON, as in promptfoo)."
)
_SCHEMA_DESCRIPTION = "A JSON Schema (inline mapping) the JSON must validate against."


class _JsonCheck(Check):
    """Each reply parses as JSON and, when a schema is given, validates against it."""

    model_config = ConfigDict(extra="forbid", validate_by_name=True, validate_by_alias=True)

    allow_fenced: bool = Field(False, description=_FENCED_DESCRIPTION)
    allow_embedded: bool = Field(
        False,
        description="Also accept JSON inside other text: a fenced block, else the first JSON object or array "
        "in it (promptfoo's contains-json).",
    )
    json_schema: dict[str, object] | None = Field(None, alias="schema", description=_SCHEMA_DESCRIPTION)

    @field_validator("json_schema")
    @classmethod
    def _validate_schema(cls, schema: dict[str, object] | None) -> dict[str, object] | None:
        return _check_schema(schema)

    def check(self, ctx: GradeContext) -> tuple[bool, list[AssertionOutcome]]:
        schema = self.json_schema
        outcomes = []
        for reply in replies(ctx):
            label = "is JSON matching the schema" if schema is not None else "is valid JSON"
            text = label + reply.suffix()
            try:
                found = parse_json(reply.text, fenced=self.allow_fenced, embedded=self.allow_embedded)
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


@assertion_type
class JsonSchema(_JsonCheck):
    """The reply is JSON that validates against a JSON Schema (checked with `jsonschema`).

    At conversation level every target reply must.

    Example: `{type: json-schema, schema: {type: object, required: [city]}}`
    """

    type: Literal["json-schema"]
    json_schema: dict[str, object] = Field(alias="schema", description=_SCHEMA_DESCRIPTION)


@assertion_type
class JsonPath(Check):
    """A JSONPath matches the JSON in the reply, and its first match equals `value` if given.

    The JSON is the whole reply, else a ```json fenced block, else the first JSON object or
    array in the text. Paths use jsonpath-ng's extended syntax (filters like
    `$.items[?(@.id == 3)]`). At conversation level every target reply must match.

    Example: `{type: jsonpath, path: "$.booking.status", value: confirmed}`
    """

    type: Literal["jsonpath"]
    path: str = Field(description="The JSONPath, e.g. `$.flights[0].price`; may use {{ name }}.")
    value: object = Field(
        None,
        validation_alias=AliasChoices("value", "expected"),
        description="The value the first match must equal (compared as JSON: 1 == 1.0, "
        "'42' != 42). Without it the path only has to match.",
    )

    @field_validator("path")
    @classmethod
    def _check_path(cls, path: str) -> str:
        if not path.strip():
            raise ValueError("the JSONPath must not be empty")
        if not has_template_refs(path):  # with variables it is checked once they are known
            _compile_path(path, ValueError)
        return path

    def check(self, ctx: GradeContext) -> tuple[bool, list[AssertionOutcome]]:
        path = substitute(self.path, ctx.variables)
        compiled = _compile_path(path, GraderError)
        has_expected = "value" in self.model_fields_set
        expected = substitute_deep(self.value, ctx.variables)
        label = f"{path} == {short_json(expected, 60)}" if has_expected else f"{path} matches"
        outcomes = []
        for reply in replies(ctx):
            passed, evidence = self._check_reply(reply.text, compiled, path, has_expected, expected)
            outcomes.append(AssertionOutcome(text=label + reply.suffix(), passed=passed, evidence=evidence))
        return all(o.passed for o in outcomes), outcomes

    @staticmethod
    def _check_reply(
        text: str, compiled: JsonPathExpression, path: str, has_expected: bool, expected: object
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


def _compile_path(path: str, error: type[Exception]) -> JsonPathExpression:
    try:
        return parse_jsonpath(path)
    except Exception as exc:  # jsonpath-ng: JsonPathLexerError, JsonPathParserError, Exception
        raise error(f"invalid JSONPath {path!r}: {exc}") from None
