"""The Python API: everything `convoeval run` does, callable from code.

Example:
    report = convoeval.run("examples/travel-planning.eval.yaml", target="openai:gpt-4o-mini")
    report = convoeval.run(options=convoeval.RunOptions(paths=["suite.eval.yaml"], trials=3))
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from . import report  # noqa: F401  (adds the HTML, JUnit and Markdown results formats)
from ._sync import run_sync
from ._version import __version__
from .engine import (
    CallbackEvents,
    RunEvents,
    RunMeter,
    RunOptions,
    RunReport,
    TargetLike,
    execute_run,
    local_model_available,
)
from .errors import ConfigError
from .results import EvaluationResult
from .spec import load_suites

__all__ = [
    "ConfigError",
    "RunEvents",
    "RunOptions",
    "RunReport",
    "TargetLike",
    "arun",
    "load_suites",
    "local_model_available",
    "run",
]


def run(
    paths: str | Path | Sequence[str | Path] | None = None,
    *,
    options: RunOptions | None = None,
    on_result: Callable[[EvaluationResult], None] | None = None,
    on_note: Callable[[str], None] | None = None,
    on_start: Callable[[RunMeter], None] | None = None,
    events: RunEvents | None = None,
    **option_values: object,
) -> RunReport:
    """Run eval files and return their results; see `arun`.

    Example:
        report = convoeval.run("examples/travel-planning.eval.yaml", target="openai:gpt-4o-mini")
        print([(r.test_id, r.score) for r in report.results])
    """
    if option_values:
        options = RunOptions.build(options, **option_values)
    return run_sync(
        arun(
            paths,
            options=options,
            on_result=on_result,
            on_note=on_note,
            on_start=on_start,
            events=events,
        )
    )


async def arun(
    paths: str | Path | Sequence[str | Path] | None = None,
    *,
    options: RunOptions | None = None,
    on_result: Callable[[EvaluationResult], None] | None = None,
    on_note: Callable[[str], None] | None = None,
    on_start: Callable[[RunMeter], None] | None = None,
    events: RunEvents | None = None,
    **option_values: object,
) -> RunReport:
    """Run every test of the given eval files (or folders of them) against each target.

    Args:
        paths: eval files or folders (not needed with `resume`).
        options: a `RunOptions`; keyword arguments (`target=`, `judge=`, `trials=`, ...: the
            fields of RunOptions) build one, or change the given one.
        on_result: called with each result as its test finishes.
        on_note: called with one-line notes (defaults chosen, and so on).
        on_start: called once the run is planned, with its live RunMeter (run id, totals).
        events: a `RunEvents` told of the same things and of each graded turn, as one object
            (instead of the three callables; giving both is an error).

    Raises:
        SpecError: an eval file is invalid, or names a target or judge no targets file defines
            (every problem, `file:line: field: message`).
        ConfigError: an option is invalid, a target or judge cannot be built or has no API key
            it needs, a resumed run cannot be found, or the results file cannot be written
            (checked before the run).
        StoreError: the run store or the cache cannot be opened or written (locked, disk
            full, read-only, damaged); results committed before stay resumable.
    """
    if paths is not None:
        option_values["paths"] = paths
    opts = RunOptions.build(options, **option_values)
    if events is not None and (on_result or on_note or on_start):
        raise ConfigError("give events, or on_result/on_note/on_start, not both")
    if events is None:
        events = CallbackEvents(on_result, on_note, on_start)
    return await execute_run(opts, version=__version__, events=events)
