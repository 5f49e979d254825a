"""LLM-judged assertions: `rubrics` and `llm-grader` (`composite` is in `_composite`).

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

import math
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    field_validator,
    model_validator,
)

from .._paths import confined_file
from .._templates import TemplateProblem, check_template, render
from ..judging import (
    JudgeSession,
    RubricItem,
    Subject,
    default_grader_messages,
    grader_messages,
    grader_parser,
    grader_schema,
    repeat_summary,
    rubric_messages,
    rubric_parser,
    rubric_schema,
    values_by_key,
)
from ..results import AssertionOutcome
from ._base import Assertion, Grade, GradeContext, GraderError, assertion_type
from ._prompt_command import PromptCommand

_OUTCOME = AliasChoices("outcome", "expected_outcome", "description")


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


class ScoreRange(BaseModel):
    """One band of a score-range criterion: `{score_range: [lo, hi], outcome}` over 0..10."""

    model_config = ConfigDict(extra="forbid")

    score_range: tuple[int, int]
    outcome: str = Field(validation_alias=_OUTCOME)


class RubricCriterion(BaseModel):
    """One criterion of a `rubrics` assertion.

    A yes/no check (`outcome`) or, with `score_ranges`, a 0-10 analytic score. `required`
    (default true): when it fails, the grader fails whatever its score. `min_score` (0-1): the
    normalised score it needs to pass.
    """

    model_config = ConfigDict(extra="forbid")

    id: str | None = Field(None, description="Key of its verdict (default c1, c2, ...).")
    outcome: str | None = Field(None, validation_alias=_OUTCOME, description="What must hold (alias expected_outcome).")
    weight: float = Field(1.0, ge=0, description="Weight in the rubric score.")
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


@assertion_type
class Rubrics(Assertion):
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

    uses_judge: ClassVar[bool] = True

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

    async def grade(self, ctx: GradeContext) -> Grade:
        assert ctx.judge is not None
        resolved = self.resolved()
        items = [item for item, _ in resolved]
        subject = subject_for(ctx, expected_output=ctx.expected_output, criteria=ctx.criteria)
        session = judge_session(ctx)
        answers = await session.ask_repeated(
            rubric_messages(subject, items),
            rubric_schema(items),
            rubric_parser(items),
            repeats=ctx.judge_repeats,
            name="rubric",
        )
        runs = [values_by_key(answer) for answer in answers.values]
        mark = pass_mark(self, ctx)
        outcomes: list[AssertionOutcome] = []
        per_criterion: dict[str, Any] = {}
        weights: list[float] = []
        run_scores = [[0.0] * len(resolved) for _ in runs]
        failed_required: list[str] = []
        criterion_scores: list[float] = []
        for index, (item, criterion) in enumerate(resolved):
            verdicts = [run[item.id] for run in runs]
            if item.scored:
                norms = [v.score / 10 for v in verdicts]
            else:
                norms = [1.0 if v.satisfied else 0.0 for v in verdicts]
            for r, norm in enumerate(norms):
                run_scores[r][index] = norm
            value = _mean(norms)
            gate = criterion.gate
            if gate is not None:
                passed = value >= gate - 1e-9
            elif item.scored:
                passed = value >= mark - 1e-9
            else:
                passed = value > 0.5
            if criterion.required_min_score is not None or criterion.required:
                if not passed:
                    failed_required.append(item.id)
            criterion_scores.append(value)
            weights.append(criterion.weight)
            outcomes.append(
                AssertionOutcome(
                    text=item.text or item.id,
                    passed=passed,
                    evidence=_evidence(item, verdicts),
                )
            )
            per_criterion[item.id] = {
                **(
                    {"judge_score": _one_or_all([v.score for v in verdicts])}
                    if item.scored
                    else {"satisfied": _one_or_all([v.satisfied for v in verdicts])}
                ),
                "score": round(value, 6),
                "weight": criterion.weight,
                "required": criterion.required,
                "passed": passed,
            }
        score = weighted_mean(criterion_scores, weights)
        details: dict[str, Any] = {"criteria": per_criterion}
        if answers.count > 1:
            details.update(repeat_summary([weighted_mean(s, weights) for s in run_scores]))
        if answers.errors:
            details["repeat_errors"] = answers.errors
        return Grade.judged(
            session,
            score,
            outcomes,
            details,
            passed=False if failed_required else None,
            failed_required=failed_required,
        )


def _one_or_all(values: list[Any]) -> Any:
    return values[0] if len(values) == 1 else values


def weighted_mean(values: list[float], weights: list[float]) -> float:
    """The weighted mean (the plain mean when the weights sum to 0)."""
    total = math.fsum(weights)
    if total <= 0:
        return _mean(values)
    return math.fsum(v * w for v, w in zip(values, weights, strict=True)) / total


def _evidence(item: RubricItem, verdicts: list[Any]) -> str:
    first = verdicts[0]
    if item.scored:
        band = next((d for lo, hi, d in item.bands if lo <= first.score <= hi), "")
        text = f"{first.score}/10" + (f" ({band})" if band else "") + f": {first.reasoning}"
        if len(verdicts) > 1:
            text += f" [scores over {len(verdicts)} repeats: {', '.join(str(v.score) for v in verdicts)}]"
        return text
    if len(verdicts) > 1:
        yes = sum(v.satisfied for v in verdicts)
        return f"{first.reasoning} [satisfied in {yes}/{len(verdicts)} repeats]"
    return first.reasoning


# -- llm-grader ---------------------------------------------------------------------------


@assertion_type
class LLMGrader(Assertion):
    """A judge scores the reply (or the conversation) 0-10 (normalised to 0-1).

    `prompt` is inline Jinja2 text or `file://path` (relative to the eval file's folder) with
    `{{ input }}`, `{{ output }}`, `{{ criteria }}`, `{{ expected_output }}` (and AgentV's names
    for them) and captured variables. An inline prompt without `{{ }}` is criteria text, judged
    with the default grading prompt (as AgentV does); a bare path is inline text too. Without a prompt, the
    judge compares the reply with the expected output and/or the criteria. The judge always
    answers `{"reasoning": str, "score": int 0-10}`.
    """

    type: Literal["llm-grader"]
    prompt: str | PromptCommand | None = Field(
        None, description="Jinja2 prompt text, file://relative/path, or {command, config}: a program printing it."
    )
    criteria: str | None = Field(None, description="Overrides the test's criteria.")
    expected_output: str | None = Field(None, description="Overrides the turn's expected_output.")

    uses_judge: ClassVar[bool] = True

    def _prompt_file(self) -> str | None:
        """The path of a `file://` prompt; any other prompt is inline text (as in AgentV >= 4.6)."""
        prompt = self.prompt.strip() if isinstance(self.prompt, str) else ""
        return prompt[len("file://") :] if prompt.startswith("file://") else None

    @property
    def prompt_is_criteria(self) -> bool:
        """An inline prompt without template syntax is AgentV's criteria text: it goes inside
        the default grading prompt, with the conversation and the reply."""
        prompt = self.prompt if isinstance(self.prompt, str) else ""
        return bool(prompt.strip()) and self._prompt_file() is None and "{{" not in prompt and "{%" not in prompt

    def path_like_prompt(self, base_dir: Path) -> str | None:
        """The prompt, when it is one word naming an existing file (it is still sent as text)."""
        if (
            not self.prompt_is_criteria
            or not isinstance(self.prompt, str)
            or any(c.isspace() for c in self.prompt.strip())
        ):
            return None
        prompt = self.prompt.strip()
        return prompt if (base_dir / prompt).is_file() else None

    def template_problems(self, known: frozenset[str]) -> list[tuple[str, str]]:
        if not isinstance(self.prompt, str) or not self.prompt or self._prompt_file() is not None:
            return []
        problem = check_template(self.prompt, known)
        return [("prompt", problem)] if problem else []

    def file_problems(self, base_dir: Path) -> list[tuple[str, str]]:
        if isinstance(self.prompt, PromptCommand):
            missing = self.prompt.missing_file(base_dir)
            return [("prompt.command", missing)] if missing else []
        relative = self._prompt_file()
        if relative is None:
            return []
        try:
            confined_file(relative, base_dir)
        except ValueError as exc:
            return [("prompt", str(exc))]
        return []

    def _load_prompt(self, ctx: GradeContext) -> str:
        assert isinstance(self.prompt, str)
        relative = self._prompt_file()
        if relative is None:
            return self.prompt
        try:
            return confined_file(relative, ctx.base_dir).read_text(encoding="utf-8")
        except ValueError as exc:
            if str(exc).endswith("no such file"):
                raise GraderError(
                    f"prompt file {relative!r} cannot be read (no such file); "
                    "paths are relative to the eval file's folder"
                ) from None
            raise GraderError(f"prompt file: {exc}") from None
        except OSError as exc:
            raise GraderError(
                f"prompt file {relative!r} cannot be read ({exc.strerror or exc}); "
                "paths are relative to the eval file's folder"
            ) from None

    async def grade(self, ctx: GradeContext) -> Grade:
        assert ctx.judge is not None
        criteria = self.criteria if self.criteria is not None else ctx.criteria
        expected = self.expected_output if self.expected_output is not None else ctx.expected_output
        if isinstance(self.prompt, PromptCommand):  # AgentV's executable prompt template
            messages = grader_messages(await self.prompt.render(ctx, criteria, expected))
            what = f"{self.name or 'llm-grader'}: prompt from `{' '.join(self.prompt.command)}`"
        elif self.prompt_is_criteria:
            assert isinstance(self.prompt, str)
            criteria = self.prompt.strip()
            messages = default_grader_messages(subject_for(ctx, expected_output=expected, criteria=criteria))
            what = _default_outcome(expected, criteria, ctx.level)
        elif self.prompt:
            variables = {
                **ctx.template_vars(),
                "criteria": criteria or "",
                "expected_outcome": criteria or "",
                "expected_output": expected or "",
                "expected_output_text": expected or "",
                "reference_answer": expected or "",
            }
            try:
                text = render(self._load_prompt(ctx), variables)
            except TemplateProblem as exc:
                raise GraderError(f"prompt: {exc}") from None
            messages = grader_messages(text)
            what = f"{self.name or 'llm-grader'}: judge prompt"
        else:
            messages = default_grader_messages(subject_for(ctx, expected_output=expected, criteria=criteria))
            what = _default_outcome(expected, criteria, ctx.level)
        session = judge_session(ctx)
        answers = await session.ask_repeated(
            messages, grader_schema(), grader_parser(), repeats=ctx.judge_repeats, name="llm_grader"
        )
        raw = [a.score for a in answers.values]
        score = _mean([r / 10 for r in raw])
        first = answers.values[0]
        evidence = f"{first.score}/10: {first.reasoning}"
        if len(raw) > 1:
            evidence += f" [scores over {len(raw)} repeats: {', '.join(map(str, raw))}]"
        details: dict[str, Any] = {"judge_score": raw[0] if len(raw) == 1 else raw, "scale": "0-10"}
        if answers.count > 1:
            details.update(repeat_summary([r / 10 for r in raw]))
        if answers.errors:
            details["repeat_errors"] = answers.errors
        outcome = AssertionOutcome(text=what, passed=score >= pass_mark(self, ctx) - 1e-9, evidence=evidence)
        return Grade.judged(session, score, [outcome], details)


def _default_outcome(expected: str | None, criteria: str | None, level: str) -> str:
    subject = "conversation" if level == "conversation" else "reply"
    if expected and criteria:
        return f"{subject} matches the expected output and meets: {criteria.strip()}"
    if expected:
        return f"{subject} matches the expected output"
    if criteria:
        return f"{subject} meets: {criteria.strip()}"
    return f"{subject} is correct, relevant and helpful"
