"""Deterministic assertion types, through the public path: model_validate + evaluate."""

from __future__ import annotations

from typing import Any

import pytest

from convoeval import ConfigError
from convoeval.graders import GradeContext, lookup_assertion_type
from convoeval.graders._base import Assertion
from convoeval.results import Message, ToolCall, Usage
from convoeval.targets import ChatReply
from convoeval.testing import agrade, assertion, grade_context

REPLY = "Sure! Here is the code:\ndef add(a, b):\n    return a + b\nHappy coding."


make = assertion


def turn_ctx(output: str = REPLY, **kwargs: Any) -> GradeContext:
    reply = kwargs.pop("reply", None) or ChatReply(
        text=output, latency_ms=1200.0, usage=Usage(input_tokens=300, output_tokens=40), cost_usd=0.0042
    )
    history = [Message(role="user", content="write add()", source="input", turn=1)]
    return grade_context(output, history=history, reply=reply, **kwargs)


def conv_ctx(replies: list[str], **kwargs: Any) -> GradeContext:
    transcript: list[Message] = []
    for k, text in enumerate(replies, start=1):
        transcript.append(Message(role="user", content=f"question {k}", source="input", turn=k))
        transcript.append(Message(role="assistant", content=text, source="target", turn=k))
    return grade_context(level="conversation", transcript=transcript, **kwargs)


grade = agrade


# -- pass and fail of every type ------------------------------------------------------------

JSON_REPLY = '{"booking": {"status": "confirmed", "price": 420, "ref": "AB12CD"}, "legs": [1, 2]}'

