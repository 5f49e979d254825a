"""Writing a command's files: each checked before any work is done (`check_writable`), written
whole or not at all (`staged`: into a private folder, then placed as the results file is, so a
Ctrl-C, a SIGTERM or a full disk never leaves half a file, and no link is followed), and the HTML, JUnit and Markdown
reports of a run (`run --html ...` and `report`)."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from .. import rank, report
from .._result_files import output_problem, place_copy, resolve_output
from ._fail import fail

if TYPE_CHECKING:
    from ..stats import Flaky


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


@contextmanager
def staged(path: Path, resolved: Path | None = None) -> Iterator[Path]:
    """Where to write `path` so that it appears whole or not at all: a path of the same name in
    a private temporary folder; when the block ends without an error every file written in that
    folder (the writer may add siblings, as a log per target) is placed in `path`'s folder as the
    results file is (`place_copy`): `resolved` (`resolve_output(path)` taken when a run started,
    before its hooks could swap a folder for a link), else taken now. On an error or an
    interrupt nothing is left but what was there before."""
    final = (resolved or resolve_output(path)).parent
    folder = Path(tempfile.mkdtemp(prefix="convoeval-partial-"))
    try:
        yield folder / path.name
        for written in sorted(folder.iterdir()):
            place_copy(written, final / written.name)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def moved(paths: list[Path], path: Path) -> list[Path]:
    """The final places of files a writer wrote in `staged(path)`'s folder."""
    return [path.parent / p.name for p in paths]


def write_reports(
    run: report.LoadedRun,
    *,
    html: Path | None = None,
    junit: Path | None = None,
    markdown: Path | None = None,
    battles: Path | None = None,
    title: str | None = None,
    by: str | None = None,
    resolved: Mapping[Path, Path] | None = None,
) -> list[Path]:
    """Write the reports asked for; returns the files written. `resolved`: where each path led
    when the run started (`staged`). Raises typer.Exit(2) on bad input or on a file that cannot
    be written (`writing`)."""
    places = resolved or {}
    check_writable(html, junit, markdown)
    written: list[Path] = []
    try:
        arena = report.read_battle_records(battles) if battles else None
    except rank.BattleFileError as exc:  # looked up only when reading the battles failed
        raise fail(str(exc)) from None
    heading = title or f"convoeval · {run.name}"
    if html:
        subtitle = f"started {run.started}" if run.started else ""
        flaky = _stored_flaky(run)
        with writing(html), staged(html, places.get(html)) as partial:
            report.write_html(run.results, partial, title=heading, arena=arena, subtitle=subtitle, flaky=flaky, by=by)
        written.append(html)
    if junit:
        with writing(junit), staged(junit, places.get(junit)) as partial:
            report.write_junit(run.results, partial, timestamp=run.started)
        written.append(junit)
    if markdown:
        with writing(markdown), staged(markdown, places.get(markdown)) as partial:
            report.write_markdown(run.results, partial, title=heading)
            if by:  # the grouped table after the summary
                with partial.open("a", encoding="utf-8") as handle:
                    handle.write("\n" + report.groups_markdown(report.group_results(run.results, by), by))
        written.append(markdown)
    return written


def _stored_flaky(run: report.LoadedRun) -> list[Flaky]:
    """The tests of a stored run's suites whose verdict varied across the store's runs."""
    if not run.store:
        return []
    from ..stats import flaky_in_store  # numpy: only when a stored run's HTML report is written

    return flaky_in_store(run.store, run.fingerprints.values())
