"""Text shown to people: `shorten` is the one way convoeval cuts a long text for a message,
a report line or a result detail (bottom layer: every package uses it)."""

from __future__ import annotations

from ._secrets import redact


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
