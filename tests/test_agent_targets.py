"""Agent targets end to end: fake `claude` / `codex` executables (tests/fakes/) run as real
subprocesses, a `cli` command, a loopback HTTP agent with sessions, and Python callables.
The real Claude Code and Codex CLIs are driven in test_agent_clis_real.py; the fakes here show
what the real ones cannot be made to do on demand (huge output, a key in an error)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import tomllib
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

import convoeval
from convoeval.errors import TargetError
from convoeval.results import EvaluationResult
from convoeval.targets.agents import Line, parse_events, parse_stream
from convoeval.targets.agents._codex import toml_string

from .conftest import DATA, command_lines, read_jsonl, write

FAKES = Path(__file__).resolve().parent / "fakes"
SECRET = "sk-ant-test-SECRET-key-0001"
OTHER_SECRET = "other-SECRET-never-passed-0002"

SKILL = """\
tests:
  - id: skill
    mode: conversation
    turns:
      - input: Create an order for a book
        capture: {name: order_id, regex: "(ORD-\\\\d+)"}
        assertions:
          - {type: tool-called, tool: %(tool)s}
      - input: What is the status of {{ order_id }}?
        post_condition:
          must_contain_any: ["{{ order_id }}"]
        assertions:
          - {type: contains, value: "{{ order_id }} is shipped"}
      - input: Cancel {{ order_id }}
        assertions:
          - {type: contains, value: "cancelled"}
    assertions:
      - {type: tool_called_in_turn, turn: 1, tool: %(tool)s}
