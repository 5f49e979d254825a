"""The Python API: everything `convoeval run` does, callable from code.

Example:
    report = convoeval.run("examples/travel-planning.eval.yaml", target="openai:gpt-4o-mini")
    report = convoeval.run(options=convoeval.RunOptions(paths=["suite.eval.yaml"], trials=3))
    report = convoeval.run({"tests": [{"id": "hi", "input": "Say hi", "assertions": ["Says hi"]}]}, target=bot)
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import yaml

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
    state_dir,
)
from .errors import ConfigError
from .results import EvaluationResult
from .spec import Suite, load_suites

__all__ = [
    "ConfigError",
    "RunEvents",
    "RunOptions",
    "RunReport",
    "SuiteData",
    "TargetLike",
    "arun",
    "eval_paths",
    "load_suites",
    "local_model_available",
    "run",
    "suite_file",
]

#: A suite given to `run` as data: the eval file's shape, as Python values.
SuiteData = Mapping[str, object]
Paths = str | Path | SuiteData | Sequence[str | Path | SuiteData]


def run(
    paths: Paths | None = None,
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
    paths: Paths | None = None,
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
        paths: eval files or folders (not needed with `resume`), or suites as data: a mapping
            in the eval file's shape (`suite_file` writes it as one).
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
        option_values["paths"] = eval_paths(paths)
    opts = RunOptions.build(options, **option_values)
    if events is not None and (on_result or on_note or on_start):
        raise ConfigError("give events, or on_result/on_note/on_start, not both")
    if events is None:
        events = CallbackEvents(on_result, on_note, on_start)
    return await execute_run(opts, version=__version__, events=events)


def eval_paths(paths: Paths) -> list[str | Path]:
    """`paths` as a list, each suite given as data written as an eval file (`suite_file`).

    Raises:
        ConfigError: an item is none of these (a loaded `Suite` is named: give its file).
    """
    given: object = paths  # a caller may give anything: checked here
    items = list(given) if isinstance(given, Sequence) and not isinstance(given, str) else [given]
    files: list[str | Path] = []
    for item in items:
        if isinstance(item, Mapping):
            files.append(suite_file(item))
        elif isinstance(item, str | Path):
            files.append(item)
        else:
            hint = " (a loaded Suite: give its file, `suite.path`)" if isinstance(item, Suite) else ""
            kind = type(item).__name__
            raise ConfigError(f"paths: expected eval files, folders or suites as data (mappings), got a {kind}{hint}")
    return files


def suite_file(suite: SuiteData) -> Path:
    """A suite given as data, written as an eval file where the run store keeps things
    (`.convoeval/suites/HASH/NAME.eval.yaml`): its errors are that file's `file:line`, and a
    resumed or re-run run reads it again. Paths in it are relative to that folder.

    Raises:
        ConfigError: it holds a value that is not YAML data (a Python object, a function).
    """
    try:
        text = yaml.safe_dump(dict(suite), sort_keys=False, allow_unicode=True, width=100)
    except yaml.YAMLError as exc:  # a RepresenterError: (message, the value)
        raise ConfigError(
            f"a suite given as data holds only YAML values (text, numbers, lists, mappings), not {exc.args[-1]!r}"
        ) from None
    name = re.sub(r"[^A-Za-z0-9_.-]+", "-", str(suite.get("name") or "suite")).strip("-.") or "suite"
    path = state_dir() / "suites" / hashlib.sha256(text.encode()).hexdigest()[:16] / f"{name}.eval.yaml"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            temp = path.with_name(f".{path.name}.{os.getpid()}")  # another process may be reading it
            temp.write_text(text, encoding="utf-8")
            os.replace(temp, path)
    except OSError as exc:
        raise ConfigError(f"cannot write the suite given as data to {path}: {exc.strerror or exc}") from None
    return path
