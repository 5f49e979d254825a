"""Run many tests: concurrency, trials, `depends_on`, one EvaluationResult per test and target."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass

from ..results import EvaluationResult, TrialResult, Usage, pass_at_k, pass_hat_k
from ..targets import Target
from ._conversation import TrialContext, run_trial
from ._plan import TestPlan

ResultCallback = Callable[[EvaluationResult], None]


@dataclass
class Job:
    """The tests of one suite against one target (dependencies resolve within a job)."""

    plans: list[TestPlan]
    target: Target


async def run_jobs(
    jobs: list[Job],
    *,
    judge: Target | None,
    judge_repeats: int = 1,
    concurrency: int = 8,
    on_result: ResultCallback | None = None,
) -> list[EvaluationResult]:
    """Run every test of every job; conversations run concurrently, turns in order."""
    slots = asyncio.Semaphore(max(1, concurrency))
    tasks: list[asyncio.Task[EvaluationResult]] = []
    for job in jobs:
        done: dict[str, asyncio.Future[EvaluationResult]] = {
            plan.id: asyncio.get_running_loop().create_future() for plan in job.plans
        }
        for plan in job.plans:
            tasks.append(asyncio.create_task(
                _run_test(plan, job.target, judge, judge_repeats, slots, done, on_result)
            ))
    return list(await asyncio.gather(*tasks))


async def _run_test(
    plan: TestPlan,
    target: Target,
    judge: Target | None,
    judge_repeats: int,
    slots: asyncio.Semaphore,
    done: dict[str, asyncio.Future[EvaluationResult]],
    on_result: ResultCallback | None,
) -> EvaluationResult:
    try:
        result = await _run_test_unguarded(plan, target, judge, judge_repeats, slots, done)
    except Exception as exc:  # never lose the rest of the run to one test
        result = _lone_result(plan, target, "error", "execution_error", f"{type(exc).__name__}: {exc}")
    done[plan.id].set_result(result)
    if on_result is not None:
        on_result(result)
    return result


async def _run_test_unguarded(
    plan: TestPlan,
    target: Target,
    judge: Target | None,
    judge_repeats: int,
    slots: asyncio.Semaphore,
    done: dict[str, asyncio.Future[EvaluationResult]],
) -> EvaluationResult:
    failed = []
    for dep in plan.test.depends_on:
        if (await asyncio.shield(done[dep])).verdict != "pass":
            failed.append(dep)
    if failed and plan.test.on_dependency_failure != "run":
        reason = f"dependency failed: {', '.join(failed)}"
        if plan.test.on_dependency_failure == "skip":
            return _lone_result(plan, target, "skip", "skipped", reason)
        return _lone_result(plan, target, "fail", "quality_failure", reason, score=0.0)

    async def one(trial: int) -> TrialResult:
        async with slots:
            return await run_trial(plan, TrialContext(target=target, judge=judge, trial=trial,
                                                      judge_repeats=judge_repeats))

    trials = list(await asyncio.gather(*(one(i) for i in range(plan.trials.count))))
    return combine_trials(plan, target.name, trials)


def combine_trials(plan: TestPlan, target: str, trials: list[TrialResult]) -> EvaluationResult:
    """The test's result from its trials: mean score, pass@k and pass^k."""
    first = trials[0]
    scores = [t.score for t in trials if t.score is not None]
    errored = [t for t in trials if t.execution_status == "execution_error"]
    if len(errored) == len(trials):
        score, verdict, status = None, "error", "execution_error"
    else:
        score = round(sum(scores) / len(scores), 6) if scores else None
        if plan.trials.strategy == "pass_at_k":
            passed = any(t.verdict == "pass" for t in trials)
        else:
            passed = score is not None and score >= plan.threshold
        verdict, status = ("pass", "ok") if passed else ("fail", "quality_failure")
    n, c = len(trials), sum(t.verdict == "pass" for t in trials)
    notes = list(dict.fromkeys(note for t in trials for note in t.notes))
    errors = [f"trial {t.trial}: {t.error}" if n > 1 else t.error for t in trials if t.error]
    return EvaluationResult(
        test_id=plan.id, target=target, suite=plan.suite_name, mode=plan.mode,
        score=score, verdict=verdict, execution_status=status,  # type: ignore[arg-type]
        threshold=plan.threshold, scores=first.scores, output=first.output, trials=trials,
        pass_at_k={str(k): round(pass_at_k(n, c, k), 6) for k in range(1, n + 1)},
        pass_hat_k={str(k): round(pass_hat_k(n, c, k), 6) for k in range(1, n + 1)},
        token_usage=sum((t.token_usage for t in trials), Usage()),
        judge_token_usage=sum((t.judge_token_usage for t in trials), Usage()),
        cost_usd=round(sum(t.cost_usd for t in trials), 8),
        judge_cost_usd=round(sum(t.judge_cost_usd for t in trials), 8),
        duration_ms=round(sum(t.duration_ms for t in trials), 3),
        error="; ".join(errors) or None,
        grader_errors=sum(t.grader_errors for t in trials),
        notes=notes, metadata=plan.metadata,
    )


def _lone_result(
    plan: TestPlan, target: Target, verdict: str, status: str, reason: str, score: float | None = None
) -> EvaluationResult:
    """A result for a test that did not run (skipped or failed dependency, internal error)."""
    return EvaluationResult(
        test_id=plan.id, target=target.name, suite=plan.suite_name, mode=plan.mode,
        score=score, verdict=verdict, execution_status=status,  # type: ignore[arg-type]
        threshold=plan.threshold, error=reason, metadata=plan.metadata,
    )
