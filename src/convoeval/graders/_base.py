"""The grader protocol: an assertion is its YAML config and its grading behaviour in one class.

Built-in assertion types and user-defined ones take the same path: subclass `Assertion`,
give it a `type: Literal["my-type"]` field, implement `grade`, and decorate it with
`@assertion_type`. The eval-file loader then accepts `type: my-type` with the class's fields.
"""

from __future__ import annotations

import time
import typing
from abc import abstractmethod
from collections.abc import Awaitable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import ClassVar

from pydantic import ConfigDict, Field, field_validator

from .. import registry
from .._base_model import Model
from .._templates import unfilled
from ..errors import GraderError
from ..judging import GradingLevel, JudgePanel, JudgeSession, PanelRule, Persona, Policy
from ..results import (
    AssertionOutcome,
    DimensionScore,
    GraderScore,
    Message,
    StopReason,
    Usage,
    decided_despite,
    meets,
)
from ..targets import ChatReply, Target
from ._panel import evaluate_by_panel

if typing.TYPE_CHECKING:
    from ._tau_backend import DomainSession


@dataclass(slots=True)
class Grade:
    """What `Assertion.grade` returns: a score in [0, 1] and the checks behind it."""

    score: float
    assertions: list[AssertionOutcome] = field(default_factory=list)
    details: dict[str, object] | None = None
    judge_usage: Usage = field(default_factory=Usage)
    judge_cost_usd: float = 0.0
    judge_calls: int = 0
    judge_reasks: int = 0
    dimensions: dict[str, DimensionScore] | None = None
    passed: bool | None = None  # overrides `score >= min_score` when the grader knows better
    failed_required: list[str] = field(default_factory=list)  # required parts that failed
    # The share u of judge repeats that failed: `score` is the mean of the others, so every
    # repeat's mean lies in [score (1 - u), score (1 - u) + u]; a verdict that range holds is none.
    unanswered: float = 0.0

    @classmethod
    def judged(
        cls,
        session: JudgeSession,
        score: float,
        assertions: list[AssertionOutcome],
        details: dict[str, object] | None = None,
        *,
        passed: bool | None = None,
        dimensions: dict[str, DimensionScore] | None = None,
        failed_required: list[str] | None = None,
    ) -> Grade:
        """A Grade with the judge's calls, usage and cost of the whole session (re-asks and
        repeats included)."""
        return cls(
            score=score,
            assertions=assertions,
            details=details or None,
            judge_usage=session.usage,
            judge_cost_usd=round(session.cost_usd, 10),
            judge_calls=session.calls,
            judge_reasks=session.reasks,
            dimensions=dimensions,
            passed=passed,
            failed_required=list(failed_required or []),
            unanswered=session.unanswered,
        )


