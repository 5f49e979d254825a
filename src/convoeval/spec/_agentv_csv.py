"""AgentV v5's CSV test files (`tests: [file://cases.csv]`, promptfoo's columns), read from
AgentV's `loaders/case-file-loader.ts` at v5.3.1-next.1 (`parseCsvCases`,
`parseAssertionFromString`): one test per row, in AgentV's v5 form (the loader reads it on).

Columns: `id` (default `row-N`); `input` (with `__prefix` / `__suffix`); `vars.a.b` (a nested
var) and any other plain column (a var); `__expected`, `__expected2`, ... (an assertion each:
`type:value`, `not-type:value`, `grade:` / `llm-rubric:` text, `python:` / `file://x.py` a
script run with `uv run python`, anything else the text the reply must equal);
`__provider_output` (the expected output); `__description` (criteria); `__metric` (the
assertions' name); `__threshold` (the test's pass mark); `__metadata:KEY` (`KEY[]`: a list
split on commas). Refused, with the row's line: `javascript:` / `fn:` / `eval:` assertions
(JavaScript run inside AgentV), `type(N):` score thresholds and `__config:` columns.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterator
from pathlib import Path

from ._errors import Problem

_TYPED = re.compile(r"^((?:not-)?[a-z][a-z0-9-]*)(?:\((\d+(?:\.\d+)?)\))?(?::([\s\S]*))?$")
_LISTS = ("contains-any", "contains-all", "icontains-any", "icontains-all")
#: The promptfoo types AgentV's CSV reader turns into graders, that convoeval has.
_TYPES = frozenset(
    {"contains", "icontains", "equals", "regex", "starts-with", "ends-with", "is-json", "latency", "cost", *_LISTS}
)


class CsvRowError(ValueError):
    """A cell convoeval cannot read as AgentV does."""


def csv_items(text: str, file: Path, problems: list[Problem]) -> Iterator[tuple[int, dict, int]]:
    """(index, test, line) of each data row of a CSV test file; a row that cannot be read is a
    problem at its line and left out."""
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        headers = [h.strip() for h in next(reader)]
    except StopIteration:
        problems.append(Problem(str(file), 1, "(file)", "the file is empty"))
        return
    except csv.Error as exc:
        problems.append(Problem(str(file), 1, "(csv)", f"malformed CSV: {exc}"))
        return
    index = 0
    while True:
        line = reader.line_num + 1
        try:
            values = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            problems.append(Problem(str(file), line, "(csv)", f"malformed CSV: {exc}"))
            return
        if not any(v.strip() for v in values):
            continue
        row = {h: (values[i] if i < len(values) else "") for i, h in enumerate(headers) if h}
        try:
            yield index, csv_test(row, index, file), line
        except CsvRowError as exc:
            problems.append(Problem(str(file), line, "(csv)", str(exc)))
        index += 1


def csv_test(row: dict[str, str], index: int, file: Path) -> dict:
    """One CSV row as an AgentV v5 test (`id`, `vars`, `assert`, ...)."""
    variables: dict[str, object] = {}
    metadata: dict[str, object] = {}
    assertions: list[dict] = []
    test: dict[str, object] = {}
    prefix = suffix = ""
    metric = None
    for key, value in row.items():
        if key == "id":
            test["id"] = value
        elif key == "input":
            test["input"] = value
        elif key.startswith("__expected"):
            if value.strip():
                assertions.append(_assertion(value.strip(), file))
        elif key in ("__prefix", "__suffix"):
            prefix, suffix = (value, suffix) if key == "__prefix" else (prefix, value)
        elif key == "__description" and value:
            test["criteria"] = value
        elif key in ("__provider_output", "__providerOutput") and value:
            test["expected_output"] = value
        elif key == "__metric":
            metric = value or None
        elif key == "__threshold":
            _threshold(value, test)
        elif key.startswith("__metadata:"):
            _metadata(key.removeprefix("__metadata:"), value, metadata)
        elif key.startswith("__config:"):
            raise CsvRowError(f"column {key}: AgentV's per-assertion `__config:` thresholds are not supported here")
        else:
            _set_var(variables, key, value)
    if "input" in test:
        test["input"] = f"{prefix}{test['input']}{suffix}"
    for i, assertion in enumerate(assertions):
        if metric:
            assertion["metric"] = metric if len(assertions) == 1 else f"{metric}-{i + 1}"
    if not str(test.get("id") or "").strip():
        test["id"] = f"row-{index + 1}"
    if variables:
        test["vars"] = variables
    if assertions:
        test["assert"] = assertions
    if metadata:
        test["metadata"] = metadata
    return test


def _assertion(expected: str, file: Path) -> dict:
    """A promptfoo `__expected` cell as an AgentV v5 assertion."""
    for prefix in ("grade:", "llm-rubric:"):
        if expected.startswith(prefix):
            return {"type": "llm-rubric", "value": expected.removeprefix(prefix).strip()}
    if expected.startswith(("javascript:", "fn:", "eval:")):
        raise CsvRowError(f"{expected.split(':')[0]}: assertions (JavaScript run inside AgentV) are not supported here")
    script = expected.removeprefix("python:") if expected.startswith("python:") else None
    if expected.startswith("file://"):
        script = expected.removeprefix("file://")
        if not script.strip().endswith(".py"):
            raise CsvRowError(f"{expected!r}: only file://*.py script graders are read (as in AgentV)")
    if script is not None:
        path = Path(script.strip())
        path = path if path.is_absolute() else (file.parent / path).resolve()
        return {"type": "script", "command": ["uv", "run", "python", str(path)]}
    match = _TYPED.match(expected)
    if match is None:
        return {"type": "equals", "value": expected}
    kind, threshold, value = match.groups()
    base = kind.removeprefix("not-")
    if base not in _TYPES:
        if value is not None or threshold is not None:
            raise CsvRowError(f"unsupported assertion {base!r} in {expected!r} (known: {', '.join(sorted(_TYPES))})")
        return {"type": "equals", "value": expected}
    if threshold is not None and base not in ("latency", "cost"):
        raise CsvRowError(f"{expected!r}: a score threshold on {base!r} is not supported here")
    out: dict[str, object] = {"type": base}
    if kind.startswith("not-"):
        out["negate"] = True
    if base in _LISTS:
        out["value"] = [v.strip() for v in (value or "").split(",") if v.strip()]
    elif value is not None:
        out["value"] = value.strip()
    if base in ("latency", "cost"):
        if threshold is None:
            raise CsvRowError(f"{base} needs a limit, e.g. {base}(1)")
        out["threshold_ms" if base == "latency" else "budget"] = float(threshold)
    return out


def _threshold(value: str, test: dict) -> None:
    try:
        number = float(value)
    except ValueError:
        return  # AgentV ignores a threshold that is not a number
    test["execution"] = {"threshold": number}


def _metadata(key: str, value: str, metadata: dict) -> None:
    if not value.strip():
        return
    if key.endswith("[]"):
        items = [item.strip().replace("\\,", ",") for item in re.split(r"(?<!\\),", value)]
        metadata[key[:-2]] = [item for item in items if item]
    else:
        metadata[key] = value


def _set_var(variables: dict, key: str, value: str) -> None:
    """`vars.a.b` as a nested var; any other column as a var of that name."""
    path = [p.strip() for p in key.removeprefix("vars.").split(".") if p.strip()] if key.startswith("vars.") else []
    if not path:
        variables[key] = value
        return
    current = variables
    for segment in path[:-1]:
        if not isinstance(current.get(segment), dict):
            current[segment] = {}
        current = current[segment]
    current[path[-1]] = value
