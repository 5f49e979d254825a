"""The numbers at the top of every report: pass rate, scores, cost, tokens, time, per target."""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import Field

from .._base_model import Model
from ..results import Accounting, EvaluationResult

VERDICTS = ("pass", "fail", "skip", "error")


class Totals(Model):
    """Totals of a group of results (a whole run, or one target)."""

    name: str = "all"
    tests: int = 0
    verdicts: dict[str, int] = Field(default_factory=lambda: dict.fromkeys(VERDICTS, 0))
    execution_errors: int = 0
    grader_errors: int = 0
    score_sum: float = 0.0
    scored: int = 0
    cost_usd: float = 0.0
    judge_cost_usd: float = 0.0
    tokens: int = 0
    judge_tokens: int = 0
    simulator_cost_usd: float = 0.0
    simulator_tokens: int = 0
    duration_ms: float = 0.0
    unpriced_turns: int = Field(0, description="Turns the target played whose price is unknown (cost_usd null).")

    @property
    def spent_usd(self) -> float:
        """What the group cost: the target, the judges and the simulated users."""
        return self.cost_usd + self.judge_cost_usd + self.simulator_cost_usd

    @property
    def all_tokens(self) -> int:
        """Tokens of the target, the judges and the simulated users."""
        return self.tokens + self.judge_tokens + self.simulator_tokens

    @property
    def pass_rate(self) -> float | None:
        return self.verdicts["pass"] / self.tests if self.tests else None

    @property
    def mean_score(self) -> float | None:
        return self.score_sum / self.scored if self.scored else None

    def add(self, result: EvaluationResult) -> None:
        self.tests += 1
        self.verdicts[result.verdict] = self.verdicts.get(result.verdict, 0) + 1
        self.execution_errors += result.execution_status == "execution_error"
        self.grader_errors += result.grader_errors
        if result.score is not None:
            self.score_sum += result.score
            self.scored += 1
        self.cost_usd += result.cost_usd
        self.judge_cost_usd += result.judge_cost_usd
        self.tokens += result.token_usage.total_tokens
        self.judge_tokens += result.judge_token_usage.total_tokens
        self.simulator_cost_usd += result.simulator_cost_usd
        self.simulator_tokens += result.simulator_token_usage.total_tokens
        self.duration_ms += result.duration_ms
        played: list[Accounting] = [*result.trials] or [result]
        self.unpriced_turns += sum(
            s.type == "turn" and s.token_usage is not None and s.cost_usd is None for run in played for s in run.scores
        )


class Overview(Model):
    """A run's totals, and the same per target (in order of first appearance)."""

    total: Totals
    targets: list[Totals]
    suites: list[str]


def overview(results: Iterable[EvaluationResult]) -> Overview:
    """Totals of the results, overall and per target."""
    total = Totals()
    targets: dict[str, Totals] = {}
    suites: dict[str, None] = {}
    for result in results:
        total.add(result)
        targets.setdefault(result.target, Totals(name=result.target)).add(result)
        suites.setdefault(suite_name(result))
    return Overview(total=total, targets=list(targets.values()), suites=list(suites))


def suite_name(result: EvaluationResult) -> str:
    """The suite's short name (its file name without `.eval.yaml`), or `-`."""
    return short_suite(result.suite)


def short_suite(suite: str | None) -> str:
    """A suite's short name (its file name without `.eval.yaml`), or `-`."""
    if not suite:
        return "-"
    name = suite.replace("\\", "/").rsplit("/", 1)[-1]
    for suffix in (".eval.yaml", ".eval.yml", ".yaml", ".yml"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def fmt_score(score: float | None) -> str:
    return "-" if score is None else f"{score:.2f}"


def fmt_rate(rate: float | None) -> str:
    return "-" if rate is None else f"{rate:.0%}"


def fmt_duration(ms: float) -> str:
    return f"{ms / 1000:.1f} s" if ms < 60_000 else f"{ms / 60_000:.1f} min"
