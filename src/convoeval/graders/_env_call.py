"""A call of a domain's environment function (tau2-bench's `EnvFunctionCall`): what sets a task's
initial state up (`initial_actions` of a test or of `tau-reward`) or checks its final one."""

from __future__ import annotations

from pydantic import ConfigDict, Field

from .._base_model import Model


class EnvCall(Model):
    """A call of an environment function: `name(state, /, **arguments)`."""

    model_config = ConfigDict(extra="forbid")

    name: str
    arguments: dict[str, object] = Field(default_factory=dict)
