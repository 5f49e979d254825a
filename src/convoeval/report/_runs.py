"""Where a report's results come from: a results file (`.jsonl`, `.json`) or a run in the store."""

from __future__ import annotations

import re
import sqlite3
from contextlib import closing
from pathlib import Path

from pydantic import Field, ValidationError

from .._base_model import Model
from ..engine import RecordedOptions, RunStore, unreadable
from ..engine._housekeeping import owner_states
from ..errors import ConfigError, first_problem
from ..results import EvaluationResult
from ._files import read_results


class ReportInputError(ConfigError, ValueError):
    """A run or results file cannot be read; the message says which and why (`file:line: ...`)."""


class RunInfo(Model):
    """One run of the store, as the run list shows it."""

    id: str
    started: str
    finished: str | None = None
    status: str = "finished"  # running | finished | interrupted (its process is gone: --resume finishes it)
    tests: int = 0
    passed: int = 0
    cost_usd: float = 0.0  # the targets, judges and simulated users
    suites: list[str] = Field(default_factory=list)
    targets: list[str] = Field(default_factory=list)


class LoadedRun(Model):
    """The results of one run (or one results file) and where they came from."""

    name: str
    run_id: str | None = None
    started: str | None = None
    results: list[EvaluationResult]
    summary: dict[str, object] = Field(default_factory=dict)
    fingerprints: dict[str, str] = Field(
        default_factory=dict, description="Suite (store key) -> suite hash of a stored run (empty for a file)."
    )
    store: str | None = Field(None, description="The run store a stored run came from.")


def load_run(ref: str | Path, store: str | Path, *, files: bool = True) -> LoadedRun:
    """The results of `ref`: a results file when one exists at that path, else a run id (or
    `last`) in the run store `store`; with `files=False`, always a run of the store (the viewer:
    a URL never names a file).

    Raises:
        ConfigError: no such file or run (ReportInputError), an unreadable results file
            (`file:line: ...`) or a damaged run store.
    """
    path = Path(ref)
    if files and (path.suffix in (".jsonl", ".json") or path.exists()):
        return LoadedRun(name=path.name, results=read_results(path))
    store = Path(store)
    if not store.is_file():
        raise ReportInputError(f"{ref}: no such results file, and no run store at {store} to find a run in")
    try:
        ref = _before_last(str(ref), store)  # read first: the store opens for writing, which says `cannot write`
    except sqlite3.Error as exc:
        raise ReportInputError(unreadable(store, exc)) from None
    run_store = RunStore(store)
    try:
        record = run_store.find_run(ref)
        if record is None:
            raise ReportInputError(f"{ref}: no such results file or run (runs are in {store})")
        return LoadedRun(
            name=f"run {record.id}",
            run_id=record.id,
            started=record.started,
            results=list(run_store.results(record.id)),
            summary=record.summary or {},
            fingerprints={key: suite.hash for key, suite in record.options.suites.items()},
            store=str(store),
        )
    except sqlite3.Error as exc:
        raise ReportInputError(unreadable(store, exc)) from None
    except ValidationError as exc:  # a stored result or summary convoeval did not write
        raise ReportInputError(
            f"{store}: run {ref}: cannot be read ({first_problem(exc, '(result)')}); "
            "the store is damaged or not convoeval's"
        ) from None
    except ReportInputError:
        raise
    except ValueError as exc:  # a summary that is not JSON
        raise ReportInputError(f"{store}: run {ref}: its summary cannot be read ({exc})") from None
    finally:
        run_store.close()


def _before_last(ref: str, store: Path) -> str:
    """`last~N`: the run N runs before the last one (by creation); other refs as they are."""
    match = re.fullmatch(r"last~(\d+)", ref)
    with closing(sqlite3.connect(f"file:{store}?mode=ro", uri=True)) as conn:
        row = conn.execute(
            "SELECT id FROM runs ORDER BY rowid DESC LIMIT 1 OFFSET ?", (int(match[1]) if match else 0,)
        ).fetchone()
    return row[0] if match and row else ref


def same_fingerprint(a: LoadedRun, b: LoadedRun) -> bool | None:
    """Both runs ran the same suites, unchanged (None when unknown: a results file)."""
    if not a.fingerprints or not b.fingerprints:
        return None
    return a.fingerprints == b.fingerprints


def list_runs(store: str | Path) -> list[RunInfo]:
    """Every run in the store, newest first, with its counts (an empty list without a store).

    Raises:
        ReportInputError: the store cannot be read (damaged, or not convoeval's).
    """
    store = Path(store)
    if not store.is_file():
        return []
    try:
        return _list_runs(store)
    except sqlite3.Error as exc:
        raise ReportInputError(unreadable(store, exc)) from None
    except ValidationError as exc:  # a row convoeval did not write (a run without an id)
        raise ReportInputError(
            f"{store}: a run cannot be read ({first_problem(exc, '(run)')}); the store is damaged or not convoeval's"
        ) from None


def _list_runs(store: Path) -> list[RunInfo]:
    with closing(sqlite3.connect(f"file:{store}?mode=ro", uri=True)) as conn:
        rows = conn.execute(
            "SELECT r.id, r.started, r.finished, r.status, r.options,"
            " (SELECT COUNT(*) FROM results x WHERE x.run_id = r.id),"
            " (SELECT COUNT(*) FROM results x WHERE x.run_id = r.id AND x.verdict = 'pass'),"
            " (SELECT COALESCE(SUM(cost_usd + judge_cost_usd"
            " + COALESCE(json_extract(data, '$.simulator_cost_usd'), 0)), 0) FROM results x WHERE x.run_id = r.id),"
            " (SELECT GROUP_CONCAT(DISTINCT target) FROM results x WHERE x.run_id = r.id)"
            " FROM runs r ORDER BY r.started DESC, r.rowid DESC"
        ).fetchall()
        owners = owner_states(conn, [row[0] for row in rows if row[3] == "running"])
    runs = []
    for run_id, started, finished, status, options, tests, passed, cost, targets in rows:
        status = "interrupted" if owners.get(run_id) == "gone" else status  # its process is gone
        try:
            paths = RecordedOptions.model_validate_json(options).paths or []
        except ValidationError:  # not written by convoeval
            paths = []
        runs.append(
            RunInfo(
                id=run_id,
                started=started,
                finished=finished,
                status=status,
                tests=tests,
                passed=passed,
                cost_usd=cost,
                suites=[Path(p).name for p in paths],
                targets=sorted((targets or "").split(",")) if targets else [],
            )
        )
    return runs
