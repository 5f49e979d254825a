"""What every importer shares: reading JSON and JSON Lines with line numbers, narrowing the values
read from them, writing a suite as YAML."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TypeGuard

import yaml
from pydantic import JsonValue

from .. import _jsonl as jsonl
from .._jsonl import JsonlError
from ..errors import DatasetError

#: A JSON object as `json.loads` makes it.
JsonObject = dict[str, JsonValue]


class DatasetWarning(UserWarning):
    """Something an importer could not carry over (issued with `warnings.warn`; the CLI prints it)."""


def read_jsonl(path: Path) -> list[tuple[int, JsonObject]]:
    """`(line number, object)` of each non-blank line (the project's one JSONL reader).

    Raises:
        DatasetError: the file is missing, or a line is not a JSON object.
    """
    check_file(path)
    try:
        lines = jsonl.read_jsonl(path, objects=True)  # each value an object, or JsonlError
        return [(number, value) for number, value in lines if isinstance(value, dict)]
    except JsonlError as exc:
        raise DatasetError(str(exc)) from None


def read_json(path: Path) -> JsonValue:
    """A whole JSON document (raises DatasetError naming the file and line)."""
    text = read_text(path)
    try:
        return decode_json(text)
    except json.JSONDecodeError as exc:
        raise DatasetError(f"{path}:{exc.lineno}: not JSON ({exc.msg})") from None


def read_text(path: Path, newline: str | None = None) -> str:
    """A dataset file's text, without the byte-order mark spreadsheets write (raises
    DatasetError naming the file: missing, a folder, not text); `newline=""` keeps line endings
    as written (a CSV cell's carriage returns), as `open` does."""
    check_file(path)
    try:
        with path.open(encoding="utf-8-sig", newline=newline) as file:
            return file.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise DatasetError(jsonl.read_problem(path, exc)) from None


def check_file(path: Path) -> None:
    """DatasetError unless `path` is a file (a folder is named as one)."""
    try:
        folder, file = path.is_dir(), path.is_file()
    except OSError as exc:  # a name too long to look up, say
        raise DatasetError(jsonl.read_problem(path, exc)) from None
    if folder:
        raise DatasetError(f"{path} is a folder; give the dataset file")
    if not file:
        raise DatasetError(f"{path}:1: no such file")


def is_file(path: Path) -> bool:
    """`path.is_file()`, also for a name a file cannot have (too long: False, not OSError)."""
    return os.path.isfile(path)


def decode_json(text: str | bytes) -> JsonValue:
    """The JSON document `text` holds (json.JSONDecodeError, with its line, when it is not JSON;
    `_json_in_text.parse_json` finds JSON inside other text); arrays and objects nested deeper
    than `_jsonl.MAX_DEPTH` are refused the same way."""
    value: JsonValue = jsonl.loads(text)
    return value


def is_json(value: object) -> TypeGuard[JsonValue]:
    """Whether `value` (as a YAML or JSON parser made it) holds only JSON values."""
    if value is None or isinstance(value, str | int | float):
        return True
    if isinstance(value, list):
        return all(is_json(item) for item in value)
    if isinstance(value, dict):
        return all(isinstance(key, str) and is_json(item) for key, item in value.items())
    return False


def json_compatible(value: object) -> JsonValue:
    """YAML data as JSON values: YAML-only values (dates, sets, keys that are not text)
    become text, as `json.dumps` writes them."""
    return value if is_json(value) else decode_json(json.dumps(value, default=str))


def as_object(value: JsonValue) -> JsonObject | None:
    """`value` when it is a JSON object, else None."""
    return value if isinstance(value, dict) else None


def as_list(value: JsonValue) -> list[JsonValue]:
    """`value` when it is a JSON list, else an empty list (a missing or null list)."""
    return value if isinstance(value, list) else []


def objects(value: JsonValue) -> list[JsonObject]:
    """The JSON objects of a JSON list (other items, or a value that is no list, give none)."""
    return [item for item in as_list(value) if isinstance(item, dict)]


def mapping(value: JsonValue, where: str) -> JsonObject:
    """A mapping setting (missing or empty: `{}`); DatasetError `where: expected a mapping`
    when `value` is something else."""
    if not value:
        return {}
    if not isinstance(value, dict):
        raise DatasetError(f"{where}: expected a mapping, got {_kind(value)}")
    return value


def object_list(value: JsonValue, where: str) -> list[JsonObject]:
    """A list of JSON objects (missing, null or empty: none); DatasetError `where: expected ...`
    when `value` is something else."""
    if not value:
        return []
    items = objects(value)
    if not isinstance(value, list) or len(items) != len(value):
        raise DatasetError(f"{where}: expected a list of JSON objects, got {_kind(value)}")
    return items


def text(value: JsonValue, where: str) -> str:
    """`value` when it is text (DatasetError `where: expected text, got ...` otherwise)."""
    if not isinstance(value, str):
        raise DatasetError(f"{where}: expected text, got {_kind(value)}")
    return value


def _kind(value: object) -> str:
    return "nothing" if value is None else f"{value!r:.60}"


class CoreLoader(yaml.SafeLoader):
    """YAML 1.2's core schema, as JavaScript tools (js-yaml, `yaml`) read a file: only
    `true`/`false` are booleans (`Yes`, `on`, `n` stay text), `1:30` and `1_000` are text,
    `010` is ten and `0o17` octal."""


CoreLoader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag.rsplit(":", 1)[1] not in ("bool", "int", "float")]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
CoreLoader.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), [*"tTfF"]
)
CoreLoader.add_implicit_resolver(
    "tag:yaml.org,2002:int", re.compile(r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$"), [*"-+0123456789"]
)
CoreLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(
        r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
    ),
    [*"-+0123456789."],
)


