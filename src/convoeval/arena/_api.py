"""The arena in the Python API: run suites on several targets (or take stored results), judge
every pair of conversations in both orders, and rate the targets.

Example:
    import convoeval
    report = convoeval.arena("examples/arena/support.eval.yaml",
                             targets=["polite-bot", "terse-bot"], judge="local")
    print(report.to_json())
    report.write_battles("battles.jsonl")

    # judge stored results again, with another judge, without re-running the targets
    report = convoeval.arena(results=["results.jsonl"], judge="openai:gpt-4o-mini")
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import ClassVar, Literal

from pydantic import Field, SkipValidation, field_validator

from .._sync import run_sync
from ..api import Paths, arun, eval_paths
from ..engine import (
    CACHE_FILE,
    JudgeChoice,
    ResponseCache,
    SharedOptions,
    TargetLike,
    TargetPool,
    checked_target,
    named_targets,
    state_dir,
)
from ..errors import ConfigError
from ..judging import load_pairwise_prompt, panel_members
from ..report import read_results
from ..results import EvaluationResult
from ..spec import Suite, load_suites
from ..spec._targets_file import TARGETS_FILE, find_targets_file
from ..targets import TargetConfig
from ._fastchat import FastChatPairwise
from ._judge import ArenaTest, PairJudgment, TestKey, judge_arena
from ._report import ArenaReport


class ArenaOptions(SharedOptions):
    """The options of an arena (`convoeval.arena(paths, **options)` builds one from keywords).

    Attributes:
        paths: eval files (or folders) to run on every target.
        targets: two or more targets (specs, TargetConfigs or Target objects). With `results`:
            the targets to compare (names; default all of them).
        results: EvaluationResult JSONL/JSON files (or the results themselves) holding two
            or more targets; judged without running anything. The judge then sees no criteria
            or policy (results do not carry them).
        judge: the pairwise judge, or a list of two or more: a judge panel (every pair judged
            by each judge, the labels combined by `panel_rule`, default majority). Default:
            the suites' `execution.judges` / `execution.judge`, else the targets file's
            `judges:`, else the embedded local model when installed. It also grades the
            runs' LLM assertions.
        panel_rule: how a judge panel's answers combine: `mean`, `majority` or `min`.
        targets_file: a targets file (default: `targets.yaml` next to each suite; with
            `results`, `targets.yaml` in the working directory when there is one).
        prompt: a custom pairwise prompt: a file path or Jinja2 text with `conversation_a`,
            `conversation_b`, `criteria`, `policy`, `test_id` and `backend`.
        judge_prompts: FastChat's judge_prompts.jsonl: judge MT-Bench's way instead, each turn
            with its pairwise prompts (`pair-v2`...), a battle per test, pair and turn.
        references: FastChat's reference answers (`reference_answer/gpt-4.jsonl`), for
            `judge_prompts` on stored results (a suite's `mt-bench-judge` checks hold them).
        k: Elo K-factor (32 as TD-Eval, 4 as Chatbot Arena).
        bootstrap, seed, confidence: Bradley-Terry bootstrap intervals (0 rounds = none).
        concurrency: pairwise judge calls at once.
        run_concurrency, threshold, trials, store: passed to `arun` (its `concurrency`, ...);
            the options shared with a run are declared once, in `SharedOptions`.
        cache, cache_dir: the response cache, for the runs and the pairwise judge calls.
        results_output: also write the runs' results here (re-judge them later with `results`).
        output: write the judged battles here (Chatbot Arena JSONL, `convoeval arena --battles`).
    """

    what: ClassVar[str] = "arena option"

    # Targets are checked where they are built (a Target is a protocol: duck-typed objects count).
    targets: list[SkipValidation[TargetLike]] | None = None
    results: list[SkipValidation[str | Path | EvaluationResult]] | None = None  # result files or results
    judge: SkipValidation[TargetLike | list[TargetLike] | None] = None
    panel_rule: Literal["mean", "majority", "min"] | None = None
    prompt: str | Path | None = None
    judge_prompts: Path | None = None
    references: Path | None = None
    k: float = 32.0
    bootstrap: int = 1000
    seed: int = 0
    confidence: float = Field(default=0.95, gt=0, lt=1)
    concurrency: int = Field(default=8, ge=1)
    run_concurrency: int | None = Field(default=None, ge=1)
    results_output: Path | None = None
    output: Path | None = None

    @field_validator("targets", "results", mode="before")
    @classmethod
    def _listed(cls, value: object) -> object:
        return [value] if isinstance(value, (str, Path, TargetConfig)) else value

    @field_validator("targets")
    @classmethod
    def _targets(cls, value: list[TargetLike] | None) -> list[TargetLike] | None:
        return None if value is None else [checked_target(v) for v in value]

    @field_validator("bootstrap")
    @classmethod
    def _rounds(cls, value: int) -> int:
        if value < 0:
            raise ValueError(f"bootstrap rounds cannot be negative, got {value}")
        return value

    @classmethod
    def build(cls, options: ArenaOptions | None = None, **changes: object) -> ArenaOptions:
        """`options` with `changes` applied. Raises ConfigError naming a bad option."""
        data = {name: getattr(options, name) for name in cls.model_fields} if options else {}
        return cls._validated({**data, **changes})


def arena(
    paths: Paths | None = None,
    *,
    options: ArenaOptions | None = None,
    on_note: Callable[[str], None] | None = None,
    on_result: Callable[[EvaluationResult], None] | None = None,
    on_judgment: Callable[[PairJudgment], None] | None = None,
    **option_values: object,
) -> ArenaReport:
    """Run an arena and return its report; see `aarena` for the options.

    Example:
        report = convoeval.arena("suite.eval.yaml", targets=["openai:gpt-4o-mini", "local"],
                                 judge="openai:gpt-4o")
        for row in report.rows():
            print(row["target"], row["bt"], row["turn_mean"])
    """
    if option_values:
        options = ArenaOptions.build(options, **option_values)
    return run_sync(aarena(paths, options=options, on_note=on_note, on_result=on_result, on_judgment=on_judgment))


async def aarena(
    paths: Paths | None = None,
    *,
    options: ArenaOptions | None = None,
    on_note: Callable[[str], None] | None = None,
    on_result: Callable[[EvaluationResult], None] | None = None,
    on_judgment: Callable[[PairJudgment], None] | None = None,
    **option_values: object,
) -> ArenaReport:
    """Compare targets conversation by conversation: TD-Eval's dialogue-level arena.

    Give EITHER eval files (`paths`, run on every target with `convoeval.arun`, so the response
    cache and the run store apply) OR stored `results`. Then for every test and every pair of
    targets the pairwise judge compares the two conversations twice, A/B swapped; when the two
    orders disagree the battle is a tie (reported as the order-disagreement rate). Battles feed
    online Elo (in test order, K = `k`) and Bradley-Terry with seeded bootstrap intervals.

    Args:
        paths: eval files to run on every target (or suites as data, as for `convoeval.run`).
        options: an `ArenaOptions`; keyword arguments (its fields) build one or change it.
        on_note, on_result, on_judgment: progress callbacks (notes, each run result, each pair).

    Raises:
        SpecError: an eval file is invalid.
        ConfigError: neither or both of paths and results, fewer than two targets, no judge,
            an unreadable results file or prompt, a bad option.
    """
    if paths is not None:
        option_values["paths"] = eval_paths(paths)
    opts = ArenaOptions.build(options, **option_values)
    notes: list[str] = []

    def note(text: str) -> None:
        notes.append(text)
        if on_note:
            on_note(text)

    template = _pairwise_prompt(opts)
    fastchat = FastChatPairwise.load(opts.judge_prompts, opts.references) if opts.judge_prompts else None
    suites, names, collected = _inputs(opts)
    candidates = (
        [f for s in suites if (f := find_targets_file(s.base_dir))] if opts.paths is not None else [Path(TARGETS_FILE)]
    )
    pool = TargetPool(named_targets(candidates, opts.targets_file))
    try:
        judge_option = list(opts.judge) if isinstance(opts.judge, (list, tuple)) else opts.judge
        pool.check_names(suites, opts.targets, judge_option)
        choice = pool.judge(judge_option, suites, note, rule=opts.panel_rule)
        _note_judge(choice, names, note)
        run_id = None
        if opts.paths is not None:
            run_id, collected = await _run_contestants(opts, choice.option, note, on_result)
        if opts.cache:
            pool.cache = ResponseCache(Path(opts.cache_dir or state_dir()) / CACHE_FILE)
        try:
            arena_report = await judge_arena(
                collected,
                pool.wrap(choice.target),
                targets=names,
                tests=_tests_of(suites),
                prompt=template,
                fastchat=fastchat,
                k=opts.k,
                bootstrap=opts.bootstrap,
                seed=opts.seed,
                confidence=opts.confidence,
                concurrency=opts.concurrency,
                on_judgment=on_judgment,
            )
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
    finally:
        await pool.aclose()
        if pool.cache is not None:
            pool.cache.close()
    arena_report.notes = notes
    arena_report.run_id = run_id
    if opts.output is not None:
        arena_report.write_battles(opts.output)
    return arena_report


def _note_judge(choice: JudgeChoice, names: list[str] | None, note: Callable[[str], None]) -> None:
    """Say where the judge came from when the suite chose it, and when it is also a contestant."""
    if choice.source == "suite":
        note(f"judge: {choice.target.name} (the suite's execution.judge); choose another with --judge")
    if names and any(j.name in names for j in panel_members(choice.target)):
        note(f"note: a judge of {choice.target.name} is also a contestant; LLM judges tend to prefer their own answers")


def _pairwise_prompt(opts: ArenaOptions) -> str | None:
    """The custom pairwise prompt's template, or None for the built-in one (or FastChat's)."""
    if opts.references is not None and opts.judge_prompts is None:
        raise ConfigError("references are FastChat's, for its pairwise prompts: give judge_prompts too")
    if opts.prompt is None:
        return None
    if opts.judge_prompts is not None:
        raise ConfigError("give one pairwise prompt: a custom prompt or FastChat's judge prompts, not both")
    try:
        return load_pairwise_prompt(opts.prompt)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


async def _run_contestants(
    opts: ArenaOptions,
    judge: TargetLike | list[TargetLike] | None,
    note: Callable[[str], None],
    on_result: Callable[[EvaluationResult], None] | None,
) -> tuple[str | None, list[EvaluationResult]]:
    """Run the suites on every target (`convoeval.arun`): the run's id and its results."""
    report = await arun(
        opts.paths,
        target=list(opts.targets or []),
        judge=judge,
        panel_rule=opts.panel_rule,
        targets_file=opts.targets_file,
        threshold=opts.threshold,
        trials=opts.trials,
        concurrency=opts.run_concurrency,
        output=opts.results_output,
        on_result=on_result,
        on_note=note,
        cache=opts.cache,
        cache_dir=opts.cache_dir,
        store=opts.store,
    )
    return report.run_id, list(report.results)


