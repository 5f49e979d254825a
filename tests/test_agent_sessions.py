"""What the real agent CLIs print and write, recorded (tests/data/agents/real/SOURCE.txt), read
by the providers' parsers and the session importer; these run without the CLIs installed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from convoeval.datasets._transcripts import import_transcripts
from convoeval.errors import DatasetError
from convoeval.targets.agents import Line, parse_events, parse_stream, read_turns
from convoeval.targets.agents._claude import retrying
from convoeval.targets.agents._codex import _merge_rollout
from convoeval.targets.agents._codex_rollout import read_records

from .conftest import DATA, write

REAL = DATA / "agents" / "real"


def lines(name: str) -> list[Line]:
    return [Line(text, at=k * 0.01) for k, text in enumerate((REAL / name).read_text().splitlines())]


def test_claude_turn_with_a_retried_server_error_and_a_tool() -> None:
    reply = parse_stream(lines("claude-2.1.197-turn1.jsonl"))
    assert reply.text == "Created order ORD-1042."
    (bash,) = reply.tool_calls
    assert bash.name == "Bash" and bash.arguments == {"command": "echo ORD-1042"} and bash.output == "ORD-1042"
    assert bash.status is None and bash.error is None
    assert reply.usage.input_tokens > 0 and reply.cost_usd > 0


def test_claude_denied_tool_is_marked() -> None:
    reply = parse_stream(lines("claude-2.1.197-turn2-denied.jsonl"))
    (rm,) = reply.tool_calls
    assert rm.name == "Bash" and rm.status == "denied" and not rm.ran
    assert "was blocked" in (rm.error or "")


def test_claude_2_1_332_turns_report_their_own_cost_and_tokens() -> None:
    """2.1.332 prints a resumed session's running total in `total_cost_usd` (and `modelUsage`);
    each turn's own figures are in `model_usage_since_last_result`."""
    first = parse_stream(lines("claude-2.1.332-turn1.jsonl"))
    assert first.text == "Created order ORD-1042."
    (bash,) = first.tool_calls
    assert bash.name == "Bash" and bash.output == "ORD-1042" and bash.status is None
    assert (first.usage.input_tokens, first.usage.output_tokens) == (101 + 102, 21 + 22)
    assert first.cost_usd == pytest.approx(0.001672)
    resumed = parse_stream(lines("claude-2.1.332-turn2-denied.jsonl"))
    total = json.loads((REAL / "claude-2.1.332-turn2-denied.jsonl").read_text().splitlines()[-1])["total_cost_usd"]
    assert total == pytest.approx(first.cost_usd + resumed.cost_usd)  # the running total, not the turn's
    assert resumed.cost_usd == pytest.approx(0.001768)
    assert (resumed.usage.input_tokens, resumed.usage.output_tokens) == (103 + 104, 23 + 24)
    (rm,) = resumed.tool_calls
    assert rm.status == "denied" and "needs approval" in (rm.error or "")


def test_claude_2_1_332_cut_stream_is_retried_without_a_status() -> None:
    """2.1.332 retries a stream cut mid-text (`system/api_retry` with `error_status: null`)."""
    recorded = lines("claude-2.1.332-cut-retried.jsonl")
    assert parse_stream(recorded).text == "ORD-1042 is shipped."
    assert retrying(recorded) == "Claude Code was retrying the API: attempt 1 of 10, no status (unknown)"
    assert retrying(lines("claude-2.1.197-turn1.jsonl")) == (
        "Claude Code was retrying the API: attempt 1 of 10, status 500 (server_error)"
    )


def test_codex_turn_with_a_reconnect_completes() -> None:
    reply = parse_events(lines("codex-0.169.0-turn1-reconnect.jsonl"))
    assert reply.text.endswith("ORD-77.")
    (command,) = reply.tool_calls
    assert command.name == "command_execution" and command.output == "ORD-77\n"


