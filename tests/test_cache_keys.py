"""Cache keys are computed with orjson where its bytes are those of the standard library's
`json.dumps(sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)`, and with the
standard library elsewhere: a key must stay the same key, or every existing cache is lost. The
keys pinned here were computed by the code before orjson (KEY_VERSION 1)."""

from __future__ import annotations

import datetime
import enum
import hashlib
import json
import random
import uuid

import orjson
import pytest

from convoeval.engine import cache_key
from convoeval.engine._cache import _key_bytes
from convoeval.targets import ChatRequest


class Colour(enum.Enum):
    RED = "red"


class Level(enum.IntEnum):
    HIGH = 3


IDENTITY = {
    "provider": "openai",
    "model": "gpt-x",
    "base_url": "http://127.0.0.1:1/v1",
    "temperature": None,
    "max_tokens": None,
    "agent": None,
    "params": {"seed": 7, "top_p": 0.9, "stop": ["\n\n"]},
}
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "lookup",
            "description": "Find a booking ✈",
            "parameters": {
                "type": "object",
                "properties": {"id": {"type": "string", "minLength": 3}, "limit": {"type": "integer", "maximum": 50}},
                "required": ["id"],
            },
        },
    }
]
SCHEMA = {
    "type": "object",
    "properties": {
        "c1": {
            "type": "object",
            "properties": {"reasoning": {"type": "string"}, "satisfied": {"type": "boolean"}},
            "required": ["reasoning", "satisfied"],
            "additionalProperties": False,
        }
    },
    "required": ["c1"],
    "additionalProperties": False,
}
U = 'héllo "wörld" \\ / \x00\x01\x1f\x7f \u2028\u2029 \t\n\r\b\f 日本語 עברית 😀 \ue000\uffff'
CASES = {
    "plain": dict(messages=[{"role": "user", "content": "hi"}]),
    "conversation": dict(
        messages=[
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Question 1"},
            {"role": "assistant", "content": "Reply 1"},
            {"role": "user", "content": "Question 2"},
        ]
    ),
    "unicode": dict(messages=[{"role": "user", "content": U}, {"content": U, "role": "assistant", "name": "ß😀"}]),
    "unicode keys": dict(
        messages=[{"role": "user", "content": "x", "\uffff": 1, "\U0001f600": 2, "é": 3, "Z": 4, "a": 5}]
    ),
    "temperature 0": dict(messages=[{"role": "user", "content": "hi"}], temperature=0.0),
    "temperature 0.7": dict(messages=[{"role": "user", "content": "hi"}], temperature=0.7),
    "temperature tiny": dict(messages=[{"role": "user", "content": "hi"}], temperature=1e-05),
    "temperature int": dict(messages=[{"role": "user", "content": "hi"}], temperature=1),
    "floats": dict(
        messages=[{"role": "tool", "content": "r", "x": [0.1, 1e16, 1e-05, -0.0, 1.5e300, 123456789.125, 5e-324]}]
    ),
    "nan and inf": dict(messages=[{"role": "user", "content": "n", "v": [float("nan"), float("inf"), -float("inf")]}]),
    "big ints": dict(
        messages=[{"role": "user", "content": "i", "v": [2**63, -(2**63) - 1, 2**64, 2**70, -1, 0]}], seed=2**70
    ),
    "int keys": dict(messages=[{"role": "user", "content": "k", "v": {10: "ten", 2: "two"}}]),
    "bools and none": dict(
        messages=[
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": '{"id": "ABC"}'}}
                ],
                "ok": True,
                "no": False,
            }
        ]
    ),
    "content parts": dict(
        messages=[
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "look"},
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
                ],
            }
        ]
    ),
    "tuple": dict(messages=({"role": "user", "content": "t", "v": (1, "two", (3,))},)),
    "objects": dict(
        messages=[
            {
                "role": "user",
                "content": "o",
                "when": datetime.datetime(2024, 1, 2, 3, 4, 5),
                "day": datetime.date(2024, 1, 2),
                "id": uuid.UUID(int=12345),
                "colour": Colour.RED,
                "level": Level.HIGH,
                "set": {1},
                "bytes": b"\x00x",
            }
        ]
    ),
    "max tokens and seed": dict(messages=[{"role": "user", "content": "hi"}], max_tokens=64, seed=0),
    "schema": dict(
        messages=[{"role": "system", "content": "Judge."}, {"role": "user", "content": "Reply: ok"}],
        response_schema=SCHEMA,
        schema_name="verdict",
        temperature=0.0,
    ),
    "schema with floats": dict(
        messages=[{"role": "user", "content": "s"}],
        response_schema={"type": "number", "minimum": 0.5, "maximum": 1e16, "multipleOf": 1e-05},
    ),
    "schema name without schema": dict(messages=[{"role": "user", "content": "hi"}], schema_name="ignored"),
    "tools": dict(messages=[{"role": "user", "content": "book"}], tools=TOOLS, trial=2),
    "trial": dict(messages=[{"role": "user", "content": "hi"}], trial=4, seed=42, temperature=0.2),
    "deep": dict(
        messages=[{"role": "user", "content": "d", "v": [[[[[[[[{"a": [{"b": {"c": [1, 2.5, None]}}]}]]]]]]]]}]
    ),
}

