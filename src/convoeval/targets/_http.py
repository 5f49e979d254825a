"""JSON over HTTP with retries: exponential backoff with jitter, `Retry-After`, bounded time.

aiohttp is imported on the first call, not with convoeval: a run answered from the cache
never needs it (it is a third of convoeval's import time).
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import functools
import json
import random
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import orjson

from .._secrets import redact as _redact
from ..errors import TargetError
from ._limits import ProviderLimits, estimate_tokens

if TYPE_CHECKING:
    import aiohttp

RETRY_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504, 520, 521, 522, 524, 529})


@dataclass(frozen=True)
class RetryPolicy:
    """How hard to try one call.

    Args:
        max_attempts: total attempts including the first.
        base_delay_s: first backoff; doubles each attempt, with full jitter.
        max_delay_s: cap of one backoff (and of a `Retry-After` we honour).
        max_total_s: give up when the next wait would pass this total time.
    """

    max_attempts: int = 5
    base_delay_s: float = 0.5
    max_delay_s: float = 30.0
    max_total_s: float = 300.0

    def backoff(self, attempt: int) -> float:
        return random.uniform(0, min(self.max_delay_s, self.base_delay_s * 2 ** (attempt - 1)))


class _Retryable(Exception):
    def __init__(self, reason: str, retry_after: float | None = None):
        super().__init__(reason)
        self.retry_after = retry_after


async def post_json(
    session: aiohttp.ClientSession,
    url: str,
    payload: Mapping[str, object],
    *,
    headers: dict[str, str] | None,
    timeout_s: float,
    policy: RetryPolicy,
    secrets: tuple[str, ...] = (),
    limits: ProviderLimits | None = None,
    array_key: str | None = None,
) -> dict[str, object]:
    """POST `payload` as JSON and return the JSON object answered, retrying transient failures
    (with `array_key`, a JSON array answered is returned as `{array_key: array}`).

    Each attempt runs in this one coroutine (no call below it but aiohttp's): every time the
    reply's wait suspends the caller, the event loop resumes each coroutine of the chain.

    Args:
        headers: the request's headers besides `Content-Type: application/json`; None when the
            session's default headers hold them all, `Content-Type` included (`HttpTarget`).
        limits: the target's connection and rate limits, applied to every attempt; a
            `Retry-After` pauses all of the target's calls.

    Raises:
        TargetError: after the last attempt, or at once for a non-retryable status (400, 401,
            404...). Its message never contains the values in `secrets`.
    """
    started = time.monotonic()
    body = orjson.dumps(payload)
    if headers is not None:
        headers = {"Content-Type": "application/json", **headers}
    estimated = 0
    if limits is not None and limits.tokens is not None:
        max_tokens = payload.get("max_tokens")
        estimated = estimate_tokens(len(body), max_tokens if isinstance(max_tokens, int) else None)
    timeout = _timeout(timeout_s)
    attempt = 0
    while True:
        attempt += 1
        try:
            async with limits.slot(estimated) if limits is not None else _UNLIMITED:
                try:
                    async with session.post(url, data=body, headers=headers, timeout=timeout) as response:
                        raw = await response.read()
                        status = response.status
                        retry_after = response.headers.get("Retry-After")
                except TimeoutError:
                    raise _Retryable(f"timed out after {timeout_s:g}s") from None
                except Exception as exc:
                    if not _is_client_error(exc):
                        raise
                    raise _Retryable(f"connection error: {redact(str(exc) or type(exc).__name__, secrets)}") from None
                data = _decoded(status, raw, retry_after, secrets, array_key)
            if limits is not None and limits.tokens is not None:  # without a `tpm` nothing to correct
                limits.settle_tokens(estimated, _total_tokens(data))
            return data
        except _Retryable as exc:
            wait = exc.retry_after if exc.retry_after is not None else policy.backoff(attempt)
            wait = min(wait, policy.max_delay_s)
            elapsed = time.monotonic() - started
            if attempt >= policy.max_attempts or elapsed + wait > policy.max_total_s:
                raise TargetError(f"{exc} (gave up after {attempt} attempt(s), {elapsed:.1f}s)") from None
            if limits is not None and exc.retry_after:
                limits.pause(wait)
            await asyncio.sleep(wait)


#: The slot of a call without limits.
_UNLIMITED = contextlib.nullcontext()


def _is_client_error(exc: Exception) -> bool:
    """Whether aiohttp raised `exc` about the connection (imported here: only failures ask)."""
    import aiohttp

    return isinstance(exc, aiohttp.ClientError)


def _total_tokens(data: dict[str, object]) -> int:
    """Tokens of a reply in the OpenAI (`prompt_tokens`) or Anthropic (`input_tokens`) shape."""
    usage = data.get("usage")
    if not isinstance(usage, dict):
        return 0
    total = 0
    for key in ("prompt_tokens", "completion_tokens", "input_tokens", "output_tokens"):
        value = usage.get(key)
        total += value if isinstance(value, int) else 0
    return total


def _decoded(
    status: int, raw: bytes, retry_after: str | None, secrets: tuple[str, ...], array_key: str | None = None
) -> dict[str, object]:
    """The JSON object of an answer (an array as `{array_key: array}`, given an `array_key`), or
    the error its status or body calls for.

    Raises:
        _Retryable: a status worth another attempt (with its `Retry-After`), or a body that is
            not a JSON object.
        TargetError: any other status of 400 or more.
    """
    if status in RETRY_STATUSES:
        raise _Retryable(f"HTTP {status}: {_snippet(raw, secrets)}", parse_retry_after(retry_after))
    if status >= 400:
        raise TargetError(f"HTTP {status}: {_snippet(raw, secrets)}")
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError:
        data = _lenient_json(raw)
        if data is None:
            raise _Retryable(f"malformed response (not JSON): {_snippet(raw, secrets)}") from None
    if isinstance(data, list) and array_key is not None:
        return {array_key: data}
    if not isinstance(data, dict):
        raise _Retryable(f"malformed response (not a JSON object): {_snippet(raw, secrets)}")
    return data


def _lenient_json(raw: bytes) -> object:
    """What the standard library reads where orjson refuses (NaN, bytes that are not UTF-8); None
    if it cannot either."""
    try:
        return json.loads(raw.decode("utf-8", errors="replace"))
    except json.JSONDecodeError:
        return None


@functools.cache
def _timeout(total_s: float) -> aiohttp.ClientTimeout:
    """One `ClientTimeout` per distinct total (the objects are immutable)."""
    import aiohttp

    return aiohttp.ClientTimeout(total=total_s)


def parse_retry_after(value: str | None) -> float | None:
    """Seconds to wait from a `Retry-After` header (delta-seconds or an HTTP date)."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def redact(text: str, secrets: tuple[str, ...] = ()) -> str:
    """Remove API keys (these `secrets` and every known one) and URL credentials from text
    that may be shown or stored; see `convoeval._secrets.redact`."""
    return _redact(text, secrets, key_shaped=True)


def _snippet(raw: bytes, secrets: tuple[str, ...]) -> str:
    text = redact(" ".join(raw.decode("utf-8", errors="replace").split()), secrets)  # then cut: a cut key is not found
    return text[:300] + ("..." if len(text) > 300 else "") or "(empty body)"
