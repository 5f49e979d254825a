"""The built-in tool agent: a chat model behind real HTTP (the fake server scripted to call
tools) runs convoeval's tool loop in the trial's workspace, with budgets that stop it loudly."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

import convoeval
from convoeval.results import EvaluationResult
from convoeval.testing import FakeOpenAIServer, tool_calls

from .conftest import REPO, write

Body = dict[str, Any]


def script(*replies: str | Body):
    """A model answering `replies` in order, then the last one forever."""
    queue = list(replies)
    return lambda body: queue.pop(0) if len(queue) > 1 else queue[0]


def last(body: Body) -> dict[str, Any]:
    return body["messages"][-1]


def repair_model(body: Body) -> str | Body:
    """Turn 1 reads calc.py and writes a wrong fix; after the hint, turn 2 edits it right."""
    assert {t["function"]["name"] for t in body["tools"]} >= {"read_file", "edit_file", "bash"}
    message = last(body)
    if message["role"] == "user" and "fails. Please fix" in message["content"]:
        return tool_calls(("read_file", {"path": "calc.py"}))
    if message["role"] == "tool" and "return a - b" in message["content"]:
        return tool_calls(("write_file", {"path": "calc.py", "content": "def add(a, b):\n    return a * b\n"}))
    if message["role"] == "user" and "try again" in message["content"]:
        return tool_calls(
            ("edit_file", {"path": "calc.py", "old": "a * b", "new": "a + b"}),
            ("bash", {"command": "python3 -B test_calc.py"}),
        )
    return "Done: I changed calc.py."


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch):
    with FakeOpenAIServer() as fake:
        monkeypatch.setenv("OPENAI_BASE_URL", fake.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-SECRET-tool-agent-1234")
        yield fake


def repair_suite(tmp_path: Path, agent: str, budget: str | None = None) -> Path:
    """The repair-loop suite on target `bot`, a chat model with `agent:`, and the test's `budget:`."""
    folder = tmp_path / "repair"
    shutil.copytree(REPO / "examples" / "repair-loop" / "template", folder / "template")
    write(folder / "targets.yaml", f"targets:\n  - name: bot\n    provider: openai\n    model: m\n    agent: {agent}\n")
    return write(
        folder / "repair.eval.yaml",
        """\
execution: {target: bot}
tests:
  - id: repair
    mode: conversation
"""
        + (f"    budget: {budget}\n" if budget else "")
        + """\
    workspace: {template: template}
    verify: {command: python3 -B test_calc.py}
    hints: ["Hint: add() must return the sum."]
    turns:
      - input: test_calc.py fails. Please fix calc.py.
      - input: It still fails. Please try again.
      - input: Last try.
""",
    )


def run(suite: Path) -> EvaluationResult:
    return convoeval.run(suite, judge="scripted", cache=False, store=False).results[0]


def test_a_chat_model_repairs_code_across_turns_in_one_workspace(server, tmp_path: Path) -> None:
    server.reset(reply=repair_model)
    result = run(repair_suite(tmp_path, "{tools: [bash, read_file, write_file, edit_file, list_files]}"))
    assert result.verdict == "pass" and result.execution_status == "ok", result.error
    turns = [s for s in result.scores if s.type == "turn"]
    assert [c.name for c in turns[0].tool_calls] == ["read_file", "write_file"]
    edit, check = turns[1].tool_calls
    # Turn 2's edit found turn 1's wrong fix: the workspace outlived the turn.
    assert edit.output == "edited calc.py" and edit.error is None
    assert check.output.startswith("exit code 0") and "ok" in check.output
    assert turns[2].verdict == "skip" and turns[2].note == "stopped: verified at turn 2"
    users = [(m.source, m.turn) for m in result.output if m.role == "user"]
    assert users == [("user", 1), ("hint", 2), ("user", 2)]
    tools = [m for m in result.output if m.source == "tool"]
    assert len(tools) == 4 and "return a - b" in tools[0].content
    # The model saw each tool's result as a `tool` message answering its call.
    second = server.target_requests()[1]["messages"]
    assert second[-2]["tool_calls"][0]["function"]["name"] == "read_file"
    assert second[-1]["role"] == "tool" and second[-1]["tool_call_id"] == "call_0"
    assert result.trials[0].workspace is None  # removed after the conversation


def test_reaching_max_tool_calls_ends_the_turn_as_budget_exhausted(server, tmp_path: Path, cli) -> None:
    server.reset(reply=lambda body: tool_calls(("list_files", {})))  # a model that never stops
    suite = repair_suite(tmp_path, "{max_tool_calls: 3}")
    code, out, _ = cli("run", suite, "--judge", "scripted", "--no-cache", "-o", tmp_path / "r.jsonl")
    result = EvaluationResult.model_validate_json((tmp_path / "r.jsonl").read_text().splitlines()[0])
    assert result.execution_status == "budget_exhausted" and result.verdict != "pass"
    assert "budget exhausted: tool_calls=3 at turn 1" in result.notes
    assert len(result.scores[0].tool_calls) == 3 and len(server.target_requests()) == 4
    assert "tool_calls=3" in out and code != 0


def test_the_tests_turn_budget_stops_the_loop_mid_turn(server, tmp_path: Path) -> None:
    server.reset(reply=lambda body: tool_calls(*[("list_files", {})] * 4))
    suite = repair_suite(tmp_path, "{max_tool_calls: 30}", budget="{turn: {tool_calls: 2}}")
    result = run(suite)
    assert len(result.scores[0].tool_calls) == 2 and result.execution_status == "budget_exhausted"