"""


@pytest.fixture
def agent_bin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The fake agent CLIs first on PATH, each in a directory of its own test."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for fake in ("claude", "codex"):
        shutil.copy(FAKES / fake, bin_dir / fake)
        (bin_dir / fake).chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{__import__('os').environ['PATH']}")
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
    monkeypatch.setenv("UNRELATED_TOKEN", OTHER_SECRET)
    yield bin_dir


def calls(bin_dir: Path) -> list[dict]:
    return read_jsonl(bin_dir / "argv.jsonl")


def run_suite(tmp_path: Path, suite: str, targets: str, target: str) -> tuple[EvaluationResult, str]:
    path = write(tmp_path / "s.eval.yaml", suite)
    write(tmp_path / "targets.yaml", targets)
    out = tmp_path / "r.jsonl"
    report = convoeval.run(path, target=target, judge="scripted", cache=False, output=out)
    return report.results[0], out.read_text()


CLAUDE_RULES = [
    {
        "match": "Create an order",
        "text": "Created order ORD-1042.",
        "tools": [{"name": "Write", "input": {"file_path": "orders/ORD-1042.json"}, "output": "File created"}],
    },
    {"match": "status of ORD-1042", "text": "ORD-1042 is shipped."},
    {"match": "Cancel ORD-1042", "text": "ORD-1042 is cancelled (turn {n} of session {session})."},
]


def test_claude_code_three_turns_resume_the_session(agent_bin: Path, tmp_path: Path) -> None:
    (agent_bin / "rules.json").write_text(json.dumps(CLAUDE_RULES))
    result, raw = run_suite(
        tmp_path,
        SKILL % {"tool": "Write"},
        "targets:\n  - {name: claude, provider: claude-code, model: sonnet, args: [--permission-mode, acceptEdits]}\n",
        "claude",
    )
    assert result.verdict == "pass", result.model_dump_json(indent=1)[:3000]
    assert result.provider == "claude-code" and result.session == "resumed"
    argvs = [c["argv"] for c in calls(agent_bin)]
    assert len(argvs) == 3 and "--resume" not in argvs[0]
    session = result.scores[0].session_id
    assert session and argvs[1][argvs[1].index("--resume") + 1] == session == argvs[2][argvs[2].index("--resume") + 1]
    # The prompt goes to the CLI's standard input, never on its command line.
    assert calls(agent_bin)[1]["prompt"] == "What is the status of ORD-1042?" and "-p" in argvs[1]
    assert not any("ORD-1042" in arg for arg in argvs[1]) and "--" not in argvs[1]
    assert ["--model", "sonnet"] == argvs[0][argvs[0].index("--model") : argvs[0].index("--model") + 2]
    assert "--permission-mode" in argvs[0] and "--verbose" in argvs[0]
    # The session really continued: turn 3 is the third message the fake's session saw.
    assert f"turn 3 of session {session}" in result.output[-1].content
    assert result.scores[0].tool_calls[0].name == "Write" and result.scores[0].captures == {"order_id": "ORD-1042"}
    tool = next(m for m in result.output if m.source == "tool")
    assert tool.content == "File created" and tool.tool_calls[0].duration_ms is not None
    assert result.cost_usd == pytest.approx(3 * 0.0125)
    # Secrets hygiene: the agent got its own key and nothing else of the environment.
    env = calls(agent_bin)[0]["env"]
    assert "ANTHROPIC_API_KEY" in env and "UNRELATED_TOKEN" not in env
    assert SECRET not in raw and OTHER_SECRET not in raw


def test_claude_code_post_condition_stops_the_conversation(agent_bin: Path, tmp_path: Path) -> None:
    rules = [CLAUDE_RULES[0], {"match": "status", "text": "I could not find that order."}]
    (agent_bin / "rules.json").write_text(json.dumps(rules))
    result, _ = run_suite(
        tmp_path, SKILL % {"tool": "Write"}, "targets:\n  - {name: claude, provider: claude-code}\n", "claude"
    )
    assert len(calls(agent_bin)) == 2  # turn 3 was never sent
    assert result.scores[2].verdict == "skip" and "post_condition failed" in (result.scores[2].note or "")


def test_claude_code_failure_is_an_execution_error(agent_bin: Path, tmp_path: Path) -> None:
    (agent_bin / "claude").write_text('#!/bin/sh\necho "auth failed for $ANTHROPIC_API_KEY" >&2\nexit 3\n')
    result, raw = run_suite(
        tmp_path, SKILL % {"tool": "Write"}, "targets:\n  - {name: claude, provider: claude-code}\n", "claude"
    )
    assert result.execution_status == "execution_error"
    assert "exited with code 3" in (result.error or "") and "auth failed for [REDACTED]" in (result.error or "")
    assert SECRET not in raw


def test_claude_code_killed_by_a_signal_says_so_in_words(agent_bin: Path, tmp_path: Path) -> None:
    """A CLI killed mid-turn is named so, not "exited with code -9" followed by a raw JSON event."""
    event = json.dumps({"type": "system", "subtype": "init", "session_id": "s-1"})
    (agent_bin / "claude").write_text(f"#!/bin/sh\necho '{event}'\nkill -9 $$\n")
    result, _ = run_suite(
        tmp_path, SKILL % {"tool": "Write"}, "targets:\n  - {name: claude, provider: claude-code}\n", "claude"
    )
    assert result.execution_status == "execution_error"
    assert (result.error or "").endswith("claude: was killed by SIGKILL"), result.error


def test_agent_lines_longer_than_16_mb_are_read(agent_bin: Path, tmp_path: Path) -> None:
    """An agent printing one line of more than 16 MB (no newline in it) is read whole (issue 27, D12)."""
    huge = "x" * (17 * 2**20)
    script = (
        "import json, sys\n"
        f"sys.stdout.write(json.dumps({{'type': 'system', 'subtype': 'init', 'session_id': 's1', 'blob': {huge!r}}}))\n"
        "sys.stdout.write('\\n' + json.dumps({'type': 'result', 'subtype': 'success', 'is_error': False, "
        "'result': 'done', 'session_id': 's1', 'usage': {'input_tokens': 3, 'output_tokens': 2}}))\n"
    )
    (agent_bin / "claude").write_text(f"#!{sys.executable}\n{script}")
    suite = "tests:\n  - id: big\n    input: hello\n    assertions:\n      - {type: equals, value: done}\n"
    result, _ = run_suite(tmp_path, suite, "targets:\n  - {name: claude, provider: claude-code}\n", "claude")
    assert result.verdict == "pass", result.error
    assert result.token_usage.input_tokens == 3


CODEX_RULES = [
    {
        "match": "Create an order",
        "text": "Created order ORD-77.",
        "commands": [{"command": "bash -lc 'make-order book'", "output": "ORD-77\n"}],
    },
    {"match": "status of ORD-77", "text": "ORD-77 is shipped."},
    {"match": "Cancel ORD-77", "text": "ORD-77 is cancelled."},
]


def test_codex_three_turns_resume_the_thread(agent_bin: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-test-key-0003")
    (agent_bin / "rules.json").write_text(json.dumps(CODEX_RULES))
    result, raw = run_suite(
        tmp_path,
        SKILL % {"tool": "command_execution"},
        "targets:\n  - {name: cx, provider: codex, args: [--skip-git-repo-check]}\n",
        "cx",
    )
    assert result.verdict == "pass", result.model_dump_json(indent=1)[:3000]
    argvs = [c["argv"] for c in calls(agent_bin)]
    thread = result.scores[0].session_id
    assert argvs[0][:2] == ["exec", "--json"] and argvs[0][-2:] == ["--", "-"]  # the prompt on standard input
    assert calls(agent_bin)[0]["prompt"] == "Create an order for a book"
    # Options (the target's args too) come before the `resume` subcommand.
    assert argvs[1][:3] == ["exec", "--json", "--skip-git-repo-check"]
    assert argvs[1][3:5] == ["resume", thread] and argvs[2][4] == thread
    call = result.scores[0].tool_calls[0]
    assert call.arguments == {"command": "bash -lc 'make-order book'"} and call.output == "ORD-77\n"
    # The fake prints running totals (1000, 2000, 3000) as the real CLI does: per turn, 1000 each.
    assert [s.token_usage.input_tokens for s in result.scores[:3]] == [1000, 1000, 1000]
    assert result.token_usage.input_tokens == 3000
    env = calls(agent_bin)[0]["env"]
    assert "OPENAI_API_KEY" in env and "ANTHROPIC_API_KEY" not in env and "UNRELATED_TOKEN" not in env
    assert "sk-openai-test-key-0003" not in raw


def test_codex_turn_failed_is_an_execution_error(
    agent_bin: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = "codex-own-key-never-shown-0004"
    monkeypatch.setenv("CODEX_API_KEY", key)
    rules = [{"match": ".", "fail": f"model overloaded (key {key})", "text": ""}]
    (agent_bin / "rules.json").write_text(json.dumps(rules))
    result, raw = run_suite(
        tmp_path, SKILL % {"tool": "command_execution"}, "targets:\n  - {name: cx, provider: codex}\n", "cx"
    )
    assert result.execution_status == "execution_error"
    assert "Codex turn failed: model overloaded (key [REDACTED])" in (result.error or ""), result.error
    assert key not in raw


def test_recorded_claude_code_stream_parses() -> None:
    lines = [
        Line(text, at=k * 0.1)
        for k, text in enumerate((DATA / "agents/claude-code-stream.jsonl").read_text().splitlines())
    ]
    reply = parse_stream(lines)
    assert reply.session_id == "7f3c9a1e-2b4d-4c8e-9f10-3a5b6c7d8e9f"
    assert reply.text.startswith("`total()` applies a hard-coded 10% discount")
    read, bash = reply.tool_calls
    assert read.name == "Read" and read.arguments == {"file_path": "/home/dev/shop/pricing.py"}
    assert "return sum(i.price" in read.output and read.duration_ms == pytest.approx(100.0)
    assert bash.error and "1 failed" in bash.error
    assert reply.cost_usd == pytest.approx(0.02694) and reply.usage.output_tokens == 221
    assert reply.usage.input_tokens == 19 + 2732 + 40456


def test_recorded_codex_events_parse() -> None:
    lines = [
        Line(text, at=k * 0.1) for k, text in enumerate((DATA / "agents/codex-exec.jsonl").read_text().splitlines())
    ]
    reply = parse_events(lines)
    assert reply.session_id == "0199a213-81c0-7800-8aa1-bbab2a035a53"
    assert reply.text.startswith("Removed the hard-coded 10% discount")
    names = [c.name for c in reply.tool_calls]
    assert names == ["command_execution", "command_execution", "file_change", "search", "web_search"]
    assert reply.tool_calls[1].error == "exit code 1" and reply.tool_calls[0].error is None
    assert reply.tool_calls[3].arguments == {"query": "discount policy"}
    assert reply.tool_calls[0].duration_ms == pytest.approx(100.0)
    assert reply.usage.input_tokens == 24763 and reply.usage.output_tokens == 122


CLI_AGENT = """\
import json, sys, pathlib
prompt, out, session = sys.argv[1], sys.argv[2], (sys.argv[4] if len(sys.argv) > 4 else None)
store = pathlib.Path("sessions.json")
sessions = json.loads(store.read_text()) if store.exists() else {}
session = session or f"cli-{len(sessions) + 1}"
sessions.setdefault(session, []).append(prompt)
store.write_text(json.dumps(sessions))
order = "ORD-9" if "Create" in prompt else None
text = {"Create": "Created order ORD-9.", "status": "ORD-9 is shipped.", "Cancel": "ORD-9 is cancelled."}
reply = next((v for k, v in text.items() if k in prompt), "turns: " + prompt)
pathlib.Path(out).write_text(json.dumps({"session_id": session, "output": [{"role": "assistant", "content": reply,
    "tool_calls": [{"tool": "orders", "input": {"prompt": prompt[:20]}, "output": "ok", "duration_ms": 5}]}],
    "token_usage": {"input": 7, "output": 3}}))
