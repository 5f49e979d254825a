"""The response cache: every model call (target, judge, simulator) on disk, so re-runs are free.

A call is keyed by a SHA-256 of what decides its answer: provider, model, base URL, the
provider-specific settings, the whole message list, temperature, max_tokens, the response
schema and the trial index (so that trials, and judge repeats, are separate calls). API keys
and headers are never part of the key material, and a reply that contains one of the target's
secrets is not stored. Errors are never cached.

Example:
    cache = ResponseCache(".convoeval/cache.sqlite")
    target = CachedTarget(create_target(config), cache, target_identity(config, target))
    reply = await target.chat(request)      # reply.cached is True on a hit
    await target.aclose(); cache.close()
"""

from __future__ import annotations

import hashlib
import json
import math
import sqlite3
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import NotRequired, TypedDict

import orjson
from pydantic import JsonValue

from .._secrets import contains_secret
from ..judging import JudgeOutputError, extract_json
from ..results import ToolCall, Usage
from ..targets import ChatReply, ChatRequest, Target, TargetConfig, TargetWrapper, http_target
from ._key_filter import KeyFilter
from ._meter import RunMeter
from ._sqlite import SqliteWriter, StoreError, connect, set_aside, store_error

CACHE_FILE = "cache.sqlite"
#: Bump when the key material or the stored value changes shape.
KEY_VERSION = 1
#: How often the cache commits what it stored (a killed process loses at most that much: model calls).
GROUP_S = 0.5
#: The writer's page cache: keys are hashes, so each stored reply lands on a random page of the
#: table; with SQLite's 2 MiB the writer read most of them from the file again.
WRITER_CACHE_MIB = 32


class CachedReply(TypedDict):
    """A reply as the cache stores it (JSON): `usage` is `[input_tokens, output_tokens]`,
    `prompt_cache` (when the provider's was used) `[cached_input_tokens, cache_write_tokens]`: a key
    older versions ignore."""

    text: str
    usage: list[int]
    prompt_cache: NotRequired[list[int]]
    latency_ms: float
    cost_usd: float
    cost_known: NotRequired[bool]
    tool_calls: list[dict[str, JsonValue]]
    finish_reason: str | None