CASES: list[tuple[dict[str, Any], str, str, str]] = [
    # (assertion, reply, verdict, evidence fragment)
    ({"type": "contains", "value": "def"}, REPLY, "pass", "found at char 24"),
    ({"type": "contains", "value": "class"}, REPLY, "fail", f"not found in {len(REPLY)}-char reply"),
    ({"type": "contains", "value": "DEF"}, REPLY, "fail", "not found"),
    ({"type": "icontains", "value": "DEF ADD"}, REPLY, "pass", "found at char 24"),
    ({"type": "icontains", "value": "lambda"}, REPLY, "fail", "not found"),
    ({"type": "contains", "value": 42}, "the answer is 42", "pass", "found at char 14"),
    ({"type": "not-contains", "value": "lambda"}, REPLY, "pass", "not found"),
    ({"type": "not-contains", "value": "def"}, REPLY, "fail", "found at char 24"),
    ({"type": "not-icontains", "value": "HAPPY"}, REPLY, "fail", "found at char"),
    ({"type": "contains-any", "value": ["lambda", "return"]}, REPLY, "pass", "found at char"),
    ({"type": "contains-any", "value": ["lambda", "yield"]}, REPLY, "fail", "not found"),
    ({"type": "contains-all", "value": ["def", "return"]}, REPLY, "pass", "found at char"),
    ({"type": "contains-all", "value": ["def", "yield"]}, REPLY, "fail", "not found"),
    ({"type": "contains-all", "value": "def, return"}, REPLY, "pass", "found"),
    ({"type": "icontains-any", "value": "LAMBDA, HAPPY"}, REPLY, "pass", "found"),
    ({"type": "icontains-any", "value": ["LAMBDA", "YIELD"]}, REPLY, "fail", "not found"),
    ({"type": "icontains-all", "value": ["SURE", "happy"]}, REPLY, "pass", "found"),
    ({"type": "icontains-all", "value": ["SURE", "sad"]}, REPLY, "fail", "not found"),
    ({"type": "not-contains-any", "value": ["lambda", "yield"]}, REPLY, "pass", "not found"),
    ({"type": "not-contains-any", "value": ["lambda", "def"]}, REPLY, "fail", "found"),
    ({"type": "starts-with", "value": "Sure!"}, REPLY, "pass", "starts with it"),
    ({"type": "starts-with", "value": "Hello"}, REPLY, "fail", "the reply starts with 'Sure! Here is t…'"),
    ({"type": "starts-with", "value": "Sure"}, "  Sure thing", "fail", "starts with '  Sure"),
    ({"type": "starts-with", "value": "Sure", "trim": True}, "  Sure thing", "pass", "starts with it"),
    ({"type": "not-starts-with", "value": "Sorry"}, REPLY, "pass", "starts with"),
    ({"type": "ends-with", "value": "Happy coding."}, REPLY, "pass", "ends with it"),
    ({"type": "ends-with", "value": "Bye."}, REPLY, "fail", "the reply ends with '\\nHappy coding.'"),
    ({"type": "ends-with", "value": "coding."}, "coding.\n", "fail", "ends with"),
    ({"type": "ends-with", "value": "coding.", "trim": True}, "coding.\n", "pass", "ends with it"),
    ({"type": "equals", "value": "Paris"}, "Paris", "pass", "exact match (5 chars)"),
    ({"type": "equals", "value": "Paris"}, "Paris.", "fail", "first difference at char 5"),
    ({"type": "equals", "value": "Paris"}, "Paris\n", "fail", "differ only in surrounding whitespace"),
    ({"type": "equals", "value": "Paris", "trim": True}, "  Paris\n", "pass", "exact match"),
    ({"type": "equals", "value": 42}, "42", "pass", "parses to an equal JSON value"),
    (
        {"type": "equals", "value": {"a": 1, "b": [True, None]}},
        '{"b": [true, null], "a": 1.0}',
        "pass",
        "equal JSON value",
    ),
    ({"type": "equals", "value": {"a": 1}}, '{"a": 2}', "fail", 'the reply is {"a": 2}'),
    ({"type": "equals", "value": {"a": 1}}, "a is 1", "fail", "the reply is not JSON: Expecting value"),
    ({"type": "not-equals", "value": "Paris"}, "London", "pass", "first difference at char 0"),
    ({"type": "regex", "value": r"def \w+\("}, REPLY, "pass", "matched 'def add(' at char 24"),
    ({"type": "regex", "pattern": r"^class "}, REPLY, "fail", f"no match in {len(REPLY)}-char reply"),
    ({"type": "regex", "value": r"^def", "flags": "m"}, REPLY, "pass", "matched 'def'"),
    ({"type": "regex", "value": r"^def"}, REPLY, "fail", "no match"),
    ({"type": "regex", "value": r"HAPPY", "flags": "ig"}, REPLY, "pass", "matched 'Happy'"),
    ({"type": "not-regex", "value": r"\d{3}-\d{4}"}, REPLY, "pass", "no match"),
    ({"type": "is-json"}, JSON_REPLY, "pass", "parsed a JSON object with 2 keys"),
    ({"type": "is-json"}, "  [1, 2]\n", "pass", "a JSON array of 2 items"),
    ({"type": "is-json"}, "{'a': 1}", "fail", "not JSON: Expecting property name"),
    ({"type": "is-json"}, '```json\n{"a": 1}\n```', "fail", "not JSON"),
    ({"type": "is-json", "allow_fenced": True}, 'Here:\n```json\n{"a": 1}\n```', "pass", "from a ```json fenced block"),
    (
        {"type": "is-json", "schema": {"type": "object", "required": ["booking"]}},
        JSON_REPLY,
        "pass",
        "valid against the schema",
    ),
    ({"type": "is-json", "schema": {"type": "array"}}, JSON_REPLY, "fail", "$: {"),
    ({"type": "not-is-json"}, "plain words", "pass", "not JSON"),
    (
        {
            "type": "json-schema",
            "schema": {
                "type": "object",
                "required": ["booking"],
                "properties": {"booking": {"type": "object", "properties": {"price": {"type": "number"}}}},
            },
        },
        JSON_REPLY,
        "pass",
        "valid against the schema",
    ),
    (
        {
            "type": "json-schema",
            "schema": {
                "type": "object",
                "properties": {"booking": {"type": "object", "properties": {"price": {"type": "string"}}}},
            },
        },
        JSON_REPLY,
        "fail",
        "$.booking.price: 420 is not of type 'string'",
    ),
    ({"type": "json-schema", "schema": {"type": "object"}}, "not json", "fail", "not JSON"),
    (
        {"type": "jsonpath", "path": "$.booking.status", "value": "confirmed"},
        JSON_REPLY,
        "pass",
        'the match is "confirmed"',
    ),
    (
        {"type": "jsonpath", "path": "$.booking.status", "expected": "cancelled"},
        JSON_REPLY,
        "fail",
        'the match is "confirmed"',
    ),
    ({"type": "jsonpath", "path": "$.booking.price", "value": 420.0}, JSON_REPLY, "pass", "420"),
    ({"type": "jsonpath", "path": "$.booking.price", "value": "420"}, JSON_REPLY, "fail", "the match is 420"),
    ({"type": "jsonpath", "path": "$.legs[*]", "value": 1}, JSON_REPLY, "pass", "first of 2 matches is 1"),
    ({"type": "jsonpath", "path": "$.booking"}, JSON_REPLY, "pass", "the match: {"),
    ({"type": "jsonpath", "path": "$.hotel"}, JSON_REPLY, "fail", "no match in a JSON object with 2 keys"),
    ({"type": "jsonpath", "path": "$.a", "value": None}, '{"a": 0}', "fail", "the match is 0"),
    ({"type": "jsonpath", "path": "$.a", "value": None}, '{"a": null}', "pass", "the match is null"),
    (
        {"type": "jsonpath", "path": "$.ok", "value": True},
        'Result:\n```json\n{"ok": true}\n```\nDone.',
        "pass",
        "from a ```json fenced block",
    ),
    (
        {"type": "jsonpath", "path": "$.ok", "value": True},
        'The result is {"ok": true} as requested.',
        "pass",
        "JSON at char 14",
    ),
    ({"type": "jsonpath", "path": "$.ok"}, "no json here", "fail", "no JSON in the 12-char reply"),
    (
        {"type": "jsonpath", "path": "$.items[?(@.id == 2)].name", "value": "b"},
        '{"items": [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}]}',
        "pass",
        '"b"',
    ),
]


