"""OpenAI Codex CLI: `codex exec --json PROMPT`, later turns `codex exec resume THREAD_ID --json PROMPT`.

Events (one JSON object a line): `thread.started` (`thread_id`), `turn.started`,
`item.started` / `item.updated` / `item.completed` with an `item` of type `agent_message`
(text), `reasoning`, `command_execution` (command, aggregated_output, exit_code),
`file_change` (changes), `mcp_tool_call` (server, tool, arguments, result, error),
`web_search` (query), `todo_list`, `error`; then `turn.completed` (`usage`) or `turn.failed`
(`error.message`); a top-level `error` event is fatal.
"""

from __future__ import annotations

import json
from typing import Any

from ...results import ToolCall, Usage
from .._base import ChatReply, ChatRequest, TargetConfig, TargetError, provider
from .._settings import settings_of
from ._process import Line, agent_env, failure, run_command, work_dir
from ._replies import prompt_text
from ._settings import AgentCliSettings

#: Variables Codex reads for its credentials and configuration.
CODEX_ENV = ("OPENAI_API_KEY", "CODEX_API_KEY", "OPENAI_BASE_URL", "CODEX_HOME")


@provider("codex")
class CodexTarget:
    """Settings: `model` (`--model`), `executable` (default `codex`), `args` (extra arguments
    after `exec`, e.g. `[--skip-git-repo-check, --sandbox, workspace-write]`), `cwd`,
    `timeout_s`, `env` / `env_passthrough`, prices per million tokens (cost from usage)."""

    session = "resume"
    cacheable = False
    settings_model = AgentCliSettings

    def __init__(self, config: TargetConfig):
        self.config = config
        self.name = config.name
        self.settings: AgentCliSettings = settings_of(config)
        self.executable = self.settings.executable or "codex"
        self.args = self.settings.args

    def argv(self, request: ChatRequest) -> list[str]:
        system, prompt = prompt_text(request.messages)
        if system and not request.session_id:
            prompt = f"{system}\n\n{prompt}"
        argv = [self.executable, "exec"]
        if request.session_id:
            argv += ["resume", request.session_id]
        argv.append("--json")
        if self.config.model:
            argv += ["--model", self.config.model]
        return [*argv, *self.args, prompt]

    async def chat(self, request: ChatRequest) -> ChatReply:
        env, secrets = agent_env(self.config, self.settings, CODEX_ENV)
        cwd = request.workdir or work_dir(self.config, self.settings.cwd)
        finished = await run_command(
            self.argv(request), cwd=cwd, env=env, timeout_s=self.config.timeout_s, name=self.name, secrets=secrets
        )
        try:
            reply = parse_events(finished.lines, request.session_id)
        except TargetError as exc:
            if finished.returncode and "turn.completed" in str(exc):
                raise failure(self.name, finished, secrets) from None
            raise TargetError(f"{self.name}: {exc}") from None
        prices = (self.config.price_input_per_mtok or 0.0, self.config.price_output_per_mtok or 0.0)
        reply.cost_usd = (reply.usage.input_tokens * prices[0] + reply.usage.output_tokens * prices[1]) / 1e6
        reply.latency_ms = finished.duration_ms
        return reply

    async def aclose(self) -> None:
        return None


def parse_events(lines: list[Line], thread_id: str | None = None) -> ChatReply:
    """The reply in a `codex exec --json` event stream.

    Raises:
        TargetError: `turn.failed`, a top-level `error`, or no `turn.completed`.
    """
    texts: list[str] = []
    calls: dict[str, ToolCall] = {}
    started: dict[str, float] = {}
    usage: Usage | None = None
    for line in lines:
        event = _event(line.text)
        if event is None:
            continue
        kind = event.get("type")
        if kind == "thread.started":
            thread_id = str(event.get("thread_id") or "") or thread_id
        elif kind == "item.started" and isinstance(event.get("item"), dict):
            started[str(event["item"].get("id"))] = line.at
        elif kind == "item.completed" and isinstance(event.get("item"), dict):
            item = event["item"]
            if item.get("type") == "agent_message" and item.get("text"):
                texts.append(str(item["text"]))
            call = _tool_call(item)
            if call is not None:
                item_id = str(item.get("id"))
                if item_id in started:
                    call.duration_ms = round((line.at - started[item_id]) * 1000, 3)
                calls[item_id] = call
        elif kind == "turn.completed":
            data = event.get("usage") or {}
            usage = Usage(
                input_tokens=int(data.get("input_tokens") or 0), output_tokens=int(data.get("output_tokens") or 0)
            )
        elif kind == "turn.failed":
            message = (event.get("error") or {}).get("message", "") if isinstance(event.get("error"), dict) else ""
            raise TargetError(f"Codex turn failed: {message or 'no message'}")
        elif kind == "error":
            raise TargetError(f"Codex error: {event.get('message') or 'no message'}")
    if usage is None:
        raise TargetError("the event stream ended without `turn.completed`")
    return ChatReply(text="\n\n".join(texts), usage=usage, tool_calls=list(calls.values()), session_id=thread_id)


def _tool_call(item: dict[str, Any]) -> ToolCall | None:
    """A completed item as a tool call (None for messages, reasoning and plans)."""
    kind, item_id = item.get("type"), item.get("id")
    if kind == "command_execution":
        code = item.get("exit_code")
        return ToolCall(
            name="command_execution",
            arguments={"command": item.get("command", "")},
            output=item.get("aggregated_output", ""),
            id=item_id,
            error=None if code in (0, None) and item.get("status") != "failed" else f"exit code {code}",
        )
    if kind == "file_change":
        return ToolCall(
            name="file_change",
            arguments={"changes": item.get("changes") or []},
            id=item_id,
            output=item.get("status"),
            error="patch failed" if item.get("status") == "failed" else None,
        )
    if kind == "mcp_tool_call":
        error = item.get("error")
        arguments = item.get("arguments") if isinstance(item.get("arguments"), dict) else {}
        return ToolCall(
            name=str(item.get("tool", "")),
            arguments=arguments,
            id=item_id,
            output=item.get("result"),
            error=error.get("message") if isinstance(error, dict) else (str(error) if error else None),
        )
    if kind == "web_search":
        return ToolCall(name="web_search", arguments={"query": item.get("query", "")}, id=item_id)
    return None


def _event(text: str) -> dict[str, Any] | None:
    if not text.strip().startswith("{"):
        return None
    try:
        event = json.loads(text)
    except json.JSONDecodeError:
        return None
    return event if isinstance(event, dict) else None
