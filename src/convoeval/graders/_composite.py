"""`composite`: nested assertions graded concurrently and combined into one score (how: see
`Aggregator` in `_aggregators`)."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Literal

from pydantic import Field, SerializeAsAny, field_validator

from ..results import AssertionOutcome, Usage, meets
from ._aggregators import Aggregator
from ._base import Assertion, Grade, GradeContext, GraderError, assertion_type, lookup_assertion_type
from ._code import OutputTransform
from ._llm import Rubrics, weighted_mean


@assertion_type
class Composite(Assertion):
    """Nested assertions graded concurrently and combined into one score.

    `weighted_average` (default): the weighted mean of the nested scores (weights from
    `aggregator.weights` by name, else each assertion's `weight`). `threshold`: the weighted
    fraction of nested assertions that passed; the composite passes when that fraction reaches
    `threshold` (1.0 = all must pass). AgentV's `code_judge` (`path`: a program) and
    `llm_judge` (`prompt`: the judge) decide from the nested results (see `_aggregators`).
    Nested errors are left out; a failed `required` nested assertion makes the score 0.
    With `transform` (a program, see `OutputTransform`) the nested assertions grade what it
    makes of the output (promptfoo's `transform`); if it fails, the composite is an error.

    Example:
        - type: composite
          aggregator: {type: threshold, threshold: 1.0}
          assertions:
            - {type: contains, value: Paris}
            - Says that Paris is the capital
    """

    type: Literal["composite"]
    assertions: list[SerializeAsAny[Assertion]] = Field(min_length=1)
    aggregator: Aggregator = Field(default_factory=Aggregator)
    threshold: float | None = Field(None, ge=0, le=1, description="Pass mark of `threshold` aggregation.")
    transform: OutputTransform | None = Field(
        None,
        description="A program whose stdout is the output the nested assertions grade (it reads what a code-grader reads).",
    )

    @field_validator("aggregator", mode="before")
    @classmethod
    def _aggregator_name(cls, value: object) -> object:
        return {"type": value} if isinstance(value, str) else value

    @field_validator("assertions", mode="before")
    @classmethod
    def _parse_nested(cls, value: object) -> object:
        """Nested dicts and strings (from Python) become assertions; the YAML loader passes
        already-built ones."""
        if not isinstance(value, list):
            return value
        parsed: list[object] = []
        strings = [v for v in value if isinstance(v, str)]
        for item in value:
            if isinstance(item, str):
                if item is strings[0]:
                    parsed.append(Rubrics.model_validate({"type": "rubrics", "criteria": strings}))
            elif isinstance(item, dict) and isinstance(item.get("type"), str):
                cls_ = lookup_assertion_type(item["type"])
                if cls_ is None:
                    raise ValueError(f"unknown assertion type {item['type']!r}")
                parsed.append(cls_.model_validate(item))
            else:
                parsed.append(item)
        return parsed

    @property
    def uses_judge(self) -> bool:  # type: ignore[override]
        return self.aggregator.type == "llm_judge" or any(a.uses_judge for a in self.assertions)

    @property
    def named_judges(self) -> frozenset[str]:
        return frozenset().union(*(a.named_judges for a in self.assertions))

    async def grade(self, ctx: GradeContext) -> Grade:
        if self.transform is not None:
            ctx = replace(ctx, output=await self.transform.apply(ctx))
        scores = list(await asyncio.gather(*(a.evaluate(ctx) for a in self.assertions)))
        usage = Usage.total(s.judge_usage for s in scores if s.judge_usage is not None)
        cost = sum(s.judge_cost_usd for s in scores)
        calls = sum(s.judge_calls for s in scores)
        reasks = sum(s.judge_reasks for s in scores)
        outcomes: list[AssertionOutcome] = []
        for child in scores:
            outcomes.extend(
                AssertionOutcome(text=f"[{child.name}] {o.text}", passed=o.passed, evidence=o.evidence)
                for o in child.assertions
            )
        decided = [s for s in scores if s.verdict != "error" and s.score is not None]
        errors = {s.name: s.error for s in scores if s.verdict == "error"}
        if not decided:
            raise GraderError(
                "every nested assertion failed: " + "; ".join(f"{name}: {error}" for name, error in errors.items()),
                judge_usage=usage,
                judge_cost_usd=cost,
                judge_calls=calls,
                judge_reasks=reasks,
            )
        passed: bool | None = None
        if self.aggregator.decides:  # a program or the judge decides from every nested result
            decision = await self.aggregator.decide(scores, ctx)
            score, passed = decision.score, decision.passed
            outcomes = [*decision.assertions, *outcomes]
            usage += decision.judge_usage
            cost += decision.judge_cost_usd
            calls += decision.judge_calls
            reasks += decision.judge_reasks
        else:
            weights = [self.aggregator.weights.get(s.name, s.weight) for s in decided]
            if self.aggregator.type == "threshold":
                values = [1.0 if s.verdict == "pass" else 0.0 for s in decided]
            else:
                values = [s.score for s in decided if s.score is not None]  # all of them: decided
            score = weighted_mean(values, weights)
            threshold = self.aggregator.threshold if self.aggregator.threshold is not None else self.threshold
            if self.aggregator.type == "threshold" and threshold is not None:
                passed = meets(score, threshold)
        failed_required = [s.name for s in decided if s.required and s.verdict == "fail"]
        if failed_required:
            score, passed = 0.0, False
        details: dict[str, object] = {
            "aggregator": self.aggregator.type,
            "scores": [s.model_dump(exclude_none=True) for s in scores],
        }
        if errors:
            details["errors"] = errors
        return Grade(
            score=score,
            assertions=outcomes,
            details=details,
            failed_required=failed_required,
            judge_usage=usage,
            judge_cost_usd=cost,
            judge_calls=calls,
            judge_reasks=reasks,
            passed=passed,
        )