@pytest.mark.parametrize(
    ("data", "reply", "verdict", "evidence"), CASES, ids=[f"{k}-{c[0]['type']}-{c[2]}" for k, c in enumerate(CASES)]
)
async def test_pass_and_fail(data: dict[str, Any], reply: str, verdict: str, evidence: str) -> None:
    result = await grade(data, turn_ctx(reply))
    assert result.verdict == verdict, result
    assert result.score == (1.0 if verdict == "pass" else 0.0)
    assert result.type == data["type"]
    assert result.error is None
    joined = " | ".join(a.evidence for a in result.assertions)
    assert evidence in joined, joined
    assert all(a.text for a in result.assertions)


def test_every_listed_type_is_registered() -> None:
    names = [
        "contains",
        "icontains",
        "contains-any",
        "contains-all",
        "icontains-any",
        "icontains-all",
        "not-contains",
        "starts-with",
        "ends-with",
        "equals",
        "regex",
        "is-json",
        "json-schema",
        "jsonpath",
        "latency",
        "token-usage",
        "cost",
    ]
    for name in names:
        assert lookup_assertion_type(name) is not None, name
    assert lookup_assertion_type("not_contains") is lookup_assertion_type("not-contains")


async def test_outcome_texts_are_concrete() -> None:
    result = await grade({"type": "contains-all", "value": ["def", "yield"]}, turn_ctx())
    assert [(a.text, a.passed) for a in result.assertions] == [("contains 'def'", True), ("contains 'yield'", False)]
    result = await grade({"type": "icontains", "value": "x"}, turn_ctx())
    assert result.assertions[0].text == "contains 'x' (ignoring case)"
    result = await grade({"type": "not-contains", "value": "def"}, turn_ctx())
    assert result.assertions[0].text == "NOT contains 'def'"
    assert result.assertions[0].passed is False


# -- common fields: negate, min_score, weight, required, name ---------------------------------


