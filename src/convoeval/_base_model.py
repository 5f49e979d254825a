"""`Model`: the pydantic base of convoeval's models, built when first used.

pydantic builds a model's validator and serializer when its class is defined unless the
model defers it; convoeval defines about a hundred models and a run uses a fraction of them,
so every one defers (`defer_build`): a command pays only for the models it validates or dumps.

Building a model asks `inspect.signature` whether each default factory takes the validated
data. For the builtins `list`, `dict` and `set` that means parsing their text signature,
about 90 microseconds each: the fields of the models a one-test run builds spent 1.7% of the
run there. `Model` gives those fields Python functions that make the same empty containers.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict


def _new_list() -> list[Any]:
    return []


def _new_dict() -> dict[Any, Any]:
    return {}


def _new_set() -> set[Any]:
    return set()


#: Builtin default factories and the functions that stand in for them (same values, a signature
#: `inspect` reads from the code object).
_FACTORIES: dict[object, Any] = {list: _new_list, dict: _new_dict, set: _new_set}


class Model(BaseModel):
    """A pydantic model built on first use; subclasses add their own `model_config` keys."""

    model_config = ConfigDict(defer_build=True)

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        for field in cls.__pydantic_fields__.values():
            factory = _FACTORIES.get(field.default_factory)
            if factory is not None:
                field.default_factory = factory
