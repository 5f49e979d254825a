"""The result model: the single source of the result JSON, the run store and the reports.

Every EvaluationResult is one test run against one target (all its trials).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from math import comb
from typing import Any, ClassVar, Literal, NamedTuple

from pydantic import ConfigDict, Field

from ._base_model import Model

_set = object.__setattr__  # how pydantic sets a model's own attributes (its models refuse plain assignment)

Verdict = Literal["pass", "fail", "skip", "error"]
ExecutionStatus = Literal[
    "ok", "quality_failure", "execution_error", "skipped", "budget_exhausted", "simulator_error", "undecided"
]
Role = Literal["system", "user", "assistant", "tool"]
ScoreKind = Literal["turn", "conversation", "scenario", "simulator"]
Source = Literal["input", "user", "simulator", "hint", "target", "tool"]
#: A scenario's outcome from its `success:` / `failure:` criteria (see `convoeval.run`).
Outcome = Literal["passed", "failed", "undecided", "conflict"]
#: Why a simulated conversation ended.
StopReason = Literal[
    "objective_met", "objective_impossible", "max_turns", "target_error", "budget_exhausted", "simulator_error"
]
#: How a trial talked to its target: the whole history every turn, a resumed session, or all
#: scripted turns in one prompt because the target cannot resume.
SessionKind = Literal["history", "resumed", "single_shot"]


class Usage(Model):
    """Token counts of one or more model calls, the same for every provider: `input_tokens` is
    every prompt token the model read, those of its prompt cache included (OpenAI's
    `prompt_tokens`; Anthropic's `input_tokens` + `cache_read_input_tokens` +
    `cache_creation_input_tokens`); `output_tokens` every token it wrote, reasoning included;
    `cached_input_tokens` and `cache_write_tokens` how many of the input tokens were read from
    and written to the provider's prompt cache (0 when it does not say)."""

    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0
    cache_write_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cached_input_tokens=self.cached_input_tokens + other.cached_input_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
        )

    @classmethod
    def total(cls, usages: Iterable[Usage]) -> Usage:
        """The sum of `usages` (what `sum(usages, Usage())` gives), made as one `Usage`."""
        total_in = total_out = cached = written = 0
        for usage in usages:
            total_in += usage.input_tokens
            total_out += usage.output_tokens
            cached += usage.cached_input_tokens
            written += usage.cache_write_tokens
        return cls(
            input_tokens=total_in, output_tokens=total_out, cached_input_tokens=cached, cache_write_tokens=written
        )


class ToolCall(Model):
    """A tool call made by the target while producing a reply (output, duration and error
    when the target reports them)."""

    name: str
    arguments: dict[str, object] = Field(default_factory=dict)
    output: object = None
    id: str | None = None
    duration_ms: float | None = None
    error: str | None = None
    status: Literal["denied", "blocked"] | None = Field(
        None, description="Set when the call did not run: denied by a permission rule, blocked by a sandbox."
    )

    @property
    def ran(self) -> bool:
        """Whether the tool really ran (denied or blocked calls are kept, but did not)."""
        return self.status is None


class Message(Model):
    """One message of a transcript; `source` says where it came from."""

    model_config = ConfigDict(extra="forbid")

    role: Role
    content: str
    source: Source = "input"
    turn: int | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list)

    def to_chat(self) -> dict[str, str]:
        """The OpenAI-style `{role, content}` dict sent to a model."""
        return {"role": self.role, "content": self.content}

    @classmethod
    def trusted(
        cls, role: Role, content: str, source: Source, turn: int | None, tool_calls: list[ToolCall] | None = None
    ) -> Message:
        """`Message(role=..., content=..., source=..., turn=...)` (`turn` and `tool_calls` given
        unless None) from values known to be valid
        (a validated message's, a reply's text): the same model, made without validating them
        again (the conversation loop makes two a turn; validation was most of their cost)."""
        message = cls.__new__(cls)
        given = {"role", "content", "source"}
        if turn is not None:
            given.add("turn")
        if tool_calls is not None:
            given.add("tool_calls")
        values = {"role": role, "content": content, "source": source, "turn": turn}
        _set(message, "__dict__", {**values, "tool_calls": [] if tool_calls is None else tool_calls})
        _set(message, "__pydantic_fields_set__", given)
        _set(message, "__pydantic_extra__", None)
        _set(message, "__pydantic_private__", None)
        return message

    def numbered(self, content: str, turn: int) -> Message:
        """This message with `content` and `turn`: what `model_copy(update={"content": content,
        "turn": turn})` makes (a shallow copy), without pydantic's copying machinery."""
        message = type(self).__new__(type(self))
        _set(message, "__dict__", {**self.__dict__, "content": content, "turn": turn})
        _set(message, "__pydantic_fields_set__", {*self.__pydantic_fields_set__, "content", "turn"})
        _set(message, "__pydantic_extra__", None)
        _set(message, "__pydantic_private__", None)
        return message


