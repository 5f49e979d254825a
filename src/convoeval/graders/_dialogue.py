"""Dialogue-quality assertions judged by an LLM.

Turn level, TD-Eval (1-5 Likert with a justification, normalised (s-1)/4):
    conversation-cohesion, backend-consistency, policy-compliance, and td-eval (all three in
    one judge call). Inputs: the dialogue history, the user query, the turn's backend result
    (`context` / `db_result` of the turn) and the domain `policy` of the test or suite.

Conversation level (0-10, normalised /10; the judge cites the turns involved):
    knowledge-retention, role-adherence, self-coherence, instruction-retention,
    versioned-editing (MultiChallenge's categories), goal-completion (the test's `criteria`
    or `goal` is the goal).

Example (YAML):
    turns:
      - input: A cheap Italian place in the centre, please.
        context: {count: 2, matches: [...]}
        assertions:
          - type: td-eval
    assertions:                       # conversation level
      - type: knowledge-retention
      - type: goal-completion
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field, field_validator

from ..judging import (
    DIMENSIONS,
    METRICS,
    GradingLevel,
    cited_turns,
    metric_messages,
    metric_parser,
    metric_schema,
    normalise,
    repeat_summary,
    tdeval_messages,
    tdeval_parser,
    tdeval_schema,
    turn_count,
    values_by_key,
)
from ..results import AssertionOutcome, DimensionScore, meets
from ._base import Grade, GradeContext, JudgedAssertion, assertion_type
from ._llm import judge_session, pass_mark

# -- TD-Eval turn dimensions ------------------------------------------------------------


class _TurnDimensions(JudgedAssertion):
    """Rates the reply on TD-Eval dimensions in one judge call; the score is their mean."""

    levels: ClassVar[tuple[GradingLevel, ...]] = ("turn",)
    KEYS: ClassVar[tuple[str, ...]] = ()

    def dimension_keys(self) -> list[str]:
        return list(self.KEYS)

    async def grade(self, ctx: GradeContext) -> Grade:
        assert ctx.judge is not None
        keys = self.dimension_keys()
        messages = tdeval_messages(
            keys,
            history=list(ctx.history),
            response=ctx.output,
            backend=ctx.context,
            policy=ctx.policy,
        )
        session = judge_session(ctx)
        answers = await session.ask_repeated(
            messages, tdeval_schema(keys), tdeval_parser(keys), repeats=ctx.judge_repeats, name="td_eval"
        )
        runs = [values_by_key(a) for a in answers.values]
        mark = pass_mark(self, ctx)
        outcomes: list[AssertionOutcome] = []
        details: dict[str, object] = {"scale": "1-5, normalised (s-1)/4"}
        dimensions: dict[str, DimensionScore] = {}
        norms: list[float] = []
        for key in keys:
            likert = [run[key].score for run in runs]
            norm = sum(normalise(s) for s in likert) / len(likert)
            norms.append(norm)
            justification = runs[0][key].reasoning
            shown = (
                f"{likert[0]}/5"
                if len(likert) == 1
                else f"{sum(likert) / len(likert):.2f}/5 over {len(likert)} repeats"
            )
            outcomes.append(
                AssertionOutcome(
                    text=f"{DIMENSIONS[key].title}: {shown}",
                    passed=meets(norm, mark),
                    evidence=justification,
                )
            )
            dimensions[key] = DimensionScore(
                likert=likert[0] if len(likert) == 1 else likert, justification=justification, score=round(norm, 6)
            )
        details["backend_result"] = ctx.context is not None
        details["policy"] = ctx.policy is not None
        score = sum(norms) / len(norms)
        if answers.count > 1:
            per_run = [sum(normalise(run[k].score) for k in keys) / len(keys) for run in runs]
            details.update(repeat_summary(per_run))
        if answers.errors:
            details["repeat_errors"] = answers.errors
        return Grade.judged(session, score, outcomes, details, dimensions=dimensions)


@assertion_type
class ConversationCohesion(_TurnDimensions):
    """TD-Eval conversation cohesion: relevant to the query, coherent with the history (1-5)."""

    type: Literal["conversation-cohesion"]
    KEYS: ClassVar[tuple[str, ...]] = ("conversation_cohesion",)


@assertion_type
class BackendConsistency(_TurnDimensions):
    """TD-Eval backend knowledge consistency: agrees with the turn's backend result (1-5).

    Without a backend result for the turn, the reply must not claim facts only a database
    could supply."""

    type: Literal["backend-consistency"]
    KEYS: ClassVar[tuple[str, ...]] = ("backend_consistency",)


@assertion_type
class PolicyCompliance(_TurnDimensions):
    """TD-Eval policy compliance: follows the domain policy (slots before booking...) (1-5)."""

    type: Literal["policy-compliance"]
    KEYS: ClassVar[tuple[str, ...]] = ("policy_compliance",)


@assertion_type
class TDEval(_TurnDimensions):
    """All TD-Eval turn dimensions (or those in `dimensions`) in one judge call; the score is
    their mean."""

    type: Literal["td-eval"]
    dimensions: list[str] | None = Field(
        None, description="Subset of conversation_cohesion, backend_consistency, policy_compliance."
    )

    @field_validator("dimensions")
    @classmethod
    def _check_dimensions(cls, value: list[str] | None) -> list[str] | None:
        if value is None:
            return None
        keys = [v.strip().replace("-", "_") for v in value]
        unknown = [v for v, k in zip(value, keys, strict=True) if k not in DIMENSIONS]
        if unknown:
            raise ValueError(f"unknown dimension(s) {', '.join(map(repr, unknown))} (known: {', '.join(DIMENSIONS)})")
        if not keys:
            raise ValueError("name at least one dimension")
        return list(dict.fromkeys(keys))

    def dimension_keys(self) -> list[str]:
        return list(self.dimensions or DIMENSIONS)


# -- conversation-level metrics ---------------------------------------------------------


class _ConversationMetric(JudgedAssertion):
    """A judge scores the whole transcript 0-10 on one metric and cites the turns involved."""

    levels: ClassVar[tuple[GradingLevel, ...]] = ("conversation",)
    METRIC: ClassVar[str] = ""

    guidance: str | None = Field(None, description="Extra instructions for the judge.")

    def goal_for(self, ctx: GradeContext) -> str | None:
        return None

    def extra_guidance(self) -> str | None:
        return self.guidance

    async def grade(self, ctx: GradeContext) -> Grade:
        assert ctx.judge is not None
        metric = METRICS[self.METRIC]
        transcript = list(ctx.transcript or ctx.history)
        messages = metric_messages(metric, transcript, goal=self.goal_for(ctx), guidance=self.extra_guidance())
        session = judge_session(ctx)
        answers = await session.ask_repeated(
            messages, metric_schema(), metric_parser(), repeats=ctx.judge_repeats, name=metric.name.replace("-", "_")
        )
        raw = [a.score for a in answers.values]
        score = sum(raw) / len(raw) / 10
        first = answers.values[0]
        turns = cited_turns(first.reasoning, turn_count(transcript) or None)
        evidence = f"{first.score}/10: {first.reasoning}"
        if len(raw) > 1:
            evidence += f" [scores over {len(raw)} repeats: {', '.join(map(str, raw))}]"
        details: dict[str, object] = {"judge_score": raw[0] if len(raw) == 1 else raw, "scale": "0-10", "turns": turns}
        goal = self.goal_for(ctx)
        if goal:
            details["goal"] = goal
        if answers.count > 1:
            details.update(repeat_summary([r / 10 for r in raw]))
        if answers.errors:
            details["repeat_errors"] = answers.errors
        outcome = AssertionOutcome(text=metric.outcome, passed=meets(score, pass_mark(self, ctx)), evidence=evidence)
        return Grade.judged(session, score, [outcome], details)


@assertion_type
class KnowledgeRetention(_ConversationMetric):
    """Remembers and uses what the user said in earlier turns."""

    type: Literal["knowledge-retention"]
    METRIC: ClassVar[str] = "knowledge-retention"


@assertion_type
class RoleAdherence(_ConversationMetric):
    """Stays in the role set by the system message (or `role`) in every turn."""

    type: Literal["role-adherence"]
    METRIC: ClassVar[str] = "role-adherence"
    role: str | None = Field(None, description="The assigned role (default: the system message).")

    def extra_guidance(self) -> str | None:
        parts = [f"The assistant's assigned role: {self.role.strip()}" if self.role else None, self.guidance]
        return "\n".join(p for p in parts if p) or None


@assertion_type
class SelfCoherence(_ConversationMetric):
    """Never contradicts its own earlier statements."""

    type: Literal["self-coherence"]
    METRIC: ClassVar[str] = "self-coherence"


@assertion_type
class InstructionRetention(_ConversationMetric):
    """Keeps following instructions the user gave in earlier turns."""

    type: Literal["instruction-retention"]
    METRIC: ClassVar[str] = "instruction-retention"


@assertion_type
class VersionedEditing(_ConversationMetric):
    """Revises (or reverts to) the right version of earlier work when asked."""

    type: Literal["versioned-editing"]
    METRIC: ClassVar[str] = "versioned-editing"


@assertion_type
class GoalCompletion(_ConversationMetric):
    """The conversation achieves the user's goal: `goal`, else the test's `criteria`, else
    what the user asked for."""

    type: Literal["goal-completion"]
    METRIC: ClassVar[str] = "goal-completion"
    goal: str | None = Field(None, description="The goal (default: the test's criteria).")

    def goal_for(self, ctx: GradeContext) -> str | None:
        return self.goal or ctx.criteria