async def test_negate_inverts_score_verdict_and_outcomes() -> None:
    result = await grade({"type": "contains", "value": "def", "negate": True}, turn_ctx())
    assert (result.verdict, result.score) == ("fail", 0.0)
    assert result.assertions[0].text == "NOT contains 'def'"
    assert result.assertions[0].passed is False
    result = await grade({"type": "contains", "value": "zzz", "negate": True}, turn_ctx())
    assert (result.verdict, result.score) == ("pass", 1.0)
    # not- type plus negate is the positive check again
    result = await grade({"type": "not-contains", "value": "def", "negate": True}, turn_ctx())
    assert result.verdict == "pass"


async def test_min_score_threshold_and_weights_are_carried() -> None:
    data = {"type": "regex", "value": "def", "weight": 2.5, "required": True, "name": "has def", "min_score": 1}
    result = await grade(data, turn_ctx())
    assert (result.name, result.weight, result.required, result.verdict) == ("has def", 2.5, True, "pass")
    # a score of 0 passes when the bar is 0
    result = await grade({"type": "contains", "value": "zzz", "min_score": 0}, turn_ctx())
    assert (result.score, result.verdict) == (0.0, "pass")
    # the test threshold is the default bar
    result = await grade({"type": "contains", "value": "zzz"}, turn_ctx(threshold=0.0))
    assert result.verdict == "pass"
    assert result.duration_ms is not None and result.duration_ms >= 0


# -- template variables ------------------------------------------------------------------------


async def test_captured_variables_are_substituted() -> None:
    ctx = turn_ctx("Your booking AB12.CD is confirmed", variables={"ref": "AB12.CD", "n": 3})
    assert (await grade({"type": "contains", "value": "booking {{ ref }}"}, ctx)).verdict == "pass"
    assert (await grade({"type": "contains-all", "value": ["{{ref}}", "confirmed"]}, ctx)).verdict == "pass"
    assert (await grade({"type": "equals", "value": "Your booking {{ ref }} is confirmed"}, ctx)).verdict == "pass"
    assert (await grade({"type": "ends-with", "value": "{{ ref }} is confirmed"}, ctx)).verdict == "pass"
    # in a regex the variable is matched literally: the dot is escaped
    assert (await grade({"type": "regex", "value": r"booking {{ ref }} is"}, ctx)).verdict == "pass"
    other = turn_ctx("Your booking AB12XCD is confirmed", variables={"ref": "AB12.CD"})
    assert (await grade({"type": "regex", "value": r"booking {{ ref }} is"}, other)).verdict == "fail"
    result = await grade({"type": "contains", "value": "{{ ref }}"}, ctx)
    assert result.assertions[0].text == "contains 'AB12.CD'"
    # an unknown variable is left as written
    result = await grade({"type": "contains", "value": "{{ missing }}"}, ctx)
    assert result.verdict == "fail" and "{{ missing }}" in result.assertions[0].text


async def test_variables_in_jsonpath_path_and_value() -> None:
    ctx = turn_ctx('{"orders": [{"id": "o-7", "status": "shipped"}]}', variables={"oid": "o-7", "st": "shipped"})
    data = {"type": "jsonpath", "path": "$.orders[?(@.id == '{{ oid }}')].status", "value": "{{ st }}"}
    result = await grade(data, ctx)
    assert result.verdict == "pass", result
    # a path that only breaks after substitution is a grader error, not a fail
    bad = turn_ctx('{"a": 1}', variables={"p": "[[["})
    result = await grade({"type": "jsonpath", "path": "$.{{ p }}"}, bad)
    assert result.verdict == "error" and "invalid JSONPath" in (result.error or "")


# -- latency, token usage, cost ------------------------------------------------------------------


@pytest.mark.parametrize("key", ["threshold_ms", "max_ms", "threshold"])
async def test_latency(key: str) -> None:
    result = await grade({"type": "latency", key: 2000}, turn_ctx())
    assert result.verdict == "pass"
    assert result.assertions[0].text == "latency <= 2000 ms"
    assert result.assertions[0].evidence == "1200 ms"
    result = await grade({"type": "latency", key: 1000}, turn_ctx())
    assert result.verdict == "fail"


