"""Regular expressions written by a suite or config author and matched against text a model,
an agent, a tool or a dataset controls: compiled once, searched with a time bound (bottom layer).

A pattern that backtracks catastrophically (`^(a+)+$` on a long reply) would hold the event
loop's thread, and so every conversation of the run; here a search is stopped after
`REGEX_TIMEOUT_S` seconds and raises `RegexTimeout`, which each caller turns into the error
of its own kind (a grader error, an `execution_error`, a target failure). The `regex` module
does the matching: its default (V0) syntax is Python's `re` syntax, a superset of it.
"""

from __future__ import annotations

from functools import cache, lru_cache
from types import ModuleType
from typing import TYPE_CHECKING

from ._text import shorten
from .errors import ConvoevalError

if TYPE_CHECKING:
    from regex import Match, Pattern

#: Seconds one search of a user's pattern may take before it is stopped.
REGEX_TIMEOUT_S = 2.0

#: Flag letters (as in the `regex` assertion) and the `regex` flags they name; `g` (a JavaScript
#: habit) is a no-op.
FLAG_LETTERS = {
    "i": "IGNORECASE",
    "m": "MULTILINE",
    "s": "DOTALL",
    "x": "VERBOSE",
    "a": "ASCII",
    "u": "UNICODE",
    "g": "",
}


@cache
def _regex() -> ModuleType:
    """The `regex` module, loaded by the first pattern compiled (a run that has none never loads it)."""
    import regex

    return regex


class PatternError(ValueError):
    """A pattern that is not a valid regular expression (the `regex` module's message)."""


class RegexTimeout(ConvoevalError):
    """A search of a user's pattern ran over its time bound and was stopped; the message names
    the pattern's `field` (`capture token: regex`), the pattern (shortened) and the text's length."""

    def __init__(self, field: str, source: str, timeout_s: float, length: int, what: str = "text"):
        self.field, self.source, self.timeout_s, self.length = field, source, timeout_s, length
        super().__init__(
            f"{field} {shown(source)} took over {timeout_s:g} s on a {length}-char {what} "
            "and was stopped (it backtracks catastrophically: simplify it)"
        )


def shown(source: str, flags: str = "") -> str:
    """A pattern as people read it in a message: `/source/flags`, shortened."""
    return f"/{shorten(source, 60)}/{flags}"


def flag_bits(letters: str) -> int:
    """The flag bits of flag letters (`"im"`); unknown letters are ignored (validate them first)."""
    bits = 0
    for c in letters:
        if name := FLAG_LETTERS.get(c):
            bits |= getattr(_regex(), name)
    return bits


@lru_cache(maxsize=1024)
def compile_pattern(source: str, flags: int = 0) -> Pattern[str]:
    """The compiled pattern (cached); raises `PatternError` when it is not valid."""
    regex = _regex()
    try:
        return regex.compile(source, flags)
    except regex.error as exc:
        raise PatternError(str(exc)) from None


def check_pattern(source: str, flags: int = 0) -> str:
    """`source` when it compiles, else ValueError `not a valid regular expression: ...`
    (for pydantic validators, which turn it into `file:line: field: ...`)."""
    try:
        compile_pattern(source, flags)
    except PatternError as exc:
        raise ValueError(f"not a valid regular expression: {exc}") from None
    return source


def search(
    pattern: str | Pattern[str],
    text: str,
    *,
    field: str,
    flags: int = 0,
    timeout_s: float | None = None,
    what: str = "text",
) -> Match[str] | None:
    """The first match of `pattern` in `text`, or None; `RegexTimeout` after
    `timeout_s` (default `REGEX_TIMEOUT_S`). A string pattern is compiled (once) with `flags`;
    `PatternError` if invalid."""
    compiled = compile_pattern(pattern, flags) if isinstance(pattern, str) else pattern
    timeout_s = REGEX_TIMEOUT_S if timeout_s is None else timeout_s
    try:
        return compiled.search(text, timeout=timeout_s, concurrent=True)
    except TimeoutError:
        raise RegexTimeout(field, compiled.pattern, timeout_s, len(text), what) from None