class AssertionOutcome(Model):
    """One check inside a grader: a rubric criterion, a substring, a schema..."""

    text: str
    passed: bool
    evidence: str = ""


class DimensionScore(Model):
    """One TD-Eval dimension of a turn as the judge rated it."""

    likert: int | list[int] = Field(description="The judge's 1-5 rating (one per repeat when repeated).")
    score: float = Field(description="The rating normalised to [0, 1]: (likert - 1) / 4, mean over repeats.")
    justification: str = ""


class JudgeAnswer(Model):
    """One judge's answer to one check, when a panel of judges graded it."""

    judge: str
    score: float | None
    verdict: Verdict
    reasoning: str = ""
    error: str | None = None


class GraderScore(Model):
    """What one assertion produced for one turn (or for the whole conversation).

    The judge fields count every judge call of this grader, re-asks and repeats included (also
    when it ended in an error); `details` holds grader-specific extras for people to read.
    """

    name: str
    type: str
    score: float | None
    verdict: Verdict
    weight: float = 1.0
    required: bool = False
    failed_required: list[str] = Field(
        default_factory=list, description="Required criteria (or nested assertions) that failed: the turn fails."
    )
    assertions: list[AssertionOutcome] = Field(default_factory=list)
    judge_calls: int = 0
    judge_reasks: int = 0
    judge_usage: Usage | None = None
    judge_cost_usd: float = 0.0
    dimensions: dict[str, DimensionScore] | None = None
    duration_ms: float | None = None
    details: dict[str, object] | None = None
    error: str | None = None
    panel: list[JudgeAnswer] | None = Field(None, description="Each judge's answer, when a panel judged this check.")
    panel_rule: Literal["mean", "majority", "min"] | None = Field(
        None, description="How the panel's answers were combined."
    )


class ScoreEntry(Model):
    """The score of one turn (`turn-N`), of the whole conversation (`conversation`), of the
    scenario criteria (`scenario`), or the simulated user's fidelity check (`simulator`: it
    judges the simulator, not the target, and never counts in the score)."""

    name: str
    type: ScoreKind
    score: float | None
    verdict: Verdict
    assertions: list[AssertionOutcome] = Field(default_factory=list)
    graders: list[GraderScore] = Field(default_factory=list)
    latency_ms: float | None = None
    token_usage: Usage | None = Field(None, description="The target's tokens for this turn (turns only).")
    cost_usd: float | None = Field(
        None, description="The target's cost of this turn (turns only; null when its price is unknown)."
    )
    session_id: str | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list)
    captures: dict[str, object] = Field(default_factory=dict)
    note: str | None = Field(None, description="Why the turn was skipped, stopped, failed early or not graded.")
    failed_required: list[str] = Field(
        default_factory=list, description="Its required checks that failed: each fails the test whatever the mean."
    )


class VerdictStatus(NamedTuple):
    """A result's verdict and execution status: what dependents, resumes and exit codes look at."""

    verdict: Verdict
    status: ExecutionStatus

    @property
    def not_started(self) -> bool:
        """Whether the test was left out, or stopped before its end, by the run's budget
        (`--max-cost`, AgentV's `budget_usd`): verdict `skip`. A test that ran into its own
        `budget:` also has status `budget_exhausted`, but it ran: its verdict is `fail`."""
        return self.status == "budget_exhausted" and self.verdict == "skip"


class Accounting(Model):
    """What a trial's result and a test's result both hold: the score and verdict, what it
    cost, how long it took and why it ended as it did (a test's values are its trials' sums,
    or its first trial's)."""

    score: float | None
    verdict: Verdict
    execution_status: ExecutionStatus
    scores: list[ScoreEntry] = Field(default_factory=list)
    output: list[Message] = Field(default_factory=list)
    token_usage: Usage = Field(default_factory=Usage)
    judge_token_usage: Usage = Field(default_factory=Usage)
    cost_usd: float = 0.0
    judge_cost_usd: float = 0.0
    simulator_token_usage: Usage = Field(default_factory=Usage)
    simulator_cost_usd: float = 0.0
    duration_ms: float = 0.0
    error: str | None = None
    grader_errors: int = 0
    notes: list[str] = Field(default_factory=list)
    stop_reason: StopReason | None = None
    outcome: Outcome | None = None
    provider: str | None = None
    session: SessionKind | None = None
    fallback: Literal["single_shot"] | None = None
    budget_hit: str | None = Field(None, description="The budget the trial hit, e.g. `tool_calls=60 at turn 1`.")
    failed_required: list[str] = Field(
        default_factory=list,
        description="The required checks that failed (`turn-2: tau-reward`): each fails the test whatever the mean.",
    )

    @property
    def verdict_status(self) -> VerdictStatus:
        return VerdictStatus(self.verdict, self.execution_status)