async def test_latency_without_a_measurement_is_an_error() -> None:
    cached = ChatReply(text="x", cached=True)
    result = await grade({"type": "latency", "max_ms": 10}, turn_ctx("x", reply=cached))
    assert result.verdict == "error" and "cache" in (result.error or "")
    result = await grade({"type": "latency", "max_ms": 10}, conv_ctx(["a", "b"]))
    assert result.verdict == "error" and result.score is None
    assert "no latency" in (result.error or "")


async def test_latency_conversation_checks_every_turn() -> None:
    ctx = conv_ctx(["a", "b", "c"], latencies_ms=[300, 900, 450])
    result = await grade({"type": "latency", "max_ms": 1000}, ctx)
    assert result.verdict == "pass" and len(result.assertions) == 3
    result = await grade({"type": "latency", "max_ms": 500}, ctx)
    assert result.verdict == "fail"
    assert [(a.text, a.passed) for a in result.assertions][1] == ("latency <= 500 ms (turn 2)", False)


async def test_token_usage() -> None:
    assert (await grade({"type": "token-usage", "max_tokens": 400}, turn_ctx())).verdict == "pass"
    result = await grade({"type": "token-usage", "max_tokens": 400, "max_output_tokens": 30}, turn_ctx())
    assert result.verdict == "fail"
    assert [(a.text, a.passed, a.evidence) for a in result.assertions] == [
        ("total tokens <= 400", True, "340 (300 input + 40 output)"),
        ("output tokens <= 30", False, "40"),
    ]
    assert (await grade({"type": "token-usage", "max_input_tokens": 299}, turn_ctx())).verdict == "fail"


async def test_token_usage_conversation_and_missing_usage() -> None:
    ctx = conv_ctx(["a", "b"], usage=Usage(input_tokens=1000, output_tokens=200))
    result = await grade({"type": "token-usage", "max_tokens": 1500}, ctx)
    assert result.verdict == "pass"
    assert result.assertions[0].text == "total tokens <= 1500 (conversation total)"
    ctx = conv_ctx(["a"], usage=Usage(input_tokens=5, output_tokens=5))
    assert (await grade({"type": "token-usage", "max_tokens": 9}, ctx)).verdict == "fail"
    assert (await grade({"type": "token-usage", "max_tokens": 9}, conv_ctx(["a"]))).verdict == "error"
    no_usage = turn_ctx("x", reply=ChatReply(text="x", latency_ms=5))
    result = await grade({"type": "token-usage", "max_tokens": 9}, no_usage)
    assert result.verdict == "error" and "no token usage" in (result.error or "")


async def test_cost() -> None:
    assert (await grade({"type": "cost", "max_usd": 0.01}, turn_ctx())).verdict == "pass"
    result = await grade({"type": "cost", "threshold": 0.001}, turn_ctx())
    assert result.verdict == "fail" and result.assertions[0].evidence == "$0.004200"
    ctx = conv_ctx(["a", "b"], cost_usd=0.5)
    assert (await grade({"type": "cost", "max_usd": 0.25}, ctx)).verdict == "fail"
    assert (await grade({"type": "cost", "max_usd": 0.25}, conv_ctx(["a"]))).verdict == "error"


async def test_a_cost_nobody_knows_cannot_pass() -> None:
    """A target without prices reports $0: no cost is known, so the check cannot decide (an
    error), or with `missing: fail` (AgentV's reading, `cost.ts`) it fails; never a pass."""
    unpriced = turn_ctx("x", reply=ChatReply(text="x", latency_ms=5, usage=Usage(input_tokens=10, output_tokens=5)))
    result = await grade({"type": "cost", "max_usd": 1.0}, unpriced)
    assert result.verdict == "error" and "no cost data" in (result.error or "")
    result = await grade({"type": "cost", "max_usd": 1.0}, conv_ctx(["a", "b"], cost_usd=0.0))
    assert result.verdict == "error"
    result = await grade({"type": "cost", "max_usd": 1.0, "missing": "fail"}, unpriced)
    assert (result.verdict, result.score, result.assertions[0].passed) == ("fail", 0.0, False)
    assert "no cost data" in (result.assertions[0].evidence or "")


# -- conversation level ------------------------------------------------------------------------


