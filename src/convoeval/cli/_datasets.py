"""`convoeval import` and `convoeval grade`: thin shells over `convoeval.datasets` and `run`."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer

from .._result_files import export_jsonl
from ..datasets import (
    IMPORTERS,
    DatasetWarning,
    grading_suite,
    import_dataset,
    remove,
    stored_run,
    write_regrade,
    write_suite,
)
from ..engine import STORE_FILE, state_dir
from ..errors import ConfigError, DatasetError
from ..report import load_run
from ..spec import validate_paths
from ._app import Root, app
from ._core import out
from ._fail import fail, fail_with_problems, say
from ._write import check_writable, staged, writing


@contextmanager
def said_warnings() -> Iterator[None]:
    """The importers' warnings said as `warning: ...` lines on stderr (not Python's
    `file:line: DatasetWarning: ...`), also when the import then fails."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", DatasetWarning)
        try:
            yield
        finally:
            for warning in caught:
                say(f"warning: {warning.message}")


@app.command("import")
def import_command(
    kind: Annotated[str, typer.Argument(help=f"Dataset kind: {', '.join(sorted(IMPORTERS))}.", show_default=False)],
    source: Annotated[Path, typer.Argument(help="The dataset file.", show_default=False)],
    output: Annotated[Path, typer.Option("-o", "--output", help="The eval file to write.")] = Path("suite.eval.yaml"),
    references: Annotated[
        Path | None, typer.Option(help="mt-bench: the GPT-4 reference answers (default: found beside SOURCE).")
    ] = None,
    db: Annotated[
        Path | None,
        typer.Option(help="multiwoz: folder of MultiWOZ's <domain>_db.json files (default: db/ beside SOURCE)."),
    ] = None,
    tools: Annotated[
        str | None,
        typer.Option(
            help="tau-bench, tau2: the domain's tool functions (a .py file relative to the output, or a module)."
        ),
    ] = None,
    backend: Annotated[
        str | None,
        typer.Option(help="tau-bench, tau2: the domain's initial backend (JSON/YAML, relative to the output)."),
    ] = None,
    recorded: Annotated[
        bool,
        typer.Option(
            "--recorded",
            help="tau-bench: the recorded trajectories of each task as the trials of its test; "
            "tau2: a results file's simulations of each task as the trials of its test; "
            "deepeval: the recorded conversations as transcript tests, not live ones.",
        ),
    ] = False,
    policy: Annotated[
        Path | None,
        typer.Option(help="tau-bench, tau2 (tasks.json): the domain policy (default: policy.md beside SOURCE)."),
    ] = None,
    judge_prompts: Annotated[
        Path | None,
        typer.Option(
            "--judge-prompts",
            help="mt-bench: FastChat's judge_prompts.jsonl, used as written (scores comparable with MT-Bench's).",
        ),
    ] = None,
) -> None:
    """Import a dataset as an eval file, then validate it."""
    check_writable(output)
    try:
        with said_warnings():
            suite = import_dataset(
                kind,
                source,
                references=references,
                db=db,
                tools=tools,
                backend=backend,
                recorded=recorded or None,
                policy=policy,
                judge_prompts=judge_prompts,
            )
    except DatasetError as exc:
        raise fail(str(exc)) from None
    left_out = [f"left out: {s['id']}: {s['reason']}" for s in suite.get("metadata", {}).get("skipped", [])]
    if not suite.get("tests"):  # an empty file, or one of another kind
        for line in left_out:
            say(line)
        raise fail(f"{source}: no test could be made from this file (is it {kind} data?); nothing written")
    header = f"Imported by `convoeval import {kind} {source.name}`; edit freely."
    with writing(output), staged(output) as partial:
        write_suite(suite, partial, header)
    problems = validate_paths([output])
    if problems:  # the tasks left out are named here too: fixing the problems does not bring them back
        fail_with_problems(problems)
        for line in left_out:
            say(line)
        say(f"{output} was written; fix the problems above, then `convoeval validate {output}`")
        raise typer.Exit(2)
    out.print(f"{len(suite['tests'])} test(s) written to {output}", markup=False)
    for line in left_out:
        out.print(line, markup=False)