def _inputs(opts: ArenaOptions) -> tuple[list[Suite], list[str] | None, list[EvaluationResult]]:
    """The suites to run (or none), the target names to compare, and the stored results (or none)."""
    if (opts.paths is None) == (opts.results is None):
        raise ConfigError(
            "give either eval files to run or stored results, not both"
            if opts.paths is not None
            else "give eval files to run on the targets, or stored results"
        )
    if opts.paths is not None:
        names = _target_names(opts.targets or [])
        if len(set(names)) < 2:
            raise ConfigError("the arena needs at least two different targets (--target A --target B)")
        return load_suites(opts.paths), names, []
    chosen = _target_names(opts.targets) if opts.targets else None
    if chosen is not None and len(set(chosen)) < 2:
        raise ConfigError("compare at least two targets (or leave --target out to compare all)")
    return [], chosen, _collect(opts.results or [])


def _collect(results: Sequence[str | Path | EvaluationResult]) -> list[EvaluationResult]:
    given = [r for r in results if isinstance(r, EvaluationResult)]
    files = [r for r in results if not isinstance(r, EvaluationResult)]
    if given and files:
        raise ConfigError("results: give result files or EvaluationResult objects, not a mix")
    return given if given else read_results(files)


def _target_names(targets: Sequence[TargetLike]) -> list[str]:
    return [t if isinstance(t, str) else t.name for t in targets]


def _tests_of(suites: list[Suite]) -> dict[TestKey, ArenaTest]:
    """Criteria, policy and per-turn backend results of every test, for the judge."""
    tests: dict[TestKey, ArenaTest] = {}
    for suite in suites:
        for test in suite.tests:
            backend = {
                i: turn.backend_result
                for i, turn in enumerate(test.turns or [], start=1)
                if turn.backend_result is not None
            }
            checks = [a for turn in test.turns or [] for a in turn.assertions]
            references = next((r for a in checks if (r := getattr(a, "references", None))), ())
            tests[(suite.display_name, test.id)] = ArenaTest(
                criteria=test.criteria,
                policy=test.policy or suite.policy,
                backend=backend or None,
                references=tuple(references),  # an `mt-bench-judge`'s: FastChat's pairwise prompts need them
            )
    return tests
