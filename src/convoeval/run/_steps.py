"""A trial's features beyond its turns, as steps of one pipeline.

A trial runs: the turn source (a step may play the user side: `source`; each may wrap it:
`turns`) -> the turns ->
`after_turns` (each step) -> turn and conversation grading -> `entries` (the score entries
each step adds) -> the trial's result -> `adjust` (each step, in order, may change it).

The steps a test's trials run are chosen once, when the test is planned (`choose_steps`): a
new feature is one `TrialStep` subclass here plus one line there. A step object lives for one
trial (it may keep state between its hooks).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from ..results import Outcome, ScoreEntry, TrialResult
from ..spec import substitute
from ._grading import grade_fidelity
from ._plan import TestPlan
from ._scenario import apply_outcome, judge_scenario
from ._simulator import SimulatedTurns
from ._turns import TurnSource
from ._workspace import VerifiedTurns, file_changes

if TYPE_CHECKING:
    from ._conversation import Conversation, TrialContext


class TrialStep:
    """One feature of a trial (the protocol; every hook does nothing by default).

    Args:
        plan: the test's plan.
        ctx: this trial's context.
    """

    def __init__(self, plan: TestPlan, ctx: TrialContext):
        self.plan = plan
        self.ctx = ctx

    def source(self) -> TurnSource | None:
        """The user side of the trial when this step plays it (the first step's wins), else None."""
        return None

    def turns(self, source: TurnSource) -> TurnSource:
        """The trial's turn source, wrapped (hints, verify...); `source` itself by default."""
        return source

    def after_turns(self, convo: Conversation) -> None:
        """Called once the last turn was played, before the conversation is graded."""

    async def entries(self, convo: Conversation) -> list[ScoreEntry]:
        """Score entries the step adds after the turns' and the conversation's."""
        return []

    def adjust(self, result: TrialResult, convo: Conversation) -> None:
        """Change the trial's result in place (verdict, status, notes, accounting)."""


StepFactory = Callable[[TestPlan, "TrialContext"], TrialStep]


def choose_steps(plan: TestPlan) -> tuple[StepFactory, ...]:
    """The steps the test's trials run, in order: one line per feature."""
    chosen: list[StepFactory | None] = [
        ScenarioStep if plan.success or plan.failure else None,
        FidelityStep if plan.fidelity else None,
        VerifyStep if plan.verify is not None else None,
        SimulatedUserStep if plan.simulated_user is not None else None,
        BudgetStep,  # always: a target may stop its own turn on a limit of its own
        WorkspaceChangesStep if plan.workspace is not None else None,
    ]
    return tuple(step for step in chosen if step is not None)


class SimulatedUserStep(TrialStep):
    """A simulated user plays the user side; its stop reason, usage and failures (as
    `simulator_error`, never a failed test) go into the result."""

    def __init__(self, plan: TestPlan, ctx: TrialContext):
        super().__init__(plan, ctx)
        assert plan.simulated_user is not None
        self.simulated = SimulatedTurns(
            plan.turns,
            plan.simulated_user,
            ctx.simulator,
            plan.turn_assertions,
            trial=ctx.trial,
            may_continue=ctx.may_continue,
            domain=ctx.domain,
        )

        self.playing = ctx.turns is None  # a source given to the trial plays instead

    def source(self) -> TurnSource | None:
        return self.simulated if self.playing else None

    def after_turns(self, convo: Conversation) -> None:
        if self.playing:
            self.simulated.finish(convo)
            convo.stop_reason = convo.stop_reason or self.simulated.stop_reason
            # neither a broken simulation nor one the run's budget cut short (it runs again) is graded
            cut = self.simulated.stop_reason == "budget_exhausted"
            convo.gradable = convo.gradable and self.simulated.error is None and not cut

    def adjust(self, result: TrialResult, convo: Conversation) -> None:
        if self.playing:
            self.simulated.record(result, convo.stop_reason, convo.stop_note)


class ScenarioStep(TrialStep):
    """`success:` / `failure:` criteria judged on the whole transcript decide the outcome."""

    outcome: Outcome | None = None

    async def entries(self, convo: Conversation) -> list[ScoreEntry]:
        if not convo.gradable:
            return []
        variables, user = convo.variables, self.plan.simulated_user
        entry, self.outcome = await judge_scenario(
            [substitute(text, variables) for text in self.plan.success],
            [substitute(text, variables) for text in self.plan.failure],
            convo.transcript,
            self.ctx.judge,
            trial=self.ctx.trial,
            temperature=self.ctx.judge_temperature,
            objective=user.filled(variables).objective if user else None,
        )
        return [entry]

    def adjust(self, result: TrialResult, convo: Conversation) -> None:
        apply_outcome(result, self.outcome)


class FidelityStep(TrialStep):
    """simulator-fidelity checks judge the simulated user (their entry never counts in the score)."""

    async def entries(self, convo: Conversation) -> list[ScoreEntry]:
        return [await grade_fidelity(convo)] if convo.gradable else []


class VerifyStep(TrialStep):
    """`verify` runs after each turn (hints go between turns) and may end the conversation
    with success; a conversation that never verified fails the test (unless `required: false`)."""

    verified: VerifiedTurns | None = None

    def turns(self, source: TurnSource) -> TurnSource:
        assert self.plan.verify is not None
        workspace = self.plan.workspace
        self.verified = VerifiedTurns(
            source,
            self.plan.verify,
            Path(self.ctx.workdir or self.plan.base_dir),
            self.plan.hints,
            passed=workspace.env if workspace else [],
        )
        return self.verified

    async def entries(self, convo: Conversation) -> list[ScoreEntry]:
        if self.verified is None or convo.error is not None:
            return []
        await self.verified.check(convo)  # after the last turn, when a stop ended the conversation first
        if convo.error is not None:
            return []
        entry = self.verified.entry()
        if entry.verdict == "fail" and self.verified.verify.required:  # required: the test fails
            entry.failed_required = ["never verified"]
        return [entry]


class BudgetStep(TrialStep):
    """A budget hit (the test's `budget`, or a target's own limit) is `budget_exhausted`,
    loudly, never a silent completion."""

    def adjust(self, result: TrialResult, convo: Conversation) -> None:
        if convo.budget_hit is not None and result.execution_status != "execution_error":
            result.execution_status, result.verdict = "budget_exhausted", "fail"
            result.budget_hit = convo.budget_hit
            result.notes.append(f"budget exhausted: {convo.budget_hit}")


class WorkspaceChangesStep(TrialStep):
    """What the trial changed in its workspace: graders see it (`file_changes`), and so does
    the result."""

    def after_turns(self, convo: Conversation) -> None:
        if self.ctx.files_before is not None and self.ctx.workdir:
            convo.file_changes = file_changes(self.ctx.files_before, Path(self.ctx.workdir))

    def adjust(self, result: TrialResult, convo: Conversation) -> None:
        result.file_changes = convo.file_changes
