"""`convoeval arena`: run suites on several targets (or take stored results), judge every pair of
conversations in both orders, and rank the targets; or rate recorded battles."""

from __future__ import annotations

import asyncio
import json
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from ..arena import (
    PLOT_FORMATS,
    ArenaReport,
    PairJudgment,
    aarena,
    leaderboard_csv,
    leaderboard_json,
    leaderboard_table,
    plot_leaderboard,
)
from ..errors import ConfigError
from ..rank import BattleFileError, Leaderboard, leaderboard_from_battles, read_battles
from ..report._terminal import printable
from ..results import EvaluationResult
from ..spec import SpecError
from ._app import app
from ._fail import fail, fail_with_problems, say
from ._interrupt import Interrupts
from ._write import check_writable, staged, writing


class ArenaFormat(StrEnum):
    table = "table"
    json = "json"
    csv = "csv"


def _print(ratings: Leaderboard | ArenaReport, output_format: ArenaFormat) -> None:
    """A Leaderboard or an ArenaReport as JSON, CSV or a terminal table."""
    if isinstance(ratings, ArenaReport):
        text = {ArenaFormat.json: ratings.to_json, ArenaFormat.csv: ratings.to_csv}.get(output_format)
        table = ratings.to_table
    else:
        board = ratings
        text = {ArenaFormat.json: lambda: leaderboard_json(board), ArenaFormat.csv: lambda: leaderboard_csv(board)}.get(
            output_format
        )
        table = lambda: leaderboard_table(board)  # noqa: E731
    if text is None:
        Console().print(table())
    else:
        output = text()
        typer.echo(output, nl=not output.endswith("\n"))


USAGE = (
    "give eval files to run on the targets (convoeval arena SUITE... --target A --target B), "
    "stored results (--results R.jsonl...) or recorded battles (--battles FILE.jsonl)"
)


