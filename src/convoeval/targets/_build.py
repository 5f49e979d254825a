"""Building a target from its config: the provider's factory, wrapped in the tool agent when
the config asks for one (`agent:`)."""

from __future__ import annotations

from .. import registry
from . import agents
from ._base import Target, TargetConfig, TargetError, provider_names


def create_target(config: TargetConfig) -> Target:
    """Build the target a config describes."""
    if config._unusable:
        raise TargetError(config._unusable)
    factory = registry.lookup("provider", config.provider)
    if factory is None:
        raise TargetError(f"unknown provider {config.provider!r} (known: {', '.join(provider_names())})")
    target: Target = factory(config)
    if config.agent is not None:
        target = agents.ToolAgent(target, config.agent, config.source_dir)
    return target
