"""Anthropic's Messages API (`anthropic:MODEL`, key from ANTHROPIC_API_KEY)."""

from __future__ import annotations

import json
import time

from ..results import ToolCall, Usage
from ._base import ChatReply, ChatRequest, TargetConfig, TargetError, env_base_url, message_text, provider
from ._completion import count
from ._http_target import HttpTarget, endpoint_url

ANTHROPIC_URL = "https://api.anthropic.com"
API_VERSION = "2023-06-01"
STRUCTURED_TOOL = "submit"


@provider("anthropic")
class AnthropicTarget(HttpTarget):
    """Claude models. Structured output is requested as a forced tool call."""

    default_api_key_env = "ANTHROPIC_API_KEY"
    anthropic_cache = True

    def __init__(self, config: TargetConfig):
        super().__init__(config)
        base = config.base_url or env_base_url("ANTHROPIC_BASE_URL") or ANTHROPIC_URL
        self.url = endpoint_url(base, "/v1/messages")

    def auth_headers(self) -> dict[str, str]:
        return {"x-api-key": self.api_key, "anthropic-version": API_VERSION} if self.api_key else {}

    def missing_key(self) -> str | None:
        """Every call sends a key (`x-api-key`), whatever the base URL."""
        return None if self.api_key else self._no_key()

    async def chat(self, request: ChatRequest) -> ChatReply:
        if missing := self.missing_key():
            raise TargetError(f"{self.name}: {missing}")
        system = "\n\n".join(message_text(m) for m in request.messages if m["role"] == "system")
        messages = [m for m in request.messages if m["role"] != "system"]
        payload: dict[str, object] = {
            "model": self.config.model,
            "messages": messages,
            "max_tokens": request.max_tokens or self.config.max_tokens or 1024,
        }
        if system:
            payload["system"] = system
        temperature = request.temperature if request.temperature is not None else self.config.temperature
        if temperature is not None:
            payload["temperature"] = temperature
        if request.response_schema is not None:
            payload["tools"] = [
                {
                    "name": STRUCTURED_TOOL,
                    "description": f"Submit the {request.schema_name}.",
                    "input_schema": request.response_schema,
                }
            ]
            payload["tool_choice"] = {"type": "tool", "name": STRUCTURED_TOOL}
        started = time.perf_counter()
        data = await self.post(self.url, payload)  # the auth headers are the session's
        latency_ms = (time.perf_counter() - started) * 1000
        return self._parse(data, latency_ms, structured=request.response_schema is not None)

    def _parse(self, data: dict[str, object], latency_ms: float, structured: bool) -> ChatReply:
        blocks = data.get("content")
        if not isinstance(blocks, list):
            raise TargetError(f"{self.name}: malformed response: no content blocks")
        texts: list[str] = []
        calls: list[ToolCall] = []
        for block in blocks:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "text":
                texts.append(str(block.get("text", "")))
            elif block.get("type") == "tool_use":
                if structured and block.get("name") == STRUCTURED_TOOL:
                    texts = [json.dumps(block.get("input", {}))]
                else:
                    arguments, call_id = block.get("input"), block.get("id")
                    calls.append(
                        ToolCall(
                            name=str(block.get("name", "")),
                            arguments=arguments if isinstance(arguments, dict) else {},
                            id=call_id if isinstance(call_id, str) else None,
                        )
                    )
        usage = anthropic_usage(data.get("usage"))
        stop = data.get("stop_reason")
        return ChatReply(
            text="".join(texts),
            usage=usage,
            latency_ms=latency_ms,
            cost_usd=self.cost(usage),
            cost_known=self.priced,
            tool_calls=calls,
            finish_reason=stop if isinstance(stop, str) else None,
        )


def anthropic_usage(usage: object) -> Usage:
    """The `Usage` of an Anthropic `usage`, whose `input_tokens` leaves out the prompt-cache
    reads and writes: they are added to it and counted on their own."""
    read, written = count(usage, "cache_read_input_tokens"), count(usage, "cache_creation_input_tokens")
    return Usage(
        input_tokens=count(usage, "input_tokens") + read + written,
        output_tokens=count(usage, "output_tokens"),
        cached_input_tokens=read,
        cache_write_tokens=written,
    )
