"""The run store's WAL is copied into its database by a checkpointer thread of its own (issue 30:
a commit that also checkpointed kept the last finished tests of a large run waiting), and
everything committed is there after the store closes. Real SQLite files."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

from convoeval.engine import RecordedOptions, ResultKey, RunStore
from convoeval.engine._sqlite import CHECKPOINT_EVERY_S, FALLBACK_CHECKPOINT_PAGES
from convoeval.results import EvaluationResult

from .conftest import passing_result


async def _copied(db: Path, size: int, timeout_s: float = 10.0) -> bool:
    """Wait until the database file holds `size` bytes (the WAL copied into it), then for the
    checkpoint to end; False if it never does."""
    for _ in range(int(timeout_s / 0.02)):
        if db.stat().st_size >= size:
            await asyncio.sleep(CHECKPOINT_EVERY_S)
            return True
        await asyncio.sleep(0.02)
    return False


async def test_the_wal_is_copied_into_the_database_while_the_run_writes(tmp_path: Path) -> None:
    db, wal = tmp_path / "runs.sqlite", tmp_path / "runs.sqlite-wal"
    store = RunStore(db)
    note = "ü" * 20_000  # 40 KB a result: 5 MB in all, far below the writer's own checkpoints
    assert FALLBACK_CHECKPOINT_PAGES * 4096 > 8 * 2**20
    biggest_wal = 0
    try:
        run = store.new_run(RecordedOptions(paths=["x"]))
        for i in range(125):
            await store.save_result(run.id, ResultKey("s", f"t{i}", "m"), i, passing_result(i, note))
            biggest_wal = max(biggest_wal, wal.stat().st_size)
            if i % 25 == 24:  # 1 MB more: the checkpointer's turn
                assert await _copied(db, (i + 1) * 40_000), "the database did not grow while the store was open"
    finally:
        store.close()
    # and the WAL started over each time: SQLite's own checkpoints (in a commit, which the store's
    # writer leaves to the checkpointer) would have let it grow to 4 MB (1000 pages) first
    assert biggest_wal < 2.5 * 2**20
    assert not wal.exists()  # the last close copied the rest
    conn = sqlite3.connect(db)
    try:
        rows = conn.execute("SELECT test_id, data FROM results ORDER BY seq").fetchall()
    finally:
        conn.close()
    assert [t for t, _ in rows] == [f"t{i}" for i in range(125)]
    assert all(EvaluationResult.model_validate_json(data).metadata == {"note": note} for _, data in rows)
