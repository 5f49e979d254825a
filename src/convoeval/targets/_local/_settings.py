"""The local model's settings: the provider-specific fields of a `provider: local` entry."""

from __future__ import annotations

from typing import Annotated

from pydantic import BeforeValidator, ConfigDict, Field, JsonValue, ValidationError

from ..._base_model import Model
from ...errors import first_problem
from .._base import TargetConfig, TargetError
from ._models import default_threads

DEFAULT_N_CTX = 2048
DEFAULT_SEED = 0
# llama-cpp-python's create_chat_completion default is 1.0, with which greedy SmolLM2-135M
# often loops ("la femme au martyre, la femme au martyre, ...") until max_tokens.
DEFAULT_REPEAT_PENALTY = 1.1
DEFAULT_PROMPT_CACHE_MB = 256
DEFAULT_JUDGE_TEXT_CHARS = 120


def _not_bool(value: object) -> object:
    """`seed: true` is a mistake, not the number 1."""
    if isinstance(value, bool):
        raise ValueError("must be a number, not true/false")
    return value


Int = Annotated[int, BeforeValidator(_not_bool)]
Float = Annotated[float, BeforeValidator(_not_bool)]


class LocalSettings(Model):
    """Settings of the embedded llama.cpp model (extra fields of its targets-file entry)."""

    model_config = ConfigDict(extra="forbid")

    n_ctx: Int = Field(DEFAULT_N_CTX, ge=128, description="Context window in tokens.")
    threads: Int = Field(
        default_factory=default_threads,
        ge=1,
        description="CPU threads (default: the CPUs idle when the run starts, 1 to 4; see `default_threads`).",
    )
    seed: Int = Field(
        DEFAULT_SEED,
        ge=0,
        description="Sampling seed; trial n samples with seed + n, so trials differ at temperature > 0 "
        "yet every run is reproducible.",
    )
    repeat_penalty: Float = Field(
        DEFAULT_REPEAT_PENALTY,
        description="1.0 lets greedy SmolLM2 loop; above ~1.2 it damages JSON under a schema, because "
        "it also penalises repeated quotes and braces.",
    )
    chat_format: str | None = Field(
        None, description="A llama-cpp-python chat format name, for GGUFs without a chat template."
    )
    flash_attn: bool = Field(True, description="llama.cpp's flash attention (faster on CPU too).")
    prompt_cache_mb: Int = Field(
        DEFAULT_PROMPT_CACHE_MB,
        ge=0,
        description="RAM for saved model states (llama.cpp KV), reused by later prompts that share "
        "their prefix (a conversation's history, a judge's instructions); 0 turns it off.",
    )
    judge_text_chars: Int = Field(
        DEFAULT_JUDGE_TEXT_CHARS,
        ge=0,
        description="Longest free-text string (a criterion's reasoning) a judge answer may write: the "
        "grammar closes it there, so the small model's answers stay short and always finish; 0 = unbounded.",
    )
    params: dict[str, JsonValue] = Field(
        default_factory=dict,
        description="Extra `create_chat_completion` arguments (e.g. top_p, top_k, stop).",
    )

    @classmethod
    def of(cls, config: TargetConfig) -> LocalSettings:
        """The settings of a target config; TargetError naming the field when one is wrong."""
        try:
            return cls.model_validate(config.model_extra or {})
        except ValidationError as exc:
            problem = first_problem(exc, "")
            message = problem.message
            if problem.unknown:
                message = f"not a setting of the local model (known: {', '.join(cls.model_fields)})"
            raise TargetError(f"{config.name}: {problem.field}: {message}") from None
