"""What the scheduler runs (`Job`: a suite's tests on one target) and what it tells as it runs
(`JobEvents`: each graded turn, each test's result)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Protocol

from ..results import EvaluationResult, ScoreEntry, TrialResult, VerdictStatus
from ..spec import Suite, Test
from ..targets import ChatReply, Target
from ._plan import TestPlan
from ._planner import plan_test


@dataclass
class Job:
    """The tests of one suite against one target (dependencies resolve within a job).

    Args:
        target: the system under test.
        suite: the suite whose tests run (planned one by one as they start).
        threshold, trials: the run's overrides (see `plan_test`).
        stored: tests that already have a result (a resumed run): test id -> its verdict and
            status. They are not run again; their dependents see that outcome.
        stored_trials: the finished trials of tests that have no result yet (a resumed run):
            test id -> trial number -> trial. Only the test's other trials run.
        spent_usd: the target's cost of the tests finished so far (the suite's `budget_usd`).
    """

    target: Target
    suite: Suite
    threshold: float | None = None
    trials: int | Literal["auto"] | None = None
    stored: dict[str, VerdictStatus] = field(default_factory=dict)
    stored_trials: dict[str, dict[int, TrialResult]] = field(default_factory=dict)
    spent_usd: float = 0.0

    def plan(self, test: Test) -> TestPlan:
        return plan_test(self.suite, test, threshold=self.threshold, trials=self.trials)

    def named_judges(self) -> set[str]:
        """The models the checks of this job's tests name as their own `judge`."""
        suite, names = self.suite, set[str]()
        for assertions in (suite.assertions, suite.turn_assertions):
            names.update(*(a.named_judges for a in assertions))
        for test in suite.tests:
            for assertions in (test.assertions, test.turn_assertions, *(t.assertions for t in test.turns or ())):
                names.update(*(a.named_judges for a in assertions))
        return names

    def over_budget(self) -> bool:
        """Whether the suite's `budget_usd` is spent: its tests not started yet are left out."""
        execution = self.suite.execution
        return execution is not None and execution.budget_usd is not None and self.spent_usd >= execution.budget_usd

    def budget_note(self) -> str:
        assert self.suite.execution is not None and self.suite.execution.budget_usd is not None
        return (
            f"not started: the suite's budget_usd ${self.suite.execution.budget_usd:g} was reached "
            f"(${self.spent_usd:.4f} spent on {self.target.name})"
        )


@dataclass(slots=True)
class GradedTurn:
    """A turn once graded: of the test at `position` of `job.suite.tests`, in trial `trial`.

    Made for every turn, so a plain slotted dataclass (a frozen one took four times as long to
    make; it could not be hashed either, its job and entry being mutable)."""

    job: Job
    position: int
    trial: int
    number: int
    entry: ScoreEntry
    reply: ChatReply


class JobEvents(Protocol):
    """What the scheduler tells as it runs (`convoeval.engine.RunEvents` is one)."""

    def turn(self, turn: GradedTurn) -> None:
        """A turn was graded."""

    def trial(self, job: Job, position: int, trial: TrialResult) -> None:
        """A trial of a test of several trials finished (a resumed run reuses it)."""

    async def result(self, job: Job, position: int, result: EvaluationResult) -> None:
        """A test finished (all its trials); raising stops the run."""
