"""`simulator-fidelity`: did the simulated user stay in its role? (one judge call)

It judges the simulator, not the target: the loop reports it as its own score entry
(`type: simulator`) that never counts in the test's score, and a failed check makes the
trial a `simulator_error`. Add it to a test's conversation `assertions:` or set
`simulated_user.check_fidelity: true`.

Example (YAML):
    simulated_user: {persona: ..., objective: ..., max_turns: 6}
    assertions:
      - type: simulator-fidelity
"""

from __future__ import annotations

from typing import ClassVar, Literal

from ..judging import FidelityAnswer, GradingLevel, PanelRule, fidelity_messages, fidelity_schema
from ..results import AssertionOutcome
from ._base import Grade, GradeContext, GraderError, JudgedAssertion, assertion_type
from ._llm import judge_session


@assertion_type
class SimulatorFidelity(JudgedAssertion):
    """Passes when the judge finds that the simulated user stayed in role all along."""

    type: Literal["simulator-fidelity"] = "simulator-fidelity"
    levels: ClassVar[tuple[GradingLevel, ...]] = ("conversation",)

    @property
    def panel_default(self) -> PanelRule:
        """In role or not: a pass/fail check (majority vote)."""
        return "majority"

    async def grade(self, ctx: GradeContext) -> Grade:
        persona = ctx.simulated_user
        if persona is None:
            raise GraderError("simulator-fidelity needs a test with `simulated_user:`")
        session = judge_session(ctx)
        answer: FidelityAnswer = await session.ask(
            fidelity_messages(persona, ctx.transcript), fidelity_schema(), FidelityAnswer, name="simulator_fidelity"
        )
        outcome = AssertionOutcome(
            text="the simulated user stayed in role", passed=answer.in_role, evidence=answer.reasoning
        )
        return Grade.judged(session, 1.0 if answer.in_role else 0.0, [outcome], passed=answer.in_role)