"""


def test_cli_target_with_session_settings_resumes(tmp_path: Path) -> None:
    write(tmp_path / "agent.py", CLI_AGENT)
    targets = f"""\
targets:
  - name: mycli
    provider: cli
    command: "{__import__("sys").executable} agent.py {{PROMPT}} {{OUTPUT_FILE}}"
    cwd: {tmp_path}
    healthcheck: {{command: "true"}}
    session: {{resume_args: "--session {{SESSION_ID}}", id_jsonpath: "$.session_id"}}
"""
    result, _ = run_suite(tmp_path, SKILL % {"tool": "orders"}, targets, "mycli")
    assert result.verdict == "pass", result.model_dump_json(indent=1)[:3000]
    sessions = json.loads((tmp_path / "sessions.json").read_text())
    assert list(sessions) == ["cli-1"] and len(sessions["cli-1"]) == 3
    assert result.scores[1].tool_calls[0].duration_ms == 5 and result.token_usage.input_tokens == 21


def test_cli_target_without_session_settings_runs_single_shot(tmp_path: Path) -> None:
    write(tmp_path / "agent.py", CLI_AGENT)
    targets = f"""\
targets:
  - name: mycli
    provider: cli
    command: "{__import__("sys").executable} agent.py {{PROMPT}} {{OUTPUT_FILE}}"
    cwd: {tmp_path}
"""
    plain = (SKILL % {"tool": "orders"}).replace("{{ order_id }}", "ORD-9")  # no captured variable to fill
    result, _ = run_suite(tmp_path, plain, targets, "mycli")
    assert result.fallback == "single_shot" and result.session == "single_shot"
    sessions = json.loads((tmp_path / "sessions.json").read_text())
    assert len(sessions) == 1 and list(sessions.values())[0][0].startswith("Turn 1: Create an order")
    assert [s.verdict for s in result.scores[:3]] == ["skip"] * 3
    assert result.scores[3].name == "conversation" and result.verdict == "pass"
    # Turns naming a captured variable cannot go in one prompt: nothing is sent (issue 24).
    (tmp_path / "sessions.json").unlink()
    result, _ = run_suite(tmp_path, SKILL % {"tool": "orders"}, targets, "mycli")
    assert result.verdict == "error" and "single_shot fallback" in (result.error or "")
    assert not (tmp_path / "sessions.json").exists()


SHAPES_AGENT = """\
import json, pathlib, sys
prompt, out = sys.argv[1], pathlib.Path(sys.argv[2])
shapes = {
    "parts": {"output": [{"role": "assistant", "content": [{"type": "text", "text": "The answer is 42"}]}]},
    "steps": {"output": [{"role": "assistant", "content": "Let me check.", "tool_calls": [{"tool": "calc"}]},
                         {"role": "tool", "content": "42"}, {"role": "assistant", "content": "The answer is 42"}]},
    "number": {"text": 42},
    "error": {"text": "The answer is 42", "error": "rate limited", "token_usage": {"input": 7, "output": 3}},
}
if prompt == "bytes":
    out.write_bytes(b"The answer is 42 \\xff\\x80")
