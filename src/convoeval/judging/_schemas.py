"""JSON Schemas for judge answers, and the strict pydantic parsers that match them.

Every answer is an OBJECT whose property keys are fixed in advance (criterion ids, dimension
names). With grammar-constrained decoding (llama.cpp) even a 135M model then cannot invent
ids or loop over an open-ended array; with OpenAI-style strict structured output the same
schema is accepted as is (every object lists all its keys in `required` and sets
`additionalProperties: false`). The free-text field comes BEFORE the verdict so the model
reasons first.

Shapes:
    verdict:  {"reasoning": str, "satisfied": bool}
    score:    {"reasoning": str, "score": int lo..hi}        (key name configurable)
    keyed:    {"<id 1>": <shape>, "<id 2>": <shape>, ...}     all required, nothing else
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Annotated, ClassVar, Generic, TypeVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, JsonValue, StrictBool, StrictStr, create_model

from .._base_model import Model


def _object(properties: dict[str, JsonValue]) -> dict[str, JsonValue]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def verdict_schema(reason_key: str = "reasoning") -> dict[str, JsonValue]:
    """`{"reasoning": string, "satisfied": boolean}`."""
    return _object({reason_key: {"type": "string"}, "satisfied": {"type": "boolean"}})


def score_schema(low: int, high: int, reason_key: str = "reasoning") -> dict[str, JsonValue]:
    """`{"reasoning": string, "score": integer low..high}`."""
    return _object(
        {
            reason_key: {"type": "string"},
            "score": {"type": "integer", "minimum": low, "maximum": high},
        }
    )


def keyed_schema(items: dict[str, dict[str, JsonValue]]) -> dict[str, JsonValue]:
    """An object whose keys are exactly `items` (criterion ids, dimension names)."""
    return _object(dict(items))


class _Strict(Model):
    model_config = ConfigDict(extra="forbid")

    #: Whether a JSON text that validates as this model (`model_validate_json`) gives what
    #: `json.loads` then `model_validate` give: true of the answer shapes below, whose fields
    #: are strict strings and booleans and numbers checked before they are read (tested on
    #: duplicate keys, escapes, surrogates, NaN, exponents); see `parse_answer`.
    json_direct: ClassVar[bool] = False


class CriterionAnswer(_Strict):
    """The judge's answer on one yes/no criterion (not to be confused with `results.Verdict`)."""

    json_direct: ClassVar[bool] = True

    reasoning: StrictStr
    satisfied: StrictBool


class ScoreAnswer(_Strict):
    """The judge's score, after its reasons (read as `reasoning` whatever key the schema names
    them by: TD-Eval's is `justification`). Built per scale by `score_model`."""

    json_direct: ClassVar[bool] = True

    reasoning: StrictStr
    score: int


M = TypeVar("M", bound=BaseModel)


class KeyedAnswer(_Strict, Generic[M]):
    """An answer whose keys are fixed in advance (criterion ids, dimension names), each holding
    an `M`; built by `keyed_model`, read with `values_by_key`."""

    #: `(key, field name)` of each key, in order (set by `keyed_model`).
    keys_by_field: ClassVar[tuple[tuple[str, str], ...]] = ()


def _number_only(value: object) -> object:
    if isinstance(value, (bool, str)):
        raise ValueError("the score must be a JSON number, not a boolean or a string")
    return value


_SCORE_MODELS: dict[tuple[int, int, str], type[ScoreAnswer]] = {}


def score_model(low: int, high: int, reason_key: str = "reasoning") -> type[ScoreAnswer]:
    """The parser of `score_schema(low, high, reason_key)`."""
    key = (low, high, reason_key)
    if key not in _SCORE_MODELS:
        # 7 and 7.0 pass; 7.5, true and "9" do not (a judge must answer with a number).
        score = Annotated[int, BeforeValidator(_number_only), Field(ge=low, le=high)]
        _SCORE_MODELS[key] = create_model(
            f"Score{low}to{high}",
            __base__=ScoreAnswer,
            reasoning=(StrictStr, Field(alias=reason_key)),
            score=(score, ...),
        )
    return _SCORE_MODELS[key]


@lru_cache(maxsize=1024)
def _keyed_model(name: str, items: tuple[tuple[str, type[BaseModel]], ...]) -> type[KeyedAnswer]:
    fields = {f"k{i}": (model, Field(alias=key)) for i, (key, model) in enumerate(items)}
    built: type[KeyedAnswer] = create_model(name, __base__=KeyedAnswer, **fields)  # type: ignore[call-overload]  # a type in a dict is no TypeForm to mypy
    built.json_direct = all(getattr(model, "json_direct", False) for _, model in items)
    built.keys_by_field = tuple((key, f"k{i}") for i, (key, _) in enumerate(items))
    return built


def keyed_model(name: str, items: Mapping[str, type[M]]) -> type[KeyedAnswer[M]]:
    """The parser of `keyed_schema`: every key required, no other key allowed.

    Keys may be any string (`success-codes`, `c1`): each becomes a field with that alias.
    Read the parsed values with `values_by_key(parsed)`. Built once per distinct key set.
    """
    return _keyed_model(name, tuple(items.items()))


def values_by_key(parsed: KeyedAnswer[M]) -> dict[str, M]:
    """`{key: value}` of a model built by `keyed_model` (without the keys an AgentV grader
    target's answer left out: `convoeval.judging._agentv`)."""
    keys = type(parsed).keys_by_field
    if keys:
        values = parsed.__dict__
        return {key: values[name] for key, name in keys if name in values}
    return {info.alias or name: getattr(parsed, name) for name, info in type(parsed).model_fields.items()}