@dataclass(slots=True)
class GradeContext:
    """Everything a grader may look at.

    Attributes:
        level: `turn` for a per-turn assertion, `conversation` for one graded after the last turn.
        output: the reply being graded; at conversation level all target replies joined.
        history: what the grader sees as `{{ input }}`: at turn level the history up to and
            including this user message, limited by `window_size`; at conversation level the
            whole transcript.
        transcript: the whole transcript so far, including this reply.
        expected_messages: the turn's `expected_output` as messages `[{role, content}]` (JSON
            objects kept), or None; AgentV's code-graders read it as `expected_output`.
        input_files: the files attached to the test's input (absolute paths).
        reply: the target's reply object (latency, usage, cost, tool calls); None at
            conversation level.
        captured_names: the variables the test's turns capture; a check naming one not set
            (in `variables`) cannot be decided.
        judge: the model used by LLM graders, or None when no judge is configured.
        judges: the models checks name as their own `judge`, by the name they give.
        latencies_ms, usage, cost_usd: what the target's replies took: this reply's at turn
            level, all replies' (latencies, summed usage and cost) at conversation level.
        cost_known: at conversation level, every reply's cost is known (`ChatReply.cost_known`).
        context: the backend (database) result of this turn (`context` / `db_result`), if any.
        policy: the domain policy of the test or suite (TD-Eval), if any.
        simulated_user: the test's simulated user (for `simulator-fidelity`), if any.
        metadata: the suite's and test's `metadata` (user data; convoeval never reads it).
        workdir: the trial's workspace, if the test has one (code-graders run there).
        file_changes: at conversation level, a unified diff of what changed in the workspace
            since it was made (template, repos and hooks applied), if the test has one.
        domain: the trial's live backend when the suite declares `tools:` and `backend:`.
        stop_reason: at conversation level, why the conversation ended when something ended it:
            a simulated user's stop reason (`objective_met`, `objective_impossible`,
            `max_turns`; a recorded one's from the test's `stop_reason`), or `budget_exhausted`
            when the test's budget stopped it; None when scripted or recorded turns ran out.
    """

    level: GradingLevel
    output: str
    history: list[Message]
    transcript: list[Message]
    expected_output: str | None = None
    expected_messages: list[dict[str, object]] | None = None
    input_files: list[str] = field(default_factory=list)
    criteria: str | None = None
    reply: ChatReply | None = None
    turn: int | None = None
    variables: dict[str, object] = field(default_factory=dict)
    captured_names: frozenset[str] = frozenset()
    judge: Target | None = None
    judges: Mapping[str, Target] = field(default_factory=dict)
    judge_repeats: int = 1
    judge_temperature: float = 0.0
    base_dir: Path = field(default_factory=Path.cwd)
    threshold: float = 0.8
    trial: int = 0
    test_id: str = ""
    latencies_ms: list[float] | None = None
    usage: Usage | None = None
    cost_usd: float | None = None
    cost_known: bool = False
    context: object = None
    policy: Policy | None = None
    simulated_user: Persona | None = None
    metadata: dict[str, object] = field(default_factory=dict)
    workdir: Path | None = None
    file_changes: str | None = None
    domain: DomainSession | None = None
    stop_reason: StopReason | None = None

    def template_vars(self) -> dict[str, object]:
        """The variables available to grader prompt templates."""
        users = [m.content for m in self.history if m.role == "user"]
        input_text = format_messages(self.history)
        expected = self.expected_output or ""
        return {
            **self.variables,
            "input": input_text,
            "output": self.output,
            "criteria": self.criteria or "",
            "expected_output": expected,
            # AgentV's names for the same values
            "input_text": input_text,
            "question": users[-1] if users else "",
            "output_text": self.output,
            "answer": self.output,
            "candidate_answer": self.output,
            "expected_output_text": expected,
            "reference_answer": expected,
            "expected_outcome": self.criteria or "",
        }


def format_messages(messages: list[Message]) -> str:
    """A transcript as plain text, one `role: content` block per message."""
    return "\n\n".join(f"{m.role}: {m.content}" for m in messages)


