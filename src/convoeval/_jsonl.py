"""Reading JSON Lines with `file:line` errors: the one JSONL reader of results, battles and
other record files (bottom layer; each caller turns `JsonlError` into its own error)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path


def read_problem(path: Path, exc: OSError | UnicodeDecodeError) -> str:
    """`path: what is wrong` for a file that cannot be read, in words a newcomer understands."""
    if isinstance(exc, UnicodeDecodeError):
        return f"{path}: not a text file: invalid UTF-8 (byte 0x{exc.object[exc.start]:02x} at offset {exc.start})"
    if isinstance(exc, FileNotFoundError):
        return f"{path}: file not found"
    if isinstance(exc, IsADirectoryError):
        return f"{path} is a folder; give a file"
    return f"{path}: cannot read: {exc.strerror or exc}"


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
                    value = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise JsonlError(f"{path}:{number}: invalid JSON: {exc.msg}") from None
                if objects and not isinstance(value, dict):
                    raise JsonlError(f"{path}:{number}: expected a JSON object, got {value!r:.60}")
                yield number, value
    except (OSError, UnicodeDecodeError) as exc:
        raise JsonlError(read_problem(path, exc)) from None