async def test_text_checks_at_conversation_level_use_the_joined_replies() -> None:
    ctx = conv_ctx(["Hello, I can help.", "Your flight is booked.", "Goodbye!"])
    assert (await grade({"type": "contains", "value": "flight"}, ctx)).verdict == "pass"
    result = await grade({"type": "contains", "value": "refund"}, ctx)
    assert result.verdict == "fail" and "-char conversation" in result.assertions[0].evidence
    assert (await grade({"type": "not-icontains", "value": "REFUND"}, ctx)).verdict == "pass"
    assert (await grade({"type": "starts-with", "value": "Hello"}, ctx)).verdict == "pass"
    assert (await grade({"type": "ends-with", "value": "Goodbye!"}, ctx)).verdict == "pass"
    assert (await grade({"type": "regex", "value": r"flight .* booked"}, ctx)).verdict == "pass"
    assert (await grade({"type": "contains-all", "value": ["Hello", "Goodbye"]}, ctx)).verdict == "pass"


async def test_json_checks_at_conversation_level_need_every_reply() -> None:
    ctx = conv_ctx(['{"step": 1}', '{"step": 2}'])
    result = await grade({"type": "is-json"}, ctx)
    assert result.verdict == "pass"
    assert [a.text for a in result.assertions] == ["is valid JSON (turn 1)", "is valid JSON (turn 2)"]
    result = await grade({"type": "jsonpath", "path": "$.step"}, ctx)
    assert result.verdict == "pass" and len(result.assertions) == 2
    mixed = conv_ctx(['{"step": 1}', "I am done."])
    result = await grade({"type": "json-schema", "schema": {"type": "object"}}, mixed)
    assert result.verdict == "fail"
    assert [a.passed for a in result.assertions] == [True, False]
    result = await grade({"type": "jsonpath", "path": "$.step", "value": 1}, conv_ctx(['{"step": 1}', '{"step": 2}']))
    assert result.verdict == "fail"


# -- load-time validation ------------------------------------------------------------------------

INVALID = [
    {"type": "contains"},  # missing value
    {"type": "contains", "value": ""},
    {"type": "contains", "value": ["a", "b"]},
    {"type": "contains", "value": "a", "valeu": "b"},  # unknown field
    {"type": "contains-any", "value": []},
    {"type": "contains-all", "value": " , "},
    {"type": "contains-any"},
    {"type": "starts-with"},
    {"type": "equals"},
    {"type": "regex", "value": "(unclosed"},
    {"type": "regex", "value": "a", "pattern": "b"},
    {"type": "regex"},
    {"type": "regex", "value": "a", "flags": "iq"},
    {"type": "is-json", "schema": {"type": "nonsense"}},
    {"type": "json-schema"},
    {"type": "json-schema", "schema": {"type": "object", "required": "name"}},
    {"type": "jsonpath"},
    {"type": "jsonpath", "path": "$..[["},
    {"type": "jsonpath", "path": "$.a", "value": 1, "expected": 1},
    {"type": "latency"},
    {"type": "latency", "max_ms": 10, "threshold_ms": 20},
    {"type": "latency", "max_ms": -1},
    {"type": "token-usage"},
    {"type": "cost"},
    {"type": "cost", "max_usd": 1, "threshold": 1},
    {"type": "contains", "value": "a", "weight": -1},
    {"type": "contains", "value": "a", "min_score": 2},
]


@pytest.mark.parametrize("data", INVALID, ids=lambda d: str(d))
def test_invalid_config_is_a_load_error(data: dict[str, Any]) -> None:
    with pytest.raises(ConfigError):
        make(data)


def test_load_errors_say_what_is_wrong() -> None:
    with pytest.raises(ConfigError, match="invalid regular expression"):
        make({"type": "regex", "value": "(unclosed"})
    with pytest.raises(ConfigError, match="invalid JSON Schema"):
        make({"type": "json-schema", "schema": {"type": "nonsense"}})
    with pytest.raises(ConfigError, match="invalid JSONPath"):
        make({"type": "jsonpath", "path": "$..[["})
    with pytest.raises(ConfigError, match="unknown regex flag"):
        make({"type": "regex", "value": "a", "flags": "q"})


