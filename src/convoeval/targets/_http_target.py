"""Shared plumbing of the targets that talk JSON over HTTP."""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp

from ..engine import RetryPolicy, post_json
from ._base import TargetConfig


class HttpTarget:
    """Holds one aiohttp session per target (created inside the running event loop)."""

    default_api_key_env: str | None = None

    def __init__(self, config: TargetConfig):
        self.config = config
        self.name = config.name
        self.api_key = config.resolve_api_key(self.default_api_key_env)
        self.policy = RetryPolicy(max_attempts=config.max_retries + 1)
        self._session: aiohttp.ClientSession | None = None
        self._limit = asyncio.Semaphore(config.concurrency) if config.concurrency else None

    def _get_session(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            connector = aiohttp.TCPConnector(limit=self.config.concurrency or 256, ttl_dns_cache=300)
            self._session = aiohttp.ClientSession(connector=connector)
        return self._session

    async def post(self, url: str, payload: dict[str, Any], headers: dict[str, str]) -> dict[str, Any]:
        secrets = (self.api_key,) if self.api_key else ()
        call = post_json(
            self._get_session(), url, payload, headers={**self.config.headers, **headers},
            timeout_s=self.config.timeout_s, policy=self.policy, secrets=secrets,
        )
        if self._limit is None:
            return await call
        async with self._limit:
            return await call

    def cost(self, input_tokens: int, output_tokens: int) -> float:
        price_in = self.config.price_input_per_mtok or 0.0
        price_out = self.config.price_output_per_mtok or 0.0
        return (input_tokens * price_in + output_tokens * price_out) / 1_000_000

    async def aclose(self) -> None:
        if self._session is not None and not self._session.closed:
            await self._session.close()