_INSERT = "INSERT OR REPLACE INTO responses (key, provider, model, created, value) VALUES (?, ?, ?, ?, ?)"
#: A rowid table: rows are appended in the order they are stored, and only the key's index
#: (64-character keys, about 50 to a page) takes each new key on a random page. Files made
#: before were a WITHOUT ROWID table, where each reply itself lands on a random page, so each
#: half-second commit wrote most of the table's pages to the WAL again (W-large: the writer's
#: CPU halved). Both are read and written with the same statements.
_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key      TEXT NOT NULL PRIMARY KEY,
    provider TEXT NOT NULL,
    model    TEXT NOT NULL,
    created  REAL NOT NULL,
    value    TEXT NOT NULL
);
"""

#: TargetConfig fields that never change an answer (or hold secrets): left out of the key.
_NOT_IN_KEY = {
    "name",
    "api_key",
    "api_key_env",
    "headers",
    "timeout_s",
    "max_retries",
    "concurrency",
    "price_input_per_mtok",
    "price_output_per_mtok",
    "rpm",
    "tpm",
}


class ResponseCache:
    """Model replies in a SQLite file (WAL). Lookups run on the caller's thread (a primary-key
    read, microseconds, skipped for keys the file cannot hold: see `KeyFilter`); writes go to a
    background thread.

    Args:
        path: the database file (created with its directory).
    """

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.set_aside: Path | None = None  # where a damaged cache file was moved
        try:
            self._open()
        except StoreError as exc:
            if not exc.damaged:
                raise
            self.set_aside = set_aside(self.path)  # a damaged cache only costs model calls
            self._open()
        self._pending: dict[str, CachedReply] = {}  # stored but not yet committed
        self._keys = KeyFilter(self.path)  # which keys the file may hold
        self.hits = 0
        self.misses = 0

    def _open(self) -> None:
        self._writer = SqliteWriter(
            self.path, _SCHEMA, name="convoeval-cache", group_s=GROUP_S, cache_mib=WRITER_CACHE_MIB
        )
        try:
            self._reader = connect(self.path)
            self._reader.execute("SELECT COUNT(*) FROM responses").fetchone()
        except sqlite3.Error as exc:
            self._writer.close()
            raise store_error(self.path, exc) from None

    def get(self, key: str) -> CachedReply | None:
        value = self._pending.get(key)
        if value is None and self._keys.may_hold(key):
            try:
                row = self._reader.execute("SELECT value FROM responses WHERE key = ?", (key,)).fetchone()
            except sqlite3.Error:
                row = None  # a locked or damaged cache only costs a model call
            value = _cached_reply(row[0]) if row is not None else None
        if value is None:
            self.misses += 1
            return None
        self.hits += 1
        return value

    def put(self, key: str, provider: str, model: str, value: CachedReply, text: str | None = None) -> None:
        """Store a reply (in the background; it is committed by `close` at the latest).

        Args:
            text: `value` as JSON, when the caller has it already.
        """
        self._pending[key] = value
        self._keys.add(key)
        row = (key, provider, model, time.time(), text if text is not None else _value_json(value))
        if not self._writer.add(_INSERT, row, self._committed):
            self._pending.pop(key, None)  # the cache cannot be written: it only costs model calls

    def _committed(self, row: tuple[object, ...]) -> None:
        """On the writer's thread: the row is on disk, where `get` finds it from now on."""
        self._pending.pop(str(row[0]), None)

    def __len__(self) -> int:
        return int(self._reader.execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def close(self) -> None:
        self._keys.close()
        self._writer.close()
        self._reader.close()


def target_identity(config: TargetConfig, target: Target | None = None) -> dict[str, JsonValue]:
    """What identifies a configured target's answers: provider, model, effective base URL and
    provider settings (no name, key, headers or limits)."""
    settings: dict[str, JsonValue] = {k: v for k, v in config.model_dump(mode="json").items() if k not in _NOT_IN_KEY}
    caller = http_target(target) if target is not None else None
    settings["base_url"] = (caller.url if caller is not None else None) or config.base_url
    return settings


def settings_hash(config: TargetConfig) -> str:
    """A short hash of what decides a configured target's answers besides its provider, model and
    URL: temperature, max_tokens, provider settings (`target_identity`; no key, header or limit)."""
    rest = {k: v for k, v in target_identity(config).items() if k not in ("provider", "model", "base_url")}
    return hashlib.sha256(_key_json(rest).encode("utf-8")).hexdigest()[:16]


def _key_json(value: object) -> str:
    """The key material's JSON as the key has always been made (the standard library)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


#: Types orjson writes byte for byte as `_key_json` does (its strings are escaped the same way,
#: its ints the same up to 64 bits, beyond which it refuses). Not floats: orjson writes 1e-05 as
#: 0.00001 and NaN as null. Not subclasses, enums, dates, UUIDs (`default=str` makes those
#: strings; orjson writes some natively).
_ORJSON_SAFE = frozenset({str, int, bool, type(None)})


def _orjson_safe(value: object) -> bool:
    """Whether `value` holds only `_ORJSON_SAFE` values in dicts (with str keys), lists and tuples."""
    if type(value) is dict:
        for key, item in value.items():
            if type(key) is not str or (type(item) not in _ORJSON_SAFE and not _orjson_safe(item)):
                return False
        return True
    if type(value) is list or type(value) is tuple:
        for item in value:
            if type(item) in _ORJSON_SAFE or (  # a plain chat message, the usual item, checked inline
                type(item) is dict
                and len(item) == 2
                and type(item.get("content")) is str
                and type(item.get("role")) is str
            ):
                continue
            if not _orjson_safe(item):
                return False
        return True
    return type(value) in _ORJSON_SAFE


def _key_bytes(value: object) -> bytes:
    """`_key_json(value)` as UTF-8, by orjson (ten times faster) when that gives the same bytes."""
    if _orjson_safe(value):
        try:
            return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
        except orjson.JSONEncodeError:  # an int beyond 64 bits, a lone surrogate, nesting beyond 255
            pass
    return _key_json(value).encode("utf-8")


def _scalar_bytes(value: object) -> bytes:
    """`_key_bytes` of a number or None, without building an encoder for it."""
    if type(value) is int:
        return str(value).encode()
    if type(value) is float and math.isfinite(value):
        return float.__repr__(value).encode()  # what json.dumps writes
    return b"null" if value is None else _key_bytes(value)


def cache_key(identity: Mapping[str, object] | str, request: ChatRequest) -> str:
    """The SHA-256 key of one call of a target with `identity` (or with `identity` already
    serialised by `_key_json`, which spares doing it at every call; the key is the same)."""
    target = identity if isinstance(identity, str) else _key_json(identity)
    return _cache_key(target.encode("utf-8"), request)


def _cache_key(target: bytes, request: ChatRequest) -> str:
    """`cache_key` with the target's identity as UTF-8 JSON.

    The key material is one JSON object with sorted keys: those before "target", the target,
    those after, each written as `_key_json` writes it."""
    before: dict[str, object] = {
        "max_tokens": request.max_tokens,
        "messages": request.messages,
        "response_schema": request.response_schema,
        "schema_name": request.schema_name if request.response_schema is not None else None,
    }
    if request.seed is not None:  # keys of calls without a seed stay as they were
        before["seed"] = request.seed
    digest = hashlib.sha256(_key_bytes(before)[:-1])
    digest.update(b',"target":')
    digest.update(target)
    digest.update(b',"temperature":')
    digest.update(_scalar_bytes(request.temperature))
    if request.tools:  # likewise for calls without tools
        digest.update(b',"tools":')
        digest.update(_key_bytes(request.tools))
    digest.update(b',"trial":')
    digest.update(_scalar_bytes(request.trial))
    digest.update(b',"v":%d}' % KEY_VERSION)
    return digest.hexdigest()


class CachedTarget(TargetWrapper):
    """A Target that answers from the cache when it can and stores what the inner target says.

    Args:
        inner: the target doing the real calls.
        cache: where replies live.
        identity: what identifies `inner`'s answers (see `target_identity`).
        secrets: values that must never be stored (the target's API key); a reply containing
            one is passed on but not cached.
        meter: counts every call (cache hits and failures too), as `MeteredTarget` around this
            target would, without a coroutine more for each call to pass through.

    A reply to a structured call (a judge's or a simulated user's, with a response schema) that
    holds no JSON is passed on but not cached either, so a re-run asks again instead of
    repeating the same unusable answer. A stored reply of an HTTP API costs its usage at this
    target's prices (prices are not part of the key: two targets that differ only by them share
    answers, not costs).
    """

    def __init__(
        self,
        inner: Target,
        cache: ResponseCache,
        identity: Mapping[str, object],
        secrets: tuple[str, ...] = (),
        meter: RunMeter | None = None,
    ):
        super().__init__(inner)
        self.cache = cache
        self.identity = identity
        self._identity_key = _key_json(identity).encode("utf-8")
        self.secrets = tuple(s for s in secrets if s)
        self.provider = str(identity.get("provider", ""))
        self.model = str(identity.get("model", ""))
        self._priced_by = http_target(inner)
        self.meter = meter

    async def chat(self, request: ChatRequest) -> ChatReply:
        try:
            key = _cache_key(self._identity_key, request)
            stored = self.cache.get(key)
            if stored is not None:
                reply = reply_from_json(stored)
                if (api := self._priced_by) is not None:
                    reply.cost_usd = api.cost(reply.usage)
                    reply.cost_known = api.priced
            else:
                reply = await self.inner.chat(request)
                self._store(key, request, reply)
        except Exception as exc:
            if self.meter is not None:
                self.meter.record_call(self.name, request, exc)
            raise
        if self.meter is not None:
            self.meter.record_call(self.name, request, reply)
        return reply

    def _store(self, key: str, request: ChatRequest, reply: ChatReply) -> None:
        """Cache a reply the model gave, unless it holds a secret or is an unusable structured one."""
        if request.response_schema is not None and not _holds_json(reply.text):
            return
        value = reply_to_json(reply)
        text = _value_json(value)
        if not contains_secret(text, self.secrets):
            self.cache.put(key, self.provider, self.model, value, text)


def _holds_json(text: str) -> bool:
    """Whether a judge could read JSON in `text` (as `extract_json` finds it)."""
    try:
        orjson.loads(text)  # the usual answer: the whole text is JSON
        return True
    except orjson.JSONDecodeError:
        pass
    try:
        extract_json(text)
    except JudgeOutputError:
        return False
    return True


def reply_to_json(reply: ChatReply) -> CachedReply:
    counts = usage_counts(reply.usage)
    value: CachedReply = {
        "text": reply.text,
        "usage": counts[:2],
        "latency_ms": reply.latency_ms,
        "cost_usd": reply.cost_usd,
        "cost_known": reply.cost_known,
        "tool_calls": [c.model_dump(mode="json") for c in reply.tool_calls],
        "finish_reason": reply.finish_reason,
    }
    if len(counts) > 2:
        value["prompt_cache"] = counts[2:]
    return value


#: `Usage`'s counts, in the order the cache and worker processes pass them.
USAGE_FIELDS = ("input_tokens", "output_tokens", "cached_input_tokens", "cache_write_tokens")


def usage_counts(usage: Usage) -> list[int]:
    """`usage`'s counts (`USAGE_FIELDS`), without the prompt-cache ones when they are 0."""
    counts = [usage.input_tokens, usage.output_tokens]
    if usage.cached_input_tokens or usage.cache_write_tokens:
        counts += [usage.cached_input_tokens, usage.cache_write_tokens]
    return counts


def counted_usage(counts: Sequence[int]) -> Usage:
    """The `Usage` of `usage_counts`."""
    return Usage(**dict(zip(USAGE_FIELDS, counts, strict=False)))


def reply_from_json(value: CachedReply) -> ChatReply:
    """A cached reply: as first answered (latency included), with `cached=True`."""
    return ChatReply(
        text=value["text"],
        usage=counted_usage([*(value.get("usage") or (0, 0)), *value.get("prompt_cache", ())]),
        latency_ms=float(value.get("latency_ms") or 0.0),
        cost_usd=float(value.get("cost_usd") or 0.0),
        cost_known=bool(value.get("cost_known")),
        tool_calls=[ToolCall.model_validate(c) for c in value.get("tool_calls") or []],
        finish_reason=value.get("finish_reason"),
        cached=True,
    )


def _value_json(value: CachedReply) -> str:
    """A reply as the cache stores it: compact JSON (escaped to ASCII where orjson cannot write
    it, a lone surrogate in a reply's text)."""
    try:
        return orjson.dumps(value).decode("utf-8")
    except orjson.JSONEncodeError:
        return json.dumps(value)


def _cached_reply(text: str) -> CachedReply:
    """A stored value read back (written by `reply_to_json` under this `KEY_VERSION`)."""
    try:
        value: CachedReply = orjson.loads(text)
    except orjson.JSONDecodeError:  # NaN, which older versions wrote for an unknown latency
        value = json.loads(text)
    return value
