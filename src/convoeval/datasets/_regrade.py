"""A stored run judged again with its own checks (`convoeval grade run.jsonl`).

Every result of a run carries the checks of its test (`EvaluationResult.checks`: the test and
the suite keys that apply to it). From them this module rebuilds each suite, with the run's
threshold and trial count per test, and a targets file in which every target of the run is a
`replay` target: it answers each turn with the reply that turn got in the run (text, tool
calls, latency). Running that suite grades every stored conversation with every check the
suite had (deterministic and judged), calling no model but the judge.

A test with a simulated user cannot be replayed turn by turn (the simulator would write new
messages): each of its recorded conversations becomes a `transcript:` test with the test's
conversation checks, scenario criteria and stop reason (`<id>#<target>#<trial>` when there are
several; trials that ended in an error are left out). A test with a workspace or `verify` is left out
with a note: its checks ran on files the run did not keep.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import JsonValue

from .._jsonl import as_int
from ..errors import DatasetError
from ..results import EvaluationResult, TrialResult
from ..spec import CHECKS_VERSION, SIMULATED_USER_KEYS
from ._common import JsonObject, as_list, as_object, read_jsonl, suite_yaml

#: Keys of a simulated user's test that a recorded transcript replaces.
_LIVE_KEYS = (*SIMULATED_USER_KEYS, "turns", "input", "mode", "hints", "verify", "workspace", "depends_on")

#: Trials without a whole conversation to judge again.
_NO_CONVERSATION = frozenset({"execution_error", "simulator_error", "skipped"})


@dataclass
class RegradeSuite:
    """One suite of the run, rebuilt: its data, its original file (None when it had none)."""

    data: dict[str, Any]  # the suite keys the results' stored checks hold (`EvaluationResult.checks`), and its tests
    file: Path | None
    name: str


@dataclass
class Regrade:
    """What `convoeval grade` runs: the suites, the run's targets (as replay targets), notes."""

    suites: list[RegradeSuite]
    targets: list[str]
    notes: list[str] = field(default_factory=list)


def stored_run(source: Path) -> Regrade | None:
    """The regrading of the results file `source`, or None when it holds no convoeval results
    (chat logs: graded with `--graders` or the default dialogue graders).

    Raises:
        DatasetError: `file:line: ...` a result without stored checks (recorded before they were
            stored: grade it with --graders FILE), checks of an unknown layout, or nothing that
            can be graded again.
    """
    records = read_jsonl(source)
    if not any("test_id" in r and isinstance(r.get("output"), list) for _, r in records):
        return None
    suites: dict[str, RegradeSuite] = {}
    tests: dict[str, dict[str, JsonObject]] = {}  # suite key -> test id -> test
    recorded: dict[str, dict[str, list[tuple[EvaluationResult, TrialResult]]]] = {}  # simulated users' trials
    targets: dict[str, None] = {}
    notes: list[str] = []
    for line, record in records:
        result = _result(source, line, record)
        checks = result.checks or {}
        targets.setdefault(result.target)
        key = str(checks.get("file") or result.suite or "suite")
        if key not in suites:
            file = Path(checks["file"]) if checks.get("file") else None
            data = {**({"name": result.suite} if result.suite else {}), **(checks.get("suite") or {})}
            suites[key] = RegradeSuite(data, file, result.suite or "suite")
            tests[key], recorded[key] = {}, {}
        test = checks["test"]
        if "workspace" in test or "verify" in test or ("workspace" in suites[key].data and "transcript" not in test):
            notes.append(
                f"{result.test_id} @ {result.target}: not graded again: its checks ran in a workspace "
                "the run did not keep"
            )
        elif any(k in test for k in SIMULATED_USER_KEYS):
            recorded[key].setdefault(result.test_id, []).extend((result, trial) for trial in result.trial_results())
        else:
            _add_test(tests[key], test, result)
    for key in suites:
        for test_id, conversations in recorded[key].items():
            _add_transcripts(tests[key], test_id, conversations, notes)
    _check_ids(tests)
    if not any(tests.values()):
        raise DatasetError(f"{source}:1: no test of the run can be graded again ({notes[0] if notes else 'none'})")
    for key, suite in suites.items():
        _finish(suite, tests[key])
    return Regrade(list(suites.values()), list(targets), notes)


def _result(source: Path, line: int, record: JsonObject) -> EvaluationResult:
    """A stored result that carries its checks (DatasetError `file:line: ...` otherwise)."""
    try:
        result = EvaluationResult.model_validate(record)
    except ValueError:
        raise DatasetError(f"{source}:{line}: not a convoeval result") from None
    where = f"{source}:{line}: {result.test_id} @ {result.target}"
    if result.checks is None:
        raise DatasetError(
            f"{where}: this result has no stored checks (it was recorded by a convoeval that did not keep "
            "them with each result); grade it with --graders FILE, or run its suite again"
        )
    if result.checks.get("version") != CHECKS_VERSION or not isinstance(result.checks.get("test"), dict):
        raise DatasetError(
            f"{where}: stored checks of layout {result.checks.get('version')!r}; this convoeval reads {CHECKS_VERSION}"
        )
    suite = result.checks.get("suite")
    for name, value, kind in (
        ("file", result.checks.get("file"), str),
        ("suite", suite, dict),
        ("suite.execution", suite.get("execution") if isinstance(suite, dict) else None, dict),
    ):
        if value is not None and not isinstance(value, kind):
            raise DatasetError(f"{where}: checks.{name}: {value!r} is not what convoeval stores (a {kind.__name__})")
    return result


