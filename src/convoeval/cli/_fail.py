"""The one way a command fails: `error: message` on stderr, one line whatever the message holds
(a path with a newline or an ESC sequence is shown escaped, never sent raw to the terminal), and
exit code 2."""

from __future__ import annotations

import sys
from collections.abc import Iterable

import typer

from ..report._terminal import printable


def one_line(text: str) -> str:
    """`text` safe for a terminal, on one line: control characters and line breaks escaped."""
    return printable(text).replace("\n", "\\n")


def say(text: str) -> None:
    """Write one line to stderr (`one_line`), unwrapped whatever the terminal's width."""
    sys.stderr.write(one_line(text) + "\n")
    sys.stderr.flush()


def fail(message: str, code: int = 2) -> typer.Exit:
    """Print `error: message` (`say`) and return the exit (code 2) to raise."""
    say(f"error: {message}")
    return typer.Exit(code)


def fail_with_problems(problems: Iterable[object]) -> typer.Exit:
    """Print `file:line: field: message` lines (`say`) and return the exit (code 2) to raise."""
    for problem in problems:
        say(str(problem))
    return typer.Exit(2)
