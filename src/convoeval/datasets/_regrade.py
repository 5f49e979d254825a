"""A stored run judged again with its own checks (`convoeval grade run.jsonl`).

Every result of a run carries the checks of its test (`EvaluationResult.checks`: the test and
the suite keys that apply to it). From them this module rebuilds each suite, with the run's
threshold and trial count per test, and a targets file in which every target of the run is a
`replay` target: it answers each turn with the reply that turn got in the run (text, tool
calls, latency). Running that suite grades every stored conversation with every check the
suite had (deterministic and judged), calling no model but the judge.

A test with a simulated user cannot be replayed turn by turn (the simulator would write new
messages): each of its recorded conversations becomes a `transcript:` test with the test's
conversation checks and scenario criteria (`<id>#<target>#<trial>` when there are several).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ..errors import DatasetError
from ..results import EvaluationResult, TrialResult
from ..spec import CHECKS_VERSION, SIMULATED_USER_KEYS
from ._common import read_jsonl, suite_yaml

#: Keys that make a stored test a live conversation the replay cannot stand in for.
_LIVE_KEYS = (*SIMULATED_USER_KEYS, "turns", "input", "mode", "hints", "verify", "workspace", "depends_on")


@dataclass
class RegradeSuite:
    """One suite of the run, rebuilt: its data, its original file (None when it had none)."""

    data: dict[str, Any]
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
            stored: grade it with --graders FILE), or checks of an unknown layout.
    """
    records = read_jsonl(source)
    if not any("test_id" in r and isinstance(r.get("output"), list) for _, r in records):
        return None
    suites: dict[str, RegradeSuite] = {}
    tests: dict[str, dict[str, dict[str, Any]]] = {}  # suite key -> test id -> test
    targets: dict[str, None] = {}
    notes: list[str] = []
    for line, record in records:
        try:
            result = EvaluationResult.model_validate(record)
        except ValueError:
            raise DatasetError(f"{source}:{line}: not a convoeval result") from None
        checks = result.checks
        where = f"{source}:{line}: {result.test_id} @ {result.target}"
        if checks is None:
            raise DatasetError(
                f"{where}: this result has no stored checks (it was recorded by a convoeval that did not keep "
                "them with each result); grade it with --graders FILE, or run its suite again"
            )
        if checks.get("version") != CHECKS_VERSION:
            raise DatasetError(
                f"{where}: stored checks of layout {checks.get('version')!r}; this convoeval reads {CHECKS_VERSION}"
            )
        targets.setdefault(result.target)
        key = str(checks.get("file") or result.suite or "suite")
        if key not in suites:
            file = Path(checks["file"]) if checks.get("file") else None
            suites[key] = RegradeSuite(dict(checks.get("suite") or {}), file, result.suite or "suite")
            tests[key] = {}
        _add_test(tests[key], checks["test"], result, notes)
    _check_ids(tests, notes)
    for key, suite in suites.items():
        execution = {k: v for k, v in (suite.data.get("execution") or {}).items() if k not in ("target", "targets")}
        suite.data = {**suite.data, "tests": list(tests[key].values())}
        if execution:
            suite.data["execution"] = execution
        else:
            suite.data.pop("execution", None)
    return Regrade(list(suites.values()), list(targets), notes)


def _trials(result: EvaluationResult) -> list[TrialResult]:
    if result.trials:
        return list(result.trials)
    return [
        TrialResult(
            trial=0,
            score=result.score,
            verdict=result.verdict,
            execution_status=result.execution_status,
            scores=result.scores,
            output=result.output,
        )
    ]


def _add_test(
    tests: dict[str, dict[str, Any]], stored: dict[str, Any], result: EvaluationResult, notes: list[str]
) -> None:
    """The test of `result`, with the run's threshold and trials (a simulated user's
    conversations as transcripts)."""
    test = dict(stored)
    if any(k in test for k in SIMULATED_USER_KEYS):
        for trial in _trials(result):
            copy = {k: v for k, v in test.items() if k not in _LIVE_KEYS}
            copy["transcript"] = [m.model_dump(mode="json", exclude_none=True) for m in trial.output]
            copy["execution"] = {
                **(copy.get("execution") or {}),
                "targets": [result.target],
                "threshold": result.threshold,
            }
            copy["execution"].pop("trials", None)
            copy["id"] = f"{result.test_id}#{result.target}#{trial.trial}"
            tests[copy["id"]] = copy
        notes.append(
            f"{result.test_id} @ {result.target}: a simulated user's conversations are graded as recorded transcripts"
        )
        return
    execution = dict(test.get("execution") or {})
    count = max(len(result.trials), 1)
    known = tests.get(result.test_id)
    if known is not None:  # the same test on another target: as many trials as the most
        before = (known.get("execution") or {}).get("trials", 1)
        count = max(count, before["count"] if isinstance(before, dict) else before)
    trials = execution.get("trials")
    execution["trials"] = {**trials, "count": count} if isinstance(trials, dict) else count
    execution["threshold"] = result.threshold
    test["execution"] = execution
    tests[result.test_id] = test


def _check_ids(tests: dict[str, dict[str, dict[str, Any]]], notes: list[str]) -> None:
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
