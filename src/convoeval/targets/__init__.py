"""Systems under test (and judges) behind one small async protocol, with the HTTP client, the
per-endpoint limits and the price table they use."""

from ._base import (
    ChatReply,
    ChatRequest,
    Purpose,
    SessionMode,
    Target,
    TargetConfig,
    TargetError,
    TargetWrapper,
    provider,
    provider_names,
    session_mode,
)
from ._build import create_target
from ._http import RetryPolicy, parse_retry_after, post_json, redact
from ._limits import EndpointLimits, ProviderLimits, TokenBucket, endpoint_limits, estimate_tokens
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

# isort: split
# Built-in providers register themselves on import.
from . import _anthropic, _litellm, _local, _openai, _scripted, agents  # noqa: E402,F401

__all__ = [
    "AzureSettings",
    "HttpSettings",
    "ProviderSettings",
    "ScriptedSettings",
    "settings_model",
    "settings_of",
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
    "call_cost",
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
