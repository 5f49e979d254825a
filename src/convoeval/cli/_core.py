"""`convoeval run | validate | schema`: thin shells over the Python API."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console

from ..api import ConfigError, arun
from ..report import print_summary
from ..results import EvaluationResult
from ..spec import SpecError, suite_json_schema, validate_paths
from ._app import app

out = Console(highlight=False)
err = Console(stderr=True, highlight=False)

Paths = Annotated[list[Path], typer.Argument(help="Eval files (YAML).", show_default=False)]


def fail_with_problems(exc: SpecError) -> None:
    """Print `file:line: field: message` lines to stderr and exit 2."""
    for problem in exc.problems:
        err.print(str(problem), markup=False, soft_wrap=True)
    raise typer.Exit(2)


@app.command()
def validate(paths: Paths) -> None:
    """Check eval files; print one line per problem as file:line: field: message."""
    problems = validate_paths(list(paths))
    if problems:
        fail_with_problems(SpecError(problems))
    out.print(f"{len(paths)} file(s) valid")


@app.command()
def schema() -> None:
    """Print the JSON Schema of eval files (for editor completion)."""
    sys.stdout.write(json.dumps(suite_json_schema(), indent=2) + "\n")


@app.command()
def run(
    paths: Paths,
    target: Annotated[Optional[list[str]], typer.Option(
        "--target", "-t", help="provider:model (openai:gpt-4o-mini, anthropic:..., local) or a "
        "name from targets.yaml; repeat to run several targets.")] = None,
    judge: Annotated[Optional[str], typer.Option(help="Model for LLM graders (default: suite's, "
                                                 "else local, else the target).")] = None,
    targets_file: Annotated[Optional[Path], typer.Option("--targets", help="Targets file "
                                                          "(default: targets.yaml next to the suite).")] = None,
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="Results file: .jsonl "
                                                   "(written as tests finish) or .json.")] = None,
    threshold: Annotated[Optional[float], typer.Option(min=0, max=1, help="Pass threshold (overrides suite and tests).")] = None,
    concurrency: Annotated[Optional[int], typer.Option(min=1, help="Conversations run at once "
                                                       "(default: execution.workers, else 8).")] = None,
    trials: Annotated[Optional[int], typer.Option(min=1, help="Independent runs of each test.")] = None,
    judge_repeats: Annotated[Optional[int], typer.Option(min=1, help="Ask the judge K times per grader.")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Only the final table.")] = False,
) -> None:
    """Run eval files live against one or more targets and grade every turn."""
    if output is None:
        output = Path(".convoeval") / "results" / time.strftime("results-%Y%m%d-%H%M%S.jsonl")

    def on_result(result: EvaluationResult) -> None:
        if not quiet:
            score = "-" if result.score is None else f"{result.score:.2f}"
            out.print(f"[dim]done[/] {result.test_id} @ {result.target}: {score} {result.verdict}")

    try:
        report = asyncio.run(arun(
            list(paths), target=target or None, judge=judge, targets_file=targets_file,
            threshold=threshold, trials=trials, judge_repeats=judge_repeats,
            concurrency=concurrency, output=output, on_result=on_result,
            on_note=lambda text: out.print(f"[cyan]{text}[/]"),
        ))
    except SpecError as exc:
        fail_with_problems(exc)
    except ConfigError as exc:
        err.print(f"error: {exc}", markup=False)
        raise typer.Exit(2)
    except KeyboardInterrupt:
        err.print("interrupted")
        raise typer.Exit(130)
    print_summary(report.results, out, turns=not quiet)
    out.print(f"results written to {output}")
    raise typer.Exit(report.exit_code)
