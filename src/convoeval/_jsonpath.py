"""JSONPath expressions (jsonpath-ng's extended syntax), each parsed once.

jsonpath-ng builds its parser tables on import (about 15 ms) and parses slowly, so it loads on
the first expression and every expression is parsed once per process.
"""

from __future__ import annotations

import functools
from typing import Any


@functools.lru_cache(maxsize=1024)
def parse_jsonpath(expression: str) -> Any:
    """The parsed expression (`.find(data)` gives its matches); jsonpath-ng's exception when
    `expression` is not JSONPath."""
    from jsonpath_ng.ext import parse

    return parse(expression)