def _core_int(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> int:
    text = str(loader.construct_scalar(node))
    return int(text, 0 if text[:2] in ("0o", "0x") else 10)


CoreLoader.add_constructor("tag:yaml.org,2002:int", _core_int)


def load_yaml(path: Path, core: bool = False) -> JsonValue:
    """A YAML file's data (as JSON values: see `json_compatible`); `core`: read by YAML 1.2's
    core schema (`CoreLoader`)."""
    return parse_yaml(read_text(path), path, core)


def parse_yaml(text: str, path: Path, core: bool = False) -> JsonValue:
    """YAML text's data as JSON values; DatasetError `path:line: not YAML`, or `path: ...` when it
    nests too deep or its aliases make too much of it (`_jsonl.data_problem`). `core`: see `load_yaml`."""
    try:
        data = jsonl.yaml_data(text, CoreLoader if core else None)
    except jsonl.YamlDataError as exc:
        raise DatasetError(f"{path}:{exc.line}: not YAML" if exc.line else f"{path}: {exc}") from None
    return json_compatible(data)


class _Dumper(yaml.SafeDumper):
    """Multi-line strings as `|` blocks, so prompts and dialogues stay readable."""


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    style = "|" if "\n" in value and not any(c in value for c in "\r\t") and value == value.rstrip(" ") else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


def suite_yaml(suite: Mapping[str, object]) -> str:
    """A suite dict as eval-file YAML (keys in the order given)."""
    return yaml.dump(suite, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100)


def write_suite(suite: Mapping[str, object], path: Path, header: str = "") -> Path:
    """Write a suite as YAML, with `header` as leading comment lines."""
    comment = "".join(f"# {line}\n".replace("# \n", "#\n") for line in header.splitlines())
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(comment + suite_yaml(suite), encoding="utf-8")
    return path


class JsonLines:
    """Where things are in a JSON file (for messages only: read when one is needed). `at("simulations[3]")`
    is the line where the 4th simulation starts, `at("simulations[3].messages[2]")` its 3rd message's,
    `at("[3]")` the 4th item's of a top-level list."""

    def __init__(self, source: Path):
        self.source = source
        self._text: str | None = None

    def at(self, what: str) -> str:
        if self._text is None:
            try:
                self._text = self.source.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                self._text = ""
        return f"{self.source}:{_line(self._text, what)}"

    @contextmanager
    def located(self, what: str) -> Iterator[None]:
        """A `DatasetError` raised inside, prefixed with `file:line` of `what` (found only then)."""
        try:
            yield
        except DatasetError as exc:
            raise DatasetError(f"{self.at(what)}: {exc}") from None


def _line(text: str, what: str) -> int:
    """The line of `what` (`key`, `key[i]`, `key[i].key[j]`, `[i]`) in a JSON text: the key's line,
    then the start of its i-th element (found by walking the JSON with its own decoder)."""
    decoder = json.JSONDecoder()
    position = 0
    for part in what.split("."):
        key, _, rest = part.partition("[")
        if key:  # "" in a top-level list's `[i]`
            found = text.find(f'"{key}"', position)
            if found < 0:
                break
            position = found
        for index in (int(i.rstrip("]")) for i in rest.split("[") if i) if rest else ():
            start = text.find("[", position) + 1
            try:
                for _ in range(index):
                    start = _skip_space(text, start)
                    _, start = decoder.raw_decode(text, start)
                    start = _skip_space(text, start) + 1  # the comma
                position = _skip_space(text, start)
            except ValueError:
                break
    return text.count("\n", 0, position) + 1


def _skip_space(text: str, position: int) -> int:
    while position < len(text) and text[position] in " \t\r\n":
        position += 1
    return position
