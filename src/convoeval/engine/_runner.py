"""Running a whole run locally: suites -> jobs on targets -> the scheduler, with the target pool,
the response cache, the meter and the run recorder around it. `convoeval.arun` calls this."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from .. import _sandbox as sandbox
from .._lazy import frozen_for_good, objects_frozen
from .._result_files import (
    ResultWriter,
    check_output,
    check_output_suffix,
    export_jsonl,
    export_results,
    resolve_output,
)
from .._secrets import redact, reread_environment
from ..errors import ConfigError, NothingToRerun
from ..results import EvaluationResult, TrialResult, VerdictStatus
from ..run import GradedTurn, Job, TrialRunner, run_jobs, run_suite_hooks
from ..spec import Suite, Workspace, load_suites, stored_checks, suite_checks, with_default_system_prompt
from ..spec._targets_file import find_targets_file
from ..targets import Target
from ._cache import CACHE_FILE, ResponseCache
from ._events import RunEvents
from ._meter import RunMeter
from ._options import RecordedOptions, RunOptions
from ._pool import JudgeChoice, TargetPool, check_key, named_targets
from ._processes import Finished, ProcessTrials
from ._ray import RayTrials
from ._recorder import RunRecorder, suite_key
from ._select import select_tests, tests_for_target, tests_on_no_target
from ._sqlite import database_files
from ._store import STORE_FILE, RunRecord, RunStore, state_dir


@dataclass
class RunReport:
    """What a run produced.

    Attributes:
        results: one EvaluationResult per test and target, in run order. With a run store
            (the default) they are read from the store when used, not held in memory (a run
            of at most 500 results hands back the ones it saved as they were saved).
        notes: one-line notes (defaults chosen, budget reached...).
        run_id: the run's id in the store (`convoeval run --resume RUN_ID`), or None.
        summary: totals of the run: tests, turns, calls, cache hits, errors, tokens, cost
            (`cost_usd` of every reply, `spent_usd` of the calls that reached a model),
            `by_model`, `by_target`, budget.
        output: the results file written, if any.
        outcomes: the verdict and execution status of each result.
        judge_panel: a judge panel graded the run (so its agreement is worth reading the
            results for).
    """

    results: Sequence[EvaluationResult]
    notes: list[str] = field(default_factory=list)
    run_id: str | None = None
    summary: dict[str, object] = field(default_factory=dict)
    output: str | None = None
    outcomes: list[VerdictStatus] | None = None
    judge_panel: bool = False

    def __repr__(self) -> str:
        """The run's id, counts and file, not every result: `asyncio.run` renders its main task's
        result when it restores the SIGINT handler it installed (for 2,000 results held in memory,
        `store=False`, that took 3 s of CPU after the run), and so does a REPL."""
        return (
            f"RunReport(run_id={self.run_id!r}, results={len(self.results)}, notes={len(self.notes)}, "
            f"output={self.output!r})"
        )

    @property
    def exit_code(self) -> int:
        """0 all passed; 1 a test did not pass; 3 every test had an execution (or simulator) error.
        (2, invalid input or configuration, is raised as an error before there is a report.)"""
        outcomes = self.outcomes
        if outcomes is None:
            outcomes = [r.verdict_status for r in self.results]
        if outcomes and all(o.status in ("execution_error", "simulator_error") for o in outcomes):
            return 3
        return 0 if all(o.verdict == "pass" for o in outcomes) else 1


async def execute_run(options: RunOptions, *, version: str, events: RunEvents | None = None) -> RunReport:
    """Run (or resume) what `options` describe, telling `events` as it goes; see `convoeval.arun`.

    Raises:
        SpecError: an eval file is invalid, or names a target no targets file defines.
        ConfigError: a target or judge cannot be built or has no API key it needs, a resumed
            run cannot be found, or the results file cannot be written.
        StoreError: the run store or the cache cannot be opened or written.
    """
    reread_environment()  # keys set since the last run are secrets of this one
    run = _Run(options, version, events or RunEvents())
    store: RunStore | None = None
    try:
        if options.processes > 1:  # first: they import while the store opens and the suites load
            run.workers = ProcessTrials(options.processes, run.meter, run.note)
            await run.workers.start()
        if options.store is not False:
            store = RunStore(state_dir() / STORE_FILE if options.store is True else Path(options.store))
        run.store = store
        run.resolve()
        return await run.execute()
    finally:
        if run.workers is not None:
            await run.workers.aclose()
        if store is not None:
            store.close()


@dataclass
class _Prepared:
    """What a run needs once planned and prepared: its jobs on wrapped targets, judge,
    simulators, the judges checks name, trial runner, and the workspaces whose suite hooks ran."""

    jobs: list[Job]
    judge: JudgeChoice | None
    simulators: dict[str, Target]
    judges: dict[str, Target]
    trial_runner: TrialRunner | None
    workspaces: list[tuple[Workspace, Path]]


class _Run:
    """One run: `resolve` (a resumed or re-run run's options), `plan` (suites, targets, jobs),
    `prepare` (hooks, judge, simulators, cache, backend) and `execute` (the scheduler, with the
    recorder and the results file listening)."""

    def __init__(self, options: RunOptions, version: str, events: RunEvents):
        self.options, self.version, self.events = options, version, events
        self.store: RunStore | None = None
        self.record: RunRecord | None = None
        self.origin = RecordedOptions()  # a re-run of failed tests: where it came from, what it runs
        self.notes: list[str] = []
        self.meter = RunMeter(max_cost_usd=options.max_cost)
        self.workers: ProcessTrials | None = None  # `--processes N`: started before the store opens
        self.output: Path | None = None  # where the results file leads, taken before any hook runs

    def note(self, text: str) -> None:
        self.notes.append(text)
        self.events.note(text)

    def resolve(self) -> None:
        """The options of a re-run (`rerun_failed`) or a resumed run (`resume`), from the store."""
        options, store = self.options, self.store
        if options.resume is not None and options.rerun_failed is not None:
            raise ConfigError("give --resume or --rerun-failed, not both")
        if options.rerun_failed is not None:
            if store is None:
                raise ConfigError("rerun_failed needs the run store (store=False was given)")
            earlier = store.find_run(options.rerun_failed)
            if earlier is None:
                raise ConfigError(f"no run {options.rerun_failed!r} in {store.path}")
            outcomes = store.stored_outcomes(earlier.id).items()
            only = sorted({(k.suite, k.test_id) for k, outcome in outcomes if outcome.verdict != "pass"})
            if not only:
                raise NothingToRerun(f"run {earlier.id} has no test that did not pass: nothing to run again")
            self.note(f"running again the {len(only)} test(s) that did not pass in run {earlier.id}")
            self.origin = RecordedOptions(rerun_of=earlier.id, only=only)
            options = options.rerunning(earlier.id, earlier.options)
        if options.resume is not None:
            if store is None:
                raise ConfigError("resume needs the run store (store=False was given)")
            self.record = store.find_run(options.resume)
            if self.record is None:
                raise ConfigError(f"no run {options.resume!r} in {store.path}")
            blocker = store.claim_run(self.record.id, takeover=options.takeover)
            if blocker is not None:
                raise ConfigError(
                    f"run {self.record.id} is still running in {blocker.describe()}; wait for it to finish "
                    "(resuming now would send its prompts twice), or pass --takeover if that process is gone"
                )
            recorded = self.record.options
            options = options.resuming(self.record.id, recorded)
            self.origin = RecordedOptions(rerun_of=recorded.rerun_of, only=recorded.only)
        if options.paths is None:
            raise ConfigError("no eval files given")
        if options.output:
            check_output(options.output)
            self.output = resolve_output(options.output)
        self.options = options

    def select(self) -> list[Suite]:
        """The suites, with only the tests this run runs."""
        options = self.options
        assert options.paths is not None
        only = set(self.origin.only) if self.origin.only is not None else None
        suites = select_tests(
            load_suites(options.paths),
            test_ids=options.test_ids,
            tags=options.tags,
            limit=options.limit,
            shard=options.shard,
            note=self.note,
            keep=None if only is None else lambda suite, test: (suite_key(suite), test.id) in only,
        )
        if options.keep_workspaces:
            suites = [_keeping_workspaces(s) for s in suites]
        return suites

    def plan(self, pool: TargetPool, suites: list[Suite]) -> list[Job]:
        """The selected tests of every suite, as jobs on the targets they run against."""
        options = self.options
        jobs = []
        for suite in suites:
            targets = pool.targets_for(suite, options.target, self.note)
            names = [t.name for t in targets]
            if skipped := tests_on_no_target(suite, names):
                self.note(
                    f"{', '.join(skipped)}: the test's own execution.targets name none of {', '.join(names)}; not run"
                )
            for target in targets:
                own = tests_for_target(suite, target.name, names)
                config = pool.configs.get(target.name)  # AgentV files: AgentV's default system prompt
                own = with_default_system_prompt(own, config.provider if config else None)
                if any(t.transcript is None and t.transcripts is None for t in own.tests):  # a live test calls it
                    check_key(target, "target")
                if own.tests:
                    jobs.append(Job(target=target, suite=own, threshold=options.threshold, trials=options.trials))
        return jobs

    async def prepare(self, pool: TargetPool, suites: list[Suite], jobs: list[Job]) -> _Prepared:
        """Suite hooks (`before_all`), the judge, the simulators' models, the checks' own judges,
        the response cache and the backend; every target wrapped (cache, meter, limits)."""
        options = self.options
        workspaces, needs_judge, simulator_specs = _what_plans_need(jobs)
        judge = (
            pool.judge(options.judge, suites, self.note, fallback=jobs[0].target, rule=options.panel_rule)
            if needs_judge
            else None
        )
        simulators = {spec: pool.get(spec, "simulated_user.model") for spec in simulator_specs}
        named = sorted(set[str]().union(*(job.named_judges() for job in jobs)))
        judges = {spec: pool.get(spec, "a check's judge") for spec in named}
        if failed := await self.suite_hooks("before_all", workspaces, suites, pool):  # once every model is ready
            raise ConfigError(failed)
        if options.cache:
            pool.cache = ResponseCache(Path(options.cache_dir or state_dir()) / CACHE_FILE)
            if pool.cache.set_aside:
                self.note(
                    f"warning: the response cache was damaged; moved it to {pool.cache.set_aside} and started a new one"
                )
        trial_runner: TrialRunner | None = None
        backend = _backend(options, suites)
        if self.workers is not None:
            if backend == "ray":
                raise ConfigError(
                    f"--processes {options.processes} and the ray backend exclude each other (worker processes "
                    "of this machine, or Ray tasks): choose one"
                )
            roles = (
                [j.target for j in jobs] + [*simulators.values(), *judges.values()] + ([judge.target] if judge else [])
            )
            cache_name = str(pool.cache.path) if pool.cache is not None else None
            self.workers.configure(pool, cache_name, sandbox.chosen(), roles)
            trial_runner = self.workers
        elif backend == "ray":
            cache_file = pool.cache.path if pool.cache is not None else None
            trial_runner = RayTrials(
                pool.configs,
                cache_file,
                self.meter,
                options.ray_address,
                options.max_connections,
                sandbox_name=sandbox.chosen(),
            )
        for job in jobs:
            job.target = pool.wrap(job.target)
        simulators = {spec: pool.wrap(t) for spec, t in simulators.items()}
        judges = {spec: pool.wrap(t) for spec, t in judges.items()}
        return _Prepared(jobs, judge, simulators, judges, trial_runner, workspaces)

    async def suite_hooks(
        self,
        which: Literal["before_all", "after_all"],
        workspaces: list[tuple[Workspace, Path]],
        suites: list[Suite],
        pool: TargetPool,
    ) -> str | None:
        """`run_suite_hooks`, with what else of the eval folders they may not change: the files
        the targets run, the run store (with its journals), the cache's folder, the targets files
        and the results file once written (a forged result, a poisoned cache, a target of its own)."""
        if not any(getattr(spec.hooks, which) for spec, _ in workspaces):
            return None
        options, store = self.options, self.store
        files = [Path(options.cache_dir or state_dir()), *([options.targets_file] if options.targets_file else [])]
        files += [f for s in suites if (f := find_targets_file(s.base_dir))]
        files += [options.output] if options.output and options.output.exists() else []  # truncated when opened
        if store is not None:
            files += database_files(store.path)
        targets = [*pool.named.values(), *pool.configs.values()]
        return await run_suite_hooks(which, workspaces, suites, targets, files)

    async def execute(self) -> RunReport:
        options, store, meter = self.options, self.store, self.meter
        sandbox.choose(options.sandbox)  # the backend of every command the run's models and suites control
        suites = self.select()
        sandbox.hide_from_models(_run_files(options, suites, store))
        candidates = [
            f for s in suites if (f := find_targets_file(s.base_dir))
        ]  # targets.yaml, else .agentv/targets.yaml
        named = named_targets(candidates, options.targets_file)
        for suite in suites:  # AgentV main: providers an eval file declares itself
            named.update(suite.inline_targets)
        pool = TargetPool(named, meter=meter, max_connections=options.max_connections)
        pool.check_names(suites, options.target, options.judge)
        writer: ResultWriter | None = None
        try:
            ready = await self.prepare(pool, suites, self.plan(pool, suites))
            recorder = RunRecorder(store, ready.jobs, meter, self.record)
            rerun = frozenset({"execution_error", "simulator_error"} if options.retry_errors else ())
            recorded = options.record(list(pool.configs.values()), self.version)
            recorded = recorded.model_copy(update={"rerun_of": self.origin.rerun_of, "only": self.origin.only})
            run_id = recorder.begin(recorded, self.note, rerun)
            finished = self._summaries(ready.trial_runner, recorder)
            self.events.start(meter)
            if options.output and (store is None or options.output.suffix == ".jsonl"):
                # With a store, formats other than JSONL are written from it at the end (nothing buffered).
                writer = ResultWriter(options.output, resolved=self.output)
                for data in recorder.stored_json():
                    writer.write_json(data)
            try:
                with _run_heap():
                    kept = await run_jobs(
                        ready.jobs,
                        judge=pool.wrap(ready.judge.target) if ready.judge else None,
                        judge_repeats=options.judge_repeats or (ready.judge.repeats if ready.judge else 1),
                        judge_temperature=ready.judge.temperature if ready.judge else 0.0,
                        simulators=ready.simulators,
                        judges=ready.judges,
                        concurrency=options.concurrency or _workers(suites),
                        events=_Listeners(recorder, writer, self.events, finished),
                        may_start=meter.may_start,
                        keep_results=store is None,
                        trial_runner=ready.trial_runner,
                    )
            finally:
                if isinstance(ready.trial_runner, RayTrials):
                    if placement := ready.trial_runner.close():
                        self.note(placement)
                elif isinstance(ready.trial_runner, ProcessTrials):
                    if placement := ready.trial_runner.stop():  # they end while the report is written
                        self.note(placement)
                if failed := await self.suite_hooks("after_all", ready.workspaces, suites, pool):
                    self.note(f"warning: {failed}")
        finally:
            if writer:
                writer.close()
            await pool.aclose()
            if pool.cache is not None:
                pool.cache.close()
        report = self.report(recorder, run_id, kept)
        report.judge_panel = ready.judge is not None and len(ready.judge.specs) > 1
        if frozen_for_good():  # the command exits without freeing objects: what the run held is left to it
            _LEFT_TO_EXIT.append((ready, suites, pool, recorder))
        return report

    def _summaries(self, runner: TrialRunner | None, recorder: RunRecorder) -> dict[int, Finished] | None:
        """With worker processes, a store and more results than the recorder keeps, when the
        caller's events read summaries only: the workers finish each test of one trial (its
        stored JSON, its turns' rows) and the scheduler gets a summary. Returns what they
        finished, by id() of the summary (None: they send trials, as for any run)."""
        events = self.events
        if not isinstance(runner, ProcessTrials) or recorder.store is None or recorder.kept is not None:
            return None
        if type(events) is not RunEvents and not events.summaries_only:
            return None
        runner.summaries = True
        return runner.finished

    def report(self, recorder: RunRecorder, run_id: str | None, kept: list[EvaluationResult]) -> RunReport:
        meter, options = self.meter, self.options
        if meter.budget_exhausted:
            self.note(
                f"budget reached: ${meter.totals.spent_usd:.4f} spent of --max-cost ${options.max_cost:g}; "
                f"{meter.not_started} test(s) not started (execution_status budget_exhausted"
                + (f"; `convoeval run --resume {run_id}` runs them)" if run_id else ")")
            )
        if options.max_cost is not None and (unpriced := [k for k, t in meter.by_model.items() if t.unpriced]):
            self.note(
                f"--max-cost counts only calls with a known price: {meter.totals.unpriced} call(s) of "
                f"{', '.join(unpriced)} had none (set price_input_per_mtok / price_output_per_mtok)"
            )
        summary = meter.summary()
        output = str(options.output) if options.output else None
        if self.store is None:
            kept = [_redacted(r)[0] for r in kept]  # kept in memory: as safe as what a store holds
            summary["by_target"] = _totals_by_target(kept)
            return RunReport(results=kept, notes=self.notes, summary=summary, output=output)
        results, outcomes = recorder.finish(summary)
        if options.output and check_output_suffix(options.output) == ".jsonl":
            export_jsonl(options.output, results.iter_json_bytes(), resolved=self.output)
        elif options.output:
            export_results(options.output, results.iter_json(), resolved=self.output)
        return RunReport(
            results=results, notes=self.notes, run_id=run_id, summary=summary, output=output, outcomes=outcomes
        )


#: What finished runs held, left for the process's exit to drop (the `convoeval` command exits
#: without freeing objects one by one; freeing a 2,000-test run's took 10-20 ms after its end).
_LEFT_TO_EXIT: list[object] = []

#: Seconds between two collections while the calls run.
COLLECT_EVERY_S = 30.0


@contextmanager
def _run_heap() -> Iterator[None]:
    """The cyclic garbage collector run by the clock while a run's calls go on, then as it was.

    A run at high concurrency holds hundreds of thousands of live objects (a stack of
    coroutines for every conversation waiting for its call, the plans and histories of every
    conversation under way) and most of what a call allocates lives as long as its
    conversation. Python collects the young generation every 700 allocations, and each
    collection walks every young object alive, then the middle generation every ten of those:
    at 200 calls in flight, collections took 45% of the CPU of 20,000 calls
    (benchmarks/run.py, W-large), still 8% when paced every 50,000 allocations, and as much when
    paced every half second, since the survivors are walked whatever the pace. So while the
    calls run, the young and middle generations are collected every `COLLECT_EVERY_S` instead
    (objects are still freed at once by their reference count; only cyclic garbage waits, and a
    run makes little). What exists once the run is planned (suites, tests, plans, targets, the
    caller's objects) is frozen out of the collector's sight. Unfreezing after cannot tell
    objects apart, so when the caller had frozen objects of its own (the `convoeval` command
    does, once loaded), everything stays frozen as the caller chose.
    """
    enabled, frozen_before = gc.isenabled(), objects_frozen()
    gc.freeze()
    gc.disable()
    loop = asyncio.get_running_loop()
    timer: asyncio.TimerHandle | None = None

    def collect() -> None:
        nonlocal timer
        gc.collect(1)
        timer = loop.call_later(COLLECT_EVERY_S, collect)

    if enabled:  # a caller that turned the collector off keeps it off
        timer = loop.call_later(COLLECT_EVERY_S, collect)
    try:
        yield
    finally:
        if timer is not None:
            timer.cancel()
        if enabled:
            if frozen_for_good():  # the command ends soon: what the run leaves is frozen too, or
                gc.freeze()  # the collections after it walk it all (40 ms after W, 0.1 s after W-large)
            gc.enable()
        if not frozen_before:
            gc.unfreeze()


class _Listeners(RunEvents):
    """What hears the scheduler: the recorder, the results file, then the caller's events; a
    result reaches them with every known secret redacted."""

    def __init__(
        self,
        recorder: RunRecorder,
        writer: ResultWriter | None,
        events: RunEvents,
        finished: dict[int, Finished] | None = None,
    ):
        self.recorder, self.writer, self.events = recorder, writer, events
        self.finished = finished  # tests worker processes finished (`_Run._summaries`)
        self._suite_checks: dict[int, dict[str, object]] = {}  # by id() of the suite: a run holds its suites

    def turn(self, turn: GradedTurn) -> None:
        self.recorder.turn(turn)
        self.events.turn(turn)

    def trial(self, job: Job, position: int, trial: TrialResult) -> None:
        self.recorder.trial(job, position, trial)

    async def result(self, job: Job, position: int, result: EvaluationResult) -> None:
        if self.finished and (done := self.finished.pop(id(result), None)) is not None:
            await self._finished(job, position, done)
            return
        of_suite = self._suite_checks.get(id(job.suite))
        if of_suite is None:
            of_suite = self._suite_checks[id(job.suite)] = suite_checks(job.suite)
        result.checks = stored_checks(job.suite, job.suite.tests[position], of_suite)  # for `convoeval grade`
        result, data = _redacted(result)
        await self.recorder.save_result(job, position, result, data)
        if self.writer:
            self.writer.write_json(data)
        await self.events.result(job, position, result)

    async def _finished(self, job: Job, position: int, done: Finished) -> None:
        """A test a worker process finished: its turns' rows and its JSON stored as they came
        (redacted here), the caller's events told its summary (they read no more)."""
        recorder = self.recorder
        assert recorder.store is not None and recorder.run_id is not None
        recorder.meter.turns += len(done.turns)
        recorder.store.save_turn_rows(recorder.run_id, recorder.key_of(job, position)[0], done.trial, done.turns)
        result, data = done.summary, redact(done.data)
        if data != done.data:  # a secret to hide: the summary may hold it too
            result = EvaluationResult.model_validate_json(data)
        await recorder.save_result(job, position, result, data)
        if self.writer:
            self.writer.write_json(data)
        await self.events.result(job, position, result)


def _what_plans_need(jobs: list[Job]) -> tuple[list[tuple[Workspace, Path]], bool, list[str]]:
    """The workspaces, whether a judge is needed, and the simulators' models of every test (as
    its plan would say: the test's, else its suite's workspace, in the suite's folder). Tests are
    planned (each plan dropped once looked at: the scheduler plans a test again when it starts)
    only until one needs the judge; the plans of the rest could not change the answer."""
    workspaces: list[tuple[Workspace, Path]] = []
    needs_judge = False
    simulators: set[str] = set()
    for job in jobs:
        suite = job.suite
        for test in suite.tests:
            if not needs_judge:
                needs_judge = job.plan(test).needs_judge
            workspace = test.workspace or suite.workspace
            if workspace is not None:
                workspaces.append((workspace, suite.base_dir))
            if test.simulated_user and test.simulated_user.model:
                simulators.add(test.simulated_user.model)
    return workspaces, needs_judge, sorted(simulators)


def _run_files(options: RunOptions, suites: list[Suite], store: RunStore | None) -> list[Path]:
    """What no sandboxed command may see (`sandbox.hide_from_models`; the files the suites were
    read from and `.env` files are hidden as they are read): the eval files (their answers), the
    run store and cache with their journals (the state folder, each eval folder's `.convoeval`)
    and the results file, this run's and those the store's earlier runs wrote (their answers:
    an eval folder's `results.jsonl`)."""
    databases = [Path(options.cache_dir or state_dir()) / CACHE_FILE, *([store.path] if store is not None else [])]
    files = [s.path for s in suites if s.path] + [s.base_dir / ".convoeval" for s in suites]
    files += [file for db in databases for file in database_files(db)]
    files += store.result_files() if store is not None else []
    return [*files, state_dir(), *([options.output] if options.output else [])]


def _backend(options: RunOptions, suites: list[Suite]) -> str:
    """`--backend`, else the suites' `execution.backend`, else local."""
    configured = [s.execution.backend for s in suites if s.execution and s.execution.backend]
    return options.backend or (configured[0] if configured else "local")


def _keeping_workspaces(suite: Suite) -> Suite:
    """`suite` with every workspace, its own and its tests', kept after its trial (`--keep-workspaces`)."""

    def kept(workspace: Workspace | None) -> Workspace | None:
        return workspace.model_copy(update={"keep": "always"}) if workspace else None

    tests = [t.model_copy(update={"workspace": kept(t.workspace)}) if t.workspace else t for t in suite.tests]
    return suite.model_copy(update={"tests": tests, "workspace": kept(suite.workspace)})


def _redacted(result: EvaluationResult) -> tuple[EvaluationResult, str]:
    """The result and its JSON with every known secret replaced (a reply or a grader's output
    may echo a key)."""
    data = result.model_dump_json()
    if (safe := redact(data)) != data:
        return EvaluationResult.model_validate_json(safe), safe
    return result, data


def _workers(suites: list[Suite]) -> int:
    configured = [s.execution.workers for s in suites if s.execution and s.execution.workers]
    return max(configured) if configured else 8


def _totals_by_target(results: list[EvaluationResult]) -> dict[str, dict[str, float]]:
    totals: dict[str, dict[str, float]] = {}
    for r in results:
        t = totals.setdefault(r.target, {"tests": 0, "cost_usd": 0.0, "judge_cost_usd": 0.0, "tokens": 0})
        t["tests"] += 1
        t["cost_usd"] += r.cost_usd
        t["judge_cost_usd"] += r.judge_cost_usd
        t["tokens"] += r.token_usage.total_tokens + r.judge_token_usage.total_tokens
    return totals
