"""`convoeval run | validate | schema`: thin shells over the Python API.

No `from __future__ import annotations` here: typer reads the 35 options of `run` from the
annotations, and evaluating them as strings (compiling each) cost 1.7% of a one-test run.
"""

import asyncio
import json
import os
import secrets
import sys
import threading
import time
from pathlib import Path
from typing import Annotated, Literal

import typer
from rich.console import Console
from rich.markup import escape

from .. import registry, spec
from .. import report as reports
from .._lazy import collector_paused
from .._result_files import resolve_output
from .._sandbox import describe as describe_sandbox
from .._sandbox import process_limit_note, sweep_placeholders
from .._unseen import hide_from_models
from ..api import arun
from ..engine import STORE_FILE, RunMeter, StoreError, state_dir
from ..errors import ConfigError, NothingToRerun, RegistryError
from ..report import RunProgress, print_panel_agreement, print_run_totals, print_summary
from ..report._progress import Mode
from ..report._summary import prepare_rate_lines
from ..report._terminal import SafeConsole
from ..results import EvaluationResult
from ..run import GradedTurn, Job
from ..spec import AUTO_MAX_TRIALS, MAX_TRIALS, SpecError, validate_eval_paths
from . import resume_collector
from ._app import Root, app, load_env_file
from ._fail import fail, fail_with_problems, say
from ._interrupt import Interrupts
from ._write import check_writable, write_reports

out = SafeConsole(highlight=False, emoji=False)  # `openai:m:` must not become an emoji

Paths = Annotated[list[Path], typer.Argument(help="Eval files (YAML), or folders of them.", show_default=False)]
Plugins = Annotated[
    list[str] | None,
    typer.Option(
        "--plugin",
        metavar="MODULE",
        help="Import a plugin first (a module, or a .py file) that registers assertion types or providers; repeatable.",
    ),
]


def load_plugins(plugins: list[str] | None) -> None:
    """Import `--plugin` modules (relative files from the working directory); exit 2 on failure."""
    for plugin in plugins or []:
        try:
            registry.load_plugin(plugin, base_dir=Path.cwd())
        except RegistryError as exc:
            raise fail(f"--plugin {plugin}: {exc}") from None


@app.command()
def validate(
    paths: Paths,
    plugin: Plugins = None,
    root: Root = None,
    targets_file: Annotated[
        Path | None,
        typer.Option(
            "--targets",
            envvar="CONVOEVAL_TARGETS",
            help="Targets file the names are looked up in, as `run --targets` (default: targets.yaml next to the suite).",
        ),
    ] = None,
) -> None:
    """Check eval files (a folder: the eval files in it), and that every target and judge they
    name is defined; print one line per problem as file:line: field: message."""
    load_plugins(plugin)
    files, problems = validate_eval_paths(list(paths), targets_file)
    if problems:
        raise fail_with_problems(problems)
    out.print(f"{len(files)} file(s) valid")


@app.command()
def schema(plugin: Plugins = None) -> None:
    """Print the JSON Schema of eval files (for editor completion), plugins' assertion types included."""
    load_plugins(plugin)
    sys.stdout.write(json.dumps(spec.suite_json_schema(), indent=2) + "\n")


RUN_HELP = (
    "Run eval files live against one or more targets and grade every turn.\n\n"
    "Exit codes: 0 every test passed; 1 a test did not pass; 2 invalid input or configuration; "
    "3 every test had an execution error.\n\n"
    "Options also read CONVOEVAL_* environment variables (shown with each option) and a .env file "
    "next to the suite or in the working directory; a flag wins over the environment, the "
    "environment over the suite's setting, the suite's setting over the default."
)


def _trials_option(value: str | None) -> str | None:
    """`--trials`: a number from 1 to MAX_TRIALS, or `auto`."""
    if value is None or value.strip().lower() == "auto":
        return value and "auto"
    if not value.strip().isdigit() or not 1 <= int(value) <= MAX_TRIALS:
        raise typer.BadParameter(f"{value!r} is not a number from 1 to {MAX_TRIALS}, nor auto")
    return value.strip()


def _trials_number(value: str | None) -> int | Literal["auto"] | None:
    return None if value is None else "auto" if value == "auto" else int(value)


def _default_results_name() -> str:
    """`results-YYYYmmdd-HHMMSS-xxxxxx.jsonl`: two runs started in the same second (in parallel,
    or one after the other) never share a file."""
    return time.strftime("results-%Y%m%d-%H%M%S-") + secrets.token_hex(3) + ".jsonl"


def _processes_number(value: str | None) -> int:
    """`--processes`: a whole number from 1 (an error of one line, exit 2, otherwise)."""
    if value is None:
        return 1
    if not value.strip().isdigit() or int(value) < 1:
        raise fail(f"--processes {value}: give a number of worker processes from 1")
    return int(value)


