"""Engine: HTTP with retries (and, as it grows, rate limits, cache and run store)."""

from ._http import RetryPolicy, parse_retry_after, post_json, redact

__all__ = ["RetryPolicy", "parse_retry_after", "post_json", "redact"]
