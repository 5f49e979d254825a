"""Targets that keep a session or run as a process: agent CLIs (`claude-code`, `codex`, `cli`),
JSON endpoints (`http`) and Python callables (`python`); and the built-in tool agent
(`ToolAgent`) that turns any chat target into an agent. Each loads when first used (the
providers through the registry, see `convoeval.targets.BUILTIN_PROVIDERS`)."""

from typing import TYPE_CHECKING

from ..._lazy import lazy_attributes

if TYPE_CHECKING:
    from ._agent_cli import AgentCli
    from ._claude import ClaudeCodeTarget, parse_stream
    from ._cli import CliTarget
    from ._codex import CodexTarget, parse_events
    from ._codex_rollout import RolloutTurn, find_rollout, read_turns
    from ._http import HttpAgentTarget
    from ._process import Line, agent_env
    from ._python import PythonTarget
    from ._toolloop import ToolAgent
    from ._tools import ToolBox

__getattr__ = lazy_attributes(
    __name__,
    {
        "._agent_cli": ("AgentCli",),
        "._claude": ("ClaudeCodeTarget", "parse_stream"),
        "._cli": ("CliTarget",),
        "._codex": ("CodexTarget", "parse_events"),
        "._codex_rollout": ("RolloutTurn", "find_rollout", "read_turns"),
        "._http": ("HttpAgentTarget",),
        "._process": ("Line", "agent_env"),
        "._python": ("PythonTarget",),
        "._toolloop": ("ToolAgent",),
        "._tools": ("ToolBox",),
    },
)

__all__ = [
    "AgentCli",
    "ClaudeCodeTarget",
    "CliTarget",
    "CodexTarget",
    "HttpAgentTarget",
    "Line",
    "PythonTarget",
    "RolloutTurn",
    "ToolAgent",
    "ToolBox",
    "agent_env",
    "find_rollout",
    "parse_events",
    "parse_stream",
    "read_turns",
]