#: The keys today's caches hold for CASES (computed before orjson was used).
PINNED = {
    "plain": "985a80c6166ef7a97e3c87591d352657964dd7733d1a08677b2b1d685fbb4bde",
    "conversation": "9ddecddc4256e43952f60db96b3a3cfd31b945503befe61dbcd3e632c263d836",
    "unicode": "11d5a7a77fb26d029fdea51746ee17cc264f0743b2bfa33506a794e95da55e80",
    "unicode keys": "c7415c424a71578ab1b4391d3d92c8928f6c738ae610bb21045498051bff7083",
    "temperature 0": "f6e565f0feb20b12145802a5740eb464ce166f9af6525bd9b592c3a709344c20",
    "temperature 0.7": "dfa17abf4c27c22787496eca3a680031683bb58152d25fc7340d4f4aaa57ac04",
    "temperature tiny": "a8ff72b09d93b5fab54e764e8c180d2a169ce095bec5015736be05c226ae5a9c",
    "temperature int": "8fbd2846a3663f61224202e1d518ec27e6ee3cf755f3f30317895226997dd703",
    "floats": "013f76b9f236a9d75a0065092ad675a4ff48f9627c8ceaa89cda8fc861f21797",
    "nan and inf": "89940b6824474f21fa0d9d5ff8a4760ece5633051444887b48c2bd40113819e2",
    "big ints": "6ef72eca15219b98e0d5fc75bf9a886477a947f593e72f633fd1918f12516256",
    "int keys": "23572eb9f14f00688e06586243443548c07e023466dea42d882f051c48585b3a",
    "bools and none": "1da91fe202484afaa988c788766bdfb1e8c35c20082bcffc8d2144760373aeee",
    "content parts": "0e9bc6af04db64fd7c5358a5898d040f4fee06542bb6c168b27ac99b855d8764",
    "tuple": "350e015c4e754a8827c557f7307c3266f67c5291a7bdb7e68bfb237ed40809d3",
    "objects": "73bc43177b8a06f00582aed647b0e92b595d00c9fcae69d953983d84c6c21248",
    "max tokens and seed": "3d18a4c5ba049e8606d87adf94524cb5fe7515d6ddff76c224c1053e4a3a28ab",
    "schema": "682097c69233d36b11fbce7558e8677d07711e60f0a64fa06638c8bb5367c2b6",
    "schema with floats": "9ead8233e8957b19606f6cbdc30aa6a7fb87172838f3512e7d7d1ea07e841016",
    "schema name without schema": "985a80c6166ef7a97e3c87591d352657964dd7733d1a08677b2b1d685fbb4bde",
    "tools": "5830a11caae2c8716ef795fed7a8778cd86d5e3e7d75fd6bc1fe2074307b6e20",
    "trial": "914b5571b4b2d6b23d30a2d54ca01d85390c793654b4f65ea51c65f919b1be60",
    "deep": "45ed750247fc5ae858efe71377e117924c2b5954992f119b27168fb00e9197c0",
}


