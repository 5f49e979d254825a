"""Typed settings of the agent targets (validated when the targets file loads: file:line errors)."""

from __future__ import annotations

import re

from pydantic import AliasChoices, ConfigDict, Field, JsonValue, field_validator, model_validator

from ..._base_model import Model
from ..._jsonpath import parse_jsonpath
from ..._regex import check_pattern
from .._base import http_url_problem
from .._settings import HttpSettings, PositiveFloat, ProviderSettings


def _jsonpath(value: str | None) -> str | None:
    if value is not None:
        try:
            parse_jsonpath(value)
        except Exception as exc:  # jsonpath-ng raises several exception types
            raise ValueError(f"not a valid JSONPath: {exc}") from None
    return value


class ProcessSettings(ProviderSettings):
    """What every agent run as a process takes."""

    cwd: str | None = Field(None, description="Working directory (default: the conversation's workspace, else cwd).")
    env: dict[str, str] = Field(default_factory=dict, description="Variables set for the agent process.")
    env_passthrough: list[str] = Field(
        default_factory=list, description="Variables copied from convoeval's environment."
    )


class AgentCliSettings(ProcessSettings):
    """`claude-code` and `codex`: the executable and extra arguments."""

    executable: str | None = Field(None, description="The CLI to run (default: claude / codex on PATH).")
    args: list[str] = Field(default_factory=list, description="Extra arguments, e.g. [--permission-mode, acceptEdits].")
    keep_sessions: str | None = Field(
        None,
        description="A folder (relative to the targets file) the CLI's session files are copied to when a "
        "conversation it ran in the workspace's sandbox ends (its private HOME is then removed).",
    )


class CliSession(Model):
    """How a `cli` command continues a session (makes the target resumable)."""

    model_config = ConfigDict(extra="forbid")

    resume_args: str = Field("", description="Appended to the command on later turns; may use {SESSION_ID}.")
    id_jsonpath: str | None = Field(None, description="Where the session id is in the JSON output.")
    id_regex: str | None = Field(None, description="A regex (group 1) finding the session id in the output.")

    @field_validator("resume_args")
    @classmethod
    def _placeholders_unquoted(cls, value: str) -> str:
        return unquoted_placeholders(value)

    @field_validator("id_jsonpath")
    @classmethod
    def _path(cls, value: str | None) -> str | None:
        return _jsonpath(value)

    @field_validator("id_regex")
    @classmethod
    def _compiles(cls, value: str | None) -> str | None:
        return check_pattern(value) if value is not None else None

    @model_validator(mode="after")
    def _reads_an_id(self) -> CliSession:
        if self.id_jsonpath is None and self.id_regex is None:
            raise ValueError("give id_jsonpath or id_regex (how to read the session id from the output)")
        return self


#: The placeholders of a `cli` command that convoeval fills shell-quoted with text from outside:
#: the prompt, the suite's files and test id, the session id the agent printed (not its own
#: temp file paths, `{PROMPT_FILE}` and `{OUTPUT_FILE}`).
CLI_PLACEHOLDERS = re.compile(r"\{(PROMPT|FILES|EVAL_ID|SESSION_ID)\}")


def unquoted_placeholders(command: str) -> str:
    """`command`, if none of its placeholders stands inside quotes: each is filled shell-quoted
    already, and inside `"..."` the shell would still run a `$(...)` or backquotes in the text
    (a prompt, a session id the agent printed) on this machine."""
    quote: str | None = None
    escaped = False
    for index, char in enumerate(command):
        if escaped:
            escaped = False
        elif char == "\\" and quote != "'":
            escaped = True
        elif quote is None and char in "'\"":
            quote = char
        elif char == quote:
            quote = None
        elif quote is not None and (found := CLI_PLACEHOLDERS.match(command, index)):
            raise ValueError(
                f"{found.group(0)} stands inside quotes ({quote}...{quote}): convoeval quotes it itself; remove"
                " the quotes around it (inside them the shell would run a $(...) in the text)"
            )
    return command


class CliSettings(ProcessSettings):
    """AgentV's `cli` provider."""

    command: str = Field(min_length=1, description="The shell command template ({PROMPT}, {OUTPUT_FILE}, ...).")
    timeout_seconds: PositiveFloat | None = Field(None, description="AgentV's name for timeout_s.")
    files: list[str] = Field(default_factory=list, description="Paths given to {FILES}.")
    files_format: str = Field("{path}", description="How each {FILES} entry is written ({path}, {basename}).")
    keep_temp_files: bool = False
    verbose: bool = False
    session: CliSession | None = None
    healthcheck: dict[str, JsonValue] | None = Field(
        None, description="{command, timeout_s} run, or {url, timeout_s} asked (GET, 2xx), once before the first call."
    )

    @field_validator("command")
    @classmethod
    def _placeholders_unquoted(cls, value: str) -> str:
        return unquoted_placeholders(value)

    @field_validator("healthcheck")
    @classmethod
    def _has_command(cls, value: dict[str, JsonValue] | None) -> dict[str, JsonValue] | None:
        if value is None or isinstance(value.get("command"), str):
            return value
        url = value.get("url")
        if not isinstance(url, str):
            raise ValueError(
                "a healthcheck is {command: SHELL COMMAND, timeout_s: N} or {url: http(s) URL, timeout_s: N}"
            )
        if problem := http_url_problem(url):
            raise ValueError(f"url: {problem}")
        return value


class HttpAgentSettings(HttpSettings):
    """The `http` provider."""

    url: str | None = Field(None, description="The endpoint (default: base_url).")
    body: dict[str, JsonValue] | None = Field(None, description="The request body template.")
    reply_path: str = Field("$.reply", description="JSONPath to the reply text.")
    tool_calls_path: str | None = None
    session_id_path: str | None = None
    usage_path: str | None = None
    cost_path: str | None = Field(None, description="JSONPath to the turn's cost in USD, as the agent reports it.")
    stateful: bool = Field(False, description="Send only the newest user message once a session exists.")

    @field_validator("reply_path", "tool_calls_path", "session_id_path", "usage_path", "cost_path")
    @classmethod
    def _paths(cls, value: str | None) -> str | None:
        return _jsonpath(value)


class PythonSettings(ProviderSettings):
    """The `python` provider."""

    callable_ref: str | None = Field(
        None,
        validation_alias=AliasChoices("callable", "function"),
        description="module:function or path/to/file.py:function.",
    )
    factory: bool | None = Field(None, description="Call it once per conversation (default: true for a class).")
    base_dir: str = Field(".", description="Where relative .py paths are found.")