@app.command("arena")
def arena_command(
    files: Annotated[
        list[Path] | None,
        typer.Argument(
            metavar="SUITE",
            help="Eval files to run on every --target; with --results, results files instead.",
            show_default=False,
        ),
    ] = None,
    target: Annotated[
        list[str] | None,
        typer.Option(
            "--target",
            "-t",
            help="A target to compare (provider:model or a name from targets.yaml); give two or "
            "more. With --results: the targets to compare (default: all).",
            show_default=False,
        ),
    ] = None,
    judge: Annotated[
        list[str] | None,
        typer.Option(
            "--judge",
            metavar="SPEC",
            help="The pairwise judge (and the runs' LLM graders); repeat for a judge panel. Default: "
            "the suite's execution.judge(s), else the local model.",
            show_default=False,
        ),
    ] = None,
    panel_rule: Annotated[
        str | None,
        typer.Option(
            metavar="mean|majority|min",
            help="How a judge panel's answers combine (default: majority).",
            show_default=False,
        ),
    ] = None,
    targets_file: Annotated[
        Path | None,
        typer.Option("--targets", help="Targets file (default: targets.yaml next to the suite).", show_default=False),
    ] = None,
    results: Annotated[
        bool,
        typer.Option(
            "--results",
            help="The files are stored results (JSONL from `convoeval run -o`, several targets): "
            "judge them without running anything.",
        ),
    ] = False,
    battles: Annotated[
        Path | None,
        typer.Option(
            "--battles",
            help="Recorded battles, JSONL (one {model_a, model_b, winner} a line) or a JSON list "
            "(winner: model_a, model_b, tie, 'tie (bothbad)' or 'tie (inconsistent)').",
            show_default=False,
        ),
    ] = None,
    prompt: Annotated[
        str | None,
        typer.Option(
            "--prompt",
            metavar="FILE_OR_TEXT",
            help="Custom pairwise judge prompt (Jinja2 with conversation_a, conversation_b, "
            "criteria, policy, test_id): a file or the text itself.",
            show_default=False,
        ),
    ] = None,
    judge_prompts: Annotated[
        Path | None,
        typer.Option(
            "--judge-prompts",
            help="FastChat's judge_prompts.jsonl: judge MT-Bench's way, each turn with its pairwise "
            "prompts (pair-v2, pair-math-v1 and their multi-turn forms); a battle per test, pair and turn.",
            show_default=False,
        ),
    ] = None,
    references: Annotated[
        Path | None,
        typer.Option(
            "--references",
            help="FastChat's reference answers (reference_answer/gpt-4.jsonl), for --judge-prompts "
            "with --results (an imported suite holds them).",
            show_default=False,
        ),
    ] = None,
    k: Annotated[
        float, typer.Option("--k", min=0, max=400, help="Elo K-factor (32 as TD-Eval, 4 as Chatbot Arena).")
    ] = 32.0,
    bootstrap: Annotated[
        int,
        typer.Option("--bootstrap", min=0, max=100_000, help="Bootstrap rounds for the intervals (0 = none)."),
    ] = 1000,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the bootstrap.")] = 0,
    output_format: Annotated[ArenaFormat, typer.Option("--format", help="table, json or csv.")] = ArenaFormat.table,
    plot: Annotated[
        Path | None,
        typer.Option(
            "--plot",
            help="Also draw the ratings with intervals (.svg, .png or .pdf).",
            show_default=False,
        ),
    ] = None,
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            "-o",
            help="Write the judged battles here (Chatbot Arena JSONL; re-rate with --battles).",
            show_default=False,
        ),
    ] = None,
    concurrency: Annotated[int, typer.Option("--concurrency", min=1, help="Pairwise judge calls at once.")] = 8,
    save_results: Annotated[
        Path | None,
        typer.Option(
            "--save-results",
            help="Also write the runs' results here (judge them again later with --results).",
            show_default=False,
        ),
    ] = None,
    no_cache: Annotated[
        bool, typer.Option("--no-cache", help="Call the models even when the cache has the answer.")
    ] = False,
    cache_dir: Annotated[
        Path | None,
        typer.Option("--cache-dir", help="Where the response cache lives (default: .convoeval).", show_default=False),
    ] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress lines.")] = False,
) -> None:
    """Rank targets conversation by conversation (TD-Eval's dialogue-level arena).

    Runs the suites on every target, lets the judge compare each pair of conversations in both orders (disagreeing orders count as a tie), and rates the targets by online Elo and Bradley-Terry with bootstrap intervals, next to their turn-level mean scores. With --results it judges stored results; with --battles it only rates recorded battles.
    """
    if plot is not None and plot.suffix.lower() not in PLOT_FORMATS:
        raise fail(f"{plot}: plot format must be one of {', '.join(PLOT_FORMATS)}")
    check_writable(output, plot, save_results)  # before any judge is paid
    if battles is not None:
        if files or results:
            raise fail("give only one of: eval files, --results R.jsonl... or --battles FILE.jsonl")
        unused = [
            name
            for name, value in (
                ("--target", target),
                ("--judge", judge),
                ("--panel-rule", panel_rule),
                ("--prompt", prompt),
                ("--judge-prompts", judge_prompts),
                ("--references", references),
                ("--output", output),
                ("--save-results", save_results),
            )
            if value
        ]
        if unused:
            raise fail(
                f"{', '.join(unused)} judge(s) conversations; with --battles the battles are "
                "only rated (leave them out)"
            )
        _rate_battles(battles, k, bootstrap, seed, output_format, plot)
        return
    if not files:
        raise fail("--results needs results files: convoeval arena --results R.jsonl..." if results else USAGE)
    if not results:
        looks_like_results = [f for f in files if f.suffix in (".jsonl", ".json")]
        if looks_like_results:
            raise fail(f"{looks_like_results[0]} looks like a results file; add --results to judge stored results")
        if len(set(target or [])) < 2:
            raise fail("the arena needs at least two different targets: --target A --target B")
    elif save_results is not None:
        raise fail("--save-results writes the results of a run; with --results nothing is run")
    _judge_conversations(
        files,
        results,
        target,
        judge,
        targets_file,
        prompt,
        k,
        bootstrap,
        seed,
        output_format,
        plot,
        output,
        concurrency,
        save_results,
        not no_cache,
        cache_dir,
        quiet,
        panel_rule=panel_rule,
        judge_prompts=judge_prompts,
        references=references,
    )


def _rate_battles(
    battles: Path, k: float, bootstrap: int, seed: int, output_format: ArenaFormat, plot: Path | None
) -> None:
    with writing(plot):  # outside the `except`: typer's Exit is a RuntimeError
        try:
            board = leaderboard_from_battles(read_battles(battles), k=k, bootstrap=bootstrap, seed=seed)
            if plot is not None:
                with staged(plot) as partial:
                    plot_leaderboard(board, partial)
        except (BattleFileError, ValueError, RuntimeError) as error:
            raise fail(str(error)) from None
    for warning in board.warnings:
        typer.echo(f"warning: {warning}", err=True)
    _print(board, output_format)
    if plot is not None:
        typer.echo(f"plot written to {plot}", err=True)