@app.command(help=RUN_HELP)
def run(
    paths: Annotated[
        list[Path] | None,
        typer.Argument(help="Eval files (YAML) or folders of them; not needed with --resume.", show_default=False),
    ] = None,
    target: Annotated[
        list[str] | None,
        typer.Option(
            "--target",
            "-t",
            envvar="CONVOEVAL_TARGET",
            help="provider:model (openai:gpt-4o-mini, anthropic:..., "
            "local) or a name from targets.yaml; repeat to run several targets.",
        ),
    ] = None,
    judge: Annotated[
        list[str] | None,
        typer.Option(
            envvar="CONVOEVAL_JUDGE",
            metavar="SPEC",
            help="Model for LLM graders (default: suite's, else local, else the target); "
            "repeat for a judge panel that grades every LLM check.",
        ),
    ] = None,
    panel_rule: Annotated[
        str | None,
        typer.Option(
            metavar="mean|majority|min",
            envvar="CONVOEVAL_PANEL_RULE",
            help="How a judge panel's answers combine (default: majority for pass/fail checks, mean for scores).",
        ),
    ] = None,
    targets_file: Annotated[
        Path | None,
        typer.Option(
            "--targets", envvar="CONVOEVAL_TARGETS", help="Targets file (default: targets.yaml next to the suite)."
        ),
    ] = None,
    output_text: Annotated[
        str | None,
        typer.Option(
            "--output",
            "-o",
            envvar="CONVOEVAL_OUTPUT",
            help="Results file, by suffix: .jsonl (written as tests finish), .json, .html (report), "
            ".xml (JUnit) or .md (Markdown summary).",
        ),
    ] = None,
    threshold: Annotated[
        float | None,
        typer.Option(min=0, max=1, envvar="CONVOEVAL_THRESHOLD", help="Pass threshold (overrides suite and tests)."),
    ] = None,
    concurrency: Annotated[
        int | None,
        typer.Option(
            min=1,
            envvar="CONVOEVAL_CONCURRENCY",
            help="Conversations run at once (default: execution.workers, else 8).",
        ),
    ] = None,
    max_connections: Annotated[
        int | None,
        typer.Option(
            min=1,
            envvar="CONVOEVAL_MAX_CONNECTIONS",
            help="Model requests in flight per endpoint (server and key), shared by targets and judges.",
        ),
    ] = None,
    trials: Annotated[
        str | None,
        typer.Option(
            metavar="N|auto",
            envvar="CONVOEVAL_TRIALS",
            callback=_trials_option,
            help="Independent runs of each test (at most 1000); auto: until the verdict is settled "
            f"(at most {AUTO_MAX_TRIALS}, or the suite's trials.max).",
        ),
    ] = None,
    judge_repeats: Annotated[
        int | None, typer.Option(min=1, envvar="CONVOEVAL_JUDGE_REPEATS", help="Ask the judge K times per grader.")
    ] = None,
    no_cache: Annotated[
        bool,
        typer.Option(
            "--no-cache",
            envvar="CONVOEVAL_NO_CACHE",
            help="Call the models even when the cache has the answer (and do not store answers).",
        ),
    ] = False,
    cache_dir: Annotated[
        Path | None,
        typer.Option(envvar="CONVOEVAL_CACHE_DIR", help="Where the response cache lives (default: .convoeval)."),
    ] = None,
    test_id: Annotated[
        list[str] | None,
        typer.Option(
            "--test-id",
            metavar="ID",
            envvar="CONVOEVAL_TEST_ID",
            help="Run only tests whose id is ID or matches it (a glob such as 'book-*'); repeatable.",
        ),
    ] = None,
    tag: Annotated[
        list[str] | None,
        typer.Option(
            "--tag",
            envvar="CONVOEVAL_TAG",
            help="Run only tests with this tag (a test's or its suite's `tags`); repeatable.",
        ),
    ] = None,
    limit: Annotated[
        int | None,
        typer.Option(
            min=1, envvar="CONVOEVAL_LIMIT", help="Run only the first N selected tests (and what they depend on)."
        ),
    ] = None,
    shard: Annotated[
        str | None,
        typer.Option(
            metavar="I/N",
            envvar="CONVOEVAL_SHARD",
            help="Run shard I of N: the shards partition the selected tests (for CI jobs).",
        ),
    ] = None,
    resume: Annotated[
        str | None,
        typer.Option(
            metavar="[RUN_ID]",
            help="Finish a run (its id, or 'last', the default): only tests without a stored result run.",
        ),
    ] = None,
    rerun_failed: Annotated[
        str | None,
        typer.Option(
            "--rerun-failed",
            metavar="[RUN_ID]",
            help="A new run of the tests that did not pass in run RUN_ID (or "
            "'last', the default), with its suites and targets; it records the run it came from.",
        ),
    ] = None,
    takeover: Annotated[
        bool,
        typer.Option(
            "--takeover",
            help="With --resume: take over a run whose process "
            "may still be running (another host); only when it is gone.",
        ),
    ] = False,
    retry_errors: Annotated[
        bool,
        typer.Option(
            "--retry-errors",
            help="With --resume: also run again the tests whose stored result is an execution_error or a simulator_error.",
        ),
    ] = False,
    max_cost: Annotated[
        float | None,
        typer.Option(
            min=0,
            metavar="USD",
            envvar="CONVOEVAL_MAX_COST",
            help="Start no new test once the model calls made cost this much.",
        ),
    ] = None,
    quiet: Annotated[
        bool, typer.Option("--quiet", "-q", envvar="CONVOEVAL_QUIET", help="No progress; only the final table.")
    ] = False,
    html: Annotated[Path | None, typer.Option(help="Also write a self-contained HTML report here.")] = None,
    junit: Annotated[Path | None, typer.Option(help="Also write JUnit XML here (for CI).")] = None,
    markdown: Annotated[Path | None, typer.Option(help="Also write a Markdown summary here (CI job summary).")] = None,
    store: Annotated[
        Path | None,
        typer.Option(
            metavar="DIR",
            envvar="CONVOEVAL_HOME",
            help="State folder for runs.sqlite, the cache "
            "and default results (default: $CONVOEVAL_HOME, else "
            ".convoeval).",
        ),
    ] = None,
    plugin: Plugins = None,
    root: Root = None,
    backend: Annotated[
        str | None,
        typer.Option(
            metavar="local|ray",
            envvar="CONVOEVAL_BACKEND",
            help="Where conversations run: this process (local, the default) or Ray tasks (ray).",
        ),
    ] = None,
    ray_address: Annotated[
        str | None,
        typer.Option(metavar="ADDRESS", help="The Ray cluster to join (default: RAY_ADDRESS, else a local one)."),
    ] = None,
    processes: Annotated[
        str | None,
        typer.Option(
            metavar="N",
            envvar="CONVOEVAL_PROCESSES",
            help="Run the trials in N worker processes of this machine (default 1: this process); each "
            "endpoint's limits are split between them.",
        ),
    ] = None,
    keep_workspaces: Annotated[
        bool,
        typer.Option(
            envvar="CONVOEVAL_KEEP_WORKSPACES",
            help="Keep every workspace folder after its trial (the result's `workspace` says where).",
        ),
    ] = False,
    sandbox: Annotated[
        str | None,
        typer.Option(
            metavar="bubblewrap|docker|none",
            envvar="CONVOEVAL_SANDBOX",
            help="Where commands a model or suite controls run (bash and command tools, verify, hooks, "
            "code-graders in a workspace): bubblewrap (default where bwrap is installed), docker, or none "
            "(unconfined, only by name).",
        ),
    ] = None,
) -> None:
    """Run eval files live against one or more targets and grade every turn (see RUN_HELP)."""
    load_plugins(plugin)
    for folder in dict.fromkeys(p if p.is_dir() else p.parent for p in paths or []):
        sweep_placeholders(folder)  # what a run killed during a hook left (`.env`, `targets.yaml` folders)
        load_env_file(folder)  # provider keys and ${{ VAR }} values next to the suite
    if not paths and resume is None and rerun_failed is None:
        raise fail("give eval files to run, or --resume RUN_ID, or --rerun-failed RUN_ID")
    if output_text is not None and output_text.endswith(("/", os.sep)):  # Path() would drop the slash
        raise fail(f"--output {output_text}: ends with a slash; give a file name")
    output = Path(output_text) if output_text else None
    workers = _processes_number(processes)
    hide_from_models([state_dir(store)])  # the store, the cache and earlier runs' results (their answers)
    if output is None and resume is None:
        output = state_dir(store) / "results" / _default_results_name()
    progress = _RunLines(out, "off" if quiet else "bar" if out.is_terminal else "lines", quiet=quiet)

    check_writable(html, junit, markdown)
    reported = {p: resolve_output(p) for p in (html, junit, markdown) if p}  # before any hook runs

    interrupts = Interrupts(lambda: progress.meter.run_id if progress.meter else None)
    try:
        report = interrupts.run(
            arun(
                list(paths) if paths else None,
                target=target or None,
                judge=judge or None,
                panel_rule=panel_rule,
                targets_file=targets_file,
                threshold=threshold,
                trials=_trials_number(trials),
                judge_repeats=judge_repeats,
                concurrency=concurrency,
                max_connections=max_connections,
                keep_workspaces=keep_workspaces,
                sandbox=sandbox,
                backend=backend,
                ray_address=ray_address,
                processes=workers,
                output=output,
                events=progress,
                cache=not no_cache,
                cache_dir=cache_dir or state_dir(store),
                resume=resume,
                rerun_failed=rerun_failed,
                takeover=takeover,
                retry_errors=retry_errors,
                max_cost=max_cost,
                test_ids=test_id or [],
                tags=tag or [],
                limit=limit,
                shard=shard,
                store=state_dir(store) / STORE_FILE,
            )
        )
    except SpecError as exc:
        raise fail_with_problems(exc.problems) from None
    except NothingToRerun as exc:
        out.print(str(exc), markup=False, soft_wrap=True)
        raise typer.Exit(0) from None
    except (ConfigError, StoreError) as exc:  # a ConfigError once the run started: its results file cannot be written
        run_id = progress.meter.run_id if progress.meter else None
        resumable = f"; results committed so far are kept: convoeval run --resume {run_id}" if run_id else ""
        raise fail(f"{exc}{resumable}") from None
    except (KeyboardInterrupt, asyncio.CancelledError):  # the first Ctrl-C or SIGTERM: the run has unwound
        say(interrupts.message())
        raise typer.Exit(interrupts.exit_code) from None
    finally:
        progress.stop()
        resume_collector()
    if len(report.results) <= SUMMARY_ROWS_UP_TO:
        results = list(report.results)  # read from the store once
        with collector_paused():  # what the summary makes is gone at exit: no collection walks it (10 ms of 400 rows)
            print_summary(results, out, turns=not quiet and len(results) <= TURN_TABLES_UP_TO)
    else:
        counts = report.summary.get("verdicts")
        out.print(
            f"{len(report.results)} result(s): "
            + ", ".join(f"{v} {n}" for v, n in (counts.items() if isinstance(counts, dict) else ())),
            markup=False,
            highlight=False,
        )
    print_run_totals(report.summary, out)
    if report.judge_panel:  # else no result holds a panel's answers: not worth reading them all again
        print_panel_agreement(report.results, out)
    if report.output:
        out.print(f"results written to {report.output}")
    if html or junit or markdown:
        loaded = reports.LoadedRun(
            name=f"run {report.run_id}" if report.run_id else "run", run_id=report.run_id, results=list(report.results)
        )
        for path in write_reports(loaded, html=html, junit=junit, markdown=markdown, resolved=reported):
            out.print(f"wrote {path}", markup=False)
    if report.run_id:
        out.print(f"run {report.run_id} done", markup=False, highlight=False)
    raise typer.Exit(report.exit_code)


