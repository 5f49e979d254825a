"""The `local` target: SmolLM2-135M-Instruct (or any GGUF) in-process through llama.cpp.

This is the zero-configuration default of DESIGN 1D: with no API key `convoeval run` can use
`local` as target and judge, offline.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .._base import ChatReply, ChatRequest, TargetConfig, TargetError, message_text, provider
from .._completion import parse_completion
from ._grammar import bound_strings, normalise_json, schema_grammar
from ._models import require_llama_cpp, resolve_model_path
from ._runtime import Runtime, RuntimeKey, get_runtime
from ._settings import LocalSettings

if TYPE_CHECKING:
    from llama_cpp import Llama

log = logging.getLogger(__name__)

DEFAULT_TEMPERATURE = 0.0
DEFAULT_MAX_TOKENS = 128
DEFAULT_JUDGE_MAX_TOKENS = 1024
# After trimming, the prompt must leave at least this many tokens (or max_tokens if smaller)
# for the reply; otherwise the call fails instead of returning a reply cut after a few tokens.
MIN_REPLY_TOKENS = 64


@provider("local")
class LocalTarget:
    """`local` / `local:smollm2` (the bundled SmolLM2-135M-Instruct) or `local:/path/model.gguf`.

    The model runs in-process with its own chat template (`Llama.create_chat_completion`). It is
    loaded once per process per (model path, n_ctx, threads, seed, chat_format), lazily on the
    first call, and shared by every target and judge that uses the same settings. Calls to one
    model are serialised and run on its own worker thread, so the event loop keeps moving.

    Settings: the extra fields of the targets-file entry, `LocalSettings` (n_ctx, threads,
    seed, repeat_penalty, chat_format, params); an unknown or invalid one is a TargetError.
    The standard `temperature` defaults to 0.0 (greedy: deterministic replies) and `max_tokens`
    to 256, or to 1024 for judge calls and structured output; ChatRequest values override both.

    Structured output: with `response_schema` set, decoding is constrained by a llama.cpp
    grammar built from the JSON Schema, so even the 135M model returns parseable JSON. A schema
    the grammar converter cannot handle is a TargetError (llama-cpp-python would otherwise fall
    back to "any JSON" silently), and so is a structured reply cut off by max_tokens.

    Context overflow: when the prompt plus `max_tokens` does not fit `n_ctx`, the OLDEST
    non-system messages are dropped (system messages and the latest message are always kept;
    a leading assistant/tool message left behind is dropped too, so history starts with a user
    turn). If the system messages plus the latest message still leave fewer than
    min(max_tokens, 64) tokens for the reply, the call raises TargetError.

    Reply accounting: usage from llama.cpp, cost 0, latency = time spent running this call on
    the worker thread (queueing behind other calls and the one-off model load are excluded).
    A generation that has started cannot be interrupted; it is bounded by max_tokens.
    """

    settings_model = LocalSettings

    def __init__(self, config: TargetConfig):
        self.name = config.name
        self.config = config
        require_llama_cpp()
        self.model_path = resolve_model_path(config.model or "")
        self.settings = LocalSettings.of(config)
        self.temperature = config.temperature if config.temperature is not None else DEFAULT_TEMPERATURE
        settings = self.settings
        self.runtime = get_runtime(
            RuntimeKey(
                str(self.model_path),
                settings.n_ctx,
                settings.threads,
                settings.seed,
                settings.chat_format,
                settings.prompt_cache_mb,
                settings.flash_attn,
            )
        )

    async def load(self) -> Llama:
        """Load the model now (normally it loads on the first call) and return the `Llama`."""
        return await self.runtime.run(lambda runtime: runtime.llama())

    async def chat(self, request: ChatRequest) -> ChatReply:
        messages = [_plain_message(m) for m in request.messages]
        if not messages:
            raise TargetError(f"{self.name}: no messages to answer")
        temperature = request.temperature if request.temperature is not None else self.temperature
        structured = request.response_schema is not None
        max_tokens = (
            request.max_tokens
            or self.config.max_tokens
            or (DEFAULT_JUDGE_MAX_TOKENS if structured or request.purpose == "judge" else DEFAULT_MAX_TOKENS)
        )
        seed = (self.settings.seed if request.seed is None else request.seed) + max(request.trial, 0)
        schema = request.response_schema
        if schema is not None and request.purpose == "judge" and self.settings.judge_text_chars:
            schema = bound_strings(schema, self.settings.judge_text_chars)
        return await self.runtime.run(
            lambda runtime: self._generate(runtime, messages, schema, int(max_tokens), float(temperature), seed)
        )

    async def aclose(self) -> None:
        """Nothing to do: the model stays loaded for the other users in this process."""

    # Runs in the runtime's worker thread, holding its lock.
    def _generate(
        self,
        runtime: Runtime,
        messages: list[dict[str, str]],
        schema: Mapping[str, object] | None,
        max_tokens: int,
        temperature: float,
        seed: int,
    ) -> ChatReply:
        started, cpu_started = time.perf_counter(), time.thread_time()
        grammar = schema_grammar(self.name, schema) if schema is not None else None
        llama = runtime.llama()
        kept = self._fit(runtime, messages, max_tokens)
        kwargs: dict[str, Any] = {"repeat_penalty": self.settings.repeat_penalty}
        kwargs.update(self.settings.params)
        kwargs.pop("stream", None)  # one complete reply, with usage
        kwargs.update(messages=kept, max_tokens=max_tokens, temperature=temperature, seed=seed)
        if grammar is not None:
            kwargs["grammar"] = grammar
        runtime.reuse_prefix(kept)
        runtime.eval_counts()  # start counting
        try:
            data = llama.create_chat_completion(**kwargs)
        except TargetError:
            raise
        except Exception as exc:
            raise TargetError(f"{self.name}: local model failed: {type(exc).__name__}: {exc}") from None
        evaluated, generated = runtime.eval_counts()
        runtime.keep_state()
        latency_ms = (time.perf_counter() - started) * 1000
        completion = parse_completion(data, self.name)
        text, usage, finish_reason = completion.text, completion.usage, completion.finish_reason
        if schema is not None and finish_reason == "length":
            raise TargetError(
                f"{self.name}: structured reply cut off at max_tokens={max_tokens} before the JSON "
                "was complete; raise max_tokens or bound the schema's strings with maxLength"
            )
        log.debug(
            "%s: %d prompt tokens (%d evaluated, the rest reused), %d generated, %.2f s, %.2f s CPU",
            self.name,
            usage.input_tokens,
            evaluated,
            generated,
            latency_ms / 1000,
            time.thread_time() - cpu_started,
        )
        text = text.strip()
        if schema is not None:
            text = normalise_json(text)
        return ChatReply(
            text=text,
            usage=usage,
            latency_ms=latency_ms,
            cost_usd=0.0,
            cost_known=True,  # it runs in this process: free
            finish_reason=finish_reason,
        )

    def _fit(self, runtime: Runtime, messages: list[dict[str, str]], max_tokens: int) -> list[dict[str, str]]:
        """Drop the oldest non-system messages until prompt + max_tokens fits n_ctx."""
        n_ctx = self.settings.n_ctx
        kept = list(messages)
        tokens = runtime.prompt_tokens(kept)
        dropped = 0
        while tokens + max_tokens > n_ctx:
            index = _oldest_droppable(kept)
            if index is None:
                break
            del kept[index]
            dropped += 1
            # Do not start the remaining history with an assistant or tool message.
            while (index := _oldest_droppable(kept)) is not None and kept[index]["role"] != "user":
                del kept[index]
                dropped += 1
            tokens = runtime.prompt_tokens(kept)
        if tokens + min(max_tokens, MIN_REPLY_TOKENS) > n_ctx:
            raise TargetError(
                f"{self.name}: the prompt needs {tokens} tokens even with only the system "
                f"messages and the latest message kept, which leaves no room for a reply in "
                f"n_ctx={n_ctx}; raise n_ctx or shorten the system prompt / latest message"
            )
        if dropped:
            log.warning(
                "%s: dropped the %d oldest message(s) to fit n_ctx=%d (prompt now %d tokens)",
                self.name,
                dropped,
                n_ctx,
                tokens,
            )
        return kept


def _oldest_droppable(messages: list[dict[str, str]]) -> int | None:
    """The oldest message that is neither a system message nor the latest message."""
    for index, message in enumerate(messages[:-1]):
        if message["role"] != "system":
            return index
    return None


def _plain_message(message: Mapping[str, object]) -> dict[str, str]:
    """`{"role", "content"}` with text content (chat templates choke on None or part lists)."""
    return {"role": str(message.get("role") or "user"), "content": message_text(message)}
