"""The one JSON-in-text finder, as the graders (`parse_json`) and the judge (`extract_json`) use it."""

from __future__ import annotations

import pytest

from convoeval._json_in_text import NoJson, parse_json
from convoeval.judging import JudgeOutputError, extract_json


@pytest.mark.parametrize(
    ("text", "options", "value", "where"),
    [
        (' {"a": 1}\n', {}, {"a": 1}, "the whole reply"),
        ("42", {}, 42, "the whole reply"),
        ('Here:\n```json\n{"a": 1}\n```\nDone.', {"fenced": True}, {"a": 1}, "a ```json fenced block"),
        ("```\n[1, 2]\n```", {"fenced": True}, [1, 2], "a ``` fenced block"),
        ('```python\nx = 1\n```\n```jsonc\n{"b": 2}\n```', {"fenced": True}, {"b": 2}, "a ```jsonc fenced block"),
        ('I use {braces} here. {"a": 1} and more', {"embedded": True}, {"a": 1}, "JSON at char 21"),
        ("See [1, 2] then {}", {"embedded": True}, [1, 2], "JSON at char 4"),
        ('See [1] then {"a": 1}', {"embedded": True, "objects_only": True}, {"a": 1}, "JSON at char 13"),
        ('```json {"a": 1}```', {"embedded": True}, {"a": 1}, "JSON at char 8"),
    ],
)
def test_where_json_is_found(text: str, options: dict[str, bool], value: object, where: str) -> None:
    found = parse_json(text, **options)
    assert (found.value, found.where) == (value, where)


@pytest.mark.parametrize(
    ("text", "options"),
    [
        ('Here:\n```json\n{"a": 1}\n```', {}),  # a fence only when asked for
        ('Result {"a": 1}', {"fenced": True}),  # prose only when asked for
        ("a [b] {c}", {"embedded": True}),
        ("a [1, 2] b", {"embedded": True, "objects_only": True}),
        ("", {"embedded": True}),
    ],
)
def test_no_json_says_why_the_whole_text_is_not_json(text: str, options: dict[str, bool]) -> None:
    with pytest.raises(NoJson, match=r"at line 1 column \d+"):
        parse_json(text, **options)


def test_the_judge_finds_its_object_in_fences_and_prose() -> None:
    assert extract_json('```json\n{"score": 3}\n```') == {"score": 3}
    assert extract_json('```json\n{"score": 3}') == {"score": 3}  # a fence left open
    assert extract_json('Criteria [1] and [2] hold: {"score": 3}. Hope it helps.') == {"score": 3}
    assert extract_json("[1, 2]") == [1, 2]  # the parser then says it is not an object
    with pytest.raises(JudgeOutputError, match="the answer was empty"):
        extract_json("  \n")
    with pytest.raises(JudgeOutputError, match=r"not valid JSON \(Expecting value at line 1 column 1\)"):
        extract_json("Sure! The response looks fine to me.")
