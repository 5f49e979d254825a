"""Systems under test (and judges) behind one small async protocol, with the HTTP client, the
per-endpoint limits and the price table they use.

The built-in providers are declared here by module: a module is imported (and its providers
register) when a target first uses one of them, or when every provider is listed.
"""

from .. import registry
from ._base import (
    AgentContext,
    Capabilities,
    ChatReply,
    ChatRequest,
    Purpose,
    SessionMode,
    Target,
    TargetConfig,
    TargetError,
    TargetWrapper,
    capabilities,
    message_text,
    provider,
    provider_names,
    session_mode,
    unwrap,
)
from ._build import create_target
from ._http import RetryPolicy, parse_retry_after, post_json, redact
from ._http_target import HttpTarget, endpoint_limits, http_target
from ._limits import EndpointLimits, ProviderLimits, TokenBucket, estimate_tokens
from ._prices import call_cost, lookup_price, price_table
from ._recorded import RecordedReplies
from ._settings import (
    AzureSettings,
    HttpSettings,
    ProviderSettings,
    ScriptedSettings,
    settings_model,
    settings_of,
)
from ._tool_settings import ToolAgentSettings, UserTool

#: The built-in providers, by the module that defines them.
BUILTIN_PROVIDERS: dict[str, tuple[str, ...]] = {
    "_anthropic": ("anthropic",),
    "_litellm": ("litellm",),
    "_local._target": ("local",),
    "_openai": ("openai", "openrouter", "azure"),
    "_recorded": ("recorded", "replay"),
    "_scripted": ("scripted",),
    "agents._claude": ("claude-code",),
    "agents._cli": ("cli",),
    "agents._codex": ("codex",),
    "agents._http": ("http",),
    "agents._python": ("python",),
}
for _module, _names in BUILTIN_PROVIDERS.items():
    for _name in _names:
        registry.register_lazy("provider", _name, f"{__name__}.{_module}")

__all__ = [
    "BUILTIN_PROVIDERS",
    "AgentContext",
    "AzureSettings",
    "HttpSettings",
    "ProviderSettings",
    "ScriptedSettings",
    "settings_model",
    "settings_of",
    "Capabilities",
    "ChatReply",
    "ChatRequest",
    "EndpointLimits",
    "ProviderLimits",
    "Purpose",
    "RecordedReplies",
    "RetryPolicy",
    "SessionMode",
    "Target",
    "TargetConfig",
    "TargetError",
    "TargetWrapper",
    "TokenBucket",
    "ToolAgentSettings",
    "UserTool",
    "HttpTarget",
    "call_cost",
    "capabilities",
    "http_target",
    "message_text",
    "unwrap",
    "create_target",
    "endpoint_limits",
    "estimate_tokens",
    "lookup_price",
    "parse_retry_after",
    "post_json",
    "price_table",
    "provider",
    "provider_names",
    "redact",
    "session_mode",
]