else:
    out.write_text(json.dumps(shapes[prompt]))
"""


def test_cli_output_is_read_as_agentvs_cli_provider_reads_it(tmp_path: Path) -> None:
    """The reply is the last assistant message (its text parts), or `text` as text; an `error`
    makes the turn an execution error that keeps its spend (AgentV's `target_task_failure`);
    an output file that is not UTF-8 is read with U+FFFD."""
    write(tmp_path / "agent.py", SHAPES_AGENT)
    targets = (
        f"targets:\n  - {{name: c, provider: cli, command: '{sys.executable} agent.py {{PROMPT}} {{OUTPUT_FILE}}'}}\n"
    )
    write(tmp_path / "targets.yaml", targets)
    checks = dict.fromkeys(["parts", "steps", "error"], "{type: equals, value: The answer is 42}")
    checks |= {"number": "{type: equals, value: '42'}", "bytes": "{type: contains, value: 42 \ufffd\ufffd}"}
    suite = "tests:\n" + "".join(f"  - {{id: {c}, input: {c}, assertions: [{a}]}}\n" for c, a in checks.items())
    report = convoeval.run(write(tmp_path / "s.eval.yaml", suite), target="c", judge="scripted", cache=False)
    results = {r.test_id: r for r in report.results}
    assert {k: r.verdict for k, r in results.items()} == dict.fromkeys(checks, "pass") | {"error": "error"}
    assert [c.name for c in results["steps"].scores[0].tool_calls] == ["calc"]
    failed = results["error"]
    assert failed.error == "turn 1: c: the agent reported an error: rate limited"
    assert failed.token_usage.input_tokens == 7


def test_a_cli_turn_that_times_out_says_what_the_command_printed(tmp_path: Path) -> None:
    write(tmp_path / "slow.py", "import time\nprint('working on it', flush=True)\ntime.sleep(30)\n")
    targets = f"targets:\n  - {{name: c, provider: cli, command: {sys.executable} slow.py, cwd: ., timeout_s: 1}}\n"
    result, _ = run_suite(tmp_path, "tests:\n  - {id: a, input: hi}\n", targets, "c")
    assert result.error == "turn 1: c: timed out after 1 s (it printed: working on it)"


def test_cli_healthcheck_failure_is_a_clear_error(tmp_path: Path) -> None:
    targets = "targets:\n  - {name: mycli, provider: cli, command: 'echo hi', healthcheck: {command: 'exit 4'}}\n"
    result, _ = run_suite(
        tmp_path, "tests:\n  - {id: a, input: hi, assertions: [{type: contains, value: hi}]}\n", targets, "mycli"
    )
    assert result.execution_status == "execution_error" and "healthcheck: exited with code 4" in (result.error or "")


class HealthHandler(BaseHTTPRequestHandler):
    """`/ok` answers 200, anything else 503."""

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        self.send_response(200 if self.path == "/ok" else 503)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


def test_cli_healthcheck_may_be_a_url_as_in_agentv(tmp_path: Path) -> None:
    """AgentV's `{url}` healthcheck: a GET that must answer 2xx before the first call."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), HealthHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        suite = "tests:\n  - {id: a, input: hi, assertions: [{type: contains, value: hi}]}\n"
        for path, verdict in [("ok", "pass"), ("down", "error")]:
            targets = (
                f"targets:\n  - {{name: c, provider: cli, command: 'echo hi', healthcheck: {{url: '{base}/{path}'}}}}\n"
            )
            result, _ = run_suite(tmp_path, suite, targets, "c")
            assert result.verdict == verdict, result.error
        assert result.error == f"turn 1: c healthcheck: {base}/down answered HTTP 503 Service Unavailable"
    finally:
        server.shutdown()
        server.server_close()


class SessionAgentHandler(BaseHTTPRequestHandler):
    """A stateful JSON agent: {message, session} -> {reply, session, tools}."""

    sessions: dict[str, list[str]] = {}
    bodies: list[dict] = []

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.bodies.append(body)
        session = body.get("session") or f"h{len(self.sessions) + 1}"
        seen = self.sessions.setdefault(session, [])
        seen.append(body["message"])
        data = {
            "data": {"reply": f"{len(seen)}: got {body['message']}"},
            "session": session,
            "bill": {"usd": 0.25},
            "tools": [{"name": "kb", "arguments": {"q": body["message"]}, "output": "hit"}],
        }
        if body["message"].startswith("reply:"):  # the reply given as JSON
            data["data"]["reply"] = json.loads(body["message"].removeprefix("reply:"))
        answer = [{"text": "Hi!"}, {"text": "How can I help?"}] if body["message"] == "rasa" else data
        raw = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def session_server() -> Iterator[str]:
    SessionAgentHandler.sessions, SessionAgentHandler.bodies = {}, []
    server = ThreadingHTTPServer(("127.0.0.1", 0), SessionAgentHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/chat"
    server.shutdown()
    server.server_close()


HTTP_SUITE = """\
tests:
  - id: h
    mode: conversation
    turns:
      - {input: one, assertions: [{type: tool-called, tool: kb, args: {q: one}}]}
      - {input: two, assertions: [{type: contains, value: "got two"}]}
"""


@pytest.mark.parametrize("stateful", [True, False])
def test_http_target_with_and_without_sessions(tmp_path: Path, session_server: str, stateful: bool) -> None:
    targets = f"""\
targets:
  - name: web
    provider: http
    url: {session_server}
    body: {{message: "{{{{ prompt }}}}", session: "{{{{ session_id }}}}", history: "{{{{ messages }}}}"}}
    reply_path: $.data.reply
    tool_calls_path: $.tools
    session_id_path: $.session
    stateful: {str(stateful).lower()}
"""
    result, _ = run_suite(tmp_path, HTTP_SUITE, targets, "web")
    assert result.verdict == "pass", result.model_dump_json(indent=1)[:2000]
    first, second = SessionAgentHandler.bodies
    assert first["session"] is None and second["session"] == "h1"
    if stateful:
        assert second["history"] == [{"role": "user", "content": "two"}] and result.session == "resumed"
        assert result.output[-1].content == "2: got two"
    else:
        assert [m["role"] for m in second["history"]] == ["user", "assistant", "user"] and result.session == "history"


def test_a_hint_reaches_an_http_agent_with_its_turn(tmp_path: Path, session_server: str) -> None:
    """`{{ prompt }}` is what the turn says: the hint, then the message (the hint was dropped,
    while the transcript showed it sent)."""
    targets = f"targets:\n  - {{name: web, provider: http, url: '{session_server}', stateful: true,"
    targets += " reply_path: $.data.reply, session_id_path: $.session,"
    targets += " body: {message: '{{ prompt }}', session: '{{ session_id }}'}}\n"
    suite = HTTP_SUITE + "    verify: {command: 'false'}\n    hints: [Read the error first.]\n"
    result, _ = run_suite(tmp_path, suite, targets, "web")
    assert [m.source for m in result.output] == ["user", "target", "hint", "user", "target"]
    assert [b["message"] for b in SessionAgentHandler.bodies] == ["one", "Read the error first.\n\ntwo"]


def test_a_hint_reaches_a_resumed_cli_agent_as_the_turns_words(tmp_path: Path) -> None:
    """A resumed turn preceded by a hint gets the hint, then the message, as an HTTP agent does
    (before: `user: Read the error first.\n\nuser: two`, role labels in what the user says)."""
    prompts = tmp_path / "prompts"
    prompts.mkdir()
    command = (
        f"cat {{PROMPT_FILE}} > {prompts}/$(ls {prompts} | wc -l).txt;"
        ' printf \'{"text": "got it", "session_id": "s1"}\''
    )
    targets = "targets:\n  - name: agent\n    provider: cli\n    command: " + json.dumps(command)
    targets += "\n    session: {resume_args: '--session {SESSION_ID}', id_jsonpath: $.session_id}\n"
    suite = HTTP_SUITE.replace(
        "assertions: [{type: tool-called, tool: kb, args: {q: one}}]", "assertions: [{type: contains, value: got}]"
    ).replace('"got two"', "got")
    suite += "    verify: {command: 'false'}\n    hints: [Read the error first.]\n"
    result, _ = run_suite(tmp_path, suite, targets, "agent")
    assert result.session == "resumed" and result.error is None, result.error
    assert [(prompts / f"{n}.txt").read_text() for n in range(2)] == ["one", "Read the error first.\n\ntwo"]


def test_an_http_reply_that_is_null_or_json_is_read_as_text(session_server: str, tmp_path: Path) -> None:
    """No reply (null) is no text, and a JSON object or number is its JSON (not Python's repr)."""
    targets = (
        f"targets:\n  - {{name: web, provider: http, url: '{session_server}', reply_path: $.data.reply,"
        " body: {message: '{{ prompt }}'}}\n"
    )
    write(tmp_path / "targets.yaml", targets)
    write(
        tmp_path / "s.eval.yaml",
        "tests:\n"
        + "".join(
            f"  - {{id: t{n}, input: '{reply}', assertions: [{{type: equals, value: '{text}'}}]}}\n"
            for n, (reply, text) in enumerate(
                [("reply:null", ""), ('reply:{"a": true}', '{"a": true}'), ("reply:4", "4")]
            )
        ),
    )
    report = convoeval.run(tmp_path / "s.eval.yaml", target="web", judge="scripted", cache=False)
    assert [r.verdict for r in report.results] == ["pass"] * 3, [r.error for r in report.results]


def test_an_http_answer_may_be_a_json_array_of_messages(session_server: str, tmp_path: Path) -> None:
    """Rasa's REST channel answers a list of bot messages: `$[*].text` reads them all, in order."""
    targets = (
        f"targets:\n  - {{name: web, provider: http, url: '{session_server}', reply_path: '$[*].text',"
        " body: {message: '{{ prompt }}'}}\n"
    )
    result, _ = run_suite(tmp_path, "tests:\n  - {id: r, input: rasa}\n", targets, "web")
    assert result.verdict == "pass" and result.output[-1].content == "Hi!\nHow can I help?"


def test_an_http_agent_may_report_its_cost(session_server: str, tmp_path: Path) -> None:
    """`cost_path` reads the turn's cost from the answer: budgets and totals count it."""
    targets = (
        f"targets:\n  - {{name: web, provider: http, url: '{session_server}', reply_path: $.data.reply,"
        " body: {message: '{{ prompt }}'}, cost_path: $.bill.usd}\n"
    )
    suite = HTTP_SUITE.replace(
        "    mode: conversation\n", "    mode: conversation\n    budget: {conversation: {cost_usd: 0.4}}\n"
    )
    result, _ = run_suite(tmp_path, suite, targets, "web")
    assert result.budget_hit == "cost_usd=0.4 per conversation at turn 2" and result.cost_usd == 0.5


PY_AGENT = """\
class Counter:
    closed = []

    def __init__(self):
        self.seen = []

    async def respond(self, messages):
        self.seen += [m["content"] for m in messages]
        return {"text": f"{len(self.seen)} seen, last {self.seen[-1]}",
                "tool_calls": [{"name": "remember", "arguments": {"n": len(self.seen)}}]}

    def close(self):
        Counter.closed.append(len(self.seen))


def echo(messages, context):
    return f"{len(messages)} messages in {context['test_id']}, last {messages[-1]['content']}"
"""

PY_SUITE = """\
tests:
  - id: p
    mode: conversation
    turns:
      - {input: a, assertions: [{type: contains, value: "last a"}]}
      - {input: b, assertions: [{type: contains, value: "last b"}]}
"""


def test_python_targets_stateful_and_not(tmp_path: Path) -> None:
    write(tmp_path / "agent.py", PY_AGENT)
    stateful, _ = run_suite(
        tmp_path, PY_SUITE, "targets:\n  - {name: py, provider: python, callable: agent.py:Counter}\n", "py"
    )
    assert stateful.session == "resumed" and stateful.verdict == "pass"
    assert stateful.output[-1].content == "2 seen, last b"  # only new messages reached the object
    assert stateful.scores[1].tool_calls[0].arguments == {"n": 2}
    plain, _ = run_suite(
        tmp_path, PY_SUITE, "targets:\n  - {name: py2, provider: python, callable: agent.py:echo}\n", "py2"
    )
    assert plain.session == "history" and plain.output[-1].content == "3 messages in p, last b"


SLOW_AGENTS = """\
import asyncio, threading, time


class Blocking:
    def __init__(self):
        self.thread = threading.get_ident()

    def respond(self, messages):
        if messages[-1]["content"] == "block":
            time.sleep(10)
        return f"same thread: {threading.get_ident() == self.thread}"


async def hang(messages):
    if messages[-1]["content"] == "block":
        await asyncio.sleep(3600)
    return "answered"
"""


@pytest.mark.parametrize("callable_", ["Blocking", "hang"])
def test_a_python_target_that_hangs_times_out_and_holds_up_no_other_test(tmp_path: Path, callable_: str) -> None:
    """Sync or async, a call past the target's `timeout_s` fails its turn; a sync object runs in
    a thread of its own, so the other conversation answers meanwhile."""
    write(tmp_path / "agent.py", SLOW_AGENTS)
    suite = "tests:\n  - {id: slow, input: block}\n  - {id: quick, input: hi}\n"
    targets = f"targets:\n  - {{name: py, provider: python, callable: agent.py:{callable_}, timeout_s: 1}}\n"
    write(tmp_path / "targets.yaml", targets)
    started = time.monotonic()
    report = convoeval.run(write(tmp_path / "s.eval.yaml", suite), target="py", judge="scripted", cache=False)
    slow, quick = sorted(report.results, key=lambda r: r.test_id != "slow")
    assert slow.execution_status == "execution_error" and "py: timed out after 1 s" in (slow.error or "")
    assert quick.verdict == "pass" and quick.output[-1].content in ("same thread: True", "answered")
    assert time.monotonic() - started < 8


@pytest.mark.parametrize("kind", ["def", "async def"])
def test_a_python_target_calling_sys_exit_fails_its_test_not_the_run(tmp_path: Path, kind: str) -> None:
    write(tmp_path / "agent.py", f"import sys\n\n\n{kind} reply(messages):\n    sys.exit(4)\n")
    write(tmp_path / "targets.yaml", "targets:\n  - {name: py, provider: python, callable: agent.py:reply}\n")
    report = convoeval.run(write(tmp_path / "s.eval.yaml", PY_SUITE), target="py", judge="scripted", cache=False)
    assert report.results[0].error == "turn 1: RuntimeError: sys.exit(4) called"


def test_python_api_takes_an_async_function_as_target(tmp_path: Path) -> None:
    async def agent(messages: list[dict]) -> tuple[str, list[dict]]:
        return f"echo {messages[-1]['content']}", [{"name": "noop", "arguments": {}}]

    path = write(tmp_path / "s.eval.yaml", PY_SUITE.replace("last a", "echo a").replace("last b", "echo b"))
    result = convoeval.run(path, target=agent, judge="scripted", cache=False).results[0]
    assert result.verdict == "pass" and result.provider == "python" and result.scores[0].tool_calls[0].name == "noop"


def test_python_target_import_errors_are_clear(tmp_path: Path) -> None:
    write(tmp_path / "targets.yaml", "targets:\n  - {name: py, provider: python, callable: nowhere.py:fn}\n")
    path = write(tmp_path / "s.eval.yaml", PY_SUITE)
    with pytest.raises(convoeval.ConfigError, match="no such file"):
        convoeval.run(path, target="py", judge="scripted", cache=False)


def test_agent_target_settings_are_validated_with_file_and_line(tmp_path: Path) -> None:
    from convoeval.spec import SpecError
    from convoeval.spec._targets_file import load_targets_file

    path = write(
        tmp_path / "targets.yaml",
        """\
targets:
  - {name: a, provider: cli, command: "echo {PROMPT}", session: {resume_args: "--s {SESSION_ID}"}}
  - {name: b, provider: claude-code, argz: [--x]}
  - {name: c, provider: http, url: "http://127.0.0.1:1/x", reply_path: "$[["}
  - {name: d, provider: cli}
""",
    )
    with pytest.raises(SpecError) as caught:
        load_targets_file(path)
    text = str(caught.value)
    assert ":2: targets[0].session" in text and "id_jsonpath or id_regex" in text
    assert ":3: targets[1].argz" in text and ":4: targets[2].reply_path" in text and "JSONPath" in text
    assert ":5: targets[3].command" in text


def test_codex_retry_errors_are_not_fatal_when_the_turn_completes() -> None:
    """As Codex 0.169 prints them: `error` events for reconnects, then the turn completes."""
    events = [
        {"type": "thread.started", "thread_id": "t1"},
        {"type": "turn.started"},
        {"type": "error", "message": "Reconnecting... 1/5 (stream disconnected before completion)"},
        {"type": "item.completed", "item": {"id": "item_1", "type": "agent_message", "text": "done"}},
        {"type": "turn.completed", "usage": {"input_tokens": 7, "output_tokens": 3}},
    ]
    reply = parse_events([Line(json.dumps(e), at=0.0) for e in events])
    assert reply.text == "done" and reply.usage.input_tokens == 7
    with pytest.raises(TargetError, match=r"without `turn.completed`: Reconnecting\.\.\. 1/5"):
        parse_events([Line(json.dumps(e), at=0.0) for e in events[:3]])


def test_claude_failed_result_is_reported_in_words() -> None:
    """Claude Code 2.1.197's last event after a refused key (with retries limited)."""
    result = {
        "type": "result",
        "subtype": "success",
        "is_error": True,
        "api_error_status": 401,
        "result": "Invalid API key · Fix external API key",
        "session_id": "s1",
        "usage": {"input_tokens": 0, "output_tokens": 0},
    }
    with pytest.raises(TargetError) as caught:
        parse_stream([Line(json.dumps(result), at=0.0)])
    assert str(caught.value) == "Claude Code failed (API status 401): Invalid API key · Fix external API key"


def test_claude_resumed_run_that_counted_no_call_costs_nothing() -> None:
    """Claude Code 2.1.332's `model_usage_since_last_result` is `{}` when the run counted no
    model call; its `total_cost_usd` is then the earlier turns' alone, not this turn's."""
    result = {
        "type": "result",
        "subtype": "success",
        "is_error": False,
        "result": "ok",
        "session_id": "s1",
        "total_cost_usd": 0.5,
        "usage": {"input_tokens": 0, "output_tokens": 0},
        "modelUsage": {"claude-opus-5-5": {"inputTokens": 900, "outputTokens": 90, "costUSD": 0.5}},
        "model_usage_since_last_result": {},
    }
    reply = parse_stream([Line(json.dumps(result), at=0.0)])
    assert reply.cost_usd == 0.0 and reply.usage.total_tokens == 0


def test_claude_run_that_answers_twice_counts_both_answers() -> None:
    """Claude Code 2.1.332 answers again in the same run when a background command ends (a
    `result` each time, each counting what came since the one before; one that counted no model
    call, `{}` and no text, as a resumed run whose background command was ended prints first)."""
    used = {"inputTokens": 100, "outputTokens": 10, "costUSD": 0.25}
    results = [
        {"result": "", "model_usage_since_last_result": {}, "usage": {"input_tokens": 0, "output_tokens": 0}},
        {"result": "Started.", "model_usage_since_last_result": {"claude-opus-5-5": used}},
        {"result": "Noted.", "model_usage_since_last_result": {"claude-opus-5-5": {**used, "inputTokens": 50}}},
    ]
    events = [{"type": "result", "subtype": "success", "is_error": False, "session_id": "s1", **r} for r in results]
    reply = parse_stream([Line(json.dumps(e), at=0.0) for e in events])
    assert reply.text == "Started.\n\nNoted."
    assert (reply.usage.input_tokens, reply.usage.output_tokens, reply.cost_usd) == (150, 20, 0.5)
    assert parse_stream([Line(json.dumps(e), at=0.0) for e in events[:2]]).text == "Started."


def test_codex_system_prompt_is_a_valid_toml_string() -> None:
    """Codex parses `-c key=value` values as TOML (a value that does not parse is taken as raw text)."""
    system = 'Say "hi" \\ then\n\ttab, émoji 😀, bell \x07, del \x7f, null \x00.'
    assert tomllib.loads(f"developer_instructions={toml_string(system)}")["developer_instructions"] == system


def test_agent_output_beyond_the_cap_ends_with_a_clear_message(
    agent_bin: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Lines have no length limit, the whole output has one (lowered here to 1 MB to test it).
    The agent left a process outside its group that keeps writing to the pipe: the agent is
    killed and convoeval moves on within `REAP_S`, without waiting for that pipe to close (on
    Python 3.11 `process.wait()` alone waits for the pipes: forever here)."""
    from convoeval.targets.agents import _process

    monkeypatch.setattr(_process, "MAX_STDOUT", 2**20)
    monkeypatch.setattr(_process, "REAP_S", 1.0)
    pid_file = tmp_path / "escaped.pid"
    writer = "import sys\nwhile True: sys.stdout.write('y' * 65536)"
    fake = (
        f"#!{sys.executable}\nimport subprocess, sys, time\n"
        f"p = subprocess.Popen([sys.executable, '-c', {writer!r}], start_new_session=True)\n"
        f"open({str(pid_file)!r}, 'w').write(str(p.pid))\n"
        "sys.stdout.write('x' * 2 * 2**20)\ntime.sleep(60)\n"
    )
    (agent_bin / "claude").write_text(fake)
    suite = "tests:\n  - id: big\n    input: hello\n    assertions:\n      - {type: equals, value: done}\n"
    started = time.monotonic()
    try:
        result, _ = run_suite(tmp_path, suite, "targets:\n  - {name: claude, provider: claude-code}\n", "claude")
    finally:
        if pid_file.exists():
            os.kill(int(pid_file.read_text()), signal.SIGKILL)
    assert time.monotonic() - started < 30
    assert result.execution_status == "execution_error"
    assert "claude: printed more than 1 MB on stdout; stopped it" in (result.error or ""), result.error


@pytest.mark.parametrize("ignores_term", [False, True])
def test_a_stopped_command_gets_sigterm_then_sigkill_after_the_grace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ignores_term: bool
) -> None:
    """At its timeout a command's process group gets SIGTERM (an agent CLI ends what it started
    then), and SIGKILL once it has ended or `TERM_GRACE_S` have passed: a command that ignores
    SIGTERM is killed after the grace, one that does not costs no wait."""
    from convoeval.targets.agents import _process

    monkeypatch.setattr(_process, "TERM_GRACE_S", 2.0)
    mark = f"{4000 + os.getpid() % 500}.{int(ignores_term)}{time.time_ns() % 100:02d}"
    handler = "signal.SIG_IGN" if ignores_term else "signal.SIG_DFL"
    script = write(
        tmp_path / "agent.py", f"import signal, time\nsignal.signal(signal.SIGTERM, {handler})\ntime.sleep({mark})\n"
    )
    targets = f"targets:\n  - {{name: slow, provider: cli, command: 'exec {sys.executable} {script}', timeout_s: 1}}\n"
    suite = "tests:\n  - id: slow\n    input: hello\n    assertions:\n      - {type: contains, value: x}\n"
    started = time.monotonic()
    result, _ = run_suite(tmp_path, suite, targets, "slow")
    elapsed = time.monotonic() - started
    assert "slow: timed out after 1 s" in (result.error or ""), result.error
    assert (3.0 <= elapsed < 6.0) if ignores_term else elapsed < 2.5, elapsed
    assert not [line for line in command_lines() if f"sleep({mark})" in line]


def test_a_command_line_over_the_limit_is_a_clear_error(tmp_path: Path) -> None:
    """A `cli` command that puts a prompt over 128 KiB in its command line cannot start: the
    error says so (before: `OSError: [Errno 7] Argument list too long`)."""
    targets = "targets:\n  - {name: echo, provider: cli, command: 'echo {PROMPT}'}\n"
    suite = (
        f'tests:\n  - id: big\n    input: "{"word " * 30_000}"\n    assertions:\n      - {{type: contains, value: x}}\n'
    )
    result, _ = run_suite(tmp_path, suite, targets, "echo")
    assert result.execution_status == "execution_error"
    assert result.error == "turn 1: echo: cannot start the command: its command line is too long (146 KiB)"


def test_an_agent_cli_turn_may_take_ten_minutes_unless_the_target_says(tmp_path: Path) -> None:
    """A `claude-code` or `codex` turn (many model calls and commands) is stopped after
    `timeout_s`, by default 600 s, not the 60 s of one chat request: AgentV sets no limit."""
    from convoeval.spec._targets_file import load_targets_file
    from convoeval.targets import create_target

    path = write(
        tmp_path / "targets.yaml",
        "targets:\n"
        "  - {name: cl, provider: claude-code}\n"
        "  - {name: cx, provider: codex}\n"
        "  - {name: quick, provider: claude-code, timeout_s: 30}\n"
        "  - {name: agentv, provider: codex, timeout_seconds: 45}\n",
    )
    configs = load_targets_file(path)
    assert {name: create_target(config).timeout_s for name, config in configs.items()} == {
        "cl": 600,
        "cx": 600,
        "quick": 30,
        "agentv": 45,
    }


@pytest.mark.parametrize("suite", ["python", "cli", "claude-code", "codex"])
def test_the_agent_examples_run_from_any_folder(suite: str, tmp_path: Path) -> None:
    """The examples' targets run their commands in the targets file's folder (`cwd: .`): a user
    at the repository's root (or anywhere) runs them as written, not only after `cd examples/agents`."""

    example = Path(__file__).resolve().parents[1] / "examples" / "agents" / f"{suite}.eval.yaml"
    env = {**os.environ, "PATH": f"{FAKES}{os.pathsep}{os.environ['PATH']}", "CONVOEVAL_HOME": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-m", "convoeval", "run", str(example), "--no-cache", "-o", "out.jsonl"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    [result] = read_jsonl(tmp_path / "out.jsonl")
    assert result["verdict"] == "pass"
