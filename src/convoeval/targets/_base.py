"""The Target protocol: anything that answers a list of chat messages.

A target talks to the conversation loop in one of three ways, named by its attribute `session`
(one of the optional features listed in `Capabilities`, read with `capabilities`):

- `history` (default, chat APIs): every turn gets the whole history in `ChatRequest.messages`.
- `resume` (agents that keep their own state): turn 1 gets the history so far; the target
  returns `ChatReply.session_id`, and later turns get only the new messages plus that
  `ChatRequest.session_id` to resume. A per-conversation handle (a Python object with state,
  an agent CLI's session) lives behind that id; `end_session(session_id)`, when the target
  has it, is awaited after the conversation.
- `single_shot` (agents that cannot resume): the loop sends all scripted turns in one prompt
  and the result says `fallback: single_shot`.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Protocol, runtime_checkable
from urllib.parse import urlsplit

from pydantic import AliasChoices, ConfigDict, Field, PrivateAttr, SecretStr, field_validator

from .. import registry
from .._base_model import Model
from .._secrets import remember, remember_credentials, shown_url
from .._text import without_surrogates
from ..errors import TargetError as TargetError  # re-exported: the providers raise it
from ..results import ToolCall, Usage
from ._tool_settings import MAX_SECONDS, ToolAgentSettings

Purpose = Literal["target", "judge", "simulator"]
SessionMode = Literal["history", "resume", "single_shot"]


@dataclass(frozen=True)
class AgentContext:
    """What an agent target needs besides the messages: where it works and what it may call.
    The conversation loop fills it for the system under test; judge and simulator calls, and the
    model calls inside the tool agent, get the empty one, which chat providers never read.

    Args:
        workdir: the conversation's working directory (agents run there), or None for the
            target's own default.
        max_tool_calls: tool calls this turn may still make (the test's budget), or None.
        max_seconds: seconds this turn may still take (the test's budget; an agent CLI is
            stopped there), or None.
        domain_tools: the suite's domain tools (OpenAI `tools` entries) a tool agent offers too.
        call_domain_tool: runs one of them on the trial's backend and returns the finished call.
        eval_dir: the eval file's folder when the file is AgentV's (AgentV's `cli` target runs
            there and reads its `cwd` from there), else None.
        input_files: the test's attachments (absolute paths) in AgentV's files: its `{FILES}`.
        agentv_turns: the test is a conversation of AgentV's files, whose turns AgentV sends
            one by one, each message alone, to a target that keeps no session.
    """

    workdir: str | None = None
    max_tool_calls: int | None = None
    max_seconds: float | None = None
    domain_tools: Sequence[Mapping[str, object]] | None = None
    call_domain_tool: Callable[[ToolCall], Awaitable[ToolCall]] | None = None
    eval_dir: str | None = None
    input_files: tuple[str, ...] = ()
    agentv_turns: bool = False


@dataclass
class ChatRequest:
    """One model call.

    Args:
        messages: OpenAI-style `{"role", "content"}` dicts, the whole history.
        response_schema: a JSON Schema the reply must follow (structured output), or None.
        schema_name: a short name for that schema (some providers require one).
        temperature: overrides the target's configured temperature.
        max_tokens: overrides the target's configured max_tokens.
        trial: trial index; part of the cache key so that trials differ.
        purpose: who is calling: the run loop (`target`), a grader (`judge`), a simulated user.
        seed: a sampling seed for providers that take one (OpenAI-compatible, local), or None.
        session_id: the session to resume (targets with `session = "resume"`), or None to start one.
        test_id: the test being run (the replay target finds its stored reply by it; agents may
            name scratch files after it).
        tools: OpenAI `tools` entries offered to the model (by the built-in tool agent), or None.
        agent: what an agent target needs besides the messages (`AgentContext`).
    """

    messages: Sequence[Mapping[str, object]]
    response_schema: Mapping[str, object] | None = None
    schema_name: str = "response"
    temperature: float | None = None
    max_tokens: int | None = None
    trial: int = 0
    purpose: Purpose = "target"
    seed: int | None = None
    session_id: str | None = None
    test_id: str = ""
    tools: Sequence[Mapping[str, object]] | None = None
    agent: AgentContext = field(default_factory=AgentContext)


def message_text(message: Mapping[str, object]) -> str:
    """A chat message's content as text: a list of parts joined by lines, None as the empty text."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(part.get("text", "")) if isinstance(part, dict) else str(part) for part in content)
    return "" if content is None else str(content)


@dataclass
class ChatReply:
    """What a target answered, with the accounting the graders and reports need.

    `session_id` is the session a `resume` target keeps for this conversation (the next turn
    sends it back); `tool_calls` are the tools it called while producing the reply.
    `content`: the reply's content parts as the agent gave them (AgentV's `{type: text | image |
    file, ...}` blocks, which an AgentV output transform reads), when it gave a list; else None.
    `cost_known`: the target knows what its calls cost (its prices are set or listed, or it is
    free, like the embedded model), so a `cost_usd` of 0 is a measurement; without it, 0 only
    says that no cost was reported.
    """

    text: str
    usage: Usage = field(default_factory=Usage)
    latency_ms: float = 0.0
    cost_usd: float = 0.0
    cost_known: bool = False
    tool_calls: list[ToolCall] = field(default_factory=list)
    finish_reason: str | None = None
    cached: bool = False
    session_id: str | None = None
    content: list[object] | None = None

    def __post_init__(self) -> None:
        # A reply holding a lone surrogate (a JSON `\ud800` escape) could be written nowhere:
        # the results file, the store, the reports would fail on it (UTF-8 cannot hold it).
        if type(self.text) is str:  # anything else is a target's bug, refused where it is recorded
            self.text = without_surrogates(self.text)


@runtime_checkable
class Target(Protocol):
    """A system under test or a judge. Implementations must be safe to call concurrently.

    `name`, `chat` and `aclose` are required; the optional features (`session`, `cacheable`,
    `provider_name`, `end_session`, `with_model`) are attributes named and defaulted by
    `Capabilities`, so a target that declares none of them is a plain chat target.
    """

    name: str

    async def chat(self, request: ChatRequest) -> ChatReply: ...

    async def aclose(self) -> None: ...


@dataclass(frozen=True)
class Capabilities:
    """The optional features of a target, each an attribute of the same name on the target
    (a class attribute, or set in `__init__`); the defaults describe a target that declares none.

    Attributes:
        session: how the loop talks to the target (see the module docstring): `history`
            (default), `resume` or `single_shot`.
        cacheable: whether replies may go to the response cache. None (default): a target built
            from a config is cached, a Target object passed by the caller is not; True or False
            decides for both.
        provider_name: the provider recorded in results (`@provider` sets it on the class);
            None when the target does not say.
        end_session: `async end_session(session_id)`, awaited after a `resume` conversation to
            release the session's state; None when there is nothing to release.
        with_model: `with_model(wrap)` of a target that calls a model through another target
            (the tool agent): the run puts its cache and meter around that model with it; None
            for targets whose `chat` is the model call.
    """

    session: SessionMode = "history"
    cacheable: bool | None = None
    provider_name: str | None = None
    end_session: Callable[[str], Awaitable[None]] | None = None
    with_model: Callable[[Callable[[Target], Target]], None] | None = None


def capabilities(target: Target) -> Capabilities:
    """The optional features `target` declares (the one place they are read).

    A `TargetWrapper` answers for itself (by default: the wrapped target's features); any other
    target is read by the attribute names of `Capabilities`, each missing one taking its default.
    """
    if isinstance(target, TargetWrapper):
        return target.capabilities()
    session = getattr(target, "session", "history")
    cacheable = getattr(target, "cacheable", None)
    provider_name = getattr(target, "provider_name", None)
    return Capabilities(
        session="resume" if session == "resume" else "single_shot" if session == "single_shot" else "history",
        cacheable=cacheable if isinstance(cacheable, bool) else None,
        provider_name=provider_name if isinstance(provider_name, str) else None,
        end_session=getattr(target, "end_session", None),
        with_model=getattr(target, "with_model", None),
    )


class TargetConfig(Model):
    """One entry of a targets file (`targets: [...]`), or what `provider:model` expands to.

    Provider-specific settings (for example `replies` of the scripted target or `n_ctx` of the
    local model) are kept as extra fields and read by that provider.
    """

    model_config = ConfigDict(extra="allow")

    name: str
    provider: str
    model: str = ""
    base_url: str | None = None
    api_key_env: str | None = None
    api_key: SecretStr | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    temperature: float | None = Field(None, ge=0, allow_inf_nan=False)
    max_tokens: int | None = Field(None, ge=1)
    timeout_s: float = Field(60.0, gt=0, le=MAX_SECONDS, description="Seconds per request (at most a day).")
    max_retries: int = Field(4, ge=0, le=100)
    concurrency: int | None = Field(
        None,
        ge=1,
        validation_alias=AliasChoices("concurrency", "max_connections"),
        description="Requests in flight at most (shared with other targets on the same endpoint).",
    )
    agent: ToolAgentSettings | None = Field(None, description="Run the model in convoeval's tool loop.")
    price_input_per_mtok: float | None = Field(None, ge=0)
    price_output_per_mtok: float | None = Field(None, ge=0)

    _unusable: str | None = PrivateAttr(None)
    _source_dir: Path | None = PrivateAttr(None)

    def model_post_init(self, context: object, /) -> None:
        """The credentials in `headers`, the URLs, the request body (`body`, `params`) and `env`
        become known secrets (redacted everywhere)."""
        url = self.option("url")
        remember_credentials(
            self.headers,
            self.base_url,
            url if isinstance(url, str) else None,
            env=self.option("env"),
            body=[self.option("body"), self.option("params")],
        )

    @field_validator("base_url")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        """An http(s) URL with a host (a `${{ VAR }}` placeholder is checked once it is set)."""
        if value is None or "${{" in value:
            return value
        if problem := http_url_problem(value):
            raise ValueError(problem)
        return value.strip()

    @property
    def source_dir(self) -> Path:
        """The folder of the targets file this config came from (relative paths resolve there),
        else the current directory."""
        return self._source_dir or Path.cwd()

    @property
    def unusable(self) -> str | None:
        """Why `create_target` refuses this config (`mark_unusable`), or None."""
        return self._unusable

    def mark_unusable(self, reason: str) -> None:
        """Make `create_target` refuse this config with `reason` (e.g. an unset `${{ VAR }}`)."""
        self._unusable = reason

    def option(self, key: str, default: object = None) -> object:
        """A provider-specific setting given as an extra field."""
        return (self.model_extra or {}).get(key, default)

    def resolve_api_key(self, default_env: str | None = None) -> str | None:
        """The API key: explicit value, else `api_key_env`, else the provider's default env var."""
        if self.api_key is not None:
            key: str | None = self.api_key.get_secret_value()
        else:
            env = self.api_key_env or default_env
            key = os.environ.get(env) if env else None
        remember(key)  # never written anywhere: every output goes through `redact`
        return key


def http_url_problem(value: str) -> str | None:
    """Why `value` is not an http(s) URL with a host and a valid port, or None."""
    parts = urlsplit(value.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return f"{shown_url(value)!r} is not an http(s) URL like http://localhost:8000/v1"
    try:
        parts.port  # noqa: B018 - raises on a bad port
    except ValueError as exc:
        return f"{shown_url(value)!r}: {exc}"
    return None


def env_base_url(name: str) -> str | None:
    """The server URL the environment variable `name` gives (OPENAI_BASE_URL), checked as a
    target's `base_url` is; None when it is unset or empty.

    Raises:
        TargetError: it is not an http(s) URL.
    """
    value = os.environ.get(name, "").strip()
    if value and (problem := http_url_problem(value)):
        raise TargetError(f"{name}: {problem}")
    return value or None


class TargetWrapper:
    """Base of targets that wrap another one (cache, meter): `name`, `aclose` and the
    `Capabilities` come from the wrapped target `inner`; nothing else is forwarded."""

    def __init__(self, inner: Target):
        self.inner = inner
        self.name = inner.name

    async def chat(self, request: ChatRequest) -> ChatReply:
        return await self.inner.chat(request)

    async def aclose(self) -> None:
        await self.inner.aclose()

    def capabilities(self) -> Capabilities:
        """The wrapped target's features (a wrapper that adds or hides one overrides this)."""
        return capabilities(self.inner)


def unwrap(target: Target) -> Target:
    """The target at the bottom of a stack of `TargetWrapper`s (`target` itself when not wrapped)."""
    while isinstance(target, TargetWrapper):
        target = target.inner
    return target


ProviderFactory = Callable[[TargetConfig], Target]


def provider(name: str) -> Callable[[ProviderFactory], ProviderFactory]:
    """Register a target factory under a provider name (`openai`, `local`, ...).

    Example:
        @provider("echo")
        class Echo:
            def __init__(self, config: TargetConfig): self.name = config.name
            async def chat(self, request): return ChatReply(text=request.messages[-1]["content"])
            async def aclose(self): pass
    """

    def register(factory: ProviderFactory) -> ProviderFactory:
        registry.register("provider", name, factory)
        if isinstance(factory, type) and "provider_name" not in vars(factory):
            factory.provider_name = name  # type: ignore[attr-defined]
        return factory

    return register


def session_mode(target: Target) -> SessionMode:
    """How the loop talks to `target`: `history`, `resume` or `single_shot`."""
    return capabilities(target).session


def provider_names() -> list[str]:
    return registry.names("provider")
