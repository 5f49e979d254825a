"""The process-wide llama.cpp runtime: one loaded model per settings, its lock and its thread.

`llama_cpp` is imported lazily, in the model's worker thread on the first call, so
`import convoeval` stays fast and works without the `local` extra.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from .._base import TargetError
from ._models import INSTALL_HINT
from ._prefix import PrefixCache

if TYPE_CHECKING:
    from llama_cpp import Llama
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

log = logging.getLogger(__name__)

T = TypeVar("T")


@dataclass(frozen=True)
class RuntimeKey:
    """What makes two loaded models different (targets with equal keys share one)."""

    path: str
    n_ctx: int
    threads: int
    seed: int
    chat_format: str | None = None
    prompt_cache_mb: int = 0
    flash_attn: bool = False


class Runtime:
    """A loaded model, the lock that serialises its calls, and the one thread that runs them.

    llama.cpp contexts are not thread-safe, so every call runs under `lock` on a dedicated
    single-thread executor: calls queue there (FIFO) instead of occupying the event loop or
    the default executor's threads; a queued call whose task is cancelled never starts.
    """

    def __init__(self, key: RuntimeKey):
        self.key = key
        self.lock = threading.Lock()
        self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="convoeval-local")
        self.load_seconds: float | None = None
        self._llama: Llama | None = None
        # The chat template as llama-cpp-python renders it; its `messages` parameter is typed as
        # llama's role-literal TypedDicts while convoeval passes any role through unchanged.
        self._formatter: Any = None
        self.prefixes = PrefixCache(key.prompt_cache_mb << 20) if key.prompt_cache_mb else None

    async def run(self, fn: Callable[[Runtime], T]) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.executor, self._locked, fn)

    def _locked(self, fn: Callable[[Runtime], T]) -> T:
        with self.lock:
            return fn(self)

    # The methods below run in the worker thread, under `lock`.

    def llama(self) -> Llama:
        if self._llama is None:
            self._llama = self._load()
        return self._llama

    def _load(self) -> Llama:
        try:
            import llama_cpp
        except Exception as exc:  # ImportError, or OSError from a broken libllama build
            raise TargetError(f"cannot import llama_cpp ({exc}); {INSTALL_HINT}") from None
        started = time.perf_counter()
        # llama-cpp-python silences the model load by pointing the PROCESS's stdout/stderr at
        # /dev/null for its duration; two loads overlapping in two threads could restore them
        # in the wrong order and lose the streams for good, so loads are serialised.
        with _LOAD_LOCK:
            try:
                llama = llama_cpp.Llama(
                    model_path=self.key.path,
                    n_ctx=self.key.n_ctx,
                    n_threads=self.key.threads,
                    n_threads_batch=self.key.threads,
                    seed=self.key.seed,
                    chat_format=self.key.chat_format,
                    flash_attn=self.key.flash_attn,
                    verbose=False,
                )
            except Exception as exc:
                raise TargetError(
                    f"cannot load the local model {self.key.path!r}: {exc} "
                    "(is it a GGUF file this llama.cpp build supports?)"
                ) from None
        self.load_seconds = time.perf_counter() - started
        self._formatter = _template_formatter(llama) if self.key.chat_format is None else None
        # Freed before the interpreter tears its modules down: llama-cpp-python's own __del__ at
        # that point finds its library gone and prints an ignored-exception traceback.
        atexit.register(_close_quietly, llama)
        log.debug("loaded %s in %.2fs", self.key.path, self.load_seconds)
        return llama

    def eval_counts(self) -> tuple[int, int]:
        """(prompt tokens evaluated, tokens generated) since the last call of this method;
        prompt tokens restored from the KV state or the prompt cache are not counted."""
        import llama_cpp

        llama = self.llama()
        perf = llama_cpp.llama_perf_context(llama.ctx)
        llama_cpp.llama_perf_context_reset(llama.ctx)
        return int(perf.n_p_eval), int(perf.n_eval)

    def prompt_tokens(self, messages: list[dict[str, str]]) -> int:
        """Tokens of the prompt the chat template makes of `messages` (exact when the GGUF
        carries a template, which is what create_chat_completion uses; estimated otherwise)."""
        ids = self.prompt_ids(messages)
        if ids is not None:
            return len(ids)
        total = 8
        for message in messages:
            text = f"{message['role']}\n{message['content']}".encode()
            total += len(self.llama().tokenize(text, add_bos=False, special=False)) + 6
        return total

    def prompt_ids(self, messages: list[dict[str, str]]) -> list[int] | None:
        """The prompt's tokens as create_chat_completion makes them, or None without a template."""
        llama = self.llama()
        if self._formatter is None:
            return None
        try:
            rendered = self._formatter(messages=messages)
        except Exception as exc:
            raise TargetError(f"the model's chat template rejected the messages: {exc}") from None
        return list(llama.tokenize(rendered.prompt.encode("utf-8"), add_bos=not rendered.added_special, special=True))

    def reuse_prefix(self, messages: list[dict[str, str]]) -> None:
        """Before a call: restore the saved state that shares the most of this prompt."""
        if self.prefixes is not None and (ids := self.prompt_ids(messages)) is not None:
            self.prefixes.restore(self.llama(), ids)

    def keep_state(self) -> None:
        """After a call: save the state for later prompts that extend this one."""
        if self.prefixes is not None:
            self.prefixes.save(self.llama())


_RUNTIMES: dict[RuntimeKey, Runtime] = {}
_RUNTIMES_LOCK = threading.Lock()
_LOAD_LOCK = threading.Lock()


def _close_quietly(llama: Llama) -> None:
    with contextlib.suppress(Exception):
        llama.close()


def get_runtime(key: RuntimeKey) -> Runtime:
    """The process-wide runtime for `key` (created on first request; the model loads lazily)."""
    with _RUNTIMES_LOCK:
        runtime = _RUNTIMES.get(key)
        if runtime is None:
            runtime = _RUNTIMES[key] = Runtime(key)
        return runtime


def _template_formatter(llama: Llama) -> Jinja2ChatFormatter | None:
    template = (llama.metadata or {}).get("tokenizer.chat_template")
    if not template:
        return None
    try:
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        def token_text(token: int) -> str:
            if token < 0:
                return ""
            return llama.detokenize([token], special=True).decode("utf-8", errors="ignore")

        return Jinja2ChatFormatter(
            template=template,
            eos_token=token_text(llama.token_eos()),
            bos_token=token_text(llama.token_bos()),
            stop_token_ids=[llama.token_eos()],
        )
    except Exception:  # fall back to the estimate rather than fail every call
        return None
