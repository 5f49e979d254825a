"""Request limits: connections at once, requests per minute, tokens per minute.

`ProviderLimits.slot()` is entered around every HTTP attempt (retries included): it waits for
the rate limits, then for a connection slot. Rate limits are token buckets in the GCRA form:
each caller reserves its share at once and sleeps until its turn, so waiting callers are
served first come, first served and no background task is needed. `EndpointLimits` gives all
the targets of a run that call one endpoint (server and API key) one shared `ProviderLimits`.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections import deque
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from urllib.parse import urlsplit


class TokenBucket:
    """`rate_per_minute` units a minute, with bursts of up to `burst` units.

    Args:
        rate_per_minute: sustained rate (requests or tokens a minute).
        burst: units that may be taken at once after a quiet spell (default: one second's
            worth, at least 1). A single request larger than the burst still goes through,
            alone, once the bucket is full.
        clock: a monotonic clock in seconds (tests pass a fake one).

    Example:
        bucket = TokenBucket(rate_per_minute=60)       # one request a second
        await bucket.acquire()
    """

    def __init__(self, rate_per_minute: float, burst: float | None = None, clock: Callable[[], float] = time.monotonic):
        if rate_per_minute <= 0:
            raise ValueError("rate_per_minute must be positive")
        self.rate = rate_per_minute / 60.0  # units a second
        self.burst = max(1.0, burst if burst is not None else self.rate)
        self.clock = clock
        self._tat = clock()  # theoretical arrival time: when the bucket will be full again

    def reserve(self, amount: float = 1.0) -> float:
        """Take `amount` units now; return how many seconds the caller must wait first."""
        now = self.clock()
        tat = max(self._tat, now)
        # Allowed once the bucket holds `amount` units (or is full, for an oversized amount).
        wait = max(0.0, tat - now - max(0.0, self.burst - amount) / self.rate)
        self._tat = tat + amount / self.rate
        return wait

    def adjust(self, amount: float) -> None:
        """Take (positive) or give back (negative) units after the fact, e.g. when the real
        token count of a call is known."""
        self._tat += amount / self.rate

    async def acquire(self, amount: float = 1.0) -> None:
        wait = self.reserve(amount)
        if wait > 0:
            await asyncio.sleep(wait)


class ProviderLimits:
    """The limits of one target: `concurrency` connections, `rpm`, `tpm`; all optional.

    A `429` with `Retry-After` pauses every caller of the target (`pause`), not only the one
    that got it.
    """

    def __init__(
        self,
        *,
        concurrency: int | None = None,
        rpm: float | None = None,
        tpm: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.concurrency = concurrency
        self.requests = TokenBucket(rpm, clock=clock) if rpm else None
        self.tokens = TokenBucket(tpm, clock=clock) if tpm else None
        self.clock = clock
        self._connections: AbstractAsyncContextManager[object] | None = (
            Connections(concurrency) if concurrency else None
        )
        self._paused_until = 0.0

    def hold_connections_with(self, slot: AbstractAsyncContextManager[object]) -> None:
        """Hold each connection through `slot` instead of this process's semaphore (the Ray
        backend's cluster-wide one)."""
        self._connections = slot

    def pause(self, seconds: float) -> None:
        """Hold back new attempts for `seconds` (a provider said `Retry-After`)."""
        self._paused_until = max(self._paused_until, self.clock() + seconds)

    def slot(self, estimated_tokens: int = 0) -> AbstractAsyncContextManager[None]:
        """Wait for the pause, the rate limits and a free connection; hold the connection."""
        return _Slot(self, estimated_tokens)

    def tighten(self, concurrency: int | None, rpm: float | None, tpm: float | None) -> None:
        """Lower the limits to the given ones where they are tighter (before the first call)."""
        if concurrency is not None and (self.concurrency is None or concurrency < self.concurrency):
            self.concurrency = concurrency
            self._connections = Connections(concurrency)
        if rpm and (self.requests is None or rpm / 60.0 < self.requests.rate):
            self.requests = TokenBucket(rpm, clock=self.clock)
        if tpm and (self.tokens is None or tpm / 60.0 < self.tokens.rate):
            self.tokens = TokenBucket(tpm, clock=self.clock)

    def settle_tokens(self, estimated: int, actual: int) -> None:
        """Correct the token bucket once the call's real usage is known."""
        if self.tokens is not None and actual:
            self.tokens.adjust(actual - estimated)


