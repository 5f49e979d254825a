"""LLM-judged assertions: `rubrics` and the helpers every judged grader shares (`llm-grader` is
in `_llm_grader`, `composite` in `_composite`).

The judge is `ctx.judge` (any Target); the calls, parsing, re-ask, repeats and accounting are
in `convoeval.judging`.

Example (YAML):
    assertions:
      - Mentions divide-and-conquer            # plain strings: one rubrics grader
      - type: rubrics
        criteria:
          - {id: structure, outcome: Has clear headings, weight: 1, required: true}
          - id: accuracy
            weight: 2
            min_score: 0.8
            score_ranges: {0: Wrong, 5: Partly right, 8: Right, 10: Perfect}
      - type: llm-grader
        prompt: file://prompts/tone.md        # or inline Jinja2 text with {{ output }} ...
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Literal, NamedTuple, TypeVar

from pydantic import (
    AliasChoices,
    ConfigDict,
    Field,
    JsonValue,
    PrivateAttr,
    field_validator,
    model_validator,
)

from .._base_model import Model
from ..judging import (
    CriterionAnswer,
    GradingLevel,
    JudgeSession,
    KeyedAnswer,
    PanelRule,
    RubricItem,
    ScoreAnswer,
    Subject,
    repeat_summary,
    rubric_criteria_text,
    rubric_messages,
    rubric_parser,
    rubric_schema,
    values_by_key,
)
from ..results import AssertionOutcome, decided_despite, meets
from ._base import Assertion, Grade, GradeContext, JudgedAssertion, assertion_type

T = TypeVar("T")
_OUTCOME = AliasChoices("outcome", "expected_outcome", "description", "criteria")  # AgentV: `outcome ?? criteria`


def subject_for(ctx: GradeContext, *, expected_output: str | None = None, criteria: str | None = None) -> Subject:
    """What a judge prompt shows: the windowed history and the reply at turn level, the whole
    numbered transcript at conversation level."""
    if ctx.level == "conversation":
        return Subject(
            "conversation",
            history=list(ctx.transcript or ctx.history),
            expected_output=expected_output,
            criteria=criteria,
        )
    return Subject(
        "turn",
        history=list(ctx.history),
        output=ctx.output,
        turn=ctx.turn,
        tool_calls=list(ctx.reply.tool_calls) if ctx.reply else [],
        expected_output=expected_output,
        criteria=criteria,
    )


def judge_session(ctx: GradeContext) -> JudgeSession:
    """The judge calls of one grader, at `ctx.judge_temperature` (0 unless the suite's
    `execution.judge.temperature` says otherwise)."""
    assert ctx.judge is not None
    return JudgeSession(ctx.judge, trial=ctx.trial, temperature=ctx.judge_temperature)


def pass_mark(assertion: Assertion, ctx: GradeContext) -> float:
    """The score an assertion needs: its own min_score, else the test threshold."""
    return assertion.min_score if assertion.min_score is not None else ctx.threshold


def _mean(values: list[float]) -> float:
    return math.fsum(values) / len(values)


# -- rubrics ----------------------------------------------------------------------------


class ScoreRange(Model):
    """One band of a score-range criterion: `{score_range: [lo, hi], outcome}` over 0..10."""

    model_config = ConfigDict(extra="forbid")

    score_range: tuple[int, int]
    outcome: str = Field(validation_alias=_OUTCOME)


class RubricCriterion(Model):
    """One criterion of a `rubrics` assertion.

    A yes/no check (`outcome`) or, with `score_ranges`, a 0-10 analytic score. `required`
    (default true): when it fails, the grader fails whatever its score. `min_score` (0-1): the
    normalised score it needs to pass.
    """

    model_config = ConfigDict(extra="forbid")

    id: str | None = Field(None, description="Key of its verdict (default c1, c2, ...).")
    outcome: str | None = Field(None, validation_alias=_OUTCOME, description="What must hold (alias expected_outcome).")
    weight: float = Field(1.0, ge=0, allow_inf_nan=False, description="Weight in the rubric score.")
    required: bool = Field(True, description="A failed required criterion fails the grader.")
    min_score: float | None = Field(
        None, ge=0, le=1, description="Normalised score (0-1) this criterion needs to pass."
    )
    required_min_score: int | None = Field(
        None, ge=0, le=10, description="AgentV's older 0-10 gate; same as min_score/10 + required."
    )
    score_ranges: dict[int, str] | list[ScoreRange] | None = Field(
        None, description="0-10 bands: {0: '...', 5: '...', 8: '...'} or [{score_range: [lo, hi], outcome}]."
    )
    operator: Literal["correctness", "contradiction"] | None = Field(
        None, description="`contradiction`: holds unless the answer contradicts the outcome."
    )

    @field_validator("id")
    @classmethod
    def _check_id(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("a criterion id must not be blank")
        return value

    @model_validator(mode="after")
    def _check(self) -> RubricCriterion:
        if not (self.outcome and self.outcome.strip()) and not self.score_ranges:
            raise ValueError("a criterion needs an `outcome` or `score_ranges`")
        self.bands()  # raises on bad ranges
        return self

    def bands(self) -> list[tuple[int, int, str]]:
        """The score ranges as sorted `(low, high, outcome)`; the map form `{0: a, 5: b}` means
        0-4: a, 5-10: b."""
        if not self.score_ranges:
            return []
        if isinstance(self.score_ranges, dict):
            starts = sorted(self.score_ranges)
            for start in starts:
                if not 0 <= start <= 10:
                    raise ValueError(f"score_ranges: {start} is outside 0..10")
            ends = [s - 1 for s in starts[1:]] + [10]
            return [(s, e, self.score_ranges[s]) for s, e in zip(starts, ends, strict=True)]
        bands = sorted((r.score_range[0], r.score_range[1], r.outcome) for r in self.score_ranges)
        for low, high, _ in bands:
            if not (0 <= low <= high <= 10):
                raise ValueError(f"score_ranges: [{low}, {high}] must satisfy 0 <= low <= high <= 10")
        for (_, high, _), (low, _, _) in zip(bands, bands[1:], strict=False):
            if low <= high:
                raise ValueError(f"score_ranges overlap at {low}")
        return bands

    @property
    def gate(self) -> float | None:
        """The normalised score needed to pass, when the criterion sets one."""
        if self.min_score is not None:
            return self.min_score
        if self.required_min_score is not None:
            return self.required_min_score / 10
        return None


class _Row(NamedTuple):
    """What grading reads of one criterion, taken from it once per grader."""

    item: RubricItem
    id: str
    scored: bool
    text: str  # the outcome's text (its id when it has none)
    gate: float | None  # `RubricCriterion.gate`
    gates_grader: bool  # a failed criterion fails the grader (`required`, or AgentV's `required_min_score`)
    weight: float
    required: bool


@dataclass(frozen=True)
class _RubricCall:
    """A rubric's criteria as the judge sees them, its answer schema and parser, and the end of
    its prompt at each level (built when first asked), for `criteria`."""

    criteria: list[str | RubricCriterion]
    resolved: list[tuple[RubricItem, RubricCriterion]]
    items: list[RubricItem]
    schema: dict[str, JsonValue]
    parser: type[KeyedAnswer[ScoreAnswer | CriterionAnswer]]
    texts: dict[str, str] = field(default_factory=dict)
    rows: tuple[_Row, ...] = field(init=False)
    weights: list[float] = field(init=False)
    total_weight: float = field(init=False)  # `math.fsum(weights)`

    def __post_init__(self) -> None:
        rows = tuple(
            _Row(
                item,
                item.id,
                item.scored,
                item.text or item.id,
                criterion.gate,
                criterion.required_min_score is not None or criterion.required,
                criterion.weight,
                criterion.required,
            )
            for item, criterion in self.resolved
        )
        object.__setattr__(self, "rows", rows)
        object.__setattr__(self, "weights", [row.weight for row in rows])
        object.__setattr__(self, "total_weight", math.fsum(self.weights))

    def criteria_text(self, level: GradingLevel) -> str:
        text = self.texts.get(level)
        if text is None:
            text = self.texts[level] = rubric_criteria_text(self.items, level)
        return text


def _rubric_call(rubric: Rubrics) -> _RubricCall:
    resolved = rubric.resolved()
    items = [item for item, _ in resolved]
    return _RubricCall(rubric.criteria, resolved, items, rubric_schema(items), rubric_parser(items))


#: The calls of rubrics whose criteria are all plain strings, by their strings (emptied when full).
_SHARED_CALLS: dict[tuple[str | RubricCriterion, ...], _RubricCall] = {}  # keys: strings only
_SHARED_CALLS_MAX = 1024


@assertion_type
class Rubrics(JudgedAssertion):
    """All criteria judged in ONE judge call; score = satisfied weight / total weight
    (score-range criteria count score/10). A failed `required` criterion fails the grader.

    A yes/no criterion passes when satisfied (with K judge repeats: in more than half of them,
    or in at least `min_score` of them); a score-range criterion passes when its normalised
    score reaches its `min_score`, else the grader's pass mark (`min_score` or test threshold).
    """

    type: Literal["rubrics"]
    criteria: list[str | RubricCriterion] = Field(
        min_length=1, description="Strings (yes/no checks) or criterion objects."
    )
    required_fails_test: bool = Field(
        True, description="A failed required criterion fails the test too (false, as in AgentV: only this grader)."
    )

    _call: _RubricCall | None = PrivateAttr(default=None)

    @property
    def fails_test(self) -> bool:
        """Required, or a criterion failing fails the test (`required` criteria: plain strings
        are; not when negated, nor with `required_fails_test: false`)."""
        gates = any(isinstance(c, str) or c.required or c.required_min_score is not None for c in self.criteria)
        return self.required or (gates and self.required_fails_test and not self.negated)

    @field_validator("criteria")
    @classmethod
    def _check_criteria(cls, criteria: list[str | RubricCriterion]) -> list[str | RubricCriterion]:
        seen: set[str] = set()
        for k, criterion in enumerate(criteria):
            if isinstance(criterion, str):
                if not criterion.strip():
                    raise ValueError(f"criterion {k + 1} is blank")
                continue
            if criterion.id is not None:
                if criterion.id in seen:
                    raise ValueError(f"duplicate criterion id {criterion.id!r}")
                seen.add(criterion.id)
        return criteria

    @property
    def panel_default(self) -> PanelRule:
        """Yes/no criteria only: a pass/fail check (majority vote); any 0-10 criterion: mean."""
        scored = any(isinstance(c, RubricCriterion) and c.score_ranges for c in self.criteria)
        return "mean" if scored else "majority"

    def resolved(self) -> list[tuple[RubricItem, RubricCriterion]]:
        """Each criterion as a RubricItem (ids `c1`, `c2`... for those without one)."""
        taken = {c.id for c in self.criteria if isinstance(c, RubricCriterion) and c.id}
        out: list[tuple[RubricItem, RubricCriterion]] = []
        for k, criterion in enumerate(self.criteria, start=1):
            if isinstance(criterion, str):
                criterion = RubricCriterion(outcome=criterion)
            cid = criterion.id
            if cid is None:
                cid, n = f"c{k}", k
                while cid in taken:
                    n += 1
                    cid = f"c{n}"
                taken.add(cid)
            out.append(
                (
                    RubricItem(
                        id=cid, text=criterion.outcome or "", bands=criterion.bands(), operator=criterion.operator
                    ),
                    criterion,
                )
            )
        return out

    def prepared(self) -> _RubricCall:
        """What every judge call of this grader shares, built on the first call (criteria that
        are all plain strings share it with every rubric of the same strings: a suite's turns
        often repeat their criteria)."""
        private = self.__pydantic_private__  # its dict: `self._call` would ask pydantic's __getattr__
        call = private.get("_call") if private else None
        if call is not None and call.criteria is self.criteria:
            return call
        key = tuple(self.criteria)
        if all(type(c) is str for c in key):
            call = _SHARED_CALLS.get(key)
            if call is None:
                if len(_SHARED_CALLS) >= _SHARED_CALLS_MAX:
                    _SHARED_CALLS.clear()
                call = _SHARED_CALLS[key] = _rubric_call(self)
            return call
        call = self._call = _rubric_call(self)
        return call

    async def grade(self, ctx: GradeContext) -> Grade:
        assert ctx.judge is not None
        call = self.prepared()
        subject = subject_for(ctx, expected_output=ctx.expected_output, criteria=ctx.criteria)
        session = judge_session(ctx)
        messages = rubric_messages(subject, call.items, criteria_text=call.criteria_text(subject.level))
        answers = await session.ask_repeated(
            messages, call.schema, call.parser, repeats=ctx.judge_repeats, name="rubric"
        )
        runs = [values_by_key(answer) for answer in answers.values]
        if any(len(run) < len(call.rows) for run in runs):  # an AgentV grader target's answer
            call = _checked(call, runs)
            if not call.rows:
                return _judged(0.0, [], {"criteria": {}}, session, [])
        grade = _graded(call, runs, pass_mark(self, ctx), session, answers.errors)
        if not self.required_fails_test:
            grade.failed_required = []  # the grader still fails (its verdict), the test's score stands
        return grade


def _checked(call: _RubricCall, runs: list[dict[str, ScoreAnswer | CriterionAnswer]]) -> _RubricCall:
    """`call` with only the criteria every answer checked: AgentV leaves the others out of the
    score (`calculateRubricScore`), and none checked scores 0."""
    resolved = [(item, c) for item, c in call.resolved if all(item.id in run for run in runs)]
    return replace(call, resolved=resolved, items=[item for item, _ in resolved])


def _passes(row: _Row, value: float, mark: float) -> bool:
    """Whether a criterion's normalised score (its mean over repeats) passes."""
    if row.gate is not None:
        return meets(value, row.gate)
    if row.scored:
        return meets(value, mark)
    return value > 0.5


