"""Text shown to people: `shorten` is the one way convoeval cuts a long text for a message,
a report line or a result detail (bottom layer: every package uses it)."""

from __future__ import annotations

import re

from ._secrets import redact

#: A lone surrogate: what a JSON `\ud800` escape decodes to; UTF-8 cannot hold it, so every
#: file or stream that writes it fails.
_SURROGATE = re.compile("[\ud800-\udfff]")


def shorten(text: str, limit: int, *, one_line: bool = False) -> str:
    """`text` cut to `limit` characters, the cut marked with an ellipsis; `one_line` first
    folds every run of whitespace (newlines too) into one space. A text that is cut is
    redacted first: what is left of a cut key would no longer be found by its value.

    Example:
        shorten("a long\\nreply", 7, one_line=True) == "a long…"
    """
    if one_line:
        text = " ".join(text.split())
    if len(text) <= limit:
        return text
    text = redact(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def without_surrogates(text: str) -> str:
    """`text` with each lone surrogate replaced by U+FFFD, as a UTF-8 decoder does with bytes it
    cannot read (an ASCII text is returned at once)."""
    return text if text.isascii() else _SURROGATE.sub("\ufffd", text)
