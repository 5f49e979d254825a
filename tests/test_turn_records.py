"""What the conversation loop records per turn, made on its fast paths, equals what pydantic's
own validation and copying make: the transcript's messages, and a turn's store row."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

import convoeval
from convoeval.results import Message, ToolCall, TrialResult
from convoeval.spec import load_suites, to_messages


def _same(fast: Message, slow: Message) -> None:
    assert fast == slow
    assert fast.__dict__ == slow.__dict__ and list(fast.__dict__) == list(slow.__dict__)
    assert fast.model_fields_set == slow.model_fields_set
    assert fast.model_dump_json() == slow.model_dump_json()
    assert fast.model_dump(exclude_unset=True) == slow.model_dump(exclude_unset=True)
    assert repr(fast) == repr(slow)


@pytest.mark.parametrize("turn", [None, 3])
def test_trusted_message_is_the_validated_one(turn: int | None) -> None:
    given = {"turn": turn} if turn is not None else {}
    _same(
        Message.trusted("assistant", "hi", "target", turn),
        Message(role="assistant", content="hi", source="target", **given),
    )
    call = ToolCall(name="lookup", arguments={"id": 1}, output="found")
    _same(
        Message.trusted("tool", "found", "tool", turn, [call]),
        Message(role="tool", content="found", source="tool", tool_calls=[call], **given),
    )


def test_numbered_message_is_model_copy() -> None:
    planned = Message(role="user", content="Order {{ id }}", source="user")
    _same(planned.numbered("Order 7", 2), planned.model_copy(update={"content": "Order 7", "turn": 2}))
    with_calls = Message(role="assistant", content="x", source="input", tool_calls=[ToolCall(name="t")])
    copied = with_calls.numbered("x", 1)
    _same(copied, with_calls.model_copy(update={"content": "x", "turn": 1}))
    assert copied.tool_calls is with_calls.tool_calls  # a shallow copy, as model_copy's
    assert planned.turn is None and planned.content == "Order {{ id }}"  # the plan's message is left as it was
    # a result holding such messages validates back to the same result
    result = TrialResult(trial=0, score=None, verdict="pass", execution_status="ok", output=[copied])
    assert TrialResult.model_validate_json(result.model_dump_json()) == result


def test_to_messages_makes_validated_messages() -> None:
    _same(to_messages("hello", user_source="user")[0], Message(role="user", content="hello", source="user"))
    _same(to_messages({"a": 1})[0], Message(role="user", content='{\n  "a": 1\n}', source="input"))
    assert to_messages("x", default_role="system")[0] == Message(role="system", content="x", source="input")


def test_a_target_replying_no_text_is_an_error_not_a_silent_message(tmp_path: Path) -> None:
    """The reply's text is still checked where the loop skips validation: not a string fails
    the test as an execution error, as validation did."""
    suite = tmp_path / "s.eval.yaml"
    suite.write_text("tests:\n  - id: t\n    mode: conversation\n    turns:\n      - input: hi\n")

    class NoText:
        name = "no-text"

        async def chat(self, request: object) -> object:
            from convoeval.targets import ChatReply

            return ChatReply(text=None)  # type: ignore[arg-type]

        async def aclose(self) -> None:
            pass

    report = convoeval.run([str(suite)], target=NoText(), cache=False, store=False)
    assert report.results[0].execution_status == "execution_error"
    assert "content" in (report.results[0].error or "")


def test_turn_rows_hold_what_the_results_hold(tmp_path: Path) -> None:
    """A real run against the scripted target: each stored turn row is its score entry's JSON,
    equal to the entry the result holds, with the test's key, its reply and a UTC time."""
    suite = tmp_path / "s.eval.yaml"
    suite.write_text(
        "tests:\n"
        "  - id: order\n    mode: conversation\n    turns:\n"
        "      - input: my order is 42\n        capture: {name: id, regex: '(\\d+)'}\n"
        "        assertions: [{type: contains, value: '42'}]\n"
        "      - input: 'status of {{ id }}?'\n        assertions: [{type: contains, value: shipped}]\n"
        "  - id: other\n    input: hello\n    assertions: [{type: contains, value: hello}]\n"
    )
    targets = tmp_path / "targets.yaml"
    targets.write_text(
        "targets:\n  - name: bot\n    provider: scripted\n"
        "    replies: ['order 42 noted', 'order 42 shipped', 'hello there']\n"
    )
    store = tmp_path / "runs.sqlite"
    report = convoeval.run([str(suite)], target="bot", targets_file=str(targets), cache=False, store=str(store))
    results = {r.test_id: r for r in report.results}
    assert load_suites([str(suite)])[0].tests[1].id == "other"
    with sqlite3.connect(store) as db:
        rows = db.execute(
            "SELECT suite, test_id, target, trial, turn, verdict, finished, reply, data FROM turns"
        ).fetchall()
    assert len(rows) == 3
    for suite_key, test_id, target, trial, turn, verdict, finished, reply, data in rows:
        entry = results[test_id].scores[turn - 1]
        assert suite_key == str(suite.resolve()) and target == "bot" and trial == 0
        assert json.loads(data) == entry.model_dump(mode="json") and verdict == entry.verdict
        assert reply == results[test_id].output[2 * turn - 1].content
        assert len(finished) == 24 and finished.endswith("Z") and finished[19] == "."
    transcript = results["order"].output
    assert [(m.role, m.content, m.turn) for m in transcript] == [
        ("user", "my order is 42", 1),
        ("assistant", "order 42 noted", 1),
        ("user", "status of 42?", 2),
        ("assistant", "order 42 shipped", 2),
    ]
