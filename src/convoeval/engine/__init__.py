"""Engine: HTTP with retries, per-provider limits, the response cache, the run store, prices and
the run meter."""

from ._cache import CACHE_FILE, CachedTarget, ResponseCache, cache_key, target_identity
from ._http import RetryPolicy, parse_retry_after, post_json, redact
from ._limits import ProviderLimits, TokenBucket, estimate_tokens
from ._meter import CallTotals, MeteredTarget, RunMeter
from ._prices import call_cost, lookup_price, price_table
from ._store import RERUN_STATUSES, STORE_FILE, ResultKey, RunRecord, RunStore, StoredResults

__all__ = [
    "CACHE_FILE",
    "RERUN_STATUSES",
    "STORE_FILE",
    "CachedTarget",
    "CallTotals",
    "MeteredTarget",
    "ProviderLimits",
    "ResponseCache",
    "ResultKey",
    "RetryPolicy",
    "RunMeter",
    "RunRecord",
    "RunStore",
    "StoredResults",
    "TokenBucket",
    "cache_key",
    "call_cost",
    "estimate_tokens",
    "lookup_price",
    "parse_retry_after",
    "post_json",
    "price_table",
    "redact",
    "target_identity",
]
