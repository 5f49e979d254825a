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

from pydantic import ValidationError

from ..engine import RecordedOptions, unreadable
from ..errors import ConfigError
from ..results import EvaluationResult
from ._estimate import Estimate
from ._rates import rate_interval

FlakyKey = tuple[str, str, str]
"""(suite, test id, target)."""


@dataclass
class Flaky:
    """A test whose verdict varies: its pass rate over `verdicts`, and the runs they came from
    (`suite` as its results name it; `fingerprint` the suite's hash in the store)."""

    suite: str
    test_id: str
    target: str
    passes: int
    verdicts: int
    rate: Estimate
    runs: list[str] = field(default_factory=list)
    fingerprint: str | None = None

    def to_dict(self) -> dict[str, object]:
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


#: Per result: its verdict, its suite as the result names it, and its trials' verdicts, read by
#: SQLite's JSON functions (the transcripts are never parsed in Python).
_ROWS = (
    "SELECT x.suite, x.test_id, x.target, x.verdict, json_extract(x.data, '$.suite'),"
    " (SELECT json_group_array(json_extract(t.value, '$.verdict')) FROM json_each(x.data, '$.trials') t)"
    " FROM results x WHERE x.run_id = ? ORDER BY x.seq"
)


def _verdicts_of(verdict: str, trials: str | None) -> list[bool]:
    verdicts = json.loads(trials) if trials else []
    return [v == "pass" for v in (verdicts or [verdict]) if v in ("pass", "fail")]


def flaky_in_store(store: str | Path, fingerprints: Iterable[str] | None = None) -> list[Flaky]:
    """Tests of the run store whose verdicts vary across their trials or across runs of the same
    suite fingerprint, most uncertain (pass rate nearest 1/2) first; [] without a store.

    Args:
        fingerprints: only suites with one of these hashes (e.g. the suites of the runs being
            compared); all when None.

    Raises:
        ConfigError: the store cannot be read (damaged, or not convoeval's).
    """
    store = Path(store)
    if not store.is_file():
        return []
    try:
        return _flaky_in_store(store, None if fingerprints is None else set(fingerprints))
    except sqlite3.Error as exc:
        raise ConfigError(unreadable(store, exc)) from None


def _flaky_in_store(store: Path, wanted: set[str] | None) -> list[Flaky]:
    seen: dict[tuple[str, str, str, str], tuple[list[bool], list[str]]] = {}
    with closing(sqlite3.connect(f"file:{store}?mode=ro", uri=True)) as conn:
        hashes: dict[str, dict[str, str]] = {}
        for run_id, options in conn.execute("SELECT id, options FROM runs ORDER BY started, rowid"):
            try:
                recorded = RecordedOptions.model_validate_json(options).suites
            except ValidationError:  # not written by convoeval
                recorded = {}
            hashes[run_id] = {k: v.hash for k, v in recorded.items()}
        names: dict[tuple[str, str], str] = {}
        for run_id, suites in hashes.items():
            if wanted is not None and not wanted & set(suites.values()):
                continue  # none of this run's suites is asked for: its results are not read
            for suite, test_id, target, verdict, named, trials in conn.execute(_ROWS, (run_id,)):
                fingerprint = suites.get(suite, "")
                verdicts, runs = seen.setdefault((fingerprint, suite, test_id, target), ([], []))
                verdicts.extend(_verdicts_of(verdict, trials))
                runs.append(run_id)
                names.setdefault((fingerprint, suite), named or suite)
    found = [
        Flaky(
            suite=names[(fingerprint, suite)],
            test_id=test_id,
            target=target,
            passes=sum(verdicts),
            verdicts=len(verdicts),
            rate=rate_interval(sum(verdicts), len(verdicts)),
            runs=list(dict.fromkeys(runs)),
            fingerprint=fingerprint or None,
        )
        for (fingerprint, suite, test_id, target), (verdicts, runs) in seen.items()
        if is_flaky(verdicts) and (wanted is None or fingerprint in wanted)
    ]
    found.sort(key=lambda f: (abs(f.rate.value - 0.5), f.suite, f.test_id, f.target))
    return found