def _finish(suite: RegradeSuite, tests: dict[str, JsonObject]) -> None:
    """The suite's data with its tests; dependencies on tests not graded again are dropped,
    and the suite's own targets (the replay targets stand in for them)."""
    for test in tests.values():
        if "depends_on" in test:
            depends = test["depends_on"]
            deps = [depends] if isinstance(depends, str) else as_list(depends)
            test["depends_on"] = [d for d in deps if d in tests]
    execution = {k: v for k, v in (suite.data.get("execution") or {}).items() if k not in ("target", "targets")}
    suite.data = {k: v for k, v in suite.data.items() if k not in ("execution", "workspace")}
    suite.data["tests"] = list(tests.values())
    if execution:
        suite.data["execution"] = execution


def _add_test(tests: dict[str, JsonObject], stored: JsonObject, result: EvaluationResult) -> None:
    """The test of `result`, with the run's threshold and as many trials as it had (on the
    target that had the most)."""
    test = dict(stored)
    execution = dict(as_object(test.get("execution")) or {})
    count = max(len(result.trials), 1)
    known = tests.get(result.test_id)
    if known is not None:
        before = (as_object(known.get("execution")) or {}).get("trials", 1)
        count = max(count, as_int(before.get("count") if isinstance(before, dict) else before) or 1)
    trials = execution.get("trials")
    execution["trials"] = {**trials, "count": count} if isinstance(trials, dict) else count
    execution["threshold"] = result.threshold
    test["execution"] = execution
    tests[result.test_id] = test


def _add_transcripts(
    tests: dict[str, JsonObject],
    test_id: str,
    conversations: list[tuple[EvaluationResult, TrialResult]],
    notes: list[str],
) -> None:
    """A simulated user's recorded conversations as `transcript:` tests with the test's
    conversation checks and criteria: `<id>` for one, `<id>#<target>#<trial>` for several.
    A trial that ended in an error (or did not run) stays out: there is no conversation to judge."""
    broken = [(r, t) for r, t in conversations if t.execution_status in _NO_CONVERSATION]
    for result, trial in broken:
        notes.append(f"{test_id} @ {result.target} trial {trial.trial}: not graded again ({trial.execution_status})")
    conversations = [c for c in conversations if c not in broken]
    for result, trial in conversations:
        test: JsonObject = {k: v for k, v in (result.checks or {})["test"].items() if k not in _LIVE_KEYS}
        test["assertions"] = [a for a in as_list(test.get("assertions")) if not _judges_the_simulator(a)]
        messages = list(trial.output)
        while messages and messages[-1].role == "user":  # the simulator's last words got no reply
            messages.pop()
        test["transcript"] = [m.model_dump(mode="json", exclude_none=True) for m in messages]
        if trial.stop_reason is not None:  # how it ended (the simulator's stop is no message)
            test["stop_reason"] = trial.stop_reason
        execution = {k: v for k, v in (as_object(test.get("execution")) or {}).items() if k != "trials"}
        test["execution"] = {**execution, "targets": [result.target], "threshold": result.threshold}
        name = test_id if len(conversations) == 1 else f"{test_id}#{result.target}#{trial.trial}"
        test["id"] = name
        tests[name] = test
    if not conversations:
        return
    notes.append(
        f"{test_id}: a simulated user's conversations are graded as recorded transcripts "
        "(without simulator-fidelity: the simulator is not run again)"
    )


def _judges_the_simulator(assertion: JsonValue) -> bool:
    return isinstance(assertion, dict) and str(assertion.get("type", "")).replace("_", "-") == "simulator-fidelity"


def _check_ids(tests: dict[str, dict[str, JsonObject]]) -> None:
    """Replies are found by test id and trial: a test id may be in one suite only."""
    seen: dict[str, str] = {}
    for key, by_id in tests.items():
        for test_id in by_id:
            if test_id in seen:
                raise DatasetError(
                    f"test {test_id!r} is in two suites of the run ({seen[test_id]} and {key}); "
                    "grade the results of one suite at a time"
                )
            seen[test_id] = key


def write_regrade(regrade: Regrade, source: Path, folder: Path) -> tuple[list[Path], Path, list[Path]]:
    """Write the suites and the replay targets file; returns (suite files, targets file, files to
    delete afterwards).

    A suite goes next to its original file when that folder still exists and can be written
    (a hidden file: the files its checks name, prompts, code-graders, tools, resolve as in
    the run), else into `folder`.
    """
    folder.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    temporary: list[Path] = []
    for suite in regrade.suites:
        stem = (suite.file.name if suite.file else f"{suite.name}.eval.yaml").removesuffix(".yaml").removesuffix(".yml")
        home = suite.file.parent if suite.file is not None else None
        header = f"# Generated by `convoeval grade {source.name}`: the run's tests and checks, replayed.\n"
        text = header + suite_yaml(suite.data)
        if home is not None and home.is_dir() and os.access(home, os.W_OK):
            path = home / f".{stem}.graded-{os.getpid()}.eval.yaml"
            temporary.append(path)
        else:
            if home is not None:
                regrade.notes.append(f"{suite.file} is gone: files its checks name are looked up in {folder}")
            path = folder / f"{stem}.graded.eval.yaml"
        path.write_text(text, encoding="utf-8")
        written.append(path)
    targets = folder / f"{source.stem}.replay-targets.yaml"
    entries = [{"name": name, "provider": "replay", "model": str(source.resolve())} for name in regrade.targets]
    targets.write_text(yaml.safe_dump({"targets": entries}, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return written, targets, temporary


def remove(paths: Iterable[Path]) -> None:
    """Delete the temporary suite files (quietly: they may be gone already)."""
    for path in paths:
        try:
            path.unlink()
        except OSError:
            pass
