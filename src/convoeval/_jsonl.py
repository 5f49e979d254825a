"""Reading JSON Lines with `file:line` errors: the one JSONL reader of results, battles and
other record files (bottom layer; each caller turns `JsonlError` into its own error)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path


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
    except FileNotFoundError:
        raise JsonlError(f"{path}: file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise JsonlError(f"{path}: cannot read: {exc}") from None
