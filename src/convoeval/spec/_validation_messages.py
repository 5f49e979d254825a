"""Pydantic validation errors -> `field: message` problems worded for eval-file authors."""

from __future__ import annotations

import typing

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from ..errors import suggest
from ._agentv import V5_FIELDS, v5_message
from ._lines import DataPath, Key


def validation_problems(
    exc: ValidationError, data: object, prefix: DataPath, model: type[BaseModel]
) -> list[tuple[DataPath, str]]:
    """The problems of one pydantic validation of `data` (found at `prefix`) as (path, message)."""
    found: list[tuple[DataPath, str, str, DataPath | None]] = []
    for error in exc.errors(include_url=False):
        path, union_at = _data_path(error["loc"], data)
        union_at = None if union_at is None else (*prefix, *union_at)
        found.append(((*prefix, *path), error["type"], _message(error, model), union_at))
    # Every member of a union reports; where one member got past the type check (its
    # errors lie deeper), drop the other members' plain type mismatches at the union.
    deeper = {u for p, _, _, u in found if u is not None and len(p) > len(u)}
    problems: list[tuple[DataPath, str]] = []
    mismatches: dict[DataPath, list[str]] = {}
    for path, kind, message, union_at in found:
        if union_at is not None and path == union_at and kind in _TYPE_MISMATCH:
            if union_at not in deeper:
                mismatches.setdefault(path, []).append(message)
            continue
        problems.append((path, message))
    for path, messages in mismatches.items():
        problems.append((path, "; or ".join(dict.fromkeys(messages))))
    return problems


_TYPE_MISMATCH = {
    "string_type",
    "list_type",
    "dict_type",
    "int_type",
    "int_parsing",
    "float_type",
    "float_parsing",
    "bool_type",
    "bool_parsing",
    "model_type",
    "model_attributes_type",
    "literal_error",
    "int_from_float",
}


def _data_path(loc: tuple[int | str, ...], data: object) -> tuple[DataPath, DataPath | None]:
    """Pydantic's error location -> the path in the data, dropping union member tags.

    Also returns the data path at which a union member tag was dropped (or None).
    """
    path: list[Key] = []
    union_at: DataPath | None = None
    current = data
    for k, part in enumerate(loc):
        if isinstance(current, dict) and part in current:
            current = current[part]
            path.append(part)
        elif isinstance(current, list) and isinstance(part, int) and 0 <= part < len(current):
            current = current[part]
            path.append(part)
        elif k == len(loc) - 1 and isinstance(part, (str, int)) and not _looks_like_tag(part):
            path.append(part)  # a missing or unknown field
            current = None
        else:
            if union_at is None:
                union_at = tuple(path)
    return tuple(path), union_at


def _looks_like_tag(part: int | str) -> bool:
    return isinstance(part, str) and ("[" in part or part in {"str", "int", "float", "bool", "dict", "list"})


def _message(error: ErrorDetails, model: type[BaseModel]) -> str:
    kind = error["type"]
    if kind == "missing":
        return "required field is missing"
    if kind == "extra_forbidden":
        key = error["loc"][-1]
        if key in V5_FIELDS:
            return v5_message(str(key))
        models = _models_at(model, error["loc"][:-1])
        fields = {name for m in models for name in m.model_fields}
        peer = PEER_FIELDS.get(str(key))
        if peer is not None and peer[0] in fields:
            return f"unknown field {key!r} (did you mean {peer[0]!r}? {peer[1]})"
        close = suggest(str(key), fields)
        return f"unknown field {key!r}{close or _nested(models, str(key))}"
    if kind == "model_type" and "input" in error:  # not "a valid dictionary or instance of Turn"
        models = _models_at(model, error["loc"])
        needed = [f"`{n}: ...`" for n, info in models[0].model_fields.items() if info.is_required()]
        shape = f"a mapping with {', '.join(needed)}" if len(models) == 1 and needed else "a mapping"
        return f"must be {shape} (the YAML value is {_yaml_type(error['input'])})"
    if kind in _TYPE_MISMATCH and "input" in error:
        return f"{error['msg']} (the YAML value is {_yaml_type(error['input'])})"
    return str(error["msg"]).removeprefix("Value error, ")


#: Fields as other tools name them: (convoeval's field, whose name it is), said where that field is.
PEER_FIELDS = {
    "threshold": ("min_score", "promptfoo's and DeepEval's `threshold`"),
    "content": ("input", "the user's message is `input`"),
}


def _yaml_type(value: object) -> str:
    """How YAML read a value, for error messages: `true` is a boolean, `12` an integer..."""
    if value is None:
        return "null (empty)"
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}; quote it to make it text"
    if isinstance(value, int):
        return f"the integer {value}"
    if isinstance(value, float):
        return f"the number {value}"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return type(value).__name__


def _nested(models: list[type[BaseModel]], key: str) -> str:
    """` (did you mean 'execution.trials'?)` when `key` is a field one level down (a test's
    `trials` belongs in its `execution`), or an empty string."""
    for m in models:
        for name, info in m.model_fields.items():
            if any(key in inner.model_fields for inner in _models_in(info.annotation)):
                return f" (did you mean '{name}.{key}'?)"
    return ""


def _models_at(model: type[BaseModel], loc: tuple[int | str, ...]) -> list[type[BaseModel]]:
    """The models of the object at pydantic location `loc` under `model` (what a misspelt key
    there may have meant); union members are followed by field name or by their tag."""
    candidates = [model]
    for part in loc:
        if isinstance(part, int):
            continue
        inner = [
            sub for m in candidates if part in m.model_fields for sub in _models_in(m.model_fields[part].annotation)
        ]
        if inner:
            candidates = inner
        else:  # a union tag (`TrialsConfig`) or a dict key
            candidates = [m for m in candidates if m.__name__ == part] or candidates
    return candidates


def _models_in(annotation: object) -> list[type[BaseModel]]:
    """The pydantic models inside a type annotation (`list[Test] | None` -> [Test])."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for arg in typing.get_args(annotation) for m in _models_in(arg)]