#: Per-result "done" lines, per-turn tables and summary rows are printed up to these sizes.
RESULT_LINES_UP_TO = 100


class _RunLines(RunProgress):
    """The progress of `convoeval run`: notes, the run's id, and one line per result (up to
    RESULT_LINES_UP_TO tests) besides the bar or the periodic lines."""

    summaries_only = True  # reads a result's keys, score and verdict; a turn only up to 500 tests

    def __init__(self, console: Console, mode: Mode, *, quiet: bool):
        super().__init__(console, mode)
        self.quiet = quiet
        self._numpy_wanted = False

    def start(self, meter: RunMeter) -> None:
        # The summary's mean-score interval is a numpy bootstrap: numpy (and what its first
        # bootstrap loads) loads while the run's calls wait on the network (from the first
        # graded turn), not after the last answer (80-180 ms), nor before the first call, where
        # it held the interpreter that the run's start (its HTTP client loading on another
        # thread) needs.
        resume_collector()  # the run is planned: it freezes what exists and paces the collector
        self._numpy_wanted = 2 <= meter.tests_total <= SUMMARY_ROWS_UP_TO
        if meter.run_id:
            self.console.print(
                f"run {meter.run_id}: {meter.tests_total} test(s), sandbox: {describe_sandbox()}",
                markup=False,
                highlight=False,
            )
            if note := process_limit_note():
                self.note(note)
        super().start(meter)

    def note(self, text: str) -> None:
        self.console.print(f"[cyan]{escape(text)}[/]", soft_wrap=True)  # one line, whatever the width

    def turn(self, turn: GradedTurn) -> None:
        if self._numpy_wanted:
            self._numpy_wanted = False
            threading.Thread(target=prepare_rate_lines, daemon=True).start()

    async def result(self, job: Job, position: int, result: EvaluationResult) -> None:
        self.advance()
        if not self.quiet and self.meter is not None and self.meter.tests_total <= RESULT_LINES_UP_TO:
            score = "-" if result.score is None else f"{result.score:.2f}"
            line = f"[dim]done[/] {escape(result.test_id)} @ {escape(result.target)}: {score} {result.verdict}"
            self.console.print(line)


TURN_TABLES_UP_TO = 50
SUMMARY_ROWS_UP_TO = 500
