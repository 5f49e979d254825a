"""Problems found in eval files, each pointing at `file:line: field` (the classes live in
`convoeval.errors`)."""

from __future__ import annotations

from ..errors import Problem, SpecError

__all__ = ["Problem", "SpecError", "field_path"]


def field_path(path: tuple[object, ...]) -> str:
    """`('tests', 0, 'turns', 1, 'input')` -> `tests[0].turns[1].input`."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out or "(file)"
