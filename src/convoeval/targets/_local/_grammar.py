"""Structured output for the local model: llama.cpp GBNF grammars built from JSON Schemas."""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING

from .._base import TargetError

if TYPE_CHECKING:
    from llama_cpp.llama_grammar import LlamaGrammar

# llama-cpp-python's schema converter lets raw control characters (a newline, a tab) into
# strings; json.loads rejects those, so the string character rule is tightened the way
# upstream llama.cpp's converter writes it.
_LOOSE_CHAR = r'char ::= [^"\\] |'
_STRICT_CHAR = r'char ::= [^"\\\x7F\x00-\x1F] |'
# The converter lets a space follow every token of the JSON; each one costs the model a
# decoding step. Compact JSON is just as valid and about a quarter fewer tokens.
_LOOSE_SPACE = 'space ::= " "?'
_NO_SPACE = 'space ::= ""'
_GRAMMARS: dict[str, LlamaGrammar] = {}
_GRAMMARS_LOCK = threading.Lock()


def schema_grammar(name: str, schema: Mapping[str, object]) -> LlamaGrammar:
    """The llama.cpp grammar for a JSON Schema (cached), or TargetError if it has none.

    This is what `response_format={"type": "json_object", "schema": ...}` does inside
    llama-cpp-python, with three changes: a schema the converter cannot handle is an error
    instead of a silent fall-back to "any JSON", strings cannot hold raw control characters,
    and the JSON is compact (no optional spaces).
    """
    try:
        text = json.dumps(schema, sort_keys=True)
    except (TypeError, ValueError) as exc:
        raise TargetError(f"{name}: response_schema is not JSON: {exc}") from None
    with _GRAMMARS_LOCK:
        grammar = _GRAMMARS.get(text)
    if grammar is not None:
        return grammar
    from llama_cpp.llama_grammar import LlamaGrammar, json_schema_to_gbnf

    try:
        gbnf = json_schema_to_gbnf(json.dumps(schema))
    except Exception as exc:
        raise TargetError(
            f"{name}: llama.cpp cannot build a grammar from this response_schema ({type(exc).__name__}: {exc})"
        ) from None
    gbnf = gbnf.replace(_LOOSE_CHAR, _STRICT_CHAR).replace(_LOOSE_SPACE, _NO_SPACE)
    grammar = LlamaGrammar.from_string(gbnf, verbose=False)
    with _GRAMMARS_LOCK:
        if len(_GRAMMARS) >= 256:
            _GRAMMARS.clear()
        _GRAMMARS[text] = grammar
    return grammar


def bound_strings(schema: Mapping[str, object], max_chars: int) -> dict[str, object]:
    """`schema` with `maxLength: max_chars` on every free-text string that has no bound.

    Under a grammar with unbounded strings a small model may never close its reasoning and
    runs into max_tokens (a judge error after a long, slow answer); bounded, every answer ends.
    Strings fixed by `enum`, `const`, `pattern` or `format` are left alone.
    """
    bounded = {key: _bounded(value, max_chars) for key, value in schema.items()}
    if bounded.get("type") == "string" and not {"maxLength", "enum", "const", "pattern", "format"} & set(bounded):
        bounded["maxLength"] = max_chars
    return bounded


def _bounded(value: object, max_chars: int) -> object:
    if isinstance(value, list):
        return [_bounded(item, max_chars) for item in value]
    if isinstance(value, dict):
        return bound_strings(value, max_chars)
    return value


def normalise_json(text: str) -> str:
    """The reply as strict JSON when it only parses leniently (raw control characters)."""
    try:
        json.loads(text)
        return text
    except ValueError:
        pass
    try:
        return json.dumps(json.loads(text, strict=False), ensure_ascii=False)
    except ValueError:
        return text
