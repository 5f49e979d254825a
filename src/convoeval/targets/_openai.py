"""An OpenAI-compatible chat-completions server: OpenAI, vLLM, Ollama, llama.cpp, LM Studio..."""

from __future__ import annotations

import time
from urllib.parse import urlsplit

from ._base import ChatReply, ChatRequest, TargetConfig, TargetError, capabilities, env_base_url, provider
from ._completion import parse_completion
from ._http_target import HttpTarget, endpoint_url
from ._settings import AzureSettings, settings_of

OPENAI_URL = "https://api.openai.com/v1"
OPENROUTER_URL = "https://openrouter.ai/api/v1"
AZURE_API_VERSION = "2024-10-21"


@provider("openai")
class OpenAITarget(HttpTarget):
    """`openai:MODEL`; honours OPENAI_BASE_URL and OPENAI_API_KEY.

    Settings (`HttpSettings`): `params` (a mapping merged into every request body, e.g. `seed`,
    `top_p`; it cannot set the fields the target owns, such as `messages` or `model`), `rpm`, `tpm`.
    AgentV's `endpoint` is the base URL.
    """

    default_api_key_env: str | None = "OPENAI_API_KEY"
    default_url: str | None = None  # a preset's URL; None: OPENAI_BASE_URL, else OpenAI's

    def __init__(self, config: TargetConfig):
        super().__init__(config)
        base = config.base_url or self.default_url or env_base_url("OPENAI_BASE_URL") or OPENAI_URL
        self.url = endpoint_url(base, "/chat/completions")
        self.official = base.rstrip("/") in (OPENAI_URL, OPENROUTER_URL)  # hosted: a key is required
        if self.api_key and "Authorization" in self.auth_headers() and urlsplit(self.url).username is not None:
            raise TargetError(
                f"{config.name}: its URL holds a user name and password (HTTP basic auth) and it has an API key"
                " (a Bearer token): both would be the Authorization header; drop one of them"
            )

    def auth_headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}

    def missing_key(self) -> str | None:
        """A hosted API (OpenAI, OpenRouter, Azure) needs a key; a server `base_url` or
        OPENAI_BASE_URL points at (vLLM, llama.cpp, Ollama...) decides for itself."""
        if not self.official or self.api_key:
            return None
        local = " or point OPENAI_BASE_URL at a local server" if capabilities(self).provider_name == "openai" else ""
        return self._no_key() + local

    async def chat(self, request: ChatRequest) -> ChatReply:
        if missing := self.missing_key():
            raise TargetError(f"{self.name}: {missing}")
        payload: dict[str, object] = {**self.settings.params, "model": self.config.model, "messages": request.messages}
        temperature = request.temperature if request.temperature is not None else self.config.temperature
        if temperature is not None:
            payload["temperature"] = temperature
        max_tokens = request.max_tokens or self.config.max_tokens
        if max_tokens:
            payload["max_tokens"] = max_tokens
        if request.seed is not None:
            payload["seed"] = request.seed
        if request.tools:
            payload["tools"] = request.tools
        if request.response_schema is not None:
            payload["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": request.schema_name, "schema": request.response_schema, "strict": True},
            }
        started = time.perf_counter()
        data = await self.post(self.url, payload)  # the auth headers are the session's
        latency_ms = (time.perf_counter() - started) * 1000
        return self._parse(data, latency_ms)

    def _parse(self, data: object, latency_ms: float) -> ChatReply:
        completion = parse_completion(data, self.name)
        return ChatReply(
            text=completion.text,
            usage=completion.usage,
            latency_ms=latency_ms,
            cost_usd=self.cost(completion.usage),
            cost_known=self.priced,
            tool_calls=completion.tool_calls,
            finish_reason=completion.finish_reason,
        )


@provider("openrouter")
class OpenRouterTarget(OpenAITarget):
    """OpenRouter's OpenAI-compatible API; key from OPENROUTER_API_KEY."""

    default_api_key_env = "OPENROUTER_API_KEY"
    default_url = OPENROUTER_URL


@provider("azure")
class AzureOpenAITarget(OpenAITarget):
    """Azure OpenAI: POST {endpoint}/openai/deployments/{deployment}/chat/completions?api-version=V
    with an `api-key` header; key from AZURE_OPENAI_API_KEY. `endpoint` is the resource URL
    (`base_url` works too); `model` names the deployment unless `deployment` is given."""

    default_api_key_env = "AZURE_OPENAI_API_KEY"
    settings_model = AzureSettings

    def __init__(self, config: TargetConfig):
        super().__init__(config)
        azure = settings_of(config, AzureSettings)
        endpoint = (azure.endpoint or config.base_url or env_base_url("AZURE_OPENAI_ENDPOINT") or "").rstrip("/")
        if not endpoint:
            raise TargetError(f"{config.name}: azure needs `endpoint` (https://RESOURCE.openai.azure.com)")
        deployment = azure.deployment or config.model
        path = urlsplit(endpoint).path.rstrip("/")
        if "/openai/deployments/" in path:
            suffix = "" if path.endswith("/chat/completions") else "/chat/completions"
        elif not deployment:
            raise TargetError(f"{config.name}: azure needs `model` (the deployment name)")
        else:
            suffix = f"/openai/deployments/{deployment}/chat/completions"
        self.url = endpoint_url(endpoint, suffix, f"api-version={azure.version or AZURE_API_VERSION}")
        self.official = True  # a key is required

    def auth_headers(self) -> dict[str, str]:
        return {"api-key": self.api_key} if self.api_key else {}
