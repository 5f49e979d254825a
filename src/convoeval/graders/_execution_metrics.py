"""`execution-metrics` (AgentV's `execution_metrics`): declarative limits on what a reply or a
conversation took: tool calls, model calls, tokens, cost, duration, and the share of read-only
("exploration") tool calls.

As in AgentV, only the limits given are checked and the score is the share that hold
(`hits / (hits + misses)`); an exploration ratio with no tool calls at all is a miss. What was
not measured (no token usage, no cost, a cached reply without latency) cannot be checked: an error, as
in the other budget graders (`latency`, `token-usage`, `cost`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from pydantic import Field, model_validator

from ..results import AssertionOutcome, Usage
from ._base import Assertion, Grade, GradeContext, GraderError, assertion_type
from ._budgets import MISSING_COST_TEXT, MissingCost, as_number, known_cost, measured, reply_latency
from ._tools import calls_in

#: Tool names AgentV counts as exploration (read-only) calls by default.
EXPLORATION_TOOLS = ("read", "grep", "glob", "search", "list", "Read", "Grep", "Glob", "WebSearch", "WebFetch")

_LIMITS = ("max_tool_calls", "max_llm_calls", "max_tokens", "max_cost_usd", "max_duration_ms")


@assertion_type
class ExecutionMetrics(Assertion):
    """What the reply (turn level) or the conversation took stays within the limits given.

    Example: `{type: execution_metrics, max_tool_calls: 10, max_tokens: 2000, max_duration_ms: 10000}`
    """

    type: Literal["execution-metrics"]
    max_tool_calls: int | None = Field(None, ge=0, description="Maximum number of tool calls.")
    max_llm_calls: int | None = Field(None, ge=0, description="Maximum number of target replies (one per turn).")
    max_tokens: int | None = Field(None, ge=0, description="Maximum input + output tokens.")
    max_cost_usd: float | None = Field(None, ge=0, description="Maximum cost in US dollars.")
    max_duration_ms: float | None = Field(None, ge=0, description="Maximum duration in milliseconds.")
    missing_cost: MissingCost = Field(
        "error", description="No cost known for `max_cost_usd`: an error (default), or `fail` (AgentV)."
    )
    target_exploration_ratio: float | None = Field(
        None, ge=0, le=1, description="Wanted share of read-only tool calls (see `exploration_tools`)."
    )
    exploration_tolerance: float = Field(0.2, ge=0, le=1, description="Allowed distance from the target ratio.")
    exploration_tools: list[str] = Field(
        default_factory=lambda: list(EXPLORATION_TOOLS), description="Tool names that count as exploration."
    )

    @model_validator(mode="after")
    def _some_limit(self) -> ExecutionMetrics:
        if all(getattr(self, name) is None for name in (*_LIMITS, "target_exploration_ratio")):
            raise ValueError(f"give at least one of {', '.join(f'`{n}`' for n in _LIMITS)}, `target_exploration_ratio`")
        return self

    async def grade(self, ctx: GradeContext) -> Grade:
        scope = "" if ctx.level == "turn" else " (conversation total)"
        outcomes: list[AssertionOutcome] = []
        actual: dict[str, float] = {}

        def limit(what: str, key: str, used: float, most: float | None, shown: str) -> None:
            if most is None:
                return
            actual[key] = used
            outcomes.append(AssertionOutcome(text=f"{what} <= {most:g}{scope}", passed=used <= most, evidence=shown))

        calls = calls_in(ctx)
        limit("tool calls", "tool_calls", len(calls), self.max_tool_calls, str(len(calls)))
        if self.max_llm_calls is not None:
            replies = 1 if ctx.reply is not None else sum(m.source == "target" for m in ctx.transcript)
            limit("model calls", "llm_calls", replies, self.max_llm_calls, str(replies))
        if self.max_tokens is not None:
            usage = measured(ctx, "token usage", lambda reply: reply.usage, ctx.usage)
            usage = usage if isinstance(usage, Usage) else Usage.model_validate(usage)
            if usage.total_tokens == 0:
                raise GraderError("the target reported no token usage, so max_tokens cannot be checked")
            shown = f"{usage.total_tokens} ({usage.input_tokens} input + {usage.output_tokens} output)"
            limit("total tokens", "tokens", usage.total_tokens, self.max_tokens, shown)
        if self.max_cost_usd is not None:
            self._cost(ctx, limit, outcomes, scope)
        if self.max_duration_ms is not None:
            latencies = measured(ctx, "duration", reply_latency, ctx.latencies_ms)
            duration = sum(as_number(v, "a reply's latency") for v in latencies)
            limit("duration (ms)", "duration_ms", duration, self.max_duration_ms, f"{duration:.0f} ms")
        if self.target_exploration_ratio is not None:
            outcomes.append(self._exploration(calls, actual))
        hits = sum(o.passed for o in outcomes)
        details: dict[str, object] = {
            "actual": actual,
            "limits": self.model_dump(include={*_LIMITS, "target_exploration_ratio"}),
        }
        return Grade(score=hits / len(outcomes), assertions=outcomes, details=details)

    def _cost(self, ctx: GradeContext, limit: Callable, outcomes: list[AssertionOutcome], scope: str) -> None:
        """The `max_cost_usd` check; no known cost is an error, or (`missing_cost: fail`) a failed check."""
        cost = known_cost(ctx)
        if cost is not None:
            limit("cost (USD)", "cost_usd", cost, self.max_cost_usd, f"${cost:.6f}")
        elif self.missing_cost == "error":
            raise GraderError(f"{MISSING_COST_TEXT}, so max_cost_usd cannot be checked")
        else:
            text = f"cost (USD) <= {self.max_cost_usd:g}{scope}"
            outcomes.append(AssertionOutcome(text=text, passed=False, evidence=MISSING_COST_TEXT))

    def _exploration(self, calls: list, actual: dict[str, float]) -> AssertionOutcome:
        target, tolerance = self.target_exploration_ratio or 0.0, self.exploration_tolerance
        text = f"exploration ratio within {tolerance:g} of {target:g}"
        if not calls:
            return AssertionOutcome(text=text, passed=False, evidence="no tool calls, so no exploration ratio")
        ratio = sum(call.name in self.exploration_tools for call in calls) / len(calls)
        actual["exploration_ratio"] = ratio
        evidence = f"{ratio:.2f} ({len(calls)} tool calls)"
        return AssertionOutcome(text=text, passed=abs(ratio - target) <= tolerance, evidence=evidence)
