"""Problems found in eval files, each pointing at `file:line: field` (the classes live in
`convoeval.errors`)."""

from __future__ import annotations

from ..errors import Problem, SpecError

__all__ = ["Problem", "SpecError", "field_path", "first_per_field"]


def field_path(path: tuple[object, ...]) -> str:
    """`('tests', 0, 'turns', 1, 'input')` -> `tests[0].turns[1].input`."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out or "(file)"


def first_per_field(problems: list[Problem]) -> list[Problem]:
    """The first problem of each field of a line: what follows from it (a value refused, then
    missing; a file name refused, then not found) is not a problem of its own."""
    first: dict[tuple[str, int, str], Problem] = {}
    for problem in problems:
        first.setdefault((problem.file, problem.line, problem.field), problem)
    return list(first.values())
