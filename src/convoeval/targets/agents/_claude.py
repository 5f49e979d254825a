"""Claude Code in headless mode: `claude -p PROMPT --output-format stream-json --verbose`.

Turn 1 starts a session; later turns add `--resume SESSION_ID`. The stream is one JSON event
a line: `system`/`init` (the `session_id`), `assistant` messages whose content blocks are
`text` and `tool_use`, `user` messages carrying `tool_result` blocks, and a final `result`
(`result` text, `session_id`, `total_cost_usd`, `usage`, `is_error`).
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

#: Variables Claude Code reads for its credentials and endpoint.
CLAUDE_ENV = (
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "ANTHROPIC_BASE_URL",
    "CLAUDE_CODE_USE_BEDROCK",
    "CLAUDE_CODE_USE_VERTEX",
    "CLAUDE_CONFIG_DIR",
)


@provider("claude-code")
class ClaudeCodeTarget:
    """Settings (targets file): `model` (passed as `--model`), `executable` (default
    `claude`), `args` (extra arguments, e.g. `[--permission-mode, acceptEdits]`), `cwd`
    (default: the conversation's workspace, else the current directory), `timeout_s`,
    `env` / `env_passthrough` (see `agent_env`)."""

    session = "resume"
    cacheable = False
    settings_model = AgentCliSettings

    def __init__(self, config: TargetConfig):
        self.config = config
        self.name = config.name
        self.settings: AgentCliSettings = settings_of(config)
        self.executable = self.settings.executable or "claude"
        self.args = self.settings.args

    def argv(self, request: ChatRequest) -> list[str]:
        system, prompt = prompt_text(request.messages)
        argv = [self.executable, "-p", prompt, "--output-format", "stream-json", "--verbose"]
        if request.session_id:
            argv += ["--resume", request.session_id]
        if system and not request.session_id:
            argv += ["--append-system-prompt", system]
        if self.config.model:
            argv += ["--model", self.config.model]
        return argv + self.args

    async def chat(self, request: ChatRequest) -> ChatReply:
        env, secrets = agent_env(self.config, self.settings, CLAUDE_ENV)
        cwd = request.workdir or work_dir(self.config, self.settings.cwd)
        finished = await run_command(
            self.argv(request), cwd=cwd, env=env, timeout_s=self.config.timeout_s, name=self.name, secrets=secrets
        )
        try:
            reply = parse_stream(finished.lines)
        except TargetError as exc:
            if finished.returncode:
                raise failure(self.name, finished, secrets) from None
            raise TargetError(f"{self.name}: {exc}") from None
        if finished.returncode and not reply.text:
            raise failure(self.name, finished, secrets)
        reply.latency_ms = reply.latency_ms or finished.duration_ms
        return reply

    async def aclose(self) -> None:
        return None


def parse_stream(lines: list[Line]) -> ChatReply:
    """The reply in a stream-json transcript.

    Raises:
        TargetError: no `result` event, or a result that reports an error.
    """
    texts: list[str] = []
    calls: dict[str, ToolCall] = {}
    started: dict[str, float] = {}
    session_id: str | None = None
    result: dict[str, Any] | None = None
    for line in lines:
        event = _event(line.text)
        if event is None:
            continue
        session_id = event.get("session_id") or session_id
        kind = event.get("type")
        content = (event.get("message") or {}).get("content") or []
        if kind == "assistant":
            for block in content if isinstance(content, list) else []:
                if block.get("type") == "text" and block.get("text"):
                    texts.append(block["text"])
                elif block.get("type") == "tool_use":
                    call_id = str(block.get("id") or len(calls))
                    calls[call_id] = ToolCall(
                        name=str(block.get("name", "")), arguments=block.get("input") or {}, id=call_id
                    )
                    started[call_id] = line.at
        elif kind == "user":
            for block in content if isinstance(content, list) else []:
                if block.get("type") == "tool_result" and str(block.get("tool_use_id")) in calls:
                    call_id = str(block["tool_use_id"])
                    output = _result_text(block.get("content"))
                    calls[call_id].output = output
                    calls[call_id].duration_ms = round((line.at - started[call_id]) * 1000, 3)
                    if block.get("is_error"):
                        calls[call_id].error = output[:500] or "tool error"
        elif kind == "result":
            result = event
    if result is None:
        raise TargetError("the stream ended without a `result` event")
    if result.get("is_error") or str(result.get("subtype", "success")) != "success":
        raise TargetError(
            f"Claude Code reported {result.get('subtype', 'an error')}: {str(result.get('result') or '')[:300]}"
        )
    usage = result.get("usage") or {}
    return ChatReply(
        text=str(result.get("result") if result.get("result") is not None else "\n\n".join(texts)),
        usage=Usage(
            input_tokens=sum(
                int(usage.get(k) or 0)
                for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
            ),
            output_tokens=int(usage.get("output_tokens") or 0),
        ),
        cost_usd=float(result.get("total_cost_usd") or result.get("cost_usd") or 0.0),
        latency_ms=float(result.get("duration_ms") or 0.0),
        tool_calls=list(calls.values()),
        session_id=str(result.get("session_id") or session_id or "") or None,
        finish_reason=str(result.get("subtype")),
    )


def _event(text: str) -> dict[str, Any] | None:
    if not text.strip().startswith("{"):
        return None
    try:
        event = json.loads(text)
    except json.JSONDecodeError:
        return None
    return event if isinstance(event, dict) else None


def _result_text(content: Any) -> str:
    """A tool_result's content: a string, or a list of `{type: text, text}` blocks."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
    return "" if content is None else json.dumps(content, default=str)