def _graded(
    call: _RubricCall,
    runs: list[dict[str, ScoreAnswer | CriterionAnswer]],
    mark: float,
    session: JudgeSession,
    errors: Sequence[str],
) -> Grade:
    """The grade of repeated answers (`runs`, one per repeat that answered; `errors` of the others)."""
    if len(runs) == 1 and not errors:
        once = _graded_once(call, runs[0], mark, session)
        if once is not None:
            return once
    outcomes: list[AssertionOutcome] = []
    per_criterion: dict[str, dict[str, object]] = {}
    failed_required: list[str] = []
    criterion_scores: list[float] = []
    norms_of: list[list[float]] = []
    for row in call.rows:
        verdicts = [run[row.id] for run in runs]
        judged: list[int] | list[bool]
        if row.scored:
            judged = [v.score for v in verdicts if isinstance(v, ScoreAnswer)]
            norms = [s / 10 for s in judged]
        else:
            judged = [v.satisfied for v in verdicts if isinstance(v, CriterionAnswer)]
            norms = [1.0 if yes else 0.0 for yes in judged]
        value = norms[0] if len(norms) == 1 else _mean(norms)  # the mean of one is itself
        passed = _passes(row, value, mark)
        if errors and row.gates_grader:  # the repeats that failed, all no or all yes
            share = len(errors) / (len(runs) + len(errors))
            low = value * (1 - share)
            if decided_despite(low, low + share, functools.partial(_passes, row, mark=mark)) is None:
                raise session.error(f"{len(errors)} judge repeat(s) failed and could change criterion {row.id!r}")
        if row.gates_grader and not passed:
            failed_required.append(row.id)
        criterion_scores.append(value)
        norms_of.append(norms)
        outcomes.append(AssertionOutcome(text=row.text, passed=passed, evidence=_evidence(row.item, verdicts)))
        per_criterion[row.id] = {
            "judge_score" if row.scored else "satisfied": _one_or_all(judged),
            "score": round(value, 6),
            "weight": row.weight,
            "required": row.required,
            "passed": passed,
        }
    score = _weighted_mean(criterion_scores, call.weights, call.total_weight)
    details: dict[str, object] = {"criteria": per_criterion}
    if len(runs) + len(errors) > 1:
        run_scores = [[norms[r] if r < len(norms) else 0.0 for norms in norms_of] for r in range(len(runs))]
        details.update(repeat_summary([weighted_mean(s, call.weights) for s in run_scores]))
    if errors:
        details["repeat_errors"] = errors
    return _judged(score, outcomes, details, session, failed_required)  # what `Grade.judged` makes of them


