"""`field-accuracy` (AgentV): the reply's JSON, field by field, against the expected output's.

    - type: field-accuracy
      fields:
        - {path: invoice_number, match: exact, weight: 2}
        - {path: invoice_date, match: date, formats: ["DD-MMM-YYYY", "YYYY-MM-DD"]}
        - {path: net_total, match: numeric_tolerance, tolerance: 1.0}
        - {path: "line_items[0].description", match: exact, required: false}
      aggregation: weighted_average          # or all_or_nothing

As in AgentV: a field the expected output lacks is not compared; a missing required field
scores 0, a missing optional one is left out; the score is the weighted mean of the fields (or
all-or-nothing). A reply without JSON fails; a test without a JSON expected output cannot be
checked (an error).
"""

from __future__ import annotations

import math
import re
from datetime import date, datetime
from typing import Literal

from pydantic import ConfigDict, Field, JsonValue

from .._base_model import Model
from .._json_in_text import NoJson, parse_json
from ..results import AssertionOutcome
from ._base import Assertion, Grade, GradeContext, GraderError, assertion_type
from ._json import json_equal

_MONTHS = {
    name: k
    for k, names in enumerate(
        [
            ("jan", "january"),
            ("feb", "february"),
            ("mar", "march"),
            ("apr", "april"),
            ("may",),
            ("jun", "june"),
            ("jul", "july"),
            ("aug", "august"),
            ("sep", "sept", "september"),
            ("oct", "october"),
            ("nov", "november"),
            ("dec", "december"),
        ],
        start=1,
    )
    for name in names
}
_NAMED = re.compile(r"^(\d{1,2})-([A-Za-z]{3,9})-(\d{4})$")
_NUMERIC = re.compile(r"^(\d{1,2})[/-](\d{1,2})[/-](\d{4})$")
_MISSING = object()


class FieldSpec(Model):
    """One field of a `field-accuracy` check."""

    model_config = ConfigDict(extra="forbid")

    path: str = Field(min_length=1, description="Dot path with [index] for arrays: `line_items[0].total`.")
    match: Literal["exact", "numeric_tolerance", "date"] = "exact"
    required: bool = True
    weight: float = Field(1.0, ge=0, allow_inf_nan=False)
    tolerance: float = Field(0.0, ge=0, description="numeric_tolerance: the allowed difference.")
    relative: bool = Field(False, description="numeric_tolerance: the tolerance is a fraction of the expected value.")
    formats: list[str] | None = Field(None, description="date: formats that may appear (decide MM/DD vs DD/MM).")


@assertion_type
class FieldAccuracy(Assertion):
    """Compares fields of the reply's JSON with the expected output's JSON (AgentV)."""

    type: Literal["field-accuracy"]
    fields: list[FieldSpec] = Field(min_length=1)
    aggregation: Literal["weighted_average", "all_or_nothing"] = "weighted_average"

    levels = ("turn",)

    async def grade(self, ctx: GradeContext) -> Grade:
        expected = _json_object(ctx.expected_output or "")
        if expected is None:
            raise GraderError("field-accuracy needs an expected_output holding a JSON object")
        actual = _json_object(ctx.output)
        if actual is None:
            outcome = AssertionOutcome(text="the reply is a JSON object", passed=False, evidence="no JSON object found")
            return Grade(score=0.0, assertions=[outcome])
        results = [_compare(spec, _at(actual, spec.path), _at(expected, spec.path)) for spec in self.fields]
        outcomes = [AssertionOutcome(text=text, passed=hit, evidence=evidence) for text, hit, evidence, _, _ in results]
        if self.aggregation == "all_or_nothing":
            score = 1.0 if all(o.passed for o in outcomes) else 0.0
        else:
            total = math.fsum(weight for *_, weight in results)
            score = math.fsum(s * w for *_, s, w in results) / total if total else float(not results)
        return Grade(score=score, assertions=outcomes, details={"aggregation": self.aggregation})


def _json_object(text: str) -> dict[str, JsonValue] | None:
    try:
        value = parse_json(text, fenced=True, embedded=True).value
    except NoJson:
        return None
    return value if isinstance(value, dict) else None


def _at(value: object, path: str) -> object:
    for part in (p for p in re.split(r"\.|\[|\]", path) if p):
        if isinstance(value, list) and part.isdigit():
            value = value[int(part)] if int(part) < len(value) else _MISSING
        elif isinstance(value, dict):
            value = value.get(part, _MISSING)
        else:
            return _MISSING
        if value is _MISSING:
            return _MISSING
    return value


def _compare(spec: FieldSpec, actual: object, expected: object) -> tuple[str, bool, str, float, float]:
    """(text, hit, evidence, score, weight) of one field, as AgentV scores it."""
    path = spec.path
    if expected is _MISSING:
        return f"{path}: no expected value", True, "not compared", 1.0, spec.weight
    if actual is _MISSING:
        if spec.required:
            return f"{path} (required)", False, "missing", 0.0, spec.weight
        return f"{path} (optional)", True, "missing; left out", 1.0, 0.0
    if spec.match == "exact":
        hit = json_equal(actual, expected)
        evidence = "equal" if hit else f"got {actual!r}, expected {expected!r}"
    elif spec.match == "numeric_tolerance":
        hit, evidence = _numeric(spec, actual, expected)
    else:
        hit, evidence = _dates(spec, actual, expected)
    return path, hit, evidence, float(hit), spec.weight


def _numeric(spec: FieldSpec, actual: object, expected: object) -> tuple[bool, str]:
    a, e = _number(actual), _number(expected)
    if a is None or e is None:
        return False, f"not numbers: {actual!r} vs {expected!r}"
    diff = abs(a - e)
    measured = diff / abs(e) if spec.relative and e != 0 else diff
    return (
        measured <= spec.tolerance,
        f"diff {diff:.2f} (tolerance {spec.tolerance:g}{' relative' if spec.relative else ''})",
    )


def _number(value: object) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, str):
        match = re.match(r"\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?", value)
        return float(match.group(0)) if match else None
    return None


def _dates(spec: FieldSpec, actual: object, expected: object) -> tuple[bool, str]:
    a, e = _date(str(actual), spec.formats), _date(str(expected), spec.formats)
    if a is None or e is None:
        return (
            False,
            f"unparseable {'candidate' if a is None else 'expected'} date {str(actual if a is None else expected)!r}",
        )
    return a == e, f"got {a.isoformat()}, expected {e.isoformat()}"


def _date(text: str, formats: list[str] | None) -> date | None:
    """A date from ISO, `15-JAN-2025`, or `MM/DD/YYYY` / `DD/MM/YYYY` (decided by `formats`,
    else by a number above 12, else US), as AgentV reads them."""
    text = text.strip()
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).date()
    except ValueError:
        pass
    if named := _NAMED.match(text):
        month = _MONTHS.get(named.group(2).lower())
        return _make(int(named.group(3)), month, int(named.group(1))) if month else None
    if numeric := _NUMERIC.match(text):
        first, second, year = (int(g) for g in numeric.groups())
        shown = formats or []
        us = any("MM/DD" in f or "MM-DD" in f for f in shown)
        eu = any("DD/MM" in f or "DD-MM" in f for f in shown)
        day_first = (eu and not us) or (us == eu and first > 12 and second <= 12)
        return _make(year, second, first) if day_first else _make(year, first, second)
    return None


def _make(year: int, month: int, day: int) -> date | None:
    try:
        return date(year, month, day)
    except ValueError:
        return None
