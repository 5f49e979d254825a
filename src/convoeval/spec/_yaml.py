"""Reading YAML and JSONL while remembering the line of every value."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from ._errors import Problem, field_path

DataPath = tuple[Any, ...]
MAX_NODES = 1_000_000
#: Deepest nesting of mappings and lists accepted (checked before the recursive parser runs).
MAX_DEPTH = 64
_OPEN = (
    yaml.BlockMappingStartToken,
    yaml.BlockSequenceStartToken,
    yaml.FlowMappingStartToken,
    yaml.FlowSequenceStartToken,
)
_CLOSE = (yaml.BlockEndToken, yaml.FlowMappingEndToken, yaml.FlowSequenceEndToken)
_BASE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when available: ~6x faster


class _Core12Loader(_BASE_LOADER):  # type: ignore[misc,valid-type]
    """YAML 1.2 core schema, as AgentV's JS `yaml` package reads files: only true/false are
    booleans (`yes`, `no`, `on`, `off` stay strings), no timestamps (`2025-01-01` is a string),
    no sexagesimal or leading-zero octal numbers. Merge keys (`<<: *base`) still work."""

    yaml_implicit_resolvers: dict[str, list[tuple[str, re.Pattern[str]]]] = {}


_CORE12 = [
    ("tag:yaml.org,2002:bool", r"^(?:true|True|TRUE|false|False|FALSE)$", "tTfF"),
    ("tag:yaml.org,2002:null", r"^(?:~|null|Null|NULL|)$", ["~", "n", "N", ""]),
    ("tag:yaml.org,2002:int", r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$", "-+0123456789"),
    (
        "tag:yaml.org,2002:float",
        r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$",
        "-+0123456789.",
    ),
    ("tag:yaml.org,2002:merge", r"^(?:<<)$", "<"),
]
for _tag, _pattern, _first in _CORE12:
    _Core12Loader.add_implicit_resolver(_tag, re.compile(_pattern), list(_first))


class _Core12Constructor(yaml.SafeLoader):
    """Builds scalar values with YAML 1.2 rules (`010` is ten, `0o10` is eight)."""

    def construct_yaml_int(self, node: yaml.ScalarNode) -> int:
        text = str(self.construct_scalar(node))
        digits = text.lstrip("+-")
        return int(text, 0) if digits[:2] in ("0o", "0x") else int(text, 10)


_Core12Constructor.add_constructor("tag:yaml.org,2002:int", _Core12Constructor.construct_yaml_int)


class LineMap:
    """Where each value of the loaded data came from: data path -> (file, line)."""

    def __init__(self) -> None:
        self._lines: dict[DataPath, tuple[str, int]] = {}

    def add(self, path: DataPath, file: str, line: int) -> None:
        self._lines.setdefault(path, (file, line))

    def forget(self, path: DataPath) -> None:
        self._lines.pop(path, None)

    def renumber(self, prefix: DataPath, moves: dict[int, int]) -> None:
        """Items of the list at `prefix` moved (old index -> new); items not in `moves` are gone."""
        n = len(prefix)
        lines: dict[DataPath, tuple[str, int]] = {}
        for path, where in self._lines.items():
            if len(path) > n and path[:n] == prefix and isinstance(path[n], int):
                if path[n] not in moves:
                    continue
                path = (*prefix, moves[path[n]], *path[n + 1 :])
            lines[path] = where
        self._lines = lines

    def merge_shifted(self, other: LineMap, prefix: DataPath, offset: int) -> None:
        """Add `other`'s lines of the list items at `prefix`, their indexes moved by `offset`."""
        n = len(prefix)
        for path, where in other._lines.items():
            if len(path) > n and path[:n] == prefix and isinstance(path[n], int):
                self._lines.setdefault((*prefix, path[n] + offset, *path[n + 1 :]), where)

    def locate(self, path: DataPath) -> tuple[str, int]:
        """The file and line of `path`, or of its closest recorded ancestor."""
        for end in range(len(path), -1, -1):
            found = self._lines.get(path[:end])
            if found:
                return found
        return ("?", 1)

    def problem(self, path: DataPath, field: str, message: str) -> Problem:
        file, line = self.locate(path)
        return Problem(file, line, field, message)


