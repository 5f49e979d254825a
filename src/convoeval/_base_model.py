"""`Model`: the pydantic base of convoeval's models, built when first used.

pydantic builds a model's validator and serializer when its class is defined unless the
model defers it; convoeval defines about a hundred models and a run uses a fraction of them,
so every one defers (`defer_build`): a command pays only for the models it validates or dumps.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Model(BaseModel):
    """A pydantic model built on first use; subclasses add their own `model_config` keys."""

    model_config = ConfigDict(defer_build=True)