class Assertion(Model):
    """Base class of every assertion type (common fields and the scoring rules).

    Subclasses set `type: Literal["name"]` and implement `grade`. Class variables:
        levels: where the assertion may appear (`turn`, `conversation` or both).
        uses_judge: whether `grade` calls `ctx.judge`, the run's judge.
    """

    model_config = ConfigDict(extra="forbid", defer_build=True)  # each type is built when a suite uses it

    type: str
    name: str | None = Field(None, description="Label shown in results.")
    weight: float = Field(1.0, ge=0, allow_inf_nan=False, description="Weight in the turn or conversation score.")
    required: bool = Field(
        False,
        description="When this assertion fails, the test fails whatever the mean (tau-reward, which decides a "
        "task's outcome, is required unless it says `required: false`).",
    )
    min_score: float | None = Field(None, ge=0, le=1, description="Score needed to pass (default: the test threshold).")
    negate: bool = Field(False, description="Invert the result: score becomes 1 - score.")
    description: str | None = Field(None, description="What the assertion checks (for readers; AgentV).")

    levels: ClassVar[tuple[GradingLevel, ...]] = ("turn", "conversation")
    uses_judge: ClassVar[bool] = False

    @field_validator("type", mode="before")
    @classmethod
    def _dashes(cls, value: object) -> object:
        """`llm_grader` is read as `llm-grader` (AgentV writes both)."""
        return value.replace("_", "-") if isinstance(value, str) else value

    @property
    def label(self) -> str:
        return self.name or self.type

    @property
    def panel_default(self) -> PanelRule:
        """How a judge panel's answers combine unless the run names a rule: `mean` for a
        scored check; pass/fail checks (a yes/no rubric) say `majority`."""
        return "mean"

    @property
    def negated(self) -> bool:
        """Whether `evaluate` inverts the result: `negate: true`, or a `not-` type name (an
        alias of the positive type with `negate`; both together cancel out)."""
        return self.negate != self.type.startswith("not-")

    @property
    def fails_test(self) -> bool:
        """Whether this check failing fails the test whatever the mean: it is `required` (a
        rubric: or one of its criteria is). Such a check that cannot decide is reported as
        required, so its turn cannot decide either."""
        return self.required

    @abstractmethod
    async def grade(self, ctx: GradeContext) -> Grade:
        """Score `ctx.output` (or the transcript); raise GraderError when undecidable."""

    def _error(self, message: str, spent: GraderError | None = None) -> GraderScore:
        return GraderScore(
            name=self.label,
            type=self.type,
            score=None,
            verdict="error",
            weight=self.weight,
            required=self.fails_test,
            error=message,
            judge_calls=spent.judge_calls if spent else 0,
            judge_reasks=spent.judge_reasks if spent else 0,
            judge_usage=spent.judge_usage if spent and spent.judge_usage.total_tokens else None,
            judge_cost_usd=spent.judge_cost_usd if spent else 0.0,
        )

    @property
    def named_judges(self) -> frozenset[str]:
        """The models this check names as its own judges (`JudgedAssertion.judge`)."""
        return frozenset()

    def file_problems(self, base_dir: Path) -> list[tuple[str, str]]:
        """`(field, message)` for each file this assertion names that is missing under
        `base_dir` (the eval file's folder); checked when the eval file is loaded."""
        return []

    def template_problems(self, known: frozenset[str]) -> list[tuple[str, str]]:
        """`(field, message)` for each template of this assertion that cannot render with the
        variables `known`; checked when the eval file is loaded."""
        return []

    def evaluate(self, ctx: GradeContext) -> Awaitable[GraderScore]:
        """Run `grade` and apply the common rules: errors, negate, min_score. With a judge
        panel, a judged check is evaluated by each judge and their answers combined.

        It returns the evaluation's coroutine (await it): a turn's grading awaits the grader
        with no coroutine of its own between them, resumed each time its judge call is."""
        if self.uses_judge and isinstance(ctx.judge, JudgePanel):
            rule = ctx.judge.rule or self.panel_default
            mark = self.min_score if self.min_score is not None else ctx.threshold
            return evaluate_by_panel(ctx, ctx.judge, self._evaluate_one, rule, mark)
        return self._evaluate_one(ctx)

    def _refuse_uncaptured(self, unset: frozenset[str]) -> None:
        """A check naming a variable its test captures but never set cannot decide (`contains
        "{{ oid }}"` compared the placeholder's own text, and its `not-` form passed)."""
        if missing := unfilled(self.model_dump_json(), unset):
            raise GraderError(f"{{{{ {missing[0]} }}}} was never captured, so this check cannot be decided")

    async def _evaluate_one(self, ctx: GradeContext) -> GraderScore:
        started = time.perf_counter()
        try:
            if self.uses_judge and ctx.judge is None:
                raise GraderError("this assertion needs a judge model; pass --judge")
            if unset := ctx.captured_names.difference(ctx.variables):
                self._refuse_uncaptured(unset)
            grade = await self.grade(ctx)
        except GraderError as exc:
            return self._error(str(exc), exc)
        except Exception as exc:  # a grader bug (often a user's) must not end the run
            return self._error(f"grader crashed: {type(exc).__name__}: {exc}")
        score = min(1.0, max(0.0, grade.score))
        passed = grade.passed
        negated = self.negated
        if negated:
            score = 1.0 - score
            passed = None if passed is None else not passed
        if passed is None:
            mark = self.min_score if self.min_score is not None else ctx.threshold
            passed = meets(score, mark)  # at the 6 decimals the score is kept at
            if grade.unanswered and (undecided := _undecided_by_repeats(grade, negated, mark)):
                return self._error(undecided, _spent(grade))
        outcomes = grade.assertions
        if negated:
            outcomes = [
                AssertionOutcome(text=f"NOT {a.text}", passed=not a.passed, evidence=a.evidence) for a in outcomes
            ]
        return GraderScore(
            name=self.label,
            type=self.type,
            score=round(score, 6),
            verdict="pass" if passed else "fail",
            weight=self.weight,
            required=self.required,
            assertions=outcomes,
            judge_calls=grade.judge_calls,
            judge_reasks=grade.judge_reasks,
            judge_usage=grade.judge_usage if grade.judge_usage.total_tokens else None,
            judge_cost_usd=grade.judge_cost_usd,
            dimensions=grade.dimensions,
            failed_required=[] if negated else grade.failed_required,
            duration_ms=round((time.perf_counter() - started) * 1000, 3),
            details=grade.details or None,
        )


