"""The errors convoeval raises, under one root: `except ConvoevalError` catches them all.

- `SpecError`: an eval or targets file is invalid (`problems`, each `file:line: field: message`).
- `ConfigError`: a run cannot start (unknown or misconfigured target, judge, plugin).
- `TargetError`: a target could not reply (the run marks that test `execution_error`).
- `GraderError`: a grader could not decide (the assertion's verdict becomes `error`).
- `RegistryError`: a name is registered twice, or a plugin cannot be loaded.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .results import ToolCall, Usage

if TYPE_CHECKING:
    from pydantic import ValidationError


class ConvoevalError(Exception):
    """Root of every error convoeval raises on purpose."""


@dataclass(frozen=True)
class Problem:
    """One thing wrong with an eval file."""

    file: str
    line: int
    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.field}: {self.message}"


class SpecError(ConvoevalError):
    """An eval file (or several) is invalid; `problems` lists everything found."""

    def __init__(self, problems: list[Problem]):
        self.problems = problems
        super().__init__("\n".join(str(p) for p in problems))


class ConfigError(ConvoevalError):
    """The run cannot start: a target, judge, option or input file is unknown or misconfigured.

    The message is one line that says what to do (`file:line: ...` when it is about a file)."""


class NothingToRerun(ConfigError):
    """`rerun_failed` names a run in which every test passed: there is nothing to run again.
    The CLI says so and exits 0 (a green run stays green); the API raises it."""


class TargetError(ConvoevalError):
    """The target could not produce a reply (HTTP error after retries, timeout, bad body).

    The message is shown to the user and stored in results: it must never hold a secret.
    `usage`, `cost_usd`, `tool_calls` and `text` record what the call had spent, run and said
    before it failed (an agent CLI whose turn ended in an error after its tools ran), so the
    run still counts them and the transcript shows them.
    """

    def __init__(
        self,
        message: str,
        *,
        usage: Usage | None = None,
        cost_usd: float = 0.0,
        tool_calls: list[ToolCall] | None = None,
        text: str = "",
    ):
        super().__init__(message)
        self.usage = usage or Usage()
        self.cost_usd = cost_usd
        self.tool_calls = tool_calls or []
        self.text = text

    @property
    def spent(self) -> bool:
        """Whether the call spent tokens or money, or ran tools, before it failed."""
        return bool(self.usage.total_tokens or self.cost_usd or self.tool_calls)

    def reworded(self, message: str) -> TargetError:
        """The same error (what it spent too) with another message."""
        return TargetError(
            message, usage=self.usage, cost_usd=self.cost_usd, tool_calls=self.tool_calls, text=self.text
        )


class GraderError(ConvoevalError):
    """The grader could not decide (crash, timeout, unparseable judge output).

    It becomes verdict `error` and is left out of the score; it never becomes a score.
    `judge_usage`, `judge_cost_usd`, `judge_calls` and `judge_reasks` record what judge calls
    had consumed before it failed (a re-ask that failed too among them), so the run's accounting
    stays complete.
    """

    def __init__(
        self,
        message: str,
        *,
        judge_usage: Usage | None = None,
        judge_cost_usd: float = 0.0,
        judge_calls: int = 0,
        judge_reasks: int = 0,
    ):
        super().__init__(message)
        self.judge_usage = judge_usage or Usage()
        self.judge_cost_usd = judge_cost_usd
        self.judge_calls = judge_calls
        self.judge_reasks = judge_reasks


class RegistryError(ConvoevalError):
    """A name is already registered, a kind is unknown, or a plugin failed to load."""


class DatasetError(ConvoevalError):
    """A dataset or transcripts file cannot be imported (the message starts `file:line:`)."""


@dataclass(frozen=True)
class FieldProblem:
    """The first problem of a pydantic validation error, for a one-line message.

    Attributes:
        field: where, dotted (`turns.0.input`), or the `whole` name given when at the top.
        message: pydantic's message without its `Value error, ` prefix.
        unknown: the field is not allowed (an unknown key).
    """

    field: str
    message: str
    unknown: bool

    def __str__(self) -> str:
        return f"{self.field}: {self.message}"


def field_problems(exc: ValidationError, whole: str = "(value)") -> list[FieldProblem]:
    """Every problem of `exc`, in its order."""
    return [
        FieldProblem(
            ".".join(str(p) for p in error["loc"]) or whole,
            error["msg"].removeprefix("Value error, "),
            error["type"] == "extra_forbidden",
        )
        for error in exc.errors(include_url=False)
    ]


def first_problem(exc: ValidationError, whole: str = "(value)") -> FieldProblem:
    """The first problem of `exc` (the one helper every one-line validation message uses)."""
    return field_problems(exc, whole)[0]


def suggest(word: str, options: Iterable[str]) -> str:
    """` (did you mean 'x'?)` for the closest of `options` (case aside), or an empty string."""
    by_folded = {o.casefold(): o for o in options if o != word}
    close = difflib.get_close_matches(word.casefold(), list(by_folded), n=1, cutoff=0.75)
    return f" (did you mean {by_folded[close[0]]!r}?)" if close else ""
