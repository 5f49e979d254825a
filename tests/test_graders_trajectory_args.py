"""AgentV's `args_match` on `tool-trajectory` (trajectory default, per-call override): exact,
superset, subset, ignore, or a list of fields."""

from __future__ import annotations

import pytest

from convoeval.results import ToolCall
from convoeval.targets import ChatReply

from .test_graders_deterministic import grade, turn_ctx

CALLS = [
    ToolCall(name="fetchData", arguments={"source": "api", "page": 2, "opts": {"format": "json"}}),
    ToolCall(name="saveResults", arguments={"path": "out.json"}),
]


def _ctx():
    return turn_ctx("done", reply=ChatReply(text="done", tool_calls=CALLS))


@pytest.mark.parametrize(
    ("args_match", "args", "passed"),
    [
        ("exact", {"source": "api", "page": 2, "opts": {"format": "json"}}, True),
        ("exact", {"source": "api"}, False),  # the call has more keys
        ("superset", {"source": "api"}, True),  # the call has at least these
        ("superset", {"source": "db"}, False),
        ("subset", {"source": "api", "page": 2, "opts": {"format": "json"}, "limit": 5}, True),
        ("subset", {"source": "api"}, False),  # the call has keys beyond these
        ("ignore", {"source": "anything"}, True),
        (["source", "opts.format"], {"source": "api", "page": 9, "opts": {"format": "json"}}, True),
        (["opts.format"], {"opts": {"format": "xml"}}, False),
        (None, {"source": "api"}, True),  # convoeval's default: superset
    ],
)
async def test_trajectory_args_match(args_match, args: dict, passed: bool) -> None:
    spec = {"type": "tool_trajectory", "mode": "in_order", "expected": [{"tool": "fetchData", "args": args}]}
    if args_match is not None:
        spec["args_match"] = args_match
    result = await grade(spec, _ctx())
    assert result.assertions[0].passed is passed, result


async def test_a_call_overrides_the_trajectory_default() -> None:
    spec = {
        "type": "tool_trajectory",
        "mode": "in_order",
        "args_match": "exact",
        "expected": [
            {"tool": "fetchData", "args": {"source": "api"}, "args_match": ["source"]},
            {"tool": "saveResults", "args": {"path": "other.json"}, "args_match": "ignore"},
        ],
    }
    assert (await grade(spec, _ctx())).verdict == "pass"
    spec["expected"][0]["args_match"] = None
    assert [a.passed for a in (await grade(spec, _ctx())).assertions] == [False, True]