def _graded_once(
    call: _RubricCall, run: dict[str, ScoreAnswer | CriterionAnswer], mark: float, session: JudgeSession
) -> Grade | None:
    """`_graded` of one answer (the usual call: no repeats), the same grade made in one pass;
    None when an answer's shape is not its criterion's (the general path says what it makes of it)."""
    outcomes: list[AssertionOutcome] = []
    per_criterion: dict[str, dict[str, object]] = {}
    failed_required: list[str] = []
    values: list[float] = []
    for row in call.rows:
        verdict = run[row.id]
        judged: int | bool
        if row.scored:
            if not isinstance(verdict, ScoreAnswer):
                return None
            judged = verdict.score
            value = judged / 10
            evidence = _evidence(row.item, [verdict])
        else:
            if not isinstance(verdict, CriterionAnswer):
                return None
            judged = verdict.satisfied
            value = 1.0 if judged else 0.0
            evidence = verdict.reasoning
        passed = _passes(row, value, mark)
        if row.gates_grader and not passed:
            failed_required.append(row.id)
        values.append(value)
        outcomes.append(AssertionOutcome(text=row.text, passed=passed, evidence=evidence))
        per_criterion[row.id] = {
            "judge_score" if row.scored else "satisfied": judged,
            "score": round(value, 6),
            "weight": row.weight,
            "required": row.required,
            "passed": passed,
        }
    score = _weighted_mean(values, call.weights, call.total_weight)
    return _judged(score, outcomes, {"criteria": per_criterion}, session, failed_required)


