"""Housekeeping of what convoeval keeps on disk: deleting runs from the run store and entries
from the response cache (by id or age), then `VACUUM` so the files really shrink, and sizes.

Both files may be in use by a running convoeval: deletes are ordinary SQLite transactions (the
other process waits on the lock), and a run still running in a live process is never deleted.
"""

from __future__ import annotations

import json
import re
import sqlite3
import time
from collections.abc import Iterator, Sequence
from contextlib import closing, contextmanager
from pathlib import Path
from typing import TypedDict

from ..errors import ConfigError
from ._owner import Owner
from ._sqlite import unreadable

_AGE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$")
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_age(text: str) -> float:
    """`30d`, `12h`, `2w`, `90m`, `45s` -> seconds. Raises ConfigError for anything else."""
    match = _AGE.match(text)
    if not match:
        raise ConfigError(f"age {text!r}: give a number and a unit, e.g. 30d, 12h, 2w")
    return float(match.group(1)) * _UNIT_S[match.group(2)]


def file_size(path: Path) -> int:
    """Bytes of a SQLite file with its WAL and shared-memory files (0 when missing)."""
    return sum(p.stat().st_size for p in (path, Path(f"{path}-wal"), Path(f"{path}-shm")) if p.exists())


def _stamp(seconds_ago: float) -> str:
    """The store's timestamp format for `seconds_ago` (UTC): `YYYY-mm-ddTHH:MM:SS.000Z`."""
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(time.time() - seconds_ago)) + ".000Z"


def owner_states(conn: sqlite3.Connection, run_ids: Sequence[str]) -> dict[str, str]:
    """The state of the process recorded as running each of `run_ids` (`Owner.state`: `alive`,
    `gone`, `unknown`; `unknown` too for an owner convoeval did not write); runs without one are
    left out."""
    if not run_ids or not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'owners'").fetchone():
        return {}
    wanted, states = set(run_ids), {}
    for run_id, owner in conn.execute("SELECT run_id, owner FROM owners"):
        if run_id in wanted:
            try:
                states[run_id] = Owner.from_json(json.loads(owner)).state()
            except (ValueError, KeyError, TypeError):
                states[run_id] = "unknown"
    return states


def delete_runs(store: Path, run_ids: Sequence[str] = (), older_than: str | None = None) -> tuple[list[str], list[str]]:
    """Delete runs (their results, trials, turns and owner) by id and/or started before `older_than`
    ago, then VACUUM. Returns (deleted ids, ids kept because they are still running).

    Raises:
        ConfigError: no store, an unknown run id, a bad age, or a file that is damaged or not a store.
    """
    if not store.is_file():
        raise ConfigError(f"no run store at {store}")
    cutoff = _stamp(parse_age(older_than)) if older_than else None
    with _readable(store), closing(sqlite3.connect(store, timeout=30)) as conn:
        known = {row[0]: row[1] for row in conn.execute("SELECT id, status FROM runs")}
        unknown = [r for r in run_ids if r not in known]
        if unknown:
            raise ConfigError(f"no run {unknown[0]!r} in {store}")
        chosen = list(dict.fromkeys(run_ids))
        if cutoff is not None:
            chosen += [
                r
                for (r,) in conn.execute("SELECT id FROM runs WHERE started < ? ORDER BY started", (cutoff,))
                if r not in chosen
            ]
        states = owner_states(conn, [r for r in chosen if known[r] == "running"])
        busy = [r for r in chosen if states.get(r, "gone") != "gone"]
        doomed = [r for r in chosen if r not in busy]
        tables = [(t, "run_id") for t in ("trials", "turns", "results", "owners") if _has_table(conn, t)]
        with conn:
            for table, column in (*tables, ("runs", "id")):
                conn.executemany(f"DELETE FROM {table} WHERE {column} = ?", [(r,) for r in doomed])
        if doomed:
            conn.execute("VACUUM")
    return doomed, busy


@contextmanager
def _readable(path: Path) -> Iterator[None]:
    """Turn an error of SQLite reading `path` (damaged, or not convoeval's) into a ConfigError."""
    try:
        yield
    except sqlite3.Error as exc:
        raise ConfigError(unreadable(path, exc)) from None


def _has_table(conn: sqlite3.Connection, name: str) -> bool:
    """Whether the store has the table (one written by an older version may lack `trials`)."""
    return conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)).fetchone() is not None


class ModelCacheStats(TypedDict):
    """Cached replies of one provider and model; `oldest`/`newest` are Unix times."""

    provider: str
    model: str
    entries: int
    oldest: float
    newest: float


class CacheStats(TypedDict):
    """The response cache file, its entries and size, and the entries per model."""

    path: str
    entries: int
    bytes: int
    models: list[ModelCacheStats]


def cache_stats(cache: Path) -> CacheStats:
    """Entries of the response cache per provider and model, the oldest and newest, and the size."""
    stats: CacheStats = {"path": str(cache), "entries": 0, "bytes": file_size(cache), "models": []}
    if not cache.is_file():
        return stats
    with _readable(cache), closing(sqlite3.connect(f"file:{cache}?mode=ro", uri=True)) as conn:
        rows = conn.execute(
            "SELECT provider, model, COUNT(*), MIN(created), MAX(created) FROM responses"
            " GROUP BY provider, model ORDER BY COUNT(*) DESC"
        ).fetchall()
    stats["models"] = [
        {"provider": p, "model": m, "entries": n, "oldest": lo, "newest": hi} for p, m, n, lo, hi in rows
    ]
    stats["entries"] = sum(n for _, _, n, _, _ in rows)
    return stats


def clear_cache(cache: Path, older_than: str | None = None) -> int:
    """Delete cached replies (all, or those stored before `older_than` ago), then VACUUM;
    returns how many were deleted (0 without a cache file; a bad age is an error either way)."""
    cutoff = time.time() - parse_age(older_than) if older_than else None
    if not cache.is_file():
        return 0
    with _readable(cache), closing(sqlite3.connect(cache, timeout=30)) as conn:
        conn.execute("SELECT key, provider, model, created, value FROM responses LIMIT 1")  # not another program's
        with conn:
            if cutoff is None:
                deleted = conn.execute("DELETE FROM responses").rowcount
            else:
                deleted = conn.execute("DELETE FROM responses WHERE created < ?", (cutoff,)).rowcount
        conn.execute("VACUUM")
    return deleted