def test_the_conversations_tool_call_budget_stops_the_loop_mid_turn_too(server, tmp_path: Path) -> None:
    """What the conversation's budget leaves is the turn's limit (the old code let the agent's
    own cap of 30 run, then named it as the budget reached)."""
    server.reset(reply=lambda body: tool_calls(("list_files", {})))  # a model that never stops
    suite = repair_suite(tmp_path, "{max_tool_calls: 30}", budget="{conversation: {tool_calls: 3}}")
    result = run(suite)
    assert len(result.scores[0].tool_calls) == 3 and result.execution_status == "budget_exhausted"
    assert result.budget_hit == "tool_calls=3 at turn 1"


def test_paths_outside_the_workspace_and_slow_commands_are_tool_errors(server, tmp_path: Path) -> None:
    (tmp_path / "secret.txt").write_text("top secret")
    server.reset(
        reply=script(
            tool_calls(("read_file", {"path": "../../secret.txt"}), ("bash", {"command": "echo started; sleep 5"})),
            tool_calls(
                ("edit_file", {"path": "calc.py", "old": "zzz", "new": "y"}), ("nope", {}), ("bash", {"command": "env"})
            ),
            "I give up.",
        )
    )
    result = run(repair_suite(tmp_path, "{bash_timeout_s: 0.3}"))
    escape, slow, edit, unknown, env = result.scores[0].tool_calls
    assert escape.error == "../../secret.txt: outside the workspace" and escape.output is None
    assert slow.error == "timed out after 0.3 s and was killed: echo started; sleep 5\noutput so far:\nstarted\n"
    assert edit.error is not None and "occurs 0 times" in edit.error
    assert unknown.error is not None and unknown.error.startswith("no tool named 'nope'")
    assert "top secret" not in result.model_dump_json()
    assert "PATH=" in env.output and "sk-test-SECRET" not in env.output  # no keys reach the model's commands


def test_user_tools_run_as_a_command_or_a_python_function(server, tmp_path: Path) -> None:
    write(tmp_path / "repair" / "shop.py", "def price(item):\n    return {'item': item, 'usd': 3}\n")
    agent = (
        "{tools: [{name: price, python: 'shop.py:price', parameters: {type: object, properties: {item: {type: string}}}},"
        " {name: shout, command: 'tr a-z A-Z'}]}"
    )
    server.reset(reply=script(tool_calls(("price", {"item": "tea"}), ("shout", {"text": "hi"})), "Tea costs 3 USD."))
    result = run(repair_suite(tmp_path, agent))
    price, shout = result.scores[0].tool_calls
    assert price.output == {"item": "tea", "usd": 3}
    assert shout.output == 'exit code 0\n{"TEXT": "HI"}'
    names = [t["function"]["name"] for t in server.target_requests()[0]["tools"]]
    assert names == ["price", "shout"]


@pytest.mark.parametrize(
    "body",
    ["import asyncio\n    await asyncio.sleep(3600)", "import time\n    time.sleep(3600)"],
    ids=["async", "sync"],
)
def test_a_python_tool_past_its_timeout_is_an_error_the_model_reads(server, tmp_path: Path, body: str) -> None:
    """Async or sync, a Python tool that hangs ends at its `timeout_s`; the turn goes on."""
    kind = "async def" if "await" in body else "def"
    write(tmp_path / "repair" / "shop.py", f"{kind} price(item):\n    {body}\n")
    server.reset(reply=script(tool_calls(("price", {"item": "tea"})), "No price."))
    result = run(repair_suite(tmp_path, "{tools: [{name: price, python: 'shop.py:price', timeout_s: 0.5}]}"))
    assert result.scores[0].tool_calls[0].error == "timed out after 0.5 s: price"
    assert result.output[-1].content == "No price."


def test_an_unknown_tool_in_the_targets_file_is_a_file_line_error(tmp_path: Path, cli) -> None:
    suite = repair_suite(tmp_path, "{tools: [bash, browse]}")
    code, _, err = cli("run", suite, "--judge", "scripted")
    assert code == 2 and "targets.yaml:5" in err and "unknown built-in tool 'browse'" in err


def test_the_agents_model_calls_are_cached_and_counted_one_by_one(server: FakeOpenAIServer, tmp_path: Path) -> None:
    """Issue 31: a re-run of a tool-agent suite sends nothing (its tools still run), and the run
    counts every model call the server received, not one per turn."""
    server.reset(reply=repair_model)
    suite = repair_suite(tmp_path, "{tools: [read_file, write_file, edit_file, bash]}")
    cache = tmp_path / "cache"
    first = convoeval.run(suite, judge="scripted", cache=True, cache_dir=cache, store=False)
    sent = len(server.requests)
    assert sent > len(first.results[0].scores)  # several model calls per turn
    assert first.summary["calls"] == sent and first.summary["cache_hits"] == 0
    again = convoeval.run(suite, judge="scripted", cache=True, cache_dir=cache, store=False)
    assert len(server.requests) == sent  # every model call answered from the cache
    assert again.summary["cache_hits"] == sent
    assert again.results[0].verdict == first.results[0].verdict == "pass"
    assert [m.content for m in again.results[0].output] == [m.content for m in first.results[0].output]
