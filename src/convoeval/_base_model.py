"""`Model`: the pydantic base of convoeval's models, built when first used.

pydantic builds a model's validator and serializer when its class is defined unless the
model defers it; convoeval defines about a hundred models and a run uses a fraction of them,
so every one defers (`defer_build`): a command pays only for the models it validates or dumps.

Building a model asks `inspect.signature` whether each default factory takes the validated
data. For the builtins `list`, `dict` and `set` that means parsing their text signature,
about 90 microseconds each: the fields of the models a one-test run builds spent 1.7% of the
run there. `Model` gives those fields Python functions that make the same empty containers.

The first model built makes pydantic look for its plugins (the `pydantic` entry-point group),
parsing the entry points of every installed distribution: 2% of a one-test run in an
environment of 180 packages. When no distribution declares that group (the text of their
`entry_points.txt` files says so), pydantic is told there are none, which is what its own
search would find; when one does, pydantic searches and loads its plugins as always.
"""

from __future__ import annotations

import importlib.metadata
import os
import re
from collections.abc import Callable

from pydantic import BaseModel, ConfigDict
from pydantic.plugin import _loader as pydantic_plugins

#: A `[pydantic]` section of an `entry_points.txt` file.
_PLUGIN_GROUP = re.compile(r"^\s*\[\s*pydantic\s*\]\s*$", re.MULTILINE)


def _pydantic_plugins_declared() -> bool:
    """Whether an installed distribution declares an entry point of pydantic's plugin group."""
    for dist in importlib.metadata.distributions():
        text = dist.read_text("entry_points.txt")
        if text and _PLUGIN_GROUP.search(text):
            return True
    return False


if (
    getattr(pydantic_plugins, "_plugins", False) is None  # not looked for yet (a pydantic that has this cache)
    and os.environ.get("PYDANTIC_DISABLE_PLUGINS") is None
    and not _pydantic_plugins_declared()
):
    pydantic_plugins._plugins = {}


def _new_list() -> list[object]:
    return []


def _new_dict() -> dict[object, object]:
    return {}


def _new_set() -> set[object]:
    return set()


#: Builtin default factories and the functions that stand in for them (same values, a signature
#: `inspect` reads from the code object).
_FACTORIES: dict[object, Callable[[], object]] = {list: _new_list, dict: _new_dict, set: _new_set}


class Model(BaseModel):
    """A pydantic model built on first use; subclasses add their own `model_config` keys."""

    model_config = ConfigDict(defer_build=True)

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: object) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        for field in cls.__pydantic_fields__.values():
            factory = _FACTORIES.get(field.default_factory)
            if factory is not None:
                field.default_factory = factory
