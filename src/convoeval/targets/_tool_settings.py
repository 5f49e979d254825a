"""Settings of the built-in tool agent: `agent:` of a targets-file entry."""

from __future__ import annotations

from pydantic import ConfigDict, Field, JsonValue, model_validator

from .._base_model import Model
from .._sandbox import SandboxSettings

#: The longest any timeout may be (a day): `timeout_s: 1e999` is an error at load, not a hang.
MAX_SECONDS = 86_400.0
#: The tools every workspace offers, by name.
BUILTIN_TOOLS = ("bash", "read_file", "write_file", "edit_file", "list_files")


def _no_parameters() -> dict[str, JsonValue]:
    """The JSON Schema of a tool without parameters."""
    return {"type": "object", "properties": {}}


class UserTool(Model):
    """A tool declared in YAML: its JSON-schema `parameters` and what runs it, either `command`
    (a shell command run in the workspace; the arguments arrive as JSON on stdin and in
    `$TOOL_ARGS`; stdout is the result) or `python` (`file.py:function` or `module:function`,
    called with the arguments as keywords; what it returns is the result)."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=r"^[A-Za-z0-9_-]{1,64}$")
    description: str = ""
    parameters: dict[str, JsonValue] = Field(default_factory=_no_parameters)
    command: str | None = None
    python: str | None = None
    timeout_s: float = Field(30.0, gt=0, le=MAX_SECONDS)

    @model_validator(mode="after")
    def _one_implementation(self) -> UserTool:
        if (self.command is None) == (self.python is None):
            raise ValueError(f"tool {self.name!r} needs exactly one of `command` or `python`")
        return self


class ToolAgentSettings(Model):
    """`agent:` wraps a chat target in convoeval's tool loop (model -> tool calls -> results ->
    model, within each turn) with built-in tools run in the trial's workspace and user tools."""

    model_config = ConfigDict(extra="forbid")

    tools: list[str | UserTool] = Field(default_factory=lambda: list[str | UserTool](BUILTIN_TOOLS))
    max_tool_calls: int = Field(
        30, ge=1, le=100_000, description="Tool calls per turn at most; reaching it ends the turn."
    )
    max_seconds: float = Field(300.0, gt=0, le=MAX_SECONDS, description="Seconds per turn at most.")
    bash_timeout_s: float = Field(30.0, gt=0, le=MAX_SECONDS)
    output_chars: int = Field(8000, ge=100, le=10_000_000, description="Longest tool output the model is shown.")
    system_prompt: str | None = Field(None, description="Prepended as a system message to each call.")
    sandbox: SandboxSettings | None = Field(
        None, description="Network and limits of the `bash` and command tools' sandbox (`network: true` allows it)."
    )

    @model_validator(mode="after")
    def _known_tools(self) -> ToolAgentSettings:
        names = [t if isinstance(t, str) else t.name for t in self.tools]
        unknown = [n for n in self.tools if isinstance(n, str) and n not in BUILTIN_TOOLS]
        if unknown:
            raise ValueError(f"unknown built-in tool {unknown[0]!r} (built in: {', '.join(BUILTIN_TOOLS)})")
        if len(set(names)) != len(names):
            raise ValueError("tool names must be unique")
        return self
