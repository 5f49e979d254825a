"""`litellm:MODEL`: the long tail of providers (Bedrock, Vertex, Groq, Together, Mistral, Cohere...)
through LiteLLM, inside convoeval's engine: the target's limits (`concurrency`, `rpm`, `tpm`),
retries with backoff, the response cache and the price table apply as to any other target.

Needs `pip install 'convoeval[litellm]'` (imported when the first call is made). LiteLLM's own
retries are off (convoeval retries), and it reads its price map from the installed package, never
from the network.
"""

from __future__ import annotations

import asyncio
import os
import time
from types import ModuleType

from ._base import ChatReply, ChatRequest, TargetError, provider
from ._http import redact
from ._limits import endpoint_key
from ._openai import OpenAITarget

#: LiteLLM exception names worth another attempt (rate limits, timeouts, server trouble).
RETRYABLE = frozenset(
    {
        "RateLimitError",
        "Timeout",
        "APIConnectionError",
        "InternalServerError",
        "ServiceUnavailableError",
        "BadGatewayError",
    }
)


def _litellm() -> ModuleType:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no download of the price map
    try:
        import litellm
    except ImportError:
        raise TargetError("the litellm provider needs LiteLLM: pip install 'convoeval[litellm]'") from None
    litellm.telemetry = False
    return litellm


@provider("litellm")
class LiteLLMTarget(OpenAITarget):
    """`litellm:PROVIDER/MODEL` (LiteLLM's model names, e.g. `litellm:groq/llama-3.1-8b-instant`).

    `base_url` becomes LiteLLM's `api_base`; `api_key` / `api_key_env` its `api_key` (without
    one LiteLLM reads the provider's usual variable). `params` are passed to `acompletion`.
    """

    default_api_key_env: str | None = None  # LiteLLM reads the provider's own variable

    @property
    def endpoint(self) -> str:
        """`base_url` when given, else LiteLLM's provider prefix of the model (`groq`, ...)."""
        server = self.config.base_url or f"litellm://{self.config.model.split('/')[0]}"
        return endpoint_key(server, self.api_key)

    def missing_key(self) -> str | None:
        """None: LiteLLM finds the provider's key itself (and says when it has none)."""
        return None

    async def chat(self, request: ChatRequest) -> ChatReply:
        litellm = _litellm()
        kwargs: dict[str, object] = {
            **self.settings.params,
            "model": self.config.model,
            "messages": request.messages,
            "num_retries": 0,
            "timeout": self.config.timeout_s,
        }
        if self.config.base_url:
            kwargs["api_base"] = self.config.base_url
        if self.api_key:
            kwargs["api_key"] = self.api_key
        if self.config.headers:
            kwargs["extra_headers"] = dict(self.config.headers)
        temperature = request.temperature if request.temperature is not None else self.config.temperature
        if temperature is not None:
            kwargs["temperature"] = temperature
        if request.max_tokens or self.config.max_tokens:
            kwargs["max_tokens"] = request.max_tokens or self.config.max_tokens
        if request.seed is not None:
            kwargs["seed"] = request.seed
        if request.tools:
            kwargs["tools"] = request.tools
        if request.response_schema is not None:
            kwargs["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": request.schema_name, "schema": request.response_schema, "strict": True},
            }
        started = time.perf_counter()
        data = await self._call(litellm, kwargs)
        return self._parse(data, (time.perf_counter() - started) * 1000)

    async def _call(self, litellm: ModuleType, kwargs: dict[str, object]) -> dict[str, object]:
        secrets = (self.api_key,) if self.api_key else ()
        began = time.monotonic()
        attempt = 0
        while True:
            attempt += 1
            try:
                async with self.limits.slot():
                    response = await litellm.acompletion(**kwargs)
                data: dict[str, object] = response.model_dump()
                usage = data.get("usage")
                total = usage.get("total_tokens") if isinstance(usage, dict) else None
                self.limits.settle_tokens(0, total if isinstance(total, int) else 0)
                return data
            except Exception as exc:
                kind = type(exc).__name__
                message = redact(f"{self.name}: {kind}: {exc}", secrets)
                if kind not in RETRYABLE:
                    raise TargetError(message) from None
                wait = min(self.policy.backoff(attempt), self.policy.max_delay_s)
                elapsed = time.monotonic() - began
                if attempt >= self.policy.max_attempts or elapsed + wait > self.policy.max_total_s:
                    raise TargetError(f"{message} (gave up after {attempt} attempt(s), {elapsed:.1f}s)") from None
                await asyncio.sleep(wait)

    async def aclose(self) -> None:
        return None
