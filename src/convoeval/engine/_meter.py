"""Counting a run as it goes: tests, turns, model calls, cache hits, errors, tokens and cost.

The API fills one `RunMeter` per run; progress displays read it (from any thread) and the
`--max-cost` budget is checked against the money it says was really spent (cache hits are
free).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from .._binomial import wilson_interval
from ..errors import TargetError
from ..targets import ChatReply, ChatRequest, Target, TargetWrapper


@dataclass
class CallTotals:
    """Model calls of one target (or of the whole run)."""

    calls: int = 0  # calls that reached the model
    cache_hits: int = 0  # calls answered from the cache (free)
    errors: int = 0  # calls that failed after their retries
    input_tokens: int = 0  # of every reply, cached ones included
    output_tokens: int = 0
    cost_usd: float = 0.0  # of every reply, cached ones included
    spent_usd: float = 0.0  # of the calls that reached the model
    unpriced: int = 0  # calls that reached the model at no known price (nothing in spent_usd)

    def add(self, reply: ChatReply | Exception) -> None:
        """Count a call: its reply, or the error it failed with (with what an agent's turn had
        spent before it failed: `TargetError.usage`, `cost_usd`)."""
        if not isinstance(reply, ChatReply):
            self.errors += 1
            if isinstance(reply, TargetError) and reply.spent:
                self.input_tokens += reply.usage.input_tokens
                self.output_tokens += reply.usage.output_tokens
                self.cost_usd += reply.cost_usd
                self.spent_usd += reply.cost_usd
            return
        if reply.cached:
            self.cache_hits += 1
        else:
            self.calls += 1
            self.spent_usd += reply.cost_usd
            if not (reply.cost_usd or reply.cost_known):
                self.unpriced += 1
        self.input_tokens += reply.usage.input_tokens
        self.output_tokens += reply.usage.output_tokens
        self.cost_usd += reply.cost_usd

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def merge(self, other: CallTotals) -> None:
        """Add another count of calls (made elsewhere: a worker process's, a Ray worker's) to this one.
        Field by field, written out: it runs for every trial a worker returns."""
        self.calls += other.calls
        self.cache_hits += other.cache_hits
        self.errors += other.errors
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.cost_usd += other.cost_usd
        self.spent_usd += other.spent_usd
        self.unpriced += other.unpriced

    def as_dict(self) -> dict[str, object]:
        return {
            "calls": self.calls,
            "cache_hits": self.cache_hits,
            "errors": self.errors,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cost_usd": round(self.cost_usd, 8),
            "spent_usd": round(self.spent_usd, 8),
            "unpriced_calls": self.unpriced,
        }


@dataclass
class RunMeter:
    """Live counters of one run.

    Attributes:
        run_id: the run's id in the store (None without a store).
        tests_total: results the run will have (resumed ones included).
        tests_done: results finished so far (resumed ones included).
        resumed: results taken from the store instead of being run again.
        resumed_trials: finished trials of unfinished tests taken from the store.
        turns: turns graded so far.
        totals: model calls of the whole run; `by_model` per target/judge name and purpose.
        max_cost_usd: the budget, or None.
        budget_exhausted: set once the budget stopped new work.
        not_started: tests left out because of the budget.
    """

    run_id: str | None = None
    tests_total: int = 0
    tests_done: int = 0
    resumed: int = 0
    resumed_trials: int = 0
    turns: int = 0
    totals: CallTotals = field(default_factory=CallTotals)
    by_model: dict[str, CallTotals] = field(default_factory=dict)
    verdicts: Counter[str] = field(default_factory=Counter)
    max_cost_usd: float | None = None
    budget_exhausted: bool = False
    not_started: int = 0

    def record_call(self, name: str, request: ChatRequest, reply: ChatReply | Exception) -> None:
        """Count one call of target `name`: its reply, or the error it failed with."""
        self.totals.add(reply)
        key = name if request.purpose == "target" else f"{name} ({request.purpose})"
        totals = self.by_model.get(key)
        if totals is None:
            totals = self.by_model[key] = CallTotals()
        totals.add(reply)

    def absorb(self, by_model: dict[str, CallTotals]) -> None:
        """Add calls counted by another meter (a Ray worker's), per model, to this run's."""
        for key, totals in by_model.items():
            self.totals.merge(totals)
            self.by_model.setdefault(key, CallTotals()).merge(totals)

    def record_result(self, verdict: str) -> None:
        self.tests_done += 1
        self.verdicts[verdict] += 1

    def may_start(self) -> bool:
        """False once the money spent reaches `max_cost_usd` (then it stays False)."""
        if self.max_cost_usd is not None and self.totals.spent_usd >= self.max_cost_usd:
            self.budget_exhausted = True
        return not self.budget_exhausted

    def summary(self) -> dict[str, object]:
        """The totals as plain data (stored with the run, printed at the end)."""
        return {
            "tests": self.tests_total,
            "done": self.tests_done,
            "resumed": self.resumed,
            "resumed_trials": self.resumed_trials,
            "turns": self.turns,
            "verdicts": dict(self.verdicts),
            "pass_rate": _pass_rate(self.verdicts),
            **self.totals.as_dict(),
            "by_model": {k: v.as_dict() for k, v in self.by_model.items()},
            "max_cost_usd": self.max_cost_usd,
            "budget_exhausted": self.budget_exhausted,
            "not_started": self.not_started,
        }


def _pass_rate(verdicts: Counter[str]) -> dict[str, float] | None:
    """The share of tests that passed with its 95% Wilson interval (None before any result)."""
    tests = sum(verdicts.values())
    bounds = wilson_interval(verdicts.get("pass", 0), tests)
    if bounds is None:
        return None
    return {"value": round(verdicts.get("pass", 0) / tests, 6), "low": round(bounds[0], 6), "high": round(bounds[1], 6)}


class MeteredTarget(TargetWrapper):
    """A Target that counts every call of `inner` in a RunMeter (and lets errors through)."""

    def __init__(self, inner: Target, meter: RunMeter):
        super().__init__(inner)
        self.meter = meter

    async def chat(self, request: ChatRequest) -> ChatReply:
        try:
            reply = await self.inner.chat(request)
        except Exception as exc:
            self.meter.record_call(self.name, request, exc)
            raise
        self.meter.record_call(self.name, request, reply)
        return reply
