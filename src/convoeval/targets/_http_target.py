"""Shared plumbing of the targets that talk JSON over HTTP."""

from __future__ import annotations

from collections.abc import Coroutine, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from ..results import Usage
from ._base import Target, TargetConfig, unwrap
from ._http import RetryPolicy, post_json
from ._limits import ProviderLimits, endpoint_key
from ._prices import cache_prices, target_prices, usage_cost
from ._settings import HttpSettings, settings_of

if TYPE_CHECKING:
    import aiohttp

#: Connections one target keeps open at most when its `concurrency` is not set.
DEFAULT_CONNECTIONS = 256


def endpoint_url(base: str, path: str, query: str = "") -> str:
    """`base` with `path` added to its path: a query it holds (`?api_key=...`) stays after the
    path, with `query` added to it."""
    parts = urlsplit(base.strip())
    joined = "&".join(q for q in (parts.query, query) if q)
    return urlunsplit(parts._replace(path=parts.path.rstrip("/") + path, query=joined))


class HttpTarget:
    """Holds one aiohttp session per target (created inside the running event loop).

    Settings read from the targets file besides the common ones:
        concurrency: connections (calls in flight) at most.
        rpm, tpm: requests and tokens per minute at most (token buckets; retries count).
        price_input_per_mtok, price_output_per_mtok: USD per million tokens; default: the
            price table shipped with convoeval (`lookup_price`), else 0. Prompt-cache reads and
            writes cost what `cache_prices` says.
    """

    default_api_key_env: str | None = None
    settings_model: type[HttpSettings] = HttpSettings
    url: str = ""  # the URL the target posts to, set by each provider
    anthropic_cache: bool = False  # its prompt cache is priced as Anthropic's (`cache_prices`)

    def __init__(self, config: TargetConfig):
        self.config = config
        self.name = config.name
        self.api_key = config.resolve_api_key(self.default_api_key_env)
        self.policy = RetryPolicy(max_attempts=config.max_retries + 1)
        self._secrets = (self.api_key,) if self.api_key else ()
        self._session: aiohttp.ClientSession | None = None
        self.settings = settings_of(config, self.settings_model)  # TargetError naming a wrong field
        self.limits = ProviderLimits(
            concurrency=config.concurrency,
            rpm=self.settings.rpm,
            tpm=self.settings.tpm,
        )
        #: `priced`: both prices are set or listed, a cost of 0 is one (`ChatReply.cost_known`).
        self.prices, self.priced = target_prices(
            config.model, config.price_input_per_mtok, config.price_output_per_mtok
        )
        #: What a prompt-cache (read, write) token costs.
        self.cache_prices = cache_prices(
            config.model or "",
            self.prices[0],
            own_input_price=config.price_input_per_mtok is not None,
            anthropic=self.anthropic_cache,
        )

    @property
    def endpoint(self) -> str:
        """The server and key this target calls (targets on one endpoint share its limits)."""
        return endpoint_key(self.url or self.config.base_url or self.name, self.api_key)

    def auth_headers(self) -> dict[str, str]:
        """The headers that carry this target's credentials, the same on every call (none here)."""
        return {}

    def missing_key(self) -> str | None:
        """What to do when this target needs an API key it has not got (`no API key; set VAR`),
        else None. A run checks it for every target, judge and simulator it will call before it
        starts (a configuration error); `chat` checks it too. Here: no key is needed."""
        return None

    def _no_key(self) -> str:
        """`no API key; set VAR`: the variable the config names, else the provider's."""
        return f"no API key; set {self.config.api_key_env or self.default_api_key_env}"

    def _get_session(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            import aiohttp

            connector = aiohttp.TCPConnector(limit=self.config.concurrency or DEFAULT_CONNECTIONS, ttl_dns_cache=300)
            self._session = aiohttp.ClientSession(connector=connector, headers=self._session_headers())
        return self._session

    def _session_headers(self) -> dict[str, str]:
        """What every call sends: `Content-Type`, `config.headers`, `auth_headers()`, a later name
        replacing an earlier one whatever its case (as aiohttp merges a request's own headers).
        They are the session's: aiohttp copies those at C speed, where it merges headers given
        with each request one by one."""
        headers: dict[str, str] = {}
        for key, value in {"Content-Type": "application/json", **self.config.headers, **self.auth_headers()}.items():
            for same in [k for k in headers if k.lower() == key.lower()]:
                del headers[same]
            headers[key] = value
        return headers

    def post(
        self,
        url: str,
        payload: Mapping[str, object],
        headers: dict[str, str] | None = None,
        array_key: str | None = None,
    ) -> Coroutine[Any, Any, dict[str, object]]:
        """POST `payload` to `url` (see `post_json`) with `config.headers`, `auth_headers()` and
        this call's own `headers`, if any. A plain function returning `post_json`'s coroutine:
        one coroutine fewer for the event loop to resume while the call waits."""
        return post_json(
            self._get_session(),
            url,
            payload,
            headers=None if headers is None else {**self.config.headers, **self.auth_headers(), **headers},
            timeout_s=self.config.timeout_s,
            policy=self.policy,
            secrets=self._secrets,
            limits=self.limits,
            array_key=array_key,
        )

    def cost(self, usage: Usage) -> float:
        """USD cost of `usage` at this target's prices (`usage_cost`)."""
        return usage_cost(usage, self.prices, self.cache_prices)

    async def aclose(self) -> None:
        if self._session is not None and not self._session.closed:
            await self._session.close()


def http_target(target: Target) -> HttpTarget | None:
    """The HTTP target that answers for `target` (itself, or the one at the bottom of its
    wrappers, such as the tool agent's model); None for targets that call no HTTP endpoint."""
    bottom = unwrap(target)
    return bottom if isinstance(bottom, HttpTarget) else None


def endpoint_limits(target: Target) -> tuple[HttpTarget, str, ProviderLimits] | None:
    """The HTTP target that calls an endpoint for `target` (see `http_target`), that endpoint
    and its limits; None for targets without."""
    caller = http_target(target)
    return None if caller is None else (caller, caller.endpoint, caller.limits)