class JudgedAssertion(Assertion):
    """An assertion graded by a model: the run's judge (or judge panel), or the one it names
    as its own `judge` (AgentV's `target` of an llm-grader, promptfoo's `provider`)."""

    judge: str | None = Field(
        None,
        description="The model grading this check, as --judge takes it (a targets-file name or provider:model), "
        "instead of the run's judge or panel.",
    )

    @property
    def uses_judge(self) -> bool:  # type: ignore[override]
        return self.judge is None

    @property
    def named_judges(self) -> frozenset[str]:
        return frozenset() if self.judge is None else frozenset((self.judge,))

    def evaluate(self, ctx: GradeContext) -> Awaitable[GraderScore]:
        if self.judge is None:
            return super().evaluate(ctx)
        own = ctx.judges.get(self.judge)
        if own is None:  # a run prepares every judge its checks name; a caller of `agrade` may not
            return self._without_judge(f"this check's judge {self.judge!r} is not among the judges given (ctx.judges)")
        return self._evaluate_one(replace(ctx, judge=own))

    async def _without_judge(self, message: str) -> GraderScore:
        return self._error(message)


def assertion_type(cls: type[Assertion]) -> type[Assertion]:
    """Register an Assertion subclass under the name(s) in its `type: Literal[...]` field.

    Raises:
        RegistryError: a name is already taken (built-in names cannot be replaced by accident).
    """
    annotation = cls.model_fields["type"].annotation
    names = typing.get_args(annotation)
    if not names:
        raise TypeError(f"{cls.__name__}.type must be a Literal of the YAML type name")
    for name in names:
        registry.register("assertion", str(name), cls)
    return cls


def canonical_type_name(name: str) -> str | None:
    """The registered spelling of a YAML type name: `llm_grader` is `llm-grader`."""
    for candidate in dict.fromkeys((name, name.replace("_", "-"))):
        if registry.lookup("assertion", candidate) is not None:
            return candidate
    return None


def lookup_assertion_type(name: str) -> type[Assertion] | None:
    """The class registered for a YAML type name (underscores read as dashes)."""
    canonical = canonical_type_name(name)
    return registry.lookup("assertion", canonical) if canonical else None


def assertion_type_names() -> list[str]:
    return registry.names("assertion")


def registered_assertion_classes() -> list[type[Assertion]]:
    return list(dict.fromkeys(registry.entries("assertion").values()))


def _undecided_by_repeats(grade: Grade, negated: bool, mark: float) -> str | None:
    """Why the judge repeats that failed could change the verdict (see `Grade.unanswered`), or
    None when they could not."""
    u, raw = grade.unanswered, min(1.0, max(0.0, grade.score))
    low, high = raw * (1 - u), raw * (1 - u) + u
    if negated:
        low, high = 1 - high, 1 - low
    if decided_despite(low, high, lambda s: meets(s, mark)) is not None:
        return None
    return (
        f"{u:.0%} of the judge repeats failed and could change the verdict: the mean of all would be "
        f"in [{low:.3f}, {high:.3f}], the pass mark {mark:g}"
    )


def _spent(grade: Grade) -> GraderError:
    """What the grade's judge calls spent, for an error made of it."""
    return GraderError(
        "",
        judge_usage=grade.judge_usage,
        judge_cost_usd=grade.judge_cost_usd,
        judge_calls=grade.judge_calls,
        judge_reasks=grade.judge_reasks,
    )