@app.command()
def grade(
    file: Annotated[
        Path,
        typer.Argument(
            help="A stored run ('last', 'last~N', a run id, or the results .jsonl of `convoeval run -o`), "
            "recorded conversations (.jsonl: "
            "OpenAI messages or AgentV transcripts; .eval/.json: an Inspect log, a Langfuse export or "
            "OpenTelemetry spans; a Claude Code session or Codex rollout file, or a folder of them), "
            "or an eval file whose tests have `transcript:`.",
            show_default=False,
        ),
    ],
    graders: Annotated[
        Path | None,
        typer.Option(
            help="YAML with turn_assertions / assertions / policy to grade a .jsonl file with instead of "
            "the run's own checks (default for chat logs: conversation-cohesion per turn, self-coherence "
            "per conversation).",
        ),
    ] = None,
    judge: Annotated[
        list[str] | None, typer.Option(metavar="SPEC", help="Model for LLM graders; repeat for a judge panel.")
    ] = None,
    panel_rule: Annotated[
        str | None,
        typer.Option(metavar="mean|majority|min", help="How a judge panel's answers combine."),
    ] = None,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Results file.")] = None,
    store: Annotated[Path | None, typer.Option(metavar="DIR", help="State folder (default: .convoeval).")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Only the final table.")] = False,
    root: Root = None,
) -> None:
    """Judge stored conversations again, calling no target: a stored run with the checks of its
    own suite (kept with each result), or with --graders FILE instead."""
    args = ["run"]
    temporary: list[Path] = []
    if not file.suffix and not file.exists():  # `last`, `last~1`, a run id: a run of the store
        file = _stored_run_file(str(file), store)
    if file.suffix in (".jsonl", ".json", ".eval") or file.is_dir():  # a folder: of agent session files
        try:
            regrade = stored_run(file) if graders is None and file.suffix == ".jsonl" and file.is_file() else None
            if regrade is not None:
                paths, targets, temporary = write_regrade(regrade, file, state_dir(store) / "graded")
                args += [*map(str, paths), "--targets", str(targets)]
                for name in regrade.targets:
                    args += ["--target", name]
                tests = sum(len(s.data["tests"]) for s in regrade.suites)
                out.print(f"{tests} test(s) of {file} judged again with their own checks", markup=False)
                for note in dict.fromkeys(regrade.notes):
                    out.print(f"note: {note}", markup=False)
            else:
                with said_warnings():
                    suite = grading_suite(file, graders)
                path = write_suite(
                    suite,
                    state_dir(store) / "graded" / f"{file.stem}.eval.yaml",
                    f"Generated by `convoeval grade {file.name}` from {file}.",
                )
                out.print(f"graders and {len(suite['tests'])} conversation(s) in {path}", markup=False)
                args += [str(path), "--target", "recorded:transcript"]
        except DatasetError as exc:
            raise fail(str(exc)) from None
    elif graders is not None:
        raise fail("--graders is for .jsonl/.json/.eval logs; an eval file carries its own graders")
    else:
        args += [str(file), "--target", "recorded:transcript"]
    for value in judge or []:
        args += ["--judge", value]
    for flag, option in (("--panel-rule", panel_rule), ("-o", output), ("--store", store)):
        if option is not None:
            args += [flag, str(option)]
    if quiet:
        args.append("--quiet")
    try:
        code = typer.main.get_command(app).main(args=args, prog_name="convoeval", standalone_mode=False)
    finally:
        remove(temporary)
    raise typer.Exit(code or 0)


def _stored_run_file(ref: str, store: Path | None) -> Path:
    """The results of a run of the store (`last`, `last~N`, a run id), as the results file
    `grade` reads, written under the state folder's `graded/`."""
    try:
        loaded = load_run(ref, state_dir(store) / STORE_FILE, files=False)
        path = state_dir(store) / "graded" / f"{loaded.run_id}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        export_jsonl(path, (result.model_dump_json().encode() for result in loaded.results))
    except (ConfigError, OSError) as exc:
        raise fail(str(exc)) from None
    return path