def test_valid_configs_load() -> None:
    assert make({"type": "contains-any", "value": "a, b ,c"}).value == ["a", "b", "c"]  # type: ignore[attr-defined]
    assert make({"type": "contains-any", "value": [1, "b"]}).value == ["1", "b"]  # type: ignore[attr-defined]
    regex = make({"type": "regex", "pattern": "id-{{ ref }}", "flags": "ims"})
    assert regex.value == "id-{{ ref }}"  # type: ignore[attr-defined]
    assert make({"type": "jsonpath", "path": "$.x[?(@.id == '{{ a }}')]"}).path  # type: ignore[attr-defined]
    schema = make({"type": "json-schema", "schema": {"type": "object"}})
    assert schema.model_dump(by_alias=True)["schema"] == {"type": "object"}
    # dumping and loading again round-trips
    assert type(schema).model_validate(schema.model_dump()) == schema


@pytest.mark.parametrize(
    ("data", "field", "value"),
    [
        ({"type": "latency", "max_ms": 5}, "threshold_ms", 5.0),
        ({"type": "latency", "threshold": 5}, "threshold_ms", 5.0),
        ({"type": "cost", "threshold": 0.5}, "max_usd", 0.5),
        ({"type": "regex", "pattern": "a+"}, "value", "a+"),
        ({"type": "jsonpath", "path": "$.a", "expected": 3}, "value", 3),
    ],
)
def test_alias_names_load_into_one_field(data: dict[str, Any], field: str, value: Any) -> None:
    assertion = make(data)
    assert getattr(assertion, field) == value and field in assertion.model_fields_set


def test_alias_errors_name_every_accepted_name() -> None:
    with pytest.raises(ConfigError, match="give only one of `threshold_ms`, `max_ms`"):
        make({"type": "latency", "max_ms": 10, "threshold_ms": 20})
    with pytest.raises(ConfigError, match=r"`value` is required \(give one of `value`, `pattern`\)"):
        make({"type": "regex"})
    props = lookup_assertion_type("latency").model_json_schema()["properties"]  # type: ignore[union-attr]
    assert {"threshold_ms", "max_ms", "threshold"} <= set(props)
    assert props["max_ms"]["description"] == "Same as `threshold_ms`."


async def test_not_types_are_negate_with_the_same_result() -> None:
    """`not-contains` is `contains` with negate: same verdict, score and outcomes; the result
    keeps the type as written."""
    spelled = await grade({"type": "not-contains", "value": "def"}, turn_ctx())
    negated = await grade({"type": "contains", "value": "def", "negate": True}, turn_ctx())
    assert spelled.type == "not-contains" and negated.type == "contains"
    assert (spelled.verdict, spelled.score, spelled.assertions) == (negated.verdict, negated.score, negated.assertions)
    assert make({"type": "not-regex", "value": "x"}).negated and not make({"type": "regex", "value": "x"}).negated
    both = make({"type": "not-regex", "value": "x", "negate": True})
    assert not both.negated and type(both).model_validate(both.model_dump()) == both


def test_json_schema_documents_the_fields() -> None:
    for name in [
        "contains",
        "contains-any",
        "regex",
        "json-schema",
        "jsonpath",
        "latency",
        "token-usage",
        "cost",
        "equals",
    ]:
        cls = lookup_assertion_type(name)
        assert cls is not None
        props = cls.model_json_schema()["properties"]
        own = set(props) - set(Assertion.model_fields)
        assert own, name
        for field in own - {"type"}:
            assert props[field].get("description"), f"{name}.{field} has no description"
    assert "schema" in lookup_assertion_type("json-schema").model_json_schema()["properties"]  # type: ignore[union-attr]


async def test_tool_calls_do_not_disturb_text_checks() -> None:
    reply = ChatReply(text="done", latency_ms=5, tool_calls=[ToolCall(name="book", arguments={"x": 1})])
    assert (await grade({"type": "equals", "value": "done"}, turn_ctx("done", reply=reply))).verdict == "pass"
