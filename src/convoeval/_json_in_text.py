"""`parse_json`: the one way convoeval finds JSON in a text (a reply, a judge's answer, a tool's output).

Where it looks, in this order (the first that parses wins):

1. the whole text (whitespace around it allowed): any JSON value;
2. with `fenced` or `embedded`: each fenced code block marked ```json, ```jsonc, ```json5 or
   not marked (the mark is followed by a line break): any JSON value;
3. with `embedded`: each `{` or `[` in the text (the first 200), from which a JSON object or
   array decodes, whatever follows it; only `{` with `objects_only`, as a judge's answer may
   cite `[1]` before its JSON object.

JSON is what RFC 8259 (and JavaScript's `JSON.parse`) reads: `NaN` and `Infinity`, which
Python's `json` reads by default, are not JSON. When nothing parses, `NoJson` carries why the
whole text is not JSON (`Expecting value at line 1 column 1`). Callers say what the value must be
(a judge's answer must be an object).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pydantic import JsonValue

_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[ \t]*\r?\n(.*?)```", re.DOTALL)
_JSON_MARKS = ("", "json", "jsonc", "json5")
_MAX_TRIES = 200


def _not_json(name: str) -> None:
    raise json.JSONDecodeError(f"{name} is not JSON", name, 0)


#: A decoder of JSON only (no `NaN`, `Infinity`, `-Infinity`).
_DECODER = json.JSONDecoder(parse_constant=_not_json)


def strict_loads(text: str) -> JsonValue:
    """`json.loads(text)` of JSON only (RFC 8259: no `NaN` or `Infinity`).

    Raises:
        json.JSONDecodeError: `text` is not JSON.
    """
    value: JsonValue = _DECODER.decode(text)
    return value


@dataclass
class FoundJson:
    """A JSON value found in a text, and where: `the whole reply`, `a ```json fenced block`,
    `JSON at char 12`."""

    value: JsonValue
    where: str


class NoJson(ValueError):
    """The text holds no JSON; the message says why the whole text is not JSON."""


def parse_json(text: str, *, fenced: bool = False, embedded: bool = False, objects_only: bool = False) -> FoundJson:
    """The JSON in `text` (see the module's docstring for where it looks).

    Args:
        text: the text.
        fenced: also accept the content of a fenced code block (```json ... ```).
        embedded: also accept fenced blocks and the first JSON object or array in prose.
        objects_only: in prose, look for an object only (not an array).

    Raises:
        NoJson: nothing parsed; the message is the whole-text parse error.
    """
    try:
        return FoundJson(strict_loads(text), "the whole reply")
    except json.JSONDecodeError as exc:
        whole_error = exc
    if fenced or embedded:
        for match in _FENCE.finditer(text):
            mark = match.group(1).lower()
            if mark not in _JSON_MARKS:
                continue
            try:
                return FoundJson(strict_loads(match.group(2)), f"a ```{mark} fenced block")
            except json.JSONDecodeError:
                continue
    if embedded:
        found = _in_prose(text, r"\{" if objects_only else r"[\[{]")
        if found is not None:
            return found
    raise NoJson(f"{whole_error.msg} at line {whole_error.lineno} column {whole_error.colno}")


def _in_prose(text: str, starts: str) -> FoundJson | None:
    """The first object or array that decodes from one of the first `_MAX_TRIES` `starts`."""
    decoder = _DECODER
    for tries, match in enumerate(re.finditer(starts, text)):
        if tries >= _MAX_TRIES:
            break
        try:
            value, _ = decoder.raw_decode(text, match.start())
        except json.JSONDecodeError:
            continue
        if isinstance(value, (dict, list)):
            return FoundJson(value, f"JSON at char {match.start()}")
    return None
