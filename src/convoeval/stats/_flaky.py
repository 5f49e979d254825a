"""Flaky tests: a test (with its target) whose verdict varies across its trials, or across the
stored runs of the same suite fingerprint (the suite unchanged: `engine.fingerprints`).

A flaky test is listed with its pass rate over every verdict seen (each trial of each run) and
the rate's Wilson interval: a test that passes 2 of 3 times is not "fixed" when it passes once
more, nor "broken" when it fails. Verdicts that are neither pass nor fail (errors, skips) are
left out of the rate.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..results import EvaluationResult
from ._estimate import Estimate
from ._rates import rate_interval

FlakyKey = tuple[str, str, str]
"""(suite, test id, target)."""


@dataclass
class Flaky:
    """A test whose verdict varies: its pass rate over `verdicts`, and the runs they came from."""

    suite: str
    test_id: str
    target: str
    passes: int
    verdicts: int
    rate: Estimate
    runs: list[str] = field(default_factory=list)
    fingerprint: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "suite": self.suite,
            "test_id": self.test_id,
            "target": self.target,
            "passes": self.passes,
            "verdicts": self.verdicts,
            "pass_rate": self.rate.to_dict(),
            "runs": self.runs,
            "fingerprint": self.fingerprint,
        }


def trial_verdicts(result: EvaluationResult) -> list[bool]:
    """The pass (True) / fail (False) verdicts of a result's trials (its own verdict without
    trials); errors and skips are left out."""
    verdicts = [t.verdict for t in result.trials] if result.trials else [result.verdict]
    return [v == "pass" for v in verdicts if v in ("pass", "fail")]


def is_flaky(verdicts: Iterable[bool]) -> bool:
    """Both a pass and a fail among the verdicts."""
    seen = set(verdicts)
    return len(seen) == 2


def flaky_in(results: Iterable[EvaluationResult]) -> dict[FlakyKey, Flaky]:
    """The results whose trials disagree, keyed by (suite, test id, target)."""
    found: dict[FlakyKey, Flaky] = {}
    for result in results:
        verdicts = trial_verdicts(result)
        if is_flaky(verdicts):
            key = (result.suite or "-", result.test_id, result.target)
            found[key] = Flaky(
                *key, passes=sum(verdicts), verdicts=len(verdicts), rate=rate_interval(sum(verdicts), len(verdicts))
            )
    return found


def _verdicts_of(data: str) -> list[bool]:
    raw = json.loads(data)
    trials = raw.get("trials") or []
    verdicts = [t.get("verdict") for t in trials] if trials else [raw.get("verdict")]
    return [v == "pass" for v in verdicts if v in ("pass", "fail")]


def flaky_in_store(store: str | Path) -> list[Flaky]:
    """Tests of the run store whose verdicts vary across their trials or across runs of the same
    suite fingerprint, most uncertain (pass rate nearest 1/2) first; [] without a store."""
    store = Path(store)
    if not store.is_file():
        return []
    seen: dict[tuple[str, str, str, str], tuple[list[bool], list[str]]] = {}
    with closing(sqlite3.connect(f"file:{store}?mode=ro", uri=True)) as conn:
        hashes: dict[str, dict[str, str]] = {}
        for run_id, options in conn.execute("SELECT id, options FROM runs ORDER BY started, rowid"):
            try:
                suites = json.loads(options).get("suites") or {}
            except (json.JSONDecodeError, AttributeError, TypeError):
                suites = {}
            hashes[run_id] = {k: v.get("hash", "") for k, v in suites.items() if isinstance(v, dict)}
        rows = conn.execute("SELECT run_id, suite, test_id, target, data FROM results ORDER BY run_id, seq")
        for run_id, suite, test_id, target, data in rows:
            fingerprint = hashes.get(run_id, {}).get(suite, "")
            verdicts, runs = seen.setdefault((fingerprint, suite, test_id, target), ([], []))
            verdicts.extend(_verdicts_of(data))
            runs.append(run_id)
    found = [
        Flaky(
            suite=suite,
            test_id=test_id,
            target=target,
            passes=sum(verdicts),
            verdicts=len(verdicts),
            rate=rate_interval(sum(verdicts), len(verdicts)),
            runs=list(dict.fromkeys(runs)),
            fingerprint=fingerprint or None,
        )
        for (fingerprint, suite, test_id, target), (verdicts, runs) in seen.items()
        if is_flaky(verdicts)
    ]
    found.sort(key=lambda f: (abs(f.rate.value - 0.5), f.suite, f.test_id, f.target))
    return found
