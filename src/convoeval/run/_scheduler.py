"""Run many tests: concurrency, trials, `depends_on`, one EvaluationResult per test and target.

Conversations run concurrently up to `concurrency` (turns of one conversation in order). Tests
are planned when they start and their results are handed to `on_result` and then dropped, so a
run of 10,000 conversations holds only the conversations in flight: at most a few times
`concurrency` tests are alive at once, started in dependency order.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field

from pydantic import PrivateAttr

from .._binomial import wilson_interval
from .._sandbox import describe as describe_sandbox
from ..results import (
    EvaluationResult,
    ExecutionStatus,
    Outcome,
    PassRate,
    TestKey,
    TrialResult,
    Usage,
    Verdict,
    VerdictStatus,
    decided_despite,
    meets,
    pass_at_k,
    pass_hat_k,
)
from ..spec import DEFAULT_THRESHOLD, Test
from ..targets import Target
from ._adaptive import adaptive_trials, apply_decision
from ._conversation import TrialContext, run_trial
from ._jobs import Job, JobEvents
from ._plan import TestPlan

BUDGET_NOTE = "not started: the --max-cost budget was reached"
_ERROR = VerdictStatus("error", "execution_error")

TrialRunner = Callable[[TestPlan, TrialContext], Awaitable[TrialResult]]


async def run_jobs(
    jobs: list[Job],
    *,
    judge: Target | None,
    judge_repeats: int = 1,
    judge_temperature: float = 0.0,
    simulators: Mapping[str, Target] | None = None,
    judges: Mapping[str, Target] | None = None,
    concurrency: int = 8,
    events: JobEvents | None = None,
    may_start: Callable[[], bool] | None = None,
    keep_results: bool = True,
    trial_runner: TrialRunner | None = None,
) -> list[EvaluationResult]:
    """Run every test of every job; conversations run concurrently, turns in order.

    Args:
        simulators: the models of simulated users, by the `simulated_user.model` spec that names
            them (a simulated user without a model uses the judge).
        judges: the models checks name as their own `judge`, by the name they give.
        events: told of each graded turn and of each result as its test finishes (a failure
            of `events.result` stops the run and is raised).
        may_start: asked before each trial starts; False leaves it out (`budget_exhausted`).
        keep_results: return the results (in job and test order); False returns [] and
            keeps nothing, for runs whose results go to a store.
        trial_runner: runs one trial (default `run_trial`, in this process; the Ray backend
            gives one that runs it as a Ray task).
    """
    runner = _Runner(
        judge,
        judge_repeats,
        judge_temperature,
        asyncio.Semaphore(max(1, concurrency)),
        events,
        may_start,
        dict(simulators or {}),
        dict(judges or {}),
        max(1, concurrency),
        trial_runner or run_trial,
    )
    return await _Schedule(runner, events, keep_results, concurrency).run(jobs)


class _Schedule:
    """Starts tests in dependency order, at most a few times `concurrency` alive at once."""

    def __init__(self, runner: _Runner, events: JobEvents | None, keep_results: bool, concurrency: int):
        self.runner, self.events, self.keep_results = runner, events, keep_results
        self.alive = asyncio.Semaphore(max(2 * concurrency, concurrency + 16))
        self.kept: dict[tuple[int, int], EvaluationResult] = {}
        self.failures: list[Exception] = []

    async def run(self, jobs: list[Job]) -> list[EvaluationResult]:
        running: set[asyncio.Task[None]] = set()
        loop = asyncio.get_running_loop()
        for number, job in enumerate(jobs):
            tests = job.suite.tests
            verdicts: dict[str, asyncio.Future[VerdictStatus]] = {t.id: loop.create_future() for t in tests}
            for test_id, outcome in job.stored.items():
                if test_id in verdicts:
                    verdicts[test_id].set_result(outcome)
            for position in dependency_order(tests):
                if tests[position].id in job.stored:
                    continue
                await self.alive.acquire()
                if self.failures:
                    self.alive.release()
                    break
                task = loop.create_task(self.run_one(number, job, position, verdicts))
                running.add(task)
                task.add_done_callback(running.discard)
            if self.failures:
                break
        if running:
            await asyncio.gather(*running)
        if self.failures:
            raise self.failures[0]
        return [self.kept[key] for key in sorted(self.kept)]

    async def run_one(
        self, number: int, job: Job, position: int, verdicts: dict[str, asyncio.Future[VerdictStatus]]
    ) -> None:
        test = job.suite.tests[position]
        try:
            result = await self.runner.run_test(job, position, verdicts)
            verdicts[test.id].set_result(result.verdict_status)
            if self.events is not None:
                await self.events.result(job, position, result)
            if self.keep_results:
                self.kept[(number, position)] = result
        except Exception as exc:  # the result could not be recorded: stop the run
            self.failures.append(exc)
            if not verdicts[test.id].done():
                verdicts[test.id].set_result(_ERROR)
        finally:
            self.alive.release()


def dependency_order(tests: list[Test]) -> list[int]:
    """Positions of `tests`, each after the tests it depends on (file order otherwise)."""
    index = {t.id: i for i, t in enumerate(tests)}
    state = [0] * len(tests)  # 0 not seen, 1 placing its dependencies, 2 placed
    order: list[int] = []
    for root in range(len(tests)):
        if state[root]:
            continue
        state[root] = 1
        stack = [(root, iter(tests[root].depends_on))]
        while stack:
            i, deps = stack[-1]
            for dep in deps:
                j = index.get(dep)
                if j is not None and state[j] == 0:  # a cycle (state 1) was rejected at load
                    state[j] = 1
                    stack.append((j, iter(tests[j].depends_on)))
                    break
            else:
                stack.pop()
                state[i] = 2
                order.append(i)
    return order


@dataclass
class _Runner:
    judge: Target | None
    judge_repeats: int
    judge_temperature: float
    slots: asyncio.Semaphore
    events: JobEvents | None
    may_start: Callable[[], bool] | None
    simulators: dict[str, Target] = field(default_factory=dict)
    judges: dict[str, Target] = field(default_factory=dict)
    concurrency: int = 8
    trial_runner: TrialRunner = run_trial

    async def run_test(
        self, job: Job, position: int, verdicts: dict[str, asyncio.Future[VerdictStatus]]
    ) -> EvaluationResult:
        test = job.suite.tests[position]
        try:
            plan = job.plan(test)
        except Exception as exc:
            return _unplanned_result(job, test, f"{type(exc).__name__}: {exc}")
        try:
            return await self._run_planned(job, position, plan, verdicts)
        except Exception as exc:  # never lose the rest of the run to one test
            return _not_run(plan, job.target, _ERROR, f"{type(exc).__name__}: {exc}")

    async def _run_planned(
        self, job: Job, position: int, plan: TestPlan, verdicts: dict[str, asyncio.Future[VerdictStatus]]
    ) -> EvaluationResult:
        if plan.test.skip is not None:
            return _not_run(plan, job.target, VerdictStatus("skip", "skipped"), plan.test.skip)
        failed, unstarted = [], []
        for dep in plan.test.depends_on:
            ended = await asyncio.shield(verdicts[dep])
            if ended.not_started:
                unstarted.append(dep)
            elif ended.verdict != "pass":
                failed.append(dep)
        if unstarted:
            note = job.budget_note() if job.over_budget() else BUDGET_NOTE
            return _not_run(
                plan,
                job.target,
                VerdictStatus("skip", "budget_exhausted"),
                f"{note} (dependency {', '.join(unstarted)} did not run)",
            )
        if failed and plan.test.on_dependency_failure != "run":
            reason = f"dependency failed: {', '.join(failed)}"
            if plan.test.on_dependency_failure == "skip":
                return _not_run(plan, job.target, VerdictStatus("skip", "skipped"), reason)
            return _not_run(plan, job.target, VerdictStatus("fail", "quality_failure"), reason, score=0.0)

        stored = job.stored_trials.pop(plan.test.id, {})  # a resumed run: the trials it finished
        # the suite's budget_usd, read by the test's first trial to get a slot (a test resumed has started)
        starts: bool | None = True if stored else None
        told = self.events is not None and (plan.trials.adaptive or plan.trials.count > 1)

        async def one(trial: int) -> TrialResult | None:
            nonlocal starts
            if trial in stored:
                return stored[trial]
            async with self.slots:
                if self.may_start is not None and not self.may_start():
                    return None
                if starts is None:
                    starts = not job.over_budget()
                if not starts:  # as AgentV: a test started runs all its trials, one not started none
                    return None
                outcome = await self.trial_runner(
                    plan.for_trial(trial),
                    TrialContext(
                        target=job.target,
                        judge=self.judge,
                        judges=self.judges,
                        trial=trial,
                        judge_repeats=self.judge_repeats,
                        judge_temperature=self.judge_temperature,
                        simulator=self._simulator_for(plan),
                        may_continue=self.may_start,
                        events=self.events,
                        job=job,
                        position=position,
                    ),
                )
            job.spent_usd += outcome.cost_usd
            if told and not outcome.verdict_status.not_started:  # a trial the run's budget cut is run again
                assert self.events is not None
                self.events.trial(job, position, outcome)
            return outcome

        limit = plan.trials.cost_limit_usd
        adaptive = None
        if plan.trials.adaptive:
            outcomes, adaptive = await adaptive_trials(one, plan, self.concurrency)
        elif limit is None:
            outcomes = await _lazily(one, plan.trials.count, self.concurrency)
        else:  # one trial after another, until the trials of this test have cost `limit`
            outcomes, spent = [], 0.0
            for i in range(plan.trials.count):
                if spent >= limit:
                    break
                outcome = await one(i)
                outcomes.append(outcome)
                spent += outcome.cost_usd + outcome.judge_cost_usd + outcome.simulator_cost_usd if outcome else 0.0
        trials = [t for t in outcomes if t is not None]
        if not trials:
            note = job.budget_note() if job.over_budget() else BUDGET_NOTE
            return _not_run(plan, job.target, VerdictStatus("skip", "budget_exhausted"), note)
        result = combine_trials(plan, job.target.name, trials)
        if adaptive is not None:
            result = apply_decision(result, adaptive, plan.threshold)
        elif len(outcomes) < plan.trials.count:
            result.notes.append(
                f"trials stopped after {len(outcomes)} of {plan.trials.count}: trials.cost_limit_usd ${limit:g} reached"
            )
        if len(trials) < len(outcomes):
            missing = len(outcomes) - len(trials)
            result.verdict, result.execution_status = "skip", "budget_exhausted"
            result.notes.append(f"{missing} of {len(outcomes)} trials {BUDGET_NOTE}")
        return result

    def _simulator_for(self, plan: TestPlan) -> Target | None:
        """The model playing the simulated user: its own `model`, else the judge."""
        if plan.simulated_user is None:
            return None
        model = plan.simulated_user.model
        return self.simulators.get(model) if model else self.judge


async def _lazily(
    one: Callable[[int], Awaitable[TrialResult | None]], count: int, width: int
) -> list[TrialResult | None]:
    """`[await one(i) for i in range(count)]`, `width` at a time: a trial is only created when
    a worker is free, so memory does not grow with the number of trials."""
    if count == 1 or width == 1:  # one at a time: no task to make, nothing to gather
        return [await one(i) for i in range(count)]
    outcomes: list[TrialResult | None] = [None] * count
    numbers = iter(range(count))

    async def worker() -> None:
        for i in numbers:
            outcomes[i] = await one(i)

    await asyncio.gather(*(worker() for _ in range(min(width, count))))
    return outcomes


#: Ties between trial outcomes go to the first of these: never to a pass.
_OUTCOME_ORDER: tuple[Outcome, ...] = ("failed", "conflict", "undecided", "passed")


def combined_outcome(trials: list[TrialResult]) -> Outcome | None:
    """The scenario outcome of a test from its trials' outcomes: the most common one (a tie goes
    to the worse one, so a split is never reported as passed); None without a scenario."""
    counts = Counter(t.outcome for t in trials if t.outcome)
    if not counts:
        return None
    return max(_OUTCOME_ORDER, key=lambda o: (counts[o], -_OUTCOME_ORDER.index(o)))


class CombinedTrial(TrialResult):
    """The one trial of a test, arriving with the test's result already combined from it (a
    worker process of `--processes` combined it): `combine_trials` hands that result back.
    Only its trial number, verdict, score, status and costs are set (what the scheduler reads)."""

    _combined: EvaluationResult | None = PrivateAttr(None)

    @classmethod
    def of(cls, result: EvaluationResult, trial: int) -> CombinedTrial:
        made = cls(  # validated: model_construct costs ten times as much (its defaults)
            trial=trial,
            score=result.score,
            verdict=result.verdict,
            execution_status=result.execution_status,
            cost_usd=result.cost_usd,
            judge_cost_usd=result.judge_cost_usd,
            simulator_cost_usd=result.simulator_cost_usd,
        )
        made._combined = result
        return made


def combine_trials(plan: TestPlan, target: str, trials: list[TrialResult]) -> EvaluationResult:
    """The test's result from its trials: mean score, pass@k and pass^k."""
    first = trials[0]
    if len(trials) == 1 and isinstance(first, CombinedTrial) and first._combined is not None:
        return first._combined
    scores = [t.score for t in trials if t.score is not None]
    errored = [t for t in trials if t.execution_status in ("execution_error", "simulator_error")]
    undecided = [t for t in trials if t.execution_status == "undecided"]
    score: float | None
    verdict: Verdict
    status: ExecutionStatus
    if len(errored) == len(trials):
        score, verdict = None, "error"
        status = (
            "simulator_error" if all(t.execution_status == "simulator_error" for t in trials) else "execution_error"
        )
    elif len(errored) + len(undecided) == len(trials):  # no trial decided: never a pass or a fail
        score, verdict, status = None, "error", "undecided"
    else:
        score = round(sum(scores) / len(scores), 6) if scores else None
        passed = _passed(plan, trials, scores, unknown=len(errored) + len(undecided))
        if passed is None:  # the trials that could not decide might have changed the verdict
            score, verdict, status = None, "error", "execution_error" if errored else "undecided"
        else:
            verdict, status = ("pass", "ok") if passed else ("fail", "quality_failure")
    hit = next((t.budget_hit for t in trials if t.budget_hit), None)
    if hit is not None and status in ("ok", "quality_failure"):  # a budget was hit: never "completed"
        verdict, status = "fail", "budget_exhausted"
    if any(t.verdict_status.not_started for t in trials):  # the run's budget cut a conversation short
        verdict, status = "skip", "budget_exhausted"
    n, c = len(trials), sum(t.verdict == "pass" for t in trials)
    notes = list(dict.fromkeys(note for t in trials for note in t.notes))
    outcomes = Counter(t.outcome for t in trials if t.outcome)
    if len(outcomes) > 1:
        notes.append("scenario outcomes differ across trials: " + ", ".join(f"{o} {c}" for o, c in outcomes.items()))
    errors = [f"trial {t.trial}: {t.error}" if n > 1 else t.error for t in trials if t.error]
    failed_required = [f"trial {t.trial}: {check}" if n > 1 else check for t in trials for check in t.failed_required]
    return EvaluationResult(
        test_id=plan.id,
        target=target,
        suite=plan.suite_name,
        mode=plan.mode,
        score=score,
        verdict=verdict,
        execution_status=status,
        threshold=plan.threshold,
        scores=first.scores,
        output=first.output,
        trials=trials,
        pass_at_k={str(k): round(pass_at_k(n, c, k), 6) for k in range(1, n + 1)},
        pass_hat_k={str(k): round(pass_hat_k(n, c, k), 6) for k in range(1, n + 1)},
        pass_rate=_pass_rate(trials),
        token_usage=Usage.total(t.token_usage for t in trials),
        judge_token_usage=Usage.total(t.judge_token_usage for t in trials),
        cost_usd=round(sum(t.cost_usd for t in trials), 8),
        judge_cost_usd=round(sum(t.judge_cost_usd for t in trials), 8),
        simulator_token_usage=Usage.total(t.simulator_token_usage for t in trials),
        simulator_cost_usd=round(sum(t.simulator_cost_usd for t in trials), 8),
        stop_reason=first.stop_reason,
        outcome=combined_outcome(trials),
        duration_ms=round(sum(t.duration_ms for t in trials), 3),
        error="; ".join(errors) or None,
        grader_errors=sum(t.grader_errors for t in trials),
        notes=notes,
        failed_required=failed_required,
        metadata=plan.metadata,
        budget_hit=hit,
        provider=first.provider,
        session=first.session,
        fallback=first.fallback,
        sandbox=describe_sandbox(),
    )