def _judged(
    score: float,
    outcomes: list[AssertionOutcome],
    details: dict[str, object],
    session: JudgeSession,
    failed_required: list[str],
) -> Grade:
    """The grade of a judge's answers: their score, outcomes and details, the session's usage and
    cost; a failed required criterion fails it."""
    return Grade(
        score=score,
        assertions=outcomes,
        details=details,
        judge_usage=session.usage,
        judge_cost_usd=round(session.cost_usd, 10),
        judge_calls=session.calls,
        judge_reasks=session.reasks,
        passed=False if failed_required else None,
        failed_required=failed_required,
    )


def _one_or_all(values: Sequence[T]) -> T | Sequence[T]:
    return values[0] if len(values) == 1 else values


def weighted_mean(values: list[float], weights: list[float]) -> float:
    """The weighted mean (the plain mean when the weights sum to 0)."""
    return _weighted_mean(values, weights, math.fsum(weights))


def _weighted_mean(values: list[float], weights: list[float], total: float) -> float:
    """`weighted_mean` with the weights' sum (`math.fsum(weights)`) known."""
    if total <= 0:
        return _mean(values)
    if len(values) == 1 and len(weights) == 1:  # the sum of one product is itself
        return values[0] * weights[0] / total
    return math.fsum([v * w for v, w in zip(values, weights, strict=True)]) / total


def _evidence(item: RubricItem, verdicts: list[ScoreAnswer | CriterionAnswer]) -> str:
    first = verdicts[0]
    if isinstance(first, ScoreAnswer):
        band = next((d for lo, hi, d in item.bands if lo <= first.score <= hi), "")
        text = f"{first.score}/10" + (f" ({band})" if band else "") + f": {first.reasoning}"
        if len(verdicts) > 1:
            scores = [v.score for v in verdicts if isinstance(v, ScoreAnswer)]
            text += f" [scores over {len(verdicts)} repeats: {', '.join(str(s) for s in scores)}]"
        return text
    if len(verdicts) > 1:
        yes = sum(v.satisfied for v in verdicts if isinstance(v, CriterionAnswer))
        return f"{first.reasoning} [satisfied in {yes}/{len(verdicts)} repeats]"
    return first.reasoning


# -- llm-grader ---------------------------------------------------------------------------
