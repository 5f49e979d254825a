"""Token prices of well-known models (USD per million tokens), from `convoeval/targets/prices.json`."""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from typing import TypeVar

from ..results import Usage

_T = TypeVar("_T")

#: What Anthropic charges for a prompt-cache read and a (5-minute) write, as multiples of the input price.
ANTHROPIC_CACHE = (0.1, 1.25)


@lru_cache(maxsize=1)
def _shipped() -> dict:
    return json.loads(resources.files("convoeval.targets").joinpath("prices.json").read_text(encoding="utf-8"))


@lru_cache(maxsize=1)
def price_table() -> dict[str, tuple[float, float]]:
    """model -> (input, output) USD per million tokens, as shipped with convoeval."""
    return {name: (float(i), float(o)) for name, (i, o) in _shipped()["models"].items()}


def _listed(model: str, table: dict[str, _T]) -> _T | None:
    """The entry of `model` in `table` (see `lookup_price`)."""
    name = model.rsplit("/", 1)[-1].strip().lower()
    if name in table:
        return table[name]
    best = max((key for key in table if name.startswith(key + "-")), key=len, default=None)
    return table[best] if best else None


@lru_cache(maxsize=256)
def lookup_cached_price(model: str) -> float | None:
    """The list price of `model`'s cached input tokens (prompt-cache reads; matched as in
    `lookup_price`), or None when the table has none (they then cost the input price)."""
    return _listed(model, {name: float(price) for name, price in _shipped()["cached_input"].items()})


@lru_cache(maxsize=256)
def lookup_price(model: str) -> tuple[float, float] | None:
    """The list price of `model`, or None when it is not in the table.

    A name matches exactly, or by its longest table entry followed by `-` (dated snapshots:
    `gpt-4o-mini-2024-07-18` is priced as `gpt-4o-mini`). A routing prefix such as
    `openai/` is ignored.

    Example:
        >>> lookup_price("claude-sonnet-4-5-20250929")
        (3.0, 15.0)
    """
    return _listed(model, price_table())


def target_prices(model: str, price_in: float | None, price_out: float | None) -> tuple[tuple[float, float], bool]:
    """A target's `(input, output)` prices: its own (`price_input_per_mtok`,
    `price_output_per_mtok`), else its model's list price (`lookup_price`), else 0; and whether
    both are known (set or listed: a cost of 0 is then a measurement, `ChatReply.cost_known`)."""
    listed = lookup_price(model) if model else None
    prices = (
        price_in if price_in is not None else (listed[0] if listed else 0.0),
        price_out if price_out is not None else (listed[1] if listed else 0.0),
    )
    return prices, bool(listed) or (price_in is not None and price_out is not None)


def cache_prices(
    model: str, input_price: float, *, own_input_price: bool, anthropic: bool = False
) -> tuple[float, float]:
    """What a prompt-cache `(read, write)` token costs, USD per million: for Claude models (and
    any model of the anthropic provider) `ANTHROPIC_CACHE` times the input price; else a read at
    the model's cached-input list price (`lookup_cached_price`, unless the target sets its own
    input price), else at the input price, and a write at the input price (OpenAI's are free)."""
    if anthropic or "claude" in model.lower():
        return input_price * ANTHROPIC_CACHE[0], input_price * ANTHROPIC_CACHE[1]
    listed = None if own_input_price or not model else lookup_cached_price(model)
    return (input_price if listed is None else listed), input_price


def usage_cost(usage: Usage, prices: tuple[float, float], cache: tuple[float, float]) -> float:
    """USD cost of `usage` at `(input, output)` and prompt-cache `(read, write)` USD per million
    tokens (see `Usage`: cache reads and writes are part of its input tokens)."""
    read = min(usage.cached_input_tokens, usage.input_tokens)
    written = min(usage.cache_write_tokens, usage.input_tokens - read)
    fresh = usage.input_tokens - read - written
    return (fresh * prices[0] + read * cache[0] + written * cache[1] + usage.output_tokens * prices[1]) / 1_000_000


def call_cost(input_tokens: int, output_tokens: int, prices: tuple[float, float] | None) -> float:
    """USD cost of one call at `(input, output)` USD per million tokens (0 without prices)."""
    if prices is None:
        return 0.0
    return (input_tokens * prices[0] + output_tokens * prices[1]) / 1_000_000