class Connections:
    """`size` connections at once, each freed one handed to the caller that waited longest.

    What `asyncio.Semaphore` does, for the one use here: a freed connection goes straight to a
    waiting caller (never to one that arrives meanwhile), and `release` says whether a caller
    handed one has yet to run, without scanning the waiters as a semaphore does. Entered as an
    async context manager, or with `take` and `wait` (no coroutine while one is free).
    """

    __slots__ = ("free", "size", "waiters", "woken")

    def __init__(self, size: int):
        self.size, self.free = size, size
        self.waiters: deque[asyncio.Future[None]] = deque()
        self.woken = 0  # callers handed a connection that have not run since

    def take(self) -> bool:
        """Take a free connection now (False: none is free, or callers wait for one)."""
        if self.free > 0 and not self.waiters:
            self.free -= 1
            return True
        return False

    async def wait(self) -> None:
        """Wait for a connection (after `take` said False): it is the caller's when this returns."""
        if self.take():
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.waiters.append(waiter)
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self.woken -= 1
                self.release()  # handed over as the caller was cancelled: it goes on
            elif waiter in self.waiters:
                self.waiters.remove(waiter)  # a later caller must not wait behind it
            raise
        self.woken -= 1

    def release(self) -> bool:
        """Free a connection; True when a waiting caller got it or one handed a connection
        before has not run yet (either should send before the caller goes on)."""
        while self.waiters:
            waiter = self.waiters.popleft()
            if not waiter.done():  # not cancelled
                waiter.set_result(None)
                self.woken += 1
                return True
        self.free += 1
        return self.woken > 0

    async def __aenter__(self) -> None:
        if not self.take():
            await self.wait()

    async def __aexit__(self, *exc: object) -> None:
        self.release()


class _Slot:
    """`ProviderLimits.slot`: a class rather than a generator, as it is entered around every call."""

    __slots__ = ("held", "limits", "tokens")

    def __init__(self, limits: ProviderLimits, tokens: int):
        self.limits, self.tokens = limits, tokens
        self.held: AbstractAsyncContextManager[object] | None = None

    async def __aenter__(self) -> None:
        limits = self.limits
        while (delay := limits._paused_until - limits.clock()) > 0:
            await asyncio.sleep(delay)
        if limits.requests is not None:
            await limits.requests.acquire(1)
        if limits.tokens is not None and self.tokens:
            await limits.tokens.acquire(self.tokens)
        held = limits._connections
        if type(held) is Connections:
            if not held.take():
                await held.wait()
            self.held = held
        elif held is not None:  # another process's limit (the Ray backend's)
            await held.__aenter__()
            self.held = held

    async def __aexit__(self, *exc: object) -> None:
        held = self.held
        if type(held) is Connections:
            handed = held.release()
        elif held is not None:
            await held.__aexit__(None, None, None)
            handed = bool(getattr(held, "locked", bool)())
        else:
            return
        if handed:
            # A caller waits for this connection: it sends its request before this caller
            # goes on with its reply (grading it, its next turn). Replies arrive together:
            # two turns of the event loop let every caller woken by them send first, where
            # each would otherwise wait for the work of every reply before its own. On W
            # (`benchmarks/run.py`) the requests then take what the floor's take.
            await _two_turns()


def _two_turns() -> asyncio.Future[None]:
    """A future done when the event loop's next turn runs, so that its waiter resumes in the turn
    after: where two `sleep(0)` resume it, but with one suspension of the caller's coroutines,
    not two (each resumes every coroutine of the call's chain)."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[None] = loop.create_future()
    loop.call_soon(_settle, done)
    return done


def _settle(done: asyncio.Future[None]) -> None:
    if not done.done():  # its waiter may have been cancelled meanwhile
        done.set_result(None)


class EndpointLimits:
    """One `ProviderLimits` per endpoint for a run: a target and a judge on the same server with
    the same key share connections and rate limits, the tightest of their settings.

    Args:
        max_connections: requests in flight per endpoint at most (`--max-connections`), on top
            of each target's own `concurrency`.
    """

    def __init__(self, max_connections: int | None = None):
        self.max_connections = max_connections
        self._shared: dict[str, ProviderLimits] = {}

    def share(self, endpoint: str, limits: ProviderLimits) -> ProviderLimits:
        """The limits every target calling `endpoint` uses from now on."""
        shared = self._shared.get(endpoint)
        if shared is None:
            shared = self._shared[endpoint] = limits
            shared.tighten(self.max_connections, None, None)
        else:
            rpm = limits.requests.rate * 60 if limits.requests else None
            tpm = limits.tokens.rate * 60 if limits.tokens else None
            shared.tighten(limits.concurrency, rpm, tpm)
        return shared


def endpoint_key(url: str, api_key: str | None) -> str:
    """`scheme://host:port` of `url` plus a short hash of the key (never the key itself)."""
    parts = urlsplit(url)
    digest = hashlib.sha256((api_key or "").encode()).hexdigest()[:12] if api_key else "nokey"
    return f"{parts.scheme}://{parts.netloc}#{digest}"


def estimate_tokens(payload_bytes: int, max_tokens: int | None) -> int:
    """A rough token count of a call before it is made: ~4 bytes a token in, plus max_tokens out."""
    return payload_bytes // 4 + (max_tokens or 0)
