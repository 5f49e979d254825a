"""Writing the HTML, JUnit and Markdown reports of a run (`run --html ...` and `report`)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from .. import rank, report
from .._result_files import output_problem

if TYPE_CHECKING:
    from ..stats import Flaky


def fail(message: str) -> typer.Exit:
    """Print `error: message` and return the exit (code 2) to raise."""
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(2)


def check_writable(*paths: Path | None) -> None:
    """Exit 2 with `error: ...` unless each path given can take a file (before any work is done)."""
    for path in paths:
        if path is not None and (problem := output_problem(path)):
            raise fail(problem)


@contextmanager
def writing(path: Path | None = None) -> Iterator[None]:
    """A file that cannot be written after all (checked before, but a disk fills, a folder takes
    no new file) is `error: cannot write PATH: reason`, exit 2; PATH is `path`, else the file
    the error names."""
    try:
        yield
    except OSError as exc:
        raise fail(f"cannot write {path or exc.filename or 'a file'}: {exc.strerror or exc}") from None


def write_reports(
    run: report.LoadedRun,
    *,
    html: Path | None = None,
    junit: Path | None = None,
    markdown: Path | None = None,
    battles: Path | None = None,
    title: str | None = None,
    by: str | None = None,
) -> list[Path]:
    """Write the reports asked for; returns the files written. Raises typer.Exit(2) on bad input
    or on a file that cannot be written (`writing`)."""
    check_writable(html, junit, markdown)
    written: list[Path] = []
    try:
        arena = report.read_battle_records(battles) if battles else None
    except rank.BattleFileError as exc:  # looked up only when reading the battles failed
        raise fail(str(exc)) from None
    heading = title or f"convoeval · {run.name}"
    with writing():
        if html:
            subtitle = f"started {run.started}" if run.started else ""
            flaky = _stored_flaky(run)
            written.append(
                report.write_html(run.results, html, title=heading, arena=arena, subtitle=subtitle, flaky=flaky, by=by)
            )
        if junit:
            written.append(report.write_junit(run.results, junit, timestamp=run.started))
        if markdown:
            written.append(report.write_markdown(run.results, markdown, title=heading))
            if by:  # the grouped table after the summary
                with markdown.open("a", encoding="utf-8") as handle:
                    handle.write("\n" + report.groups_markdown(report.group_results(run.results, by), by))
    return written


def _stored_flaky(run: report.LoadedRun) -> list[Flaky]:
    """The tests of a stored run's suites whose verdict varied across the store's runs."""
    if not run.store:
        return []
    from ..stats import flaky_in_store  # numpy: only when a stored run's HTML report is written

    return flaky_in_store(run.store, run.fingerprints.values())