def test_codex_rollout_turns_hold_per_turn_usage_and_blocked_commands() -> None:
    resumed = parse_events(lines("codex-0.169.0-turn2-blocked.jsonl"))
    assert resumed.tool_calls == []  # the event stream leaves the blocked command out
    first, second = read_turns(read_records(REAL / "codex-0.169.0-rollout.jsonl"))
    assert first.user == ["Create an order for a book"] and second.user == ["- now the blocked one"]
    # The stream's `turn.completed` after the resume is the thread's total; the rollout has the turn's own.
    assert first.usage is not None and second.usage is not None
    assert first.usage.input_tokens + second.usage.input_tokens == resumed.usage.input_tokens
    (ran,) = first.calls
    assert ran.status is None and ran.output == "ORD-77\n" and ran.duration_ms is not None
    (blocked,) = second.calls
    assert blocked.status == "blocked" and blocked.arguments == {"command": "echo hi > blocked.txt"}
    assert "Read-only file system" in (blocked.error or "")


def test_codex_denied_command_it_lists_as_ran_is_blocked_too() -> None:
    """Codex 0.171 sometimes writes its record of a command its sandbox denied (1 run in 16
    here): that command is blocked as when it writes none (before: a call that ran, so a
    `tool-not-called` check's verdict changed from run to run)."""
    stream = parse_events(lines("codex-0.171.0-denied-listed.jsonl"))
    assert [(c.name, c.status) for c in stream.tool_calls] == [("command_execution", None)]  # as printed
    (turn,) = read_turns(read_records(REAL / "codex-0.171.0-denied-listed-rollout.jsonl"))
    (blocked,) = turn.calls
    assert blocked.status == "blocked" and blocked.arguments == {"command": "echo hi > order.txt"}
    assert "Read-only file system" in (blocked.error or "")
    _merge_rollout(stream, turn)
    (call,) = stream.tool_calls
    assert call.status == "blocked" and call.arguments == {"command": "echo hi > order.txt"}
    # A command that fails on its own (no denial in its output) ran.
    records = read_records(REAL / "codex-0.171.0-denied-listed-rollout.jsonl")
    text = json.dumps(records).replace("Read-only file system", "No such file or directory")
    (turn,) = read_turns(json.loads(text))
    assert [(c.status, c.error) for c in turn.calls] == [(None, "exit code 1")]


@pytest.mark.parametrize(
    ("name", "tool", "test_id"),
    [
        ("claude-2.1.197-session.jsonl", "Bash", "claude-code-"),
        ("claude-2.1.332-session.jsonl", "Bash", "claude-code-"),
        ("codex-0.169.0-rollout.jsonl", "command_execution", "codex-"),
    ],
)
def test_session_files_import_as_transcripts(name: str, tool: str, test_id: str) -> None:
    suite = import_transcripts(REAL / name)
    (test,) = suite["tests"]
    assert test["id"].startswith(test_id)
    transcript = test["transcript"]
    assert [m["role"] for m in transcript if m["role"] != "tool"] == ["user", "assistant", "user", "assistant"]
    calls = [c for m in transcript if m["role"] == "tool" for c in m["tool_calls"]]
    assert [c["name"] for c in calls] == [tool, tool]
    assert calls[0]["output"].startswith("ORD-") and "status" not in calls[0]
    assert calls[1].get("status") == ("denied" if "2.1.332" in name else None if "claude" in name else "blocked")


def test_a_session_file_with_a_broken_line_names_the_line(tmp_path: Path) -> None:
    text = (REAL / "codex-0.169.0-rollout.jsonl").read_text()
    broken = write(tmp_path / "rollout.jsonl", text + '{"timestamp": "2026-11-26T03:03:00Z", "type": "resp')
    with pytest.raises(DatasetError, match=rf"rollout.jsonl:{len(text.splitlines()) + 1}: not a JSON object"):
        import_transcripts(broken)
    assert json.loads(text.splitlines()[0])["type"] == "session_meta"


