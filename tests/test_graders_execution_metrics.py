"""`execution_metrics` (AgentV): limits on tool calls, model calls, tokens, cost, duration and the
exploration ratio; the score is the share of limits that hold; what was not measured is an error."""

from __future__ import annotations

from pathlib import Path

import pytest

import convoeval
from convoeval import SpecError, load_suite
from convoeval.results import ToolCall, Usage
from convoeval.targets import ChatReply

from .conftest import write
from .test_graders_deterministic import conv_ctx, grade, turn_ctx

READS = [ToolCall(name="Read"), ToolCall(name="grep"), ToolCall(name="Edit")]


def agent_ctx(calls: list[ToolCall], **reply: object):
    defaults: dict = {"latency_ms": 800.0, "usage": Usage(input_tokens=900, output_tokens=100), "cost_usd": 0.02}
    return turn_ctx("done", reply=ChatReply(text="done", tool_calls=calls, **{**defaults, **reply}))


async def test_every_limit_holds() -> None:
    spec = {
        "type": "execution_metrics",
        "max_tool_calls": 3,
        "max_llm_calls": 1,
        "max_tokens": 1000,
        "max_cost_usd": 0.05,
        "max_duration_ms": 1000,
    }
    result = await grade(spec, agent_ctx(READS))
    assert result.verdict == "pass" and result.score == 1.0
    assert [(a.text, a.evidence) for a in result.assertions] == [
        ("tool calls <= 3", "3"),
        ("model calls <= 1", "1"),
        ("total tokens <= 1000", "1000 (900 input + 100 output)"),
        ("cost (USD) <= 0.05", "$0.020000"),
        ("duration (ms) <= 1000", "800 ms"),
    ]
    assert result.details == {
        "actual": {"tool_calls": 3, "llm_calls": 1, "tokens": 1000, "cost_usd": 0.02, "duration_ms": 800.0},
        "limits": {
            "max_tool_calls": 3,
            "max_llm_calls": 1,
            "max_tokens": 1000,
            "max_cost_usd": 0.05,
            "max_duration_ms": 1000.0,
            "target_exploration_ratio": None,
        },
    }


async def test_score_is_the_share_of_limits_that_hold() -> None:
    spec = {"type": "execution_metrics", "max_tool_calls": 2, "max_tokens": 999, "max_duration_ms": 900}
    result = await grade(spec, agent_ctx(READS))
    assert result.score == pytest.approx(1 / 3) and result.verdict == "fail"
    assert [a.passed for a in result.assertions] == [False, False, True]


@pytest.mark.parametrize(
    ("target", "tolerance", "passed"),
    [(0.5, 0.3, True), (0.67, 0.0, False), (1.0, 0.34, True), (0.2, 0.2, False)],
)
async def test_exploration_ratio(target: float, tolerance: float, passed: bool) -> None:
    spec = {"type": "execution_metrics", "target_exploration_ratio": target, "exploration_tolerance": tolerance}
    result = await grade(spec, agent_ctx(READS))  # Read and grep of 3 calls: 0.67
    assert result.assertions[0].passed is passed
    assert result.assertions[0].evidence == "0.67 (3 tool calls)"


async def test_exploration_without_tool_calls_is_a_miss_and_tools_are_configurable() -> None:
    spec = {"type": "execution_metrics", "target_exploration_ratio": 0.5}
    result = await grade(spec, agent_ctx([]))
    assert result.verdict == "fail" and result.score == 0.0
    assert "no tool calls" in result.assertions[0].evidence
    spec = {**spec, "exploration_tools": ["Edit"], "exploration_tolerance": 0.0, "target_exploration_ratio": 1 / 3}
    assert (await grade(spec, agent_ctx(READS))).verdict == "pass"


async def test_what_was_not_measured_is_an_error() -> None:
    no_usage = turn_ctx("x", reply=ChatReply(text="x", latency_ms=5))
    result = await grade({"type": "execution_metrics", "max_tokens": 10, "max_tool_calls": 1}, no_usage)
    assert result.verdict == "error" and "no token usage" in (result.error or "")
    cached = turn_ctx("x", reply=ChatReply(text="x", cached=True))
    result = await grade({"type": "execution_metrics", "max_duration_ms": 10}, cached)
    assert result.verdict == "error" and "cache" in (result.error or "")
    result = await grade({"type": "execution_metrics", "max_cost_usd": 1}, conv_ctx(["a"]))
    assert result.verdict == "error"
    unpriced = turn_ctx("x", reply=ChatReply(text="x", latency_ms=5, usage=Usage(input_tokens=3, output_tokens=2)))
    result = await grade({"type": "execution_metrics", "max_cost_usd": 1}, unpriced)
    assert result.verdict == "error" and "no cost data" in (result.error or "")
    spec = {"type": "execution_metrics", "max_cost_usd": 1, "max_tokens": 10, "missing_cost": "fail"}
    result = await grade(spec, unpriced)  # AgentV's reading: a miss ("Cost data not available")
    assert [a.passed for a in result.assertions] == [True, False] and result.score == 0.5


async def test_conversation_totals() -> None:
    ctx = conv_ctx(["a", "b"], usage=Usage(input_tokens=10, output_tokens=5), cost_usd=0.1, latencies_ms=[400.0, 700.0])
    spec = {"type": "execution_metrics", "max_llm_calls": 2, "max_tokens": 15, "max_duration_ms": 1000}
    result = await grade(spec, ctx)
    assert [(a.text, a.passed, a.evidence) for a in result.assertions] == [
        ("model calls <= 2 (conversation total)", True, "2"),
        ("total tokens <= 15 (conversation total)", True, "15 (10 input + 5 output)"),
        ("duration (ms) <= 1000 (conversation total)", False, "1100 ms"),
    ]


def test_limits_are_validated(tmp_path: Path) -> None:
    text = "tests:\n  - id: a\n    input: hi\n    assertions:\n      - {type: execution_metrics%s}\n"
    with pytest.raises(SpecError, match=r"s.eval.yaml:5: tests\[0\].assertions\[0\]: .*give at least one of"):
        load_suite(write(tmp_path / "s.eval.yaml", text % ""))
    with pytest.raises(SpecError, match=r"max_tool_calls: .*greater than or equal to 0"):
        load_suite(write(tmp_path / "s.eval.yaml", text % ", max_tool_calls: -1"))


async def reader(messages: list[dict]) -> dict:
    """An agent that reads twice and edits once per turn, and reports what it used."""
    calls = [{"name": "Read"}, {"name": "Read"}, {"name": "Edit"}]
    return {"text": "edited", "tool_calls": calls, "usage": {"input_tokens": 50, "output_tokens": 10}}


def test_a_run_grades_the_conversation_it_recorded(tmp_path: Path) -> None:
    path = write(
        tmp_path / "m.eval.yaml",
        """\
tests:
  - id: fix
    mode: conversation
    turns:
      - input: look
        assertions: [{type: execution_metrics, max_tool_calls: 3, target_exploration_ratio: 0.67, exploration_tolerance: 0.01}]
      - input: fix it
    assertions:
      - {type: execution_metrics, max_tool_calls: 5, max_llm_calls: 2, max_tokens: 120}
""",
    )
    result = convoeval.run(path, target=reader, judge="scripted", cache=False).results[0]
    turn, conversation = result.scores[0], result.scores[-1]
    assert turn.verdict == "pass", turn
    assert [(a.passed, a.evidence) for a in conversation.assertions] == [
        (False, "6"),
        (True, "2"),
        (True, "120 (100 input + 20 output)"),
    ]
    assert conversation.score == pytest.approx(2 / 3)
