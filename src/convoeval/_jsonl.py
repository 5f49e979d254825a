"""Reading JSON Lines with `file:line` errors: the one JSONL reader of results, battles and
other record files (bottom layer; each caller turns `JsonlError` into its own error)."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

from ._text import without_surrogates

#: How deep arrays and objects may nest in a file read: deeper data would exhaust Python's
#: recursion limit, in the JSON decoder or in the code that later walks or writes it.
MAX_DEPTH = 100

#: A JSON string (skipped: its brackets are text), or a bracket.
_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]')
_DECODER = json.JSONDecoder()
#: A JSON escape of a surrogate (`\ud800`), which may stand alone.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def read_problem(path: Path, exc: OSError | UnicodeDecodeError) -> str:
    """`path: what is wrong` for a file that cannot be read, in words a newcomer understands."""
    if isinstance(exc, UnicodeDecodeError):
        return f"{path}: not a text file: invalid UTF-8 (byte 0x{exc.object[exc.start]:02x} at offset {exc.start})"
    if isinstance(exc, FileNotFoundError):
        return f"{path}: file not found"
    if isinstance(exc, IsADirectoryError):
        return f"{path} is a folder; give a file"
    return f"{path}: cannot read: {exc.strerror or exc}"


def loads(text: str | bytes) -> Any:
    """`json.loads`, refusing arrays and objects nested deeper than MAX_DEPTH (json.JSONDecodeError,
    at the place, for both)."""
    if isinstance(text, bytes):
        text = text.decode(json.detect_encoding(text), "surrogatepass")
    try:
        value = json.loads(text)
        deep = too_deep(text)
    except RecursionError:  # the decoder's stack ran out: found by the scan, which has none
        value, deep = None, too_deep(text) or 0
    except ValueError as exc:
        raise _decode_error(exc, text, 0) from None
    if deep is not None:
        raise json.JSONDecodeError(f"nested more than {MAX_DEPTH} levels deep", text, deep)
    return _without_surrogates(value) if _SURROGATE_ESCAPE.search(text) else value


def _without_surrogates(value: Any) -> Any:
    """`value` with the lone surrogates its strings hold (`\ud800` escapes) replaced by U+FFFD:
    no file or report could be written with them (nested at most MAX_DEPTH deep: `loads`)."""
    if isinstance(value, str):
        return without_surrogates(value)
    if isinstance(value, list):
        return [_without_surrogates(item) for item in value]
    if isinstance(value, dict):
        return {without_surrogates(key): _without_surrogates(item) for key, item in value.items()}
    return value


def raw_decode(text: str, start: int = 0) -> tuple[Any, int]:
    """`json.JSONDecoder.raw_decode` (the value at `start`, where it ends), refusing nesting as `loads` does."""
    try:
        value, end = _DECODER.raw_decode(text, start)
        deep = too_deep(text, start, end)
    except RecursionError:
        value, end, deep = None, start, too_deep(text, start) or start
    except ValueError as exc:
        raise _decode_error(exc, text, start) from None
    if deep is not None:
        raise json.JSONDecodeError(f"nested more than {MAX_DEPTH} levels deep", text, deep)
    return (_without_surrogates(value) if _SURROGATE_ESCAPE.search(text, start, end) else value), end


def _decode_error(exc: ValueError, text: str, start: int) -> json.JSONDecodeError:
    """`exc` as a JSONDecodeError: itself, or Python's refusal of an integer of more than 4300
    digits (`sys.get_int_max_str_digits`), which the decoder raises as a plain ValueError."""
    if isinstance(exc, json.JSONDecodeError):
        return exc
    digits = sys.get_int_max_str_digits()
    found = re.compile(rf"\d{{{digits + 1}}}").search(text, start)
    return json.JSONDecodeError(f"an integer of more than {digits} digits", text, found.start() if found else start)


def too_deep(text: str, start: int = 0, end: int | None = None) -> int | None:
    """Where arrays and objects in JSON `text[start:end]` first nest deeper than MAX_DEPTH, if they do."""
    end = len(text) if end is None else end
    if text.count("[", start, end) + text.count("{", start, end) <= MAX_DEPTH:
        return None
    depth = 0
    for token in _TOKEN.finditer(text, start, end):
        if token[0] in ("[", "{"):
            depth += 1
            if depth > MAX_DEPTH:
                return token.start()
        elif token[0] in ("]", "}"):
            depth -= 1
    return None


def data_problem(value: object, size: int) -> str | None:
    """What makes parsed YAML data (read from `size` characters) too much to use, else None: lists
    and mappings nested deeper than MAX_DEPTH, or aliases that expand it to more values than it
    has characters (a "billion laughs" file). Walked without recursion."""
    limit, count, stack = max(size, 100_000), 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        count += 1
        if count > limit:
            return f"more than {limit} values once its YAML aliases are expanded"
        if isinstance(item, dict | list):
            if depth > MAX_DEPTH:
                return f"nested more than {MAX_DEPTH} levels deep"
            stack.extend((child, depth + 1) for child in (item.values() if isinstance(item, dict) else item))
    return None


class YamlDataError(ValueError):
    """YAML text that gives no usable data: `line` (1-based) of a syntax error, else None (nested
    too deep, or too many values once its aliases are expanded)."""

    def __init__(self, message: str, line: int | None):
        super().__init__(message)
        self.line = line


def yaml_data(text: str, loader: type | None = None) -> object:
    """The data of YAML `text` (`yaml.safe_load`, or `loader`), within MAX_DEPTH and without an
    alias bomb (`data_problem`).

    Raises:
        YamlDataError: the text is no YAML, or its data is too much to use.
    """
    import yaml  # not needed by the JSON readers of this module

    try:
        value = yaml.load(text, loader) if loader else yaml.safe_load(text)  # noqa: S506 (safe loaders only)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise YamlDataError(str(getattr(exc, "problem", None) or exc), mark.line + 1 if mark else 1) from None
    except RecursionError:  # the YAML parser recurses once per level of nesting
        raise YamlDataError(f"nested more than {MAX_DEPTH} levels deep", None) from None
    problem = data_problem(value, len(text))
    if problem is not None:
        raise YamlDataError(problem, None)
    return value


class JsonlError(ValueError):
    """A JSONL file cannot be read: the message is `file:line: what is wrong` (or `file: ...`)."""


def read_jsonl(path: str | Path, *, objects: bool = False) -> Iterator[tuple[int, object]]:
    """`(line number, value)` of each non-blank line of `path`, read one line at a time.

    Args:
        objects: every value must be a JSON object.

    Raises:
        JsonlError: the file is missing or unreadable, or a line is not JSON (or not an object).
    """
    path = Path(path)
    try:
        with path.open(encoding="utf-8") as handle:
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                try:
                    value = loads(line)
                except json.JSONDecodeError as exc:
                    raise JsonlError(f"{path}:{number}: invalid JSON: {exc.msg}") from None
                if objects and not isinstance(value, dict):
                    raise JsonlError(f"{path}:{number}: expected a JSON object, got {value!r:.60}")
                yield number, value
    except (OSError, UnicodeDecodeError) as exc:
        raise JsonlError(read_problem(path, exc)) from None


def bounded_lines(handle: BinaryIO, longest: int, most: int) -> Iterator[bytes | None]:
    """The lines of a binary file until `most` bytes were read, one longer than `longest` bytes
    as None: read in pieces of that size, never held whole (a file an agent's commands could
    write: one line of 1 GB read whole took 5 GB of memory)."""
    read = 0
    while read < most and (line := handle.readline(longest + 1)):
        read += len(line)
        if len(line) <= longest:
            yield line
            continue
        while line and not line.endswith(b"\n"):  # the rest of it, in bounded pieces
            line = handle.readline(longest)
            read += len(line)
        yield None


def as_int(value: object) -> int | None:
    """A whole number given as a JSON number or as text (`"42"`), else None (also for infinity)."""
    if isinstance(value, int | float | str):
        try:
            return int(value)
        except (ValueError, OverflowError):
            return None
    return None