class _TrialKey(Model):
    trial: int


class TrialResult(Accounting, _TrialKey):
    """One independent run of a test."""

    variables: dict[str, object] = Field(default_factory=dict)
    workspace: str | None = Field(None, description="Where the trial's kept workspace is (keep: always / on_failure).")
    file_changes: str | None = Field(
        None, description="What the trial changed in its workspace: a unified diff (text files, bounded)."
    )

    @classmethod
    def not_run(cls, trial: int, error: str) -> TrialResult:
        """A trial that could not run (its workspace or backend could not be made...)."""
        return cls(trial=trial, score=None, verdict="error", execution_status="execution_error", error=error)


class PassRate(Model):
    """The share of a test's trials that passed, with its Wilson interval (`_binomial`)."""

    passes: int
    trials: int
    value: float
    low: float
    high: float
    confidence: float = 0.95


class AdaptiveTrials(Model):
    """How adaptive trials (`trials: {until: decided}`, `--trials auto`) ended: `decided` when
    the pass rate's confidence sequence left the threshold (`decision` says on which side),
    `max` when the most trials ran first, `budget` when the run's budget stopped them,
    `cost_limit` when the test's `trials.cost_limit_usd` did."""

    run: int
    max: int
    stopped: Literal["decided", "max", "budget", "cost_limit"]
    decision: Literal["pass", "fail"] | None = None
    alpha: float = 0.05
    low: float = Field(0.0, description="The confidence sequence of the pass rate when trials stopped.")
    high: float = 1.0


class TestKey(Model):
    """Who a test result is for: test id, target, suite and mode."""

    __test__: ClassVar[bool] = False  # not a pytest test class

    test_id: str
    target: str
    suite: str | None = None
    mode: Literal["single", "conversation"] = "single"


class EvaluationResult(Accounting, TestKey):
    """One test against one target: the line written to results.jsonl."""

    threshold: float
    trials: list[TrialResult] = Field(default_factory=list)
    pass_at_k: dict[str, float] = Field(default_factory=dict)
    pass_hat_k: dict[str, float] = Field(default_factory=dict)
    pass_rate: PassRate | None = Field(None, description="Trials that passed, with an interval (with trials).")
    adaptive: AdaptiveTrials | None = None
    metadata: dict[str, object] = Field(default_factory=dict)
    sandbox: str | None = Field(
        None, description="Where the run's commands ran: bubblewrap, docker, none, or unavailable."
    )
    checks: dict[str, Any] | None = Field(
        None, description="The test's checks as the suite gave them (`convoeval grade` judges the run again with them)."
    )

    def trial_results(self) -> list[TrialResult]:
        """The result's trials; a result stored without them stands for its one trial."""
        if self.trials:
            return list(self.trials)
        return [
            TrialResult(
                trial=0,
                score=self.score,
                verdict=self.verdict,
                execution_status=self.execution_status,
                scores=self.scores,
                output=self.output,
            )
        ]

    @property
    def passed(self) -> bool:
        return self.verdict == "pass"

    @classmethod
    def not_run(
        cls,
        key: TestKey,
        threshold: float,
        outcome: VerdictStatus,
        reason: str,
        *,
        score: float | None = None,
        metadata: dict[str, object] | None = None,
    ) -> EvaluationResult:
        """A test that did not run: skipped or failed dependency, budget spent, internal error."""
        return cls(
            **key.model_dump(),
            score=score,
            verdict=outcome.verdict,
            execution_status=outcome.status,
            threshold=threshold,
            error=reason,
            metadata=metadata or {},
        )


def pass_at_k(n: int, c: int, k: int) -> float:
    """Probability that at least one of k trials drawn from n (c passing) passes."""
    if n - c < k:
        return 1.0
    return 1.0 - comb(n - c, k) / comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """tau-bench's pass^k: probability that all of k trials drawn from n (c passing) pass."""
    return comb(c, k) / comb(n, k)


def meets(score: float, threshold: float) -> bool:
    """Whether `score` reaches `threshold`, both taken at the 6 decimals a result holds: a turn,
    its trial and its test decide alike (a turn failing at 2/3 < 0.6666668 gave a test passing
    at the 0.666667 its turn held)."""
    return round(score, 6) >= round(threshold, 6)


def decided_despite(low: float, high: float, passes: Callable[[float], bool]) -> bool | None:
    """Whether a score `passes` whatever the part that could not decide (failed checks, trials
    or judge repeats) would have scored: `low` is the score had it all scored 0, `high` had it
    all scored 1; None when it could go either way. The one rule of turns, trials, judge repeats
    and rubric criteria (judge panels enumerate their answers instead: `judging.settled`)."""
    if passes(low):
        return True
    return None if passes(high) else False
