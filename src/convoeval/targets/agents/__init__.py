"""Targets that keep a session or run as a process: agent CLIs (`claude-code`, `codex`, `cli`),
JSON endpoints (`http`) and Python callables (`python`), which register on import; and the
built-in tool agent (`ToolAgent`) that turns any chat target into an agent."""

from . import _claude, _cli, _codex, _http, _python  # noqa: F401
from ._claude import ClaudeCodeTarget, parse_stream
from ._cli import CliTarget
from ._codex import CodexTarget, parse_events
from ._http import HttpAgentTarget
from ._process import Line, agent_env
from ._python import PythonTarget
from ._toolloop import ToolAgent
from ._tools import ToolBox

__all__ = [
    "ClaudeCodeTarget",
    "CliTarget",
    "CodexTarget",
    "HttpAgentTarget",
    "Line",
    "PythonTarget",
    "ToolAgent",
    "ToolBox",
    "agent_env",
    "parse_events",
    "parse_stream",
]
