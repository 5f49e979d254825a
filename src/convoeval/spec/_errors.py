"""Problems found in eval files, each pointing at `file:line: field`."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Problem:
    """One thing wrong with an eval file."""

    file: str
    line: int
    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.field}: {self.message}"


class SpecError(Exception):
    """An eval file (or several) is invalid; `problems` lists everything found."""

    def __init__(self, problems: list[Problem]):
        self.problems = problems
        super().__init__("\n".join(str(p) for p in problems))


def field_path(path: tuple[str | int, ...]) -> str:
    """`('tests', 0, 'turns', 1, 'input')` -> `tests[0].turns[1].input`."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out or "(file)"
