"""`convoeval runs [show ID | flaky | delete ID... | --older-than 30d]` and `convoeval cache stats | clear`:
see and prune what convoeval keeps on disk."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.measure import Measurement
from rich.table import Table

from ..engine import CACHE_FILE, STORE_FILE, state_dir, unreadable
from ..engine._housekeeping import cache_stats, clear_cache, delete_runs, file_size
from ..errors import ConfigError
from ..report import list_runs, load_run, print_summary
from ..report._terminal import SafeConsole
from ._app import Typer, app
from ._fail import fail, say

out = SafeConsole(highlight=False, emoji=False)

runs_app = Typer(
    help="List the runs in the run store (default), show one, list flaky tests, or delete runs.",
    invoke_without_command=True,
    no_args_is_help=False,
)
cache_app = Typer(help="The response cache: its size, or clear it.", no_args_is_help=True)
app.add_typer(runs_app, name="runs")
app.add_typer(cache_app, name="cache")

Store = Annotated[
    Path | None,
    typer.Option(
        metavar="DIR", envvar="CONVOEVAL_HOME", help="State folder (default: $CONVOEVAL_HOME, else .convoeval)."
    ),
]
OlderThan = Annotated[str | None, typer.Option(metavar="AGE", help="Those older than AGE: 30d, 12h, 2w, 90m.")]


def _state(store: Path | None) -> Path:
    """The state folder (`--store`); exit 2 when a file stands there."""
    folder = state_dir(store)
    if folder.exists() and not folder.is_dir():
        raise fail(f"{folder} is a file; --store (or CONVOEVAL_HOME) names the folder that holds {STORE_FILE}")
    return folder


def _mb(size: int) -> str:
    return f"{size / 1e6:.1f} MB"


@runs_app.callback()
def runs(
    ctx: typer.Context,
    store: Store = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
) -> None:
    """Runs in the store, newest first: id, date, suites, targets, tests, pass rate, cost, status."""
    if ctx.invoked_subcommand is not None:
        return
    path = _state(store) / STORE_FILE
    try:
        listed = list_runs(path)
    except ConfigError as exc:
        raise fail(str(exc)) from None
    if as_json:
        out.print_json(
            json.dumps({"store": str(path), "bytes": file_size(path), "runs": [r.model_dump() for r in listed]})
        )
        return
    rows = [
        (
            r.id,
            r.started[:19].replace("T", " "),
            ", ".join(r.suites),
            ", ".join(r.targets),
            str(r.tests),
            f"{r.passed / r.tests:.0%}" if r.tests else "-",
            f"${r.cost_usd:.4f}",
            r.status,
        )
        for r in listed
    ]
    names = ("run", "started", "suites", "targets", "tests", "pass", "cost", "status")
    table = Table(title=f"Runs in {path}", caption=f"{len(listed)} run(s), {_mb(file_size(path))} on disk")
    for i, name in enumerate(names):  # whole cells (the run id is what --resume takes), never "…"
        widest = max((len(row[i]) for row in rows), default=0)
        table.add_column(name, justify="right" if name in ("tests", "pass", "cost") else "left", min_width=widest)
    for row in rows:
        table.add_row(*row)
    wide = Measurement.get(out, out.options.update(max_width=1 << 16), table).minimum
    if wide > out.width:  # an 80-column CI log: no box, lines past the edge rather than cut
        table.box, table.show_edge = None, False
    out.print(table, width=max(out.width, wide), crop=False)


@runs_app.command("show")
def runs_show(
    run_id: Annotated[str, typer.Argument(metavar="RUN_ID", help="A run id, or 'last'.")], store: Store = None
) -> None:
    """One run: its suites, targets and results, test by test."""
    path = _state(store) / STORE_FILE
    try:
        loaded = load_run(run_id, path)
        info = next((r for r in list_runs(path) if r.id == loaded.run_id), None)
        origin = _origin(path, loaded.run_id)
    except ConfigError as exc:
        raise fail(str(exc)) from None
    out.print(f"{loaded.name}, started {loaded.started}: {len(loaded.results)} result(s)", markup=False)
    if info is not None:
        out.print(
            f"status {info.status}; suites {', '.join(info.suites)}; targets {', '.join(info.targets)}", markup=False
        )
    if origin:
        out.print(f"re-run of the tests that did not pass in run {origin}", markup=False)
    print_summary(loaded.results, out, turns=False)


def _origin(path: Path, run_id: str | None) -> str | None:
    """The run a re-run of failed tests came from (`rerun_of` in its options), if any (its
    options were read, so they are a JSON object)."""
    try:
        with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as conn:
            row = conn.execute("SELECT options FROM runs WHERE id = ?", (run_id,)).fetchone()
    except sqlite3.Error as exc:
        raise ConfigError(unreadable(path, exc)) from None
    return json.loads(row[0]).get("rerun_of") if row else None


@runs_app.command("flaky")
def runs_flaky(
    store: Store = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
) -> None:
    """Flaky tests: those whose verdict varied across their trials or across stored runs of the
    same suite (unchanged), with their pass rate and its 95% Wilson interval."""
    from ..stats import flaky_in_store  # numpy loads only for this command

    path = _state(store) / STORE_FILE
    try:
        found = flaky_in_store(path)
    except ConfigError as exc:
        raise fail(str(exc)) from None
    if as_json:
        out.print_json(json.dumps({"store": str(path), "flaky": [f.to_dict() for f in found]}))
        return
    if not found:
        out.print(f"no flaky test in {path}", markup=False)
        return
    table = Table(title=f"Flaky tests in {path}", caption=f"{len(found)} flaky test(s); 95% Wilson intervals")
    for name in ("suite", "test", "target", "passed", "pass rate", "runs"):
        table.add_column(name, justify="right" if name in ("passed", "pass rate", "runs") else "left")
    for f in found:
        rate = f.rate
        table.add_row(
            escape(Path(f.suite).name),
            escape(f.test_id),
            escape(f.target),
            f"{f.passes}/{f.verdicts}",
            f"{rate.value:.0%} [{rate.ci_low:.0%}, {rate.ci_high:.0%}]",
            str(len(f.runs)),
        )
    out.print(table)


@runs_app.command("delete")
def runs_delete(
    run_ids: Annotated[list[str] | None, typer.Argument(metavar="RUN_ID...")] = None,
    older_than: OlderThan = None,
    store: Store = None,
) -> None:
    """Delete runs by id and/or age (never one still running), then shrink the file (VACUUM)."""
    if not run_ids and older_than is None:
        raise fail("give run ids to delete, or --older-than AGE (e.g. 30d)")
    path = _state(store) / STORE_FILE
    before = file_size(path)
    try:
        deleted, busy = delete_runs(path, run_ids or [], older_than)
    except ConfigError as exc:
        raise fail(str(exc)) from None
    for run_id in busy:
        say(f"warning: run {run_id} is still running; not deleted")
    out.print(f"deleted {len(deleted)} run(s); {path} {_mb(before)} -> {_mb(file_size(path))}", markup=False)


def _cache_file(cache_dir: Path | None, store: Path | None) -> Path:
    if cache_dir is None:
        return _state(store) / CACHE_FILE
    if cache_dir.exists() and not cache_dir.is_dir():
        raise fail(f"{cache_dir} is a file; --cache-dir names the folder that holds {CACHE_FILE}")
    return cache_dir / CACHE_FILE


CacheDir = Annotated[
    Path | None, typer.Option(envvar="CONVOEVAL_CACHE_DIR", help="The cache's folder (default: the state folder).")
]


@cache_app.command("stats")
def cache_stats_command(cache_dir: CacheDir = None, store: Store = None) -> None:
    """Entries per provider and model, and the cache's size on disk."""
    try:
        stats = cache_stats(_cache_file(cache_dir, store))
    except ConfigError as exc:
        raise fail(str(exc)) from None
    table = Table(
        title=f"Response cache {stats['path']}", caption=f"{stats['entries']} entries, {_mb(stats['bytes'])} on disk"
    )
    for name in ("provider", "model", "entries"):
        table.add_column(name, justify="right" if name == "entries" else "left")
    for row in stats["models"]:
        table.add_row(row["provider"], row["model"], str(row["entries"]))
    out.print(table)


@cache_app.command("clear")
def cache_clear(older_than: OlderThan = None, cache_dir: CacheDir = None, store: Store = None) -> None:
    """Delete cached replies (all, or those older than AGE), then shrink the file (VACUUM)."""
    path = _cache_file(cache_dir, store)
    before = file_size(path)
    try:
        deleted = clear_cache(path, older_than)
    except ConfigError as exc:
        raise fail(str(exc)) from None
    out.print(
        f"deleted {deleted} cached repl{'y' if deleted == 1 else 'ies'}; {path} {_mb(before)} -> "
        f"{_mb(file_size(path))}",
        markup=False,
    )
