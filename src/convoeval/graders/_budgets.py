"""Budget assertion types: `latency`, `token-usage` and `cost` stay within limits.

At turn level they read the target's reply; at conversation level what the run recorded for
the whole conversation (every turn's latency; the usage and cost totals). Something that was
not measured cannot be checked: that is an error, never a pass.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Literal, TypeVar

from pydantic import AliasChoices, Field, model_validator

from ..results import AssertionOutcome, Usage
from ..targets import ChatReply
from ._base import GradeContext, GraderError, assertion_type
from ._check import Check

T = TypeVar("T")


def measured(ctx: GradeContext, what: str, of_reply: Callable[[ChatReply], T], of_conversation: T | None) -> T:
    """What was measured for this reply (turn level) or conversation (the run's total).

    Raises GraderError when nothing was: the check cannot decide.
    """
    if ctx.reply is not None:
        return of_reply(ctx.reply)
    if ctx.level == "conversation" and of_conversation is not None:
        return of_conversation
    raise GraderError(f"no {what} was recorded for this " + ("reply" if ctx.level == "turn" else "conversation"))


def as_number(value: object, what: str) -> float:
    """`value` as a float; a GraderError naming `what` when it is not a number."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        raise GraderError(f"{what} is {value!r}, not a number")
    return float(value)


#: What a cost check gives when no cost is known: an error (convoeval), or a failed check (AgentV,
#: `graders/cost.ts`: "No cost data available in trace"; set for files found as AgentV's).
MissingCost = Literal["error", "fail"]
MISSING_COST_TEXT = (
    "no cost data: the target has no prices (set price_input_per_mtok / price_output_per_mtok) and reported none"
)


def known_cost(ctx: GradeContext) -> float | None:
    """The reply's (turn level) or conversation's cost in USD, or None when none is known: a
    target without prices reports $0, which says nothing about what the call cost (one with its
    prices set to 0, or the embedded model, costs $0: `ChatReply.cost_known`).

    Raises GraderError when nothing was recorded at all (`measured`), or it is not a number.
    """
    raw = measured(ctx, "cost", lambda reply: reply.cost_usd, ctx.cost_usd)
    cost = as_number(raw, "the reply's cost" if ctx.reply is not None else "the conversation's cost")
    known = ctx.reply.cost_known if ctx.reply is not None else ctx.cost_known
    return cost if cost or known else None


def _scope(ctx: GradeContext) -> str:
    return "" if ctx.level == "turn" else " (conversation total)"


def reply_latency(reply: ChatReply) -> list[float]:
    """The reply's latency as a one-item list; a cached reply without one cannot be checked."""
    if reply.cached and not reply.latency_ms:
        raise GraderError(
            "the reply came from the cache and has no recorded latency; run without the cache to check latency"
        )
    return [reply.latency_ms]


@assertion_type
class Latency(Check):
    """The reply came within a time limit (the target's measured latency).

    At conversation level every turn must (from the run's per-turn latencies). A reply served
    from the cache without a recorded latency cannot be checked: that is an error, not a pass.
    """

    type: Literal["latency"]
    threshold_ms: float = Field(
        ge=0,
        validation_alias=AliasChoices("threshold_ms", "max_ms", "threshold"),
        description="Maximum latency in milliseconds (also accepted as `max_ms` or promptfoo's `threshold`).",
    )

    def check(self, ctx: GradeContext) -> tuple[bool, list[AssertionOutcome]]:
        values = list(measured(ctx, "latency", reply_latency, ctx.latencies_ms))
        if not values:
            raise GraderError("the conversation has no measured turn latencies")
        labels = [""] if ctx.reply is not None else [f"turn {k}" for k in range(1, len(values) + 1)]
        outcomes = []
        for label, raw in zip(labels, values, strict=False):
            value = as_number(raw, f"{label}'s latency" if label else "the reply's latency")
            outcomes.append(
                AssertionOutcome(
                    text=f"latency <= {self.threshold_ms:g} ms" + (f" ({label})" if label else ""),
                    passed=value <= self.threshold_ms,
                    evidence=f"{value:.0f} ms",
                )
            )
        return all(o.passed for o in outcomes), outcomes


@assertion_type
class TokenUsage(Check):
    """The target's token usage stays within limits (this reply, or the whole conversation).

    A target that reports no token usage cannot be checked: that is an error, not a pass.

    Example: `{type: token-usage, max_tokens: 2000, max_output_tokens: 500}`
    """

    type: Literal["token-usage"]
    max_tokens: int | None = Field(None, ge=0, description="Maximum input + output tokens.")
    max_input_tokens: int | None = Field(None, ge=0, description="Maximum input (prompt) tokens.")
    max_output_tokens: int | None = Field(None, ge=0, description="Maximum output (completion) tokens.")

    @model_validator(mode="after")
    def _check_limits(self) -> TokenUsage:
        if self.max_tokens is None and self.max_input_tokens is None and self.max_output_tokens is None:
            raise ValueError("give at least one of `max_tokens`, `max_input_tokens`, `max_output_tokens`")
        return self

    def check(self, ctx: GradeContext) -> tuple[bool, list[AssertionOutcome]]:
        raw = measured(ctx, "token usage", lambda reply: reply.usage, ctx.usage)
        try:
            usage = raw if isinstance(raw, Usage) else Usage.model_validate(raw)
        except ValueError as exc:
            raise GraderError(f"the conversation's token usage is unreadable: {exc}") from None
        if usage.total_tokens == 0:
            raise GraderError("the target reported no token usage, so token-usage cannot be checked")
        checks = [
            (
                "total tokens",
                self.max_tokens,
                usage.total_tokens,
                f"{usage.total_tokens} ({usage.input_tokens} input + {usage.output_tokens} output)",
            ),
            ("input tokens", self.max_input_tokens, usage.input_tokens, str(usage.input_tokens)),
            ("output tokens", self.max_output_tokens, usage.output_tokens, str(usage.output_tokens)),
        ]
        outcomes = [
            AssertionOutcome(text=f"{name} <= {limit}{_scope(ctx)}", passed=used <= limit, evidence=evidence)
            for name, limit, used, evidence in checks
            if limit is not None
        ]
        return all(o.passed for o in outcomes), outcomes


@assertion_type
class Cost(Check):
    """The target's cost in USD stays within a limit (this reply, or the whole conversation).

    Cost comes from the target's prices (`price_input_per_mtok`, `price_output_per_mtok`, or
    convoeval's table of well-known models) or what the target reports. Without either the cost
    is unknown ($0 reported): the check cannot decide, which is an error (`missing: fail` makes
    it a failed check, as AgentV scores it; files found as AgentV's get that).
    """

    type: Literal["cost"]
    max_usd: float = Field(
        ge=0,
        validation_alias=AliasChoices("max_usd", "threshold"),
        description="Maximum cost in US dollars (also accepted as promptfoo's `threshold`).",
    )
    missing: MissingCost = Field(
        "error", description="No cost known: an error (default), or `fail` (AgentV: 'No cost data available')."
    )

    def check(self, ctx: GradeContext) -> tuple[bool, list[AssertionOutcome]]:
        text = f"cost <= ${self.max_usd:g}{_scope(ctx)}"
        cost = known_cost(ctx)
        if cost is None:
            if self.missing == "error":
                raise GraderError(f"{MISSING_COST_TEXT}, so cost cannot be checked")
            return False, [AssertionOutcome(text=text, passed=False, evidence=MISSING_COST_TEXT)]
        passed = cost <= self.max_usd
        return passed, [AssertionOutcome(text=text, passed=passed, evidence=f"${cost:.6f}")]
