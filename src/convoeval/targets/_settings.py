"""Typed provider settings: the provider-specific fields of a targets-file entry.

`TargetConfig` holds what every target has (name, provider, model, base_url, key...); the rest
of an entry is validated by its provider's `settings_model` (a class attribute), when the targets file
loads (a `file:line: field: message` error) and again when a target is built from code (a
`TargetError` naming the field). AgentV's target fields that change nothing in convoeval are
accepted, so AgentV's `.agentv/targets.yaml` files load unchanged.
"""

from __future__ import annotations

from typing import Annotated, TypeVar, overload

from pydantic import (
    AliasChoices,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    JsonValue,
    ValidationError,
    field_validator,
)

from .. import registry
from .._base_model import Model
from .._regex import check_pattern
from ..errors import TargetError, first_problem
from ._base import TargetConfig


def _not_bool(value: object) -> object:
    """`rpm: true` is a mistake, not the number 1."""
    if isinstance(value, bool):
        raise ValueError("must be a number, not true/false")
    return value


PositiveFloat = Annotated[float, BeforeValidator(_not_bool), Field(gt=0)]
PositiveInt = Annotated[int, BeforeValidator(_not_bool), Field(ge=1)]

#: Request-body fields an HTTP target owns; `params` cannot replace them.
OWNED_PARAMS = frozenset(
    {
        "messages",
        "model",
        "stream",
        "n",
        "response_format",
        "temperature",
        "max_tokens",
        "max_completion_tokens",
        "system",
        "tools",
        "tool_choice",
    }
)


class ProviderSettings(Model):
    """Fields every provider accepts besides `TargetConfig`'s: AgentV's target fields."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    grader_target: str | None = Field(
        None,
        validation_alias=AliasChoices("grader_target", "judge_target"),
        description="AgentV: the target that judges this one's replies (used when no --judge is given).",
    )
    provider_batching: bool = Field(False, description="AgentV: batch calls in one provider request (ignored).")
    healthcheck: dict[str, JsonValue] | str | None = Field(None, description="AgentV: a readiness check (not run).")
    subprovider: str | None = Field(None, description="AgentV: the model host behind an agent (informational).")
    workers: PositiveInt | None = Field(None, description="AgentV: parallel calls (use `concurrency`).")
    log_format: str | None = Field(None, description="AgentV: agent log format (ignored).")
    log_dir: str | None = Field(None, description="AgentV: agent log folder (ignored).")
    stream_log: bool | str | None = Field(None, description="AgentV: an agent's stream log, raw or summary (ignored).")


class HttpSettings(ProviderSettings):
    """Settings of the targets that call an HTTP API."""

    rpm: PositiveFloat | None = Field(None, description="Requests per minute at most.")
    tpm: PositiveFloat | None = Field(None, description="Tokens per minute at most.")
    params: dict[str, JsonValue] = Field(
        default_factory=dict, description="Extra request-body fields (e.g. seed, top_p); not the owned ones."
    )
    retry_initial_delay_ms: PositiveFloat | None = None
    retry_max_delay_ms: PositiveFloat | None = None
    retry_backoff_factor: PositiveFloat | None = None
    retry_status_codes: list[int] | None = None

    @field_validator("params")
    @classmethod
    def _not_owned(cls, params: dict[str, JsonValue]) -> dict[str, JsonValue]:
        owned = sorted(OWNED_PARAMS & set(params))
        if owned:
            raise ValueError(
                f"cannot set {', '.join(owned)}: the target owns these (use the target's own "
                "fields, e.g. `model`, `temperature`, `max_tokens`)"
            )
        return params


class AzureSettings(HttpSettings):
    """Azure OpenAI: `endpoint` (the resource URL), `model` (the deployment), `version`."""

    endpoint: str | None = Field(None, description="https://RESOURCE.openai.azure.com (or a full deployment URL).")
    version: str | None = Field(
        None, validation_alias=AliasChoices("version", "api_version"), description="The api-version query parameter."
    )
    deployment: str | None = Field(
        None,
        validation_alias=AliasChoices("deployment", "deployment_name"),
        description="The deployment name (default: `model`).",
    )


class ScriptedSettings(ProviderSettings):
    """Settings of the scripted target (see `ScriptedTarget`)."""

    replies: list[str] = Field(default_factory=list)
    rules: list[dict[str, str]] = Field(default_factory=list)
    default: str | None = None
    fail_on: str | None = None
    delay_s: float = Field(0.0, ge=0)

    @field_validator("rules")
    @classmethod
    def _rule_shape(cls, rules: list[dict[str, str]]) -> list[dict[str, str]]:
        for n, rule in enumerate(rules):
            if set(rule) != {"match", "reply"}:
                raise ValueError("each rule is {match: REGEX, reply: TEXT}")
            try:
                check_pattern(rule["match"])
            except ValueError as exc:
                raise ValueError(f"rules[{n}].match: {exc}") from None
        return rules

    @field_validator("fail_on")
    @classmethod
    def _fail_on_compiles(cls, value: str | None) -> str | None:
        return check_pattern(value) if value is not None else None


def settings_model(provider: str) -> type[BaseModel] | None:
    """The settings model a provider declares as its `settings_model` class attribute."""
    return getattr(registry.lookup("provider", provider), "settings_model", None)


SettingsT = TypeVar("SettingsT", bound=BaseModel)


@overload
def settings_of(config: TargetConfig) -> BaseModel: ...


@overload
def settings_of(config: TargetConfig, model: type[SettingsT]) -> SettingsT: ...


def settings_of(config: TargetConfig, model: type[BaseModel] | None = None) -> BaseModel:
    """The validated settings of `config` as `model` (default: its provider's `settings_model`);
    TargetError naming the field when one is wrong."""
    model = model or settings_model(config.provider) or ProviderSettings
    try:
        return model.model_validate(config.model_extra or {})
    except ValidationError as exc:
        problem = first_problem(exc, "")
        message = problem.message
        if problem.unknown:
            message = f"not a setting of provider {config.provider!r} (known: {', '.join(sorted(model.model_fields))})"
        raise TargetError(f"{config.name}: {problem.field}: {message}") from None
