"""promptfoo test files in CSV: one test per row.

Columns are vars, except promptfoo's special ones: `__expected` (and `__expected1`,
`__expected2`, ...) hold an assertion each in promptfoo's shorthand (`contains: Paris`,
`icontains: paris`, `regex: ^P`, `is-json`, `javascript: output.length < 90` or `fn: ...`,
`python: ...`, `grade: ...` / `llm-rubric: ...`; a value with no known prefix is `equals`),
`__description`, `__threshold` and `__metadata:<key>`. Read with the standard csv module.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

from pydantic import JsonValue

from ..errors import DatasetError
from ._common import JsonObject, read_text

#: Shorthand prefixes that are not assertion type names.
_ALIASES = {"fn": "javascript", "eval": "javascript", "grade": "llm-rubric"}
_BARE = {"is-json", "contains-json", "is-valid-openai-tools-call", "is-xml", "is-sql"}


def _assertion(text: str, known: set[str]) -> JsonObject:
    head, sep, rest = text.partition(":")
    name = _ALIASES.get(head.strip(), head.strip())
    if sep and (name in known or head.strip() in _ALIASES):
        return {"type": name, "value": rest.strip()}
    if text.strip() in _BARE:
        return {"type": text.strip()}
    return {"type": "equals", "value": text}


def read_csv_tests(path: Path, known: set[str]) -> list[JsonObject]:
    """The tests of a promptfoo CSV file (`known`: the assertion type names to recognise)."""
    rows = csv.DictReader(io.StringIO(read_text(path, newline=""), newline=""))
    try:
        return [_test(row, path, line, known) for line, row in enumerate(rows, start=2)]
    except csv.Error as exc:  # a NUL byte, a cell past the csv module's size limit
        raise DatasetError(f"{path}:{rows.line_num + 1}: not CSV ({exc})") from None


def _test(row: dict[str, str], path: Path, line: int, known: set[str]) -> JsonObject:
    if None in row:
        raise DatasetError(f"{path}:{line}: more cells than columns")
    variables: JsonObject = {}
    asserts: list[JsonValue] = []
    metadata: JsonObject = {}
    test: JsonObject = {"vars": variables}
    for column, value in row.items():
        value = value or ""
        if column.startswith("__expected"):
            if value.strip():
                asserts.append(_assertion(value, known))
                test["assert"] = asserts
        elif column == "__description":
            test["description"] = value
        elif column == "__threshold" and value.strip():
            try:
                test["threshold"] = float(value)
            except ValueError:
                raise DatasetError(f"{path}:{line}: __threshold: {value!r} is not a number") from None
        elif column.startswith("__metadata:"):
            metadata[column.removeprefix("__metadata:")] = value
            test["metadata"] = metadata
        elif not column.startswith("__"):
            variables[column] = value
    return test
