"""Reading YAML and JSONL while remembering the line of every value: whole files, or the
items of a tests file one at a time."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

from .._jsonl import YamlDataError, yaml_data
from .._unseen import hide_from_models
from ._agentv_csv import csv_items
from ._errors import Problem
from ._lines import DataPath, Key, LineMap
from ._yaml_events import MAX_DEPTH, MAX_NODES, Rename, YamlFailure, YamlReader, same_key

__all__ = [
    "MAX_DEPTH",
    "MAX_NODES",
    "DataPath",
    "ItemsFile",
    "LineMap",
    "Rename",
    "load_jsonl",
    "load_yaml",
    "load_yaml_file",
    "read_text",
]


def read_text(path: Path, problems: list[Problem]) -> str | None:
    """The file's text, or None (with a problem) when it is unreadable or not UTF-8. What the
    eval-file language reads holds answers or keys (an eval file, a file of tests, a targets
    file): no sandboxed command sees it from now on (`hide_from_models`)."""
    hide_from_models([path])
    try:
        raw = path.read_bytes()
    except OSError as exc:
        problems.append(Problem(str(path), 1, "(file)", f"cannot read file: {exc.strerror or exc}"))
        return None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        what = f"invalid UTF-8 (byte 0x{raw[exc.start]:02x})"
        if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
            what += ": the file is UTF-16 (what PowerShell's `>` writes); save it as UTF-8"
        problems.append(Problem(str(path), line, "(file)", what))
        return None


def load_yaml(
    path: Path,
    lines: LineMap,
    problems: list[Problem],
    prefix: DataPath = (),
    rename: Rename = same_key,
) -> object:
    """Parse a YAML file; record each value's line under `prefix`; None when it cannot.

    `rename(path, key)` gives the name a mapping key is stored under (legacy spellings).
    """
    text = read_text(path, problems)
    if text is None:
        return None
    reader = YamlReader(text, str(path), rename)
    try:
        if reader.begin() is None:
            problems.append(Problem(str(path), 1, "(file)", "the file is empty"))
            return None
        value = reader.value(prefix, lines)
        reader.end()
    except YamlFailure as failure:
        problems.extend(reader.failure_problems(failure))
        return None
    finally:
        reader.close()
    problems.extend(reader.problems)
    return value


def load_yaml_file(path: Path) -> object:
    """The data of a YAML file an eval file names (an AgentV recipe, template or shared file):
    no deeper than `_jsonl.MAX_DEPTH`, and no alias bomb (`_jsonl.data_problem`).

    Raises:
        ValueError: `file:line: (yaml): message` (`file:1: (file): ...` when it cannot be read).
    """
    problems: list[Problem] = []
    text = read_text(path, problems)
    if text is None:
        raise ValueError(str(problems[0]))
    try:
        return yaml_data(text)
    except YamlDataError as exc:
        raise ValueError(f"{path}:{exc.line or 1}: (yaml): {exc}") from None


def load_jsonl(
    path: Path,
    lines: LineMap,
    problems: list[Problem],
    prefix: DataPath = (),
    rename: Rename = same_key,
) -> list[object] | None:
    """Parse a JSONL file (one JSON value a line, blank lines ignored) into a list."""
    text = read_text(path, problems)
    if text is None:
        return None
    return [value for _, value, _ in _jsonl_items(text, str(path), problems, prefix, rename, lambda: lines)]


class ItemsFile:
    """A file of tests (`tests: cases.jsonl`, `file://cases.yaml`), read one item at a time.

    `items()` yields (index, value, lines) with each item's lines under `("tests", index)` in
    its own LineMap (whose parent is `parent`), so only the item being read is alive. After it:
    `problems` (the file's own: YAML or JSON), `failed` (unreadable, empty or not YAML: no
    tests, and the items already yielded do not count), `not_a_list` (it holds something else).
    """

    def __init__(self, path: Path, rename: Rename, parent: LineMap | None = None):
        self.path = path
        self.rename = rename
        self.parent = parent
        self.problems: list[Problem] = []
        self.failed = False
        self.not_a_list = False

    def _lines(self) -> LineMap:
        return LineMap(str(self.path), self.parent)

    def items(self) -> Iterator[tuple[int, object, LineMap]]:
        text = read_text(self.path, self.problems)
        if text is None:
            self.failed = True
            return
        if self.path.suffix == ".jsonl":
            yield from _jsonl_items(text, str(self.path), self.problems, ("tests",), self.rename, self._lines)
            return
        if self.path.suffix == ".csv":  # AgentV v5's promptfoo-style rows
            for index, test, number in csv_items(text, self.path, self.problems):
                lines = self._lines()
                yield index, _record_all(test, ("tests", index), str(self.path), number, lines, self.rename), lines
            return
        reader = YamlReader(text, str(self.path), self.rename)
        try:
            kind = reader.begin()
            if kind is None:
                self.problems.append(Problem(str(self.path), 1, "(file)", "the file is empty"))
                self.failed = True
            elif kind == "sequence":
                yield from reader.items(("tests",), self._lines(), self._lines)
                reader.end()
            else:
                value = reader.value(("tests",), self._lines())
                reader.end()
                self.failed = value is None
                self.not_a_list = value is not None
            self.problems.extend(reader.problems)
        except YamlFailure as failure:
            self.problems.extend(reader.failure_problems(failure))
            self.failed = True
        finally:
            reader.close()


def _jsonl_items(
    text: str, file: str, problems: list[Problem], prefix: DataPath, rename: Rename, new_lines: Callable[[], LineMap]
) -> Iterator[tuple[int, object, LineMap]]:
    index = 0
    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            value = json.loads(raw)
        except json.JSONDecodeError as exc:
            problems.append(Problem(file, number, "(json)", f"invalid JSON: {exc.msg}"))
            continue
        lines = new_lines()
        yield index, _record_all(value, (*prefix, index), file, number, lines, rename), lines
        index += 1


def _record_all(value: object, path: DataPath, file: str, line: int, lines: LineMap, rename: Rename) -> object:
    """Record the line of `value` and everything inside it; return it with keys renamed."""
    lines.add(path, file, line)
    if isinstance(value, dict):
        out: dict[Key, object] = {}
        for key, item in value.items():
            key = rename(path, key)
            out[key] = _record_all(item, (*path, key), file, line, lines, rename)
        return out
    if isinstance(value, list):
        return [_record_all(item, (*path, i), file, line, lines, rename) for i, item in enumerate(value)]
    return value


class CaseFolder:
    """AgentV's `tests: ./cases/` (v4.42): each subfolder holding a `case.yaml` (or `case.yml`)
    is one test, in name order; its `id` defaults to the folder's name and a `workspace/`
    subfolder is its workspace template. Same interface as `ItemsFile`."""

    def __init__(self, path: Path, rename: Rename, parent: LineMap | None = None):
        self.path = path
        self.rename = rename
        self.parent = parent
        self.problems: list[Problem] = []
        self.failed = False
        self.not_a_list = False

    def items(self) -> Iterator[tuple[int, object, LineMap]]:
        index = 0
        for folder in sorted(p for p in self.path.iterdir() if p.is_dir()):
            case = next((folder / n for n in ("case.yaml", "case.yml") if (folder / n).is_file()), None)
            if case is None:
                continue
            lines = LineMap(str(case), self.parent)
            value = self._read(case, ("tests", index), lines)
            if isinstance(value, dict):
                value.setdefault("id", folder.name)
                if "workspace" not in value and (folder / "workspace").is_dir():
                    value["workspace"] = {"template": str((folder / "workspace").resolve())}
            elif value is not None:
                self.problems.append(Problem(str(case), 1, "(file)", "a case file holds one test (a mapping)"))
                continue
            if value is not None:
                yield index, value, lines
                index += 1

    def _read(self, case: Path, path: DataPath, lines: LineMap) -> object:
        text = read_text(case, self.problems)
        if text is None:
            return None
        reader = YamlReader(text, str(case), self.rename)
        try:
            if reader.begin() is None:
                self.problems.append(Problem(str(case), 1, "(file)", "the file is empty"))
                return None
            value = reader.value(path, lines)
            reader.end()
            self.problems.extend(reader.problems)
            return value
        except YamlFailure as failure:
            self.problems.extend(reader.failure_problems(failure))
            return None
        finally:
            reader.close()
