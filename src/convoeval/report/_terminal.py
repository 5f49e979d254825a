"""Text for the terminal: control characters a test id, a note or an error may hold (ESC
sequences, carriage returns, bidi overrides) are shown escaped, never sent raw."""

from __future__ import annotations

import re

from rich.console import Console, HighlighterType, JustifyMethod, OverflowMethod
from rich.style import Style
from rich.text import Text

_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def printable(text: str) -> str:
    """`text` with control characters (except newline and tab) written as `\\xNN` / `\\uNNNN`."""
    if not _CONTROL.search(text):
        return text
    return _CONTROL.sub(lambda m: repr(m.group(0))[1:-1], text)


class SafeConsole(Console):
    """A rich Console whose strings (markup included) print their control characters escaped."""

    def render_str(
        self,
        text: str,
        *,
        style: str | Style = "",
        justify: JustifyMethod | None = None,
        overflow: OverflowMethod | None = None,
        emoji: bool | None = None,
        markup: bool | None = None,
        highlight: bool | None = None,
        highlighter: HighlighterType | None = None,
    ) -> Text:
        return super().render_str(
            printable(text),
            style=style,
            justify=justify,
            overflow=overflow,
            emoji=emoji,
            markup=markup,
            highlight=highlight,
            highlighter=highlighter,
        )