def read_text(path: Path, problems: list[Problem]) -> str | None:
    """The file's text, or None (with a problem) when it is unreadable or not UTF-8."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        problems.append(Problem(str(path), 1, "(file)", f"cannot read file: {exc.strerror or exc}"))
        return None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        problems.append(Problem(str(path), line, "(file)", f"invalid UTF-8 (byte 0x{raw[exc.start]:02x})"))
        return None


Rename = Callable[[DataPath, Any], Any]


def _same_key(path: DataPath, key: Any) -> Any:
    return key


def load_yaml(
    path: Path,
    lines: LineMap,
    problems: list[Problem],
    prefix: DataPath = (),
    rename: Rename = _same_key,
) -> Any:
    """Parse a YAML file; record each value's line under `prefix`; None when it cannot.

    `rename(path, key)` gives the name a mapping key is stored under (legacy spellings).
    """
    text = read_text(path, problems)
    if text is None:
        return None
    file = str(path)
    too_deep = _too_deep(text)
    if too_deep is not None:
        problems.append(Problem(file, too_deep, "(yaml)", f"nested deeper than {MAX_DEPTH} levels"))
        return None
    try:
        node = yaml.compose(text, Loader=_Core12Loader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else 1
        what = " ".join(x for x in (exc.context, exc.problem) if x)
        problems.append(Problem(file, line, "(yaml)", f"YAML syntax error: {what}"))
        return None
    except yaml.YAMLError as exc:
        problems.append(Problem(file, 1, "(yaml)", f"YAML error: {exc}"))
        return None
    if node is None:
        problems.append(Problem(file, 1, "(file)", "the file is empty"))
        return None
    builder = _Builder(file, lines, problems, rename)
    try:
        return builder.build(node, prefix)
    except yaml.YAMLError as exc:  # bad scalar (e.g. an invalid timestamp) or merge key
        mark = getattr(exc, "problem_mark", None)
        problems.append(Problem(file, mark.line + 1 if mark else 1, "(yaml)", f"YAML error: {exc}"))
        return None


def _too_deep(text: str) -> int | None:
    """The line where nesting first passes MAX_DEPTH, or None. Uses the (iterative) scanner so
    that a hostile file never reaches the recursive composer, which overflows the stack."""
    depth = 0
    try:
        for token in yaml.scan(text, Loader=_BASE_LOADER):
            if isinstance(token, _OPEN):
                depth += 1
                if depth > MAX_DEPTH:
                    return token.start_mark.line + 1
            elif isinstance(token, _CLOSE):
                depth -= 1
    except yaml.MarkedYAMLError as exc:
        # libyaml 0.2.5 as PyYAML 6.0.4 builds it refuses more than 1000 levels while it scans
        # ahead, before the tokens reach the count above.
        if "nesting depth" in str(exc.problem) and exc.problem_mark is not None:
            return exc.problem_mark.line + 1
        return None  # the composer reports the syntax error with its line
    except yaml.YAMLError:
        return None
    return None


class _Builder:
    """Turns composed YAML nodes into Python values, recording lines and duplicate keys."""

    def __init__(self, file: str, lines: LineMap, problems: list[Problem], rename: Rename = _same_key):
        self.file = file
        self.rename = rename
        self.lines = lines
        self.problems = problems
        self.constructor = _Core12Constructor("")
        self.open_nodes: set[int] = set()
        self.count = 0

    def build(self, node: yaml.Node, path: DataPath) -> Any:
        self.lines.add(path, self.file, node.start_mark.line + 1)
        self.count += 1
        if self.count > MAX_NODES:
            raise yaml.YAMLError(f"more than {MAX_NODES} values (an alias bomb?)")
        if isinstance(node, (yaml.MappingNode, yaml.SequenceNode)):
            if id(node) in self.open_nodes:
                self.problems.append(
                    Problem(self.file, node.start_mark.line + 1, field_path(path), "recursive YAML alias")
                )
                return None
            self.open_nodes.add(id(node))
            try:
                return self._build_collection(node, path)
            finally:
                self.open_nodes.discard(id(node))
        try:
            return self.constructor.construct_object(node, deep=True)
        except ValueError as exc:  # e.g. `when: !!timestamp 2024-13-45`
            self.problems.append(
                Problem(
                    self.file,
                    node.start_mark.line + 1,
                    field_path(path),
                    f"invalid value {node.value!r}: {exc} (quote it to keep it as text)",
                )
            )
            return None

    def _build_collection(self, node: yaml.Node, path: DataPath) -> Any:
        if isinstance(node, yaml.MappingNode):
            own = {id(k) for k, _ in node.value}
            self.constructor.flatten_mapping(node)  # merged (`<<`) pairs first, then own ones
            out: dict[Any, Any] = {}
            written: set[Any] = set()
            for key_node, value_node in node.value:
                try:
                    key = self.constructor.construct_object(key_node, deep=True)
                except ValueError:
                    key = key_node.value
                if not isinstance(key, (str, int, float, bool)) or key is None:
                    key = str(key)
                key = self.rename(path, key)
                key_path = (*path, key)
                if id(key_node) in own:  # overriding a merged value is legal; twice in one mapping is not
                    if key in written:
                        self.problems.append(
                            Problem(
                                self.file, key_node.start_mark.line + 1, field_path(key_path), f"duplicate key {key!r}"
                            )
                        )
                    written.add(key)
                    if key in out:
                        self.lines.forget(key_path)
                self.lines.add(key_path, self.file, key_node.start_mark.line + 1)
                out[key] = self.build(value_node, key_path)
            return out
        return [self.build(item, (*path, i)) for i, item in enumerate(node.value)]


def load_jsonl(
    path: Path,
    lines: LineMap,
    problems: list[Problem],
    prefix: DataPath = (),
    rename: Rename = _same_key,
) -> list[Any] | None:
    """Parse a JSONL file (one JSON value a line, blank lines ignored) into a list."""
    text = read_text(path, problems)
    if text is None:
        return None
    items: list[Any] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            value = json.loads(raw)
        except json.JSONDecodeError as exc:
            problems.append(Problem(str(path), number, "(json)", f"invalid JSON: {exc.msg}"))
            continue
        items.append(_record_all(value, (*prefix, len(items)), str(path), number, lines, rename))
    return items


def _record_all(value: Any, path: DataPath, file: str, line: int, lines: LineMap, rename: Rename) -> Any:
    """Record the line of `value` and everything inside it; return it with keys renamed."""
    lines.add(path, file, line)
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            key = rename(path, key)
            out[key] = _record_all(item, (*path, key), file, line, lines, rename)
        return out
    if isinstance(value, list):
        return [_record_all(item, (*path, i), file, line, lines, rename) for i, item in enumerate(value)]
    return value
