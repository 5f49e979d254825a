"""The base of the deterministic (pass/fail) assertion types, and the helpers they share.

A `Check` answers yes or no: its score is 1.0 or 0.0 and its outcomes say exactly what was
looked for and what was found. Negation has one mechanism, the common `negate` field (applied
by `Assertion.evaluate`); a promptfoo-style `not-` type name (`not-contains`, `not-regex`, ...)
is an alias of the positive type with `negate` (see `Assertion.negated`).

Fields with several accepted names (`max_ms` / `threshold_ms` / `threshold`) are declared once
with pydantic `AliasChoices`; giving two of the names at once is a load error, and every name
appears in `convoeval schema`.
"""

from __future__ import annotations

import re
from abc import abstractmethod
from dataclasses import dataclass
from typing import overload

from pydantic import AliasChoices, JsonValue, model_validator

from .._templates import regex_values as regex_values
from .._templates import substitute as substitute  # re-exported for the graders
from .._templates import substitute_regex as substitute_regex
from .._text import shorten
from ..results import AssertionOutcome
from ._base import Assertion, Grade, GradeContext

_TEMPLATE_REF = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")


def _alias_choices(cls: type[Assertion]) -> dict[str, list[str]]:
    """`{field name: [accepted names]}` for the fields declared with AliasChoices."""
    found = {}
    for name, info in cls.model_fields.items():
        if isinstance(info.validation_alias, AliasChoices):
            found[name] = [str(choice) for choice in info.validation_alias.choices]
    return found


def _document_aliases(schema: dict[str, JsonValue], cls: type[Assertion]) -> None:
    """List every accepted name of an aliased field in the JSON Schema (editors read it)."""
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        return
    for name, choices in _alias_choices(cls).items():
        field = properties.get(name)
        if not isinstance(field, dict):
            continue
        for alias in choices:
            if alias != name:
                properties[alias] = {**field, "title": alias, "description": f"Same as `{name}`."}
        required = schema.get("required")
        if isinstance(required, list) and name in required:
            schema["required"] = [r for r in required if r != name]
            any_of = schema.setdefault("anyOf", [])
            if isinstance(any_of, list):
                any_of.extend({"required": [alias]} for alias in choices)


class Check(Assertion):
    """A pass/fail check: `check` says whether it holds and shows the outcomes."""

    model_config = {"json_schema_extra": _document_aliases}

    @model_validator(mode="before")
    @classmethod
    def _one_name_per_field(cls, data: object) -> object:
        if isinstance(data, dict):
            for name, choices in _alias_choices(cls).items():
                given = [c for c in choices if c in data]
                names = ", ".join(f"`{c}`" for c in (given or choices))
                if len(given) > 1:
                    raise ValueError(f"give only one of {names}: they are the same setting")
                if not given and cls.model_fields[name].is_required():
                    raise ValueError(f"`{name}` is required (give one of {names})")
        return data

    @abstractmethod
    def check(self, ctx: GradeContext) -> tuple[bool, list[AssertionOutcome]]:
        """Whether the check holds, and the outcomes that show it."""

    async def grade(self, ctx: GradeContext) -> Grade:
        passed, outcomes = self.check(ctx)
        return Grade(score=1.0 if passed else 0.0, assertions=outcomes)

    @property
    def positive_type(self) -> str:
        """The type name without its `not-` prefix (`not-icontains` -> `icontains`)."""
        return self.type.removeprefix("not-")


# -- template variables ----------------------------------------------------------------------


@overload
def substitute_deep(value: dict[str, object], variables: dict[str, object]) -> dict[str, object]: ...
@overload
def substitute_deep(value: object, variables: dict[str, object]) -> object: ...
def substitute_deep(value: object, variables: dict[str, object]) -> object:
    """`substitute` applied to every string inside a JSON-like value (a mapping stays a mapping)."""
    if isinstance(value, str):
        return substitute(value, variables)
    if isinstance(value, list):
        return [substitute_deep(v, variables) for v in value]
    if isinstance(value, dict):
        return {k: substitute_deep(v, variables) for k, v in value.items()}
    return value


def has_template_refs(text: str) -> bool:
    return bool(_TEMPLATE_REF.search(text))


def blank_template_refs(text: str, placeholder: str = "x") -> str:
    """`text` with every `{{ name }}` replaced by a placeholder (for load-time syntax checks)."""
    return _TEMPLATE_REF.sub(placeholder, text)


# -- evidence ------------------------------------------------------------------------------


def quote(text: str, limit: int = 60) -> str:
    """A short single-quoted rendering of `text` for outcome texts and evidence."""
    return repr(shorten(text, limit))


def noun(ctx: GradeContext) -> str:
    """What `ctx.output` is, for evidence: this reply or the whole conversation."""
    return "reply" if ctx.level == "turn" else "conversation"


@dataclass
class Reply:
    """One target reply checked on its own (all of them at conversation level)."""

    label: str  # "" at turn level, "turn 3" at conversation level
    text: str

    def suffix(self) -> str:
        return f" ({self.label})" if self.label else ""


def replies(ctx: GradeContext) -> list[Reply]:
    """The replies a per-reply check (JSON, JSONPath) looks at.

    At turn level: this reply. At conversation level: every target reply in the transcript,
    or the joined output when the transcript holds none.
    """
    if ctx.level == "turn":
        return [Reply("", ctx.output)]
    found = [m for m in ctx.transcript if m.source == "target" and m.role == "assistant"]
    if not found:
        return [Reply("conversation", ctx.output)]
    return [
        Reply(f"turn {m.turn}" if m.turn is not None else f"reply {k}", m.content) for k, m in enumerate(found, start=1)
    ]
