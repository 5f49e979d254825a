"""AgentV's judge protocol, read from a program judge (an AgentV `cli` grader target).

Such a program is sent no response schema and answers as AgentV's `llm-grader.ts` asks
(v4.15.0 to v5.3.1; its zod schemas):

    rubrics:     {"checks": [{"id", "satisfied": bool, "reasoning"}], "overall_reasoning"}
    score-range: {"checks": [{"id", "score": int 0-10, "reasoning"?}], "overall_reasoning"?}
    freeform:    {"score": number 0-1, "assertions"?: [{"text", "passed": bool, "evidence"?}]}

A check names its criterion by id: the criterion's own, or `rubric-N`, AgentV's id of the Nth
plain criterion (convoeval's `cN`). As AgentV's `calculateRubricScore` does, a check naming no
criterion is skipped and a criterion no check names is left out of the score (`values_by_key`
then lacks it). A freeform score is put on the 0-10 scale unrounded.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, Field, JsonValue, StrictBool, StrictStr, ValidationError

from .._base_model import Model
from ._prompts import GRADER_SCALE, RUBRIC_ANSWER, grader_parser
from ._schemas import KeyedAnswer, _number_only


class _Check(Model):
    id: StrictStr
    satisfied: JsonValue = None
    score: JsonValue = None
    reasoning: StrictStr | None = None


class _Checks(Model):
    checks: list[_Check]
    overall_reasoning: StrictStr | None = None


class _Assertion(Model):
    text: StrictStr
    passed: StrictBool
    evidence: StrictStr | None = None


class _Freeform(Model):
    score: Annotated[float, BeforeValidator(_number_only), Field(ge=0, le=1)]
    assertions: list[_Assertion] | None = None


def agentv_answer(parser: type[BaseModel], data: JsonValue) -> BaseModel | None:
    """`data` as an answer of `parser` (a rubric's, or llm-grader's) when it is one of AgentV's
    shapes above, else None (other answers, such as a scenario's, are convoeval's alone)."""
    if not isinstance(data, dict):
        return None
    try:
        if issubclass(parser, KeyedAnswer) and parser.__name__ == RUBRIC_ANSWER and "checks" in data:
            return _keyed(parser, _Checks.model_validate(data))
        if parser is grader_parser() and "score" in data:
            return _freeform(parser, _Freeform.model_validate(data))
    except ValidationError:
        return None
    return None


def _keyed(parser: type[KeyedAnswer[Any]], answer: _Checks) -> BaseModel | None:
    fields = dict(parser.keys_by_field)
    values: dict[str, Any] = {}
    for check in answer.checks:
        key = "c" + check.id.removeprefix("rubric-") if check.id.startswith("rubric-") else check.id
        name = fields.get(check.id) or fields.get(key)
        if name is None:  # AgentV skips a check naming no criterion
            continue
        model = parser.model_fields[name].annotation
        assert isinstance(model, type) and issubclass(model, BaseModel)
        if "score" in model.model_fields:  # score-range: reasoning optional
            verdict: dict[str, JsonValue] = {"reasoning": check.reasoning or "", "score": check.score}
        elif answer.overall_reasoning is None or check.reasoning is None:
            return None  # not AgentV's yes/no rubric answer (v5 reads that as promptfoo's)
        else:
            verdict = {"reasoning": check.reasoning, "satisfied": check.satisfied}
        values[name] = model.model_validate(verdict)
    return parser.model_construct(**values)


def _freeform(parser: type[BaseModel], answer: _Freeform) -> BaseModel:
    """The 0-1 score on the 0-10 scale, the assertions as the reasoning."""
    reasons = [
        f"{'passed' if a.passed else 'failed'}: {a.text}" + (f" ({a.evidence})" if a.evidence else "")
        for a in answer.assertions or []
    ]
    return parser.model_construct(reasoning="; ".join(reasons), score=answer.score * GRADER_SCALE)