def _stdlib(value: object) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str).encode()


@pytest.mark.parametrize("name", sorted(CASES))
def test_keys_stay_those_existing_caches_hold(name: str) -> None:
    request = ChatRequest(**CASES[name])  # type: ignore[arg-type]
    serialised = _stdlib(IDENTITY).decode()
    assert cache_key(IDENTITY, request) == cache_key(serialised, request) == PINNED[name]


def _random_value(rng: random.Random, depth: int = 0) -> object:
    """Any JSON-ish value, with the values where orjson and the standard library differ."""
    kind = rng.randrange(12 if depth < 4 else 6)
    if kind == 0:
        return rng.choice([None, True, False])
    if kind == 1:
        return rng.choice([0, -1, 7, 2**53 + 1, 2**63 - 1, 2**63, -(2**63), 2**64, 10**30])
    if kind == 2:  # floats of every magnitude, both signs, and the non-finite ones
        return rng.choice([-1.0, 1.0]) * rng.random() * 10.0 ** rng.randint(-30, 30)
    if kind == 3:
        return rng.choice([0.0, -0.0, 1e-4, 1e16, 9999999999999998.0, 0.0001 - 1e-20, float("nan"), float("inf")])
    if kind in (4, 5):
        return "".join(
            chr(rng.choice([rng.randrange(0x80), rng.randrange(0xD800), rng.randrange(0xE000, 0x110000)]))
            for _ in range(rng.randrange(8))
        )
    if kind in (6, 7, 8):
        return [_random_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    if kind == 9:
        return tuple(_random_value(rng, depth + 1) for _ in range(rng.randrange(3)))
    if kind == 10:
        return rng.choice(
            [Colour.RED, Level.HIGH, uuid.UUID(int=rng.getrandbits(128)), datetime.date(2024, 5, 6), {1, 2}]
        )
    keys = [str(_random_value(rng, 9)) for _ in range(rng.randrange(5))]
    return {k: _random_value(rng, depth + 1) for k in keys}


def test_key_json_is_the_standard_librarys_for_any_value() -> None:
    rng = random.Random(30)
    fast = 0
    for _ in range(3000):
        value = [_random_value(rng)]
        assert _key_bytes(value) == _stdlib(value), value
        try:
            fast += orjson.dumps(value, option=orjson.OPT_SORT_KEYS) == _stdlib(value)
        except orjson.JSONEncodeError:
            pass
    assert fast > 500  # the comparison covered values orjson can write, not only the fallback


def test_every_character_is_escaped_as_the_standard_library_does() -> None:
    text = "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c < 0xE000)
    assert _key_bytes({"c": text, text[:3000]: text[-3000:]}) == _stdlib({"c": text, text[:3000]: text[-3000:]})
    assert orjson.dumps(text) == _stdlib(text)  # so strings do take the fast path


def test_a_request_hashes_its_key_material() -> None:
    request = ChatRequest(messages=[{"role": "user", "content": "hi"}], temperature=0.5, seed=3)
    material = {
        "v": 1,
        "target": IDENTITY,
        "messages": request.messages,
        "temperature": 0.5,
        "max_tokens": None,
        "response_schema": None,
        "schema_name": None,
        "trial": 0,
        "seed": 3,
    }
    assert cache_key(IDENTITY, request) == hashlib.sha256(_stdlib(material)).hexdigest()