def _judge_conversations(
    files: list[Path],
    results: bool,
    target: list[str] | None,
    judge: list[str] | None,
    targets_file: Path | None,
    prompt: str | None,
    k: float,
    bootstrap: int,
    seed: int,
    output_format: ArenaFormat,
    plot: Path | None,
    output: Path | None,
    concurrency: int,
    save_results: Path | None,
    cache: bool,
    cache_dir: Path | None,
    quiet: bool,
    panel_rule: str | None = None,
    judge_prompts: Path | None = None,
    references: Path | None = None,
) -> None:
    def note(text: str) -> None:
        typer.echo(text, err=True)

    def on_result(result: EvaluationResult) -> None:
        if not quiet:
            score = "-" if result.score is None else f"{result.score:.2f}"
            typer.echo(
                f"ran {printable(result.test_id)} @ {printable(result.target)}: {score} {result.verdict}", err=True
            )

    judged: list[PairJudgment] = []

    def on_judgment(judgment: PairJudgment) -> None:
        judged.append(judgment)
        if not quiet:
            say(_judgment_line(judgment))

    interrupts = Interrupts()
    try:
        report = interrupts.run(
            aarena(
                None if results else list(files),
                results=list(files) if results else None,
                targets=target or None,
                judge=judge or None,
                panel_rule=panel_rule,
                targets_file=targets_file,
                prompt=prompt,
                judge_prompts=judge_prompts,
                references=references,
                k=k,
                bootstrap=bootstrap,
                seed=seed,
                concurrency=concurrency,
                cache=cache,
                cache_dir=cache_dir,
                results_output=save_results,
                output=None,
                on_note=note,
                on_result=on_result,
                on_judgment=on_judgment,
            )
        )
    except SpecError as exc:
        raise fail_with_problems(exc.problems) from None
    except ConfigError as exc:
        raise fail(str(exc)) from None
    except (KeyboardInterrupt, asyncio.CancelledError):  # the first Ctrl-C or SIGTERM: the arena has unwound
        say(interrupts.message())
        _keep_judged(judged, output, judge, cache)
        raise typer.Exit(interrupts.exit_code) from None
    _show_arena(report, output_format, plot, output)


def _keep_judged(judged: list[PairJudgment], output: Path | None, judge: list[str] | None, cache: bool) -> None:
    """After an interrupt: the battles judged so far go to `output` (the judge's answers were
    paid for), and say how to go on."""
    battles = [j.to_record(judge[0] if judge and len(judge) == 1 else None) for j in judged if j.ok]
    if output is not None and battles:
        with writing(output), staged(output) as partial:
            partial.write_text("".join(json.dumps(b, ensure_ascii=False) + "\n" for b in battles), encoding="utf-8")
        say(
            f"{len(battles)} battle(s) judged before the interrupt written to {output} (rate them: convoeval arena --battles {output})"
        )
    elif battles:
        say(f"{len(battles)} battle(s) were judged before the interrupt; -o FILE keeps them next time")
    if cache:
        say("the replies so far are in the response cache: the same command again does not pay for them")


def _judgment_line(judgment: PairJudgment) -> str:
    """One line per judged pair: who won in each order, or the judge's error."""
    if not judgment.ok:
        return f"judge error on {judgment.label}: {judgment.model_a} vs {judgment.model_b}: {judgment.errors[0]}"
    outcome = {"model_a": f"{judgment.model_a} wins", "model_b": f"{judgment.model_b} wins", "tie": "tie"}[
        judgment.winner or "tie"
    ]
    orders = f"orders: {judgment.a_first}/{judgment.b_first}"
    if judgment.consistent is False:
        orders += ", disagree"
    return f"judged {judgment.label}: {judgment.model_a} vs {judgment.model_b}: {outcome} ({orders})"


def _show_arena(report: ArenaReport, output_format: ArenaFormat, plot: Path | None, output: Path | None) -> None:
    """Print the arena's leaderboard and warnings; write its battles and plot."""
    if report.leaderboard is None:
        first = report.errors[0] if report.errors else "; ".join(report.skipped[:1]) or "no pairs"
        raise fail(f"no battles: none of the {len(report.judgments)} pair(s) could be judged (first: {first})")
    for warning in report.warnings:
        typer.echo(f"warning: {warning}", err=True)
    if report.skipped:
        typer.echo(f"note: {len(report.skipped)} pair(s) not judged, e.g. {report.skipped[0]}", err=True)
    if output is not None:
        with writing(output), staged(output) as partial:
            report.write_battles(partial)
    if plot is not None:
        with writing(plot), staged(plot) as partial:  # outside the `except`: typer's Exit is a RuntimeError
            try:
                report.plot(partial)
            except (ValueError, RuntimeError) as error:
                raise fail(str(error)) from None
    _print(report, output_format)
    if output is not None:
        typer.echo(f"battles written to {output} (re-rate: convoeval arena --battles {output})", err=True)
    if plot is not None:
        typer.echo(f"plot written to {plot}", err=True)