def test_a_rollout_with_items_and_counts_of_the_wrong_type_imports(tmp_path: Path) -> None:
    """Before: an `item_completed` event whose item is not an object ended in AttributeError, a
    token count that is no whole number (`"1e400"`) in ValueError, a command of numbers in
    TypeError: tracebacks of `convoeval import transcripts`."""
    records = [json.loads(line) for line in (REAL / "codex-0.169.0-rollout.jsonl").read_text().splitlines()]
    for record in records:
        payload = record["payload"]
        if record["type"] == "token_usage_record":
            payload["turn_token_usage"]["input_tokens"] = "1e400"
        if payload.get("type") == "item_completed" and payload["item"].get("type") == "CommandExecution":
            payload["item"]["command"] = [1, 2.5]
            payload["item"]["duration"] = {"secs": "soon"}
    first = next(r for r in records if r["payload"].get("type") == "item_completed")
    records.insert(records.index(first), {**first, "payload": {**first["payload"], "item": 7}})
    rollout = write(tmp_path / "rollout.jsonl", "".join(json.dumps(r) + "\n" for r in records))
    suite = import_transcripts(rollout)
    (test,) = suite["tests"]
    commands = [c["arguments"]["command"] for m in test["transcript"] for c in m.get("tool_calls", [])]
    assert commands[0] == "1 2.5" and len(commands) == 2


def test_a_folder_of_sessions_grades_each(tmp_path: Path, cli) -> None:
    """`convoeval grade FOLDER`: every Claude Code session and Codex rollout file in it (the
    recorded event streams beside them are not session files and are left alone)."""
    graders = write(tmp_path / "graders.yaml", "assertions:\n  - {type: execution-metrics, max_tool_calls: 2}\n")
    out = tmp_path / "graded.jsonl"
    code, stdout, stderr = cli("grade", REAL, "--graders", graders, "-o", out)
    assert code == 0, stdout + stderr
    results = [json.loads(line) for line in out.read_text().splitlines()]
    assert all(r["verdict"] == "pass" for r in results)
    tools = {
        r["test_id"]: [
            (c["name"], c.get("status")) for m in r["output"] if m["source"] == "tool" for c in m["tool_calls"]
        ]
        for r in results
    }
    assert tools == {
        # Claude Code 2.1.197's session file does not say which call was denied; 2.1.332's does.
        "claude-code-17e82ab0-1e5c-4ef0-9915-c933b8248496": [("Bash", None), ("Bash", None)],
        "claude-code-abc243ee-1495-40a0-bd0f-90bfddff3e2a": [("Bash", None), ("Bash", "denied")],
        "codex-01a215ce-79a3-7602-b388-ce8fba635a86": [("command_execution", None), ("command_execution", "blocked")],
        "codex-01a21ead-6342-7d70-b20d-36c9d0ebe140": [("command_execution", "blocked")],
    }


def test_a_folder_without_sessions_is_an_error(tmp_path: Path) -> None:
    write(tmp_path / "notes.jsonl", '{"messages": []}\n')
    with pytest.raises(DatasetError, match="no Claude Code session or Codex rollout file"):
        import_transcripts(tmp_path)


def test_a_codex_rollout_is_read_bounded(tmp_path: Path) -> None:
    """The rollout lies in the CLI's HOME, which the agent's commands may write: a rollout of
    450 MB held 786 MB of convoeval's memory. A line over 16 MB is now left out (read in pieces)."""
    real = (REAL / "codex-0.169.0-rollout.jsonl").read_text()
    huge = json.dumps({"type": "response_item", "payload": {"type": "message", "content": "x" * 17 * 2**20}})
    rollout = write(tmp_path / "rollout.jsonl", f"{huge}\n{real}")
    records, expected = read_records(rollout), read_records(REAL / "codex-0.169.0-rollout.jsonl")
    assert len(records) == len(expected) and records == expected  # all but the huge line
    first, second = read_turns(records)
    assert first.user == ["Create an order for a book"] and second.user == ["- now the blocked one"]