def _passed(plan: TestPlan, trials: list[TrialResult], scores: list[float], unknown: int) -> bool | None:
    """Whether the test passes, None when the `unknown` trials (that could not decide) could
    make it pass or fail: a pass@k test passes with one passing trial; a mean passes when even
    unknown trials scoring 0 would leave it above the threshold, fails when even their scoring 1
    would leave it below; a test none of whose trials passed fails (a trial that failed a
    required check scores 0, which meets a threshold of 0)."""
    if plan.trials.strategy == "pass_at_k":
        return True if any(t.verdict == "pass" for t in trials) else None if unknown else False
    if not scores:  # nothing graded in any trial: each passed by running
        return None if unknown else all(t.verdict == "pass" for t in trials)
    if not unknown and all(t.verdict == "fail" for t in trials):  # a failed required check at threshold 0
        return False
    count, total = len(scores) + unknown, sum(scores)
    return decided_despite(total / count, (total + unknown) / count, lambda s: meets(s, plan.threshold))


def _pass_rate(trials: list[TrialResult]) -> PassRate | None:
    """The trials' pass rate with its Wilson interval (errors and skips left out), with trials."""
    decided = [t.verdict == "pass" for t in trials if t.verdict in ("pass", "fail")]
    bounds = wilson_interval(sum(decided), len(decided))
    if len(trials) < 2 or bounds is None:
        return None
    value = sum(decided) / len(decided)
    return PassRate(
        passes=sum(decided),
        trials=len(decided),
        value=round(value, 6),
        low=round(bounds[0], 6),
        high=round(bounds[1], 6),
    )


def _not_run(
    plan: TestPlan, target: Target, outcome: VerdictStatus, reason: str, score: float | None = None
) -> EvaluationResult:
    """A result for a test that did not run (skipped or failed dependency, budget, internal error)."""
    key = TestKey(test_id=plan.id, target=target.name, suite=plan.suite_name, mode=plan.mode)
    return EvaluationResult.not_run(key, plan.threshold, outcome, reason, score=score, metadata=plan.metadata)


def _unplanned_result(job: Job, test: Test, reason: str) -> EvaluationResult:
    """A result for a test that could not even be planned (a bug; the run goes on)."""
    key = TestKey(
        test_id=test.id,
        target=job.target.name,
        suite=job.suite.display_name,
        mode="conversation" if test.is_conversation else "single",
    )
    return EvaluationResult.not_run(key, job.threshold or DEFAULT_THRESHOLD, _ERROR, reason, metadata=test.metadata)
