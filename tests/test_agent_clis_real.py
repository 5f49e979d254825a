"""The `claude-code` and `codex` providers driven through the REAL programs (pinned npm packages
that `tools/install-agent-clis.sh` puts in `.tools/agent-clis/`, run by `.ci/run`), against
loopback fake model servers this test owns (tests/agent_servers.py), with HOME a temp folder.

Skipped (with the reason) only where npm itself is missing; with npm but no install, the
tests fail and say how to install. `CONVOEVAL_TEST_AGENT_CLIS=/some/node_modules/.bin` runs them
against other installs (e.g. newer versions: `npm install --prefix /tmp/clis
@anthropic-ai/claude-code@X @openai/codex@Y`), used by these tests only.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

import convoeval
from convoeval.datasets._transcripts import import_transcripts
from convoeval.results import EvaluationResult, ToolCall
from convoeval.targets import ChatReply
from convoeval.targets.agents._codex import _merge_rollout as merge_rollout
from convoeval.targets.agents._codex_rollout import read_records, read_turns

from .agent_servers import Answer, FakeAnthropic, FakeResponses, Rule
from .conftest import REPO, write
from .test_signals import convoeval as convoeval_process
from .test_signals import kill_marked, left, wait_for

#: Where the CLIs are: the pinned install, or the folder `CONVOEVAL_TEST_AGENT_CLIS` names.
BIN = Path(os.environ.get("CONVOEVAL_TEST_AGENT_CLIS") or REPO / ".tools" / "agent-clis" / "node_modules" / ".bin")
ANTHROPIC_KEY = "sk-ant-real-cli-SECRET-0001"
OPENAI_KEY = "sk-openai-real-cli-SECRET-0002"
SYSTEM = "You work for the ACME bookshop. SYSTEM-MARKER-7"


@pytest.fixture(scope="session")
def clis() -> dict[str, Path]:
    """The installed real CLIs."""
    if shutil.which("npm") is None:
        pytest.skip(
            "npm is missing: the real Claude Code and Codex CLIs install from npm (tools/install-agent-clis.sh)"
        )
    found = {name: BIN / name for name in ("claude", "codex")}
    missing = [name for name, path in found.items() if not path.exists()]
    where = f"in CONVOEVAL_TEST_AGENT_CLIS={BIN}" if os.environ.get("CONVOEVAL_TEST_AGENT_CLIS") else "installed"
    assert not missing, f"{missing} not {where}: run tools/install-agent-clis.sh (.ci/run does)"
    return found


def version(cli: Path) -> tuple[int, ...]:
    """The version a CLI prints (`2.1.332 (Claude Code)`, `codex-cli 0.171.0`) as numbers."""
    printed = subprocess.run([str(cli), "--version"], capture_output=True, text=True, timeout=60, check=True).stdout
    found = re.search(r"(\d+)\.(\d+)\.(\d+)", printed)
    assert found, printed
    return tuple(int(n) for n in found.groups())


@pytest.fixture
def agent_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """HOME is a temp folder: the CLIs' sessions and settings land there."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    monkeypatch.delenv("CODEX_HOME", raising=False)
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    yield home


def run_suite(tmp_path: Path, suite: str, target: dict, **options) -> tuple[EvaluationResult, str]:
    path = write(tmp_path / "s.eval.yaml", suite)
    write(tmp_path / "targets.yaml", json.dumps({"targets": [target]}))
    (tmp_path / "work").mkdir(exist_ok=True)
    out = tmp_path / "r.jsonl"
    report = convoeval.run(path, target=target["name"], judge="scripted", cache=False, output=out, **options)
    return report.results[0], out.read_text()


ORDERS = """\
tests:
  - id: orders
    mode: conversation
    input:
      - {role: system, content: "%(system)s"}
    turns:
      - input: Create an order for a book
        capture: {name: order_id, regex: "(ORD-\\\\d+)"}
        assertions:
          - {type: tool-called, tool: %(tool)s}
          - {type: contains, value: ORD-1042}
      - input: "- what is the status of {{ order_id }}?"
        assertions:
          - {type: contains, value: "{{ order_id }} is shipped"}
      - input: "--help me cancel {{ order_id }}"
        assertions:
          - {type: contains, value: cancelled}
"""

RULES = [
    Rule("Create an order", "Created order ORD-1042."),
    Rule(r"^- what is the status of ORD-1042\?$", "ORD-1042 is shipped."),
    Rule(r"^--help me cancel ORD-1042$", "ORD-1042 is cancelled."),
]


def turn_calls(server: FakeAnthropic | FakeResponses, main_only: bool = True) -> list[list]:
    """The model calls of each turn (a turn starts with a call whose newest item is the user's)."""
    turns: list[list] = []
    for record in server.model_calls:
        if main_only and isinstance(server, FakeAnthropic) and server.is_side_request(record.body):
            continue
        if server.tool_output(record.body) is None:
            turns.append([])
        turns[-1].append(record)
    return turns


# Claude Code --------------------------------------------------------------------------------


def claude_target(clis: dict[str, Path], **extra) -> dict:
    return {
        "name": "claude",
        "provider": "claude-code",
        "executable": str(clis["claude"]),
        "args": ["--allowedTools", "Bash"],
        "cwd": "work",
        **extra,
    }


def test_claude_three_turns_resume_with_tools_and_keep_the_system_prompt(
    clis: dict[str, Path], agent_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cli
) -> None:
    rules = [Rule("Create an order", "Created order {output}.", ("Bash", {"command": "echo ORD-1042"})), *RULES[1:]]
    with FakeAnthropic(rules) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        result, raw = run_suite(tmp_path, ORDERS % {"system": SYSTEM, "tool": "Bash"}, claude_target(clis))
    assert result.verdict == "pass", result.model_dump_json(indent=1)[:4000]
    assert result.session == "resumed"
    turns = [s for s in result.scores if s.type == "turn"]
    assert turns[0].session_id and {t.session_id for t in turns} == {turns[0].session_id}
    # The `-`-leading messages reached the model as text, one turn each.
    per_turn = turn_calls(server)
    assert [server.last_user_text(t[0].body) for t in per_turn] == [
        "Create an order for a book",
        "- what is the status of ORD-1042?",
        "--help me cancel ORD-1042",
    ]
    # The system prompt was in every request of every turn, not only the first.
    assert all(SYSTEM in server.system_text(r) for turn in per_turn for r in turn)
    # Per-turn tokens are what the fake model reported for that turn's calls.
    for entry, calls in zip(turns, per_turn, strict=True):
        assert entry.token_usage is not None
        assert entry.token_usage.input_tokens == sum(r.usage["input"] for r in calls)
        assert entry.token_usage.output_tokens == sum(r.usage["output"] for r in calls)
        assert entry.cost_usd and entry.cost_usd > 0 and entry.latency_ms and entry.latency_ms > 0
    # Each turn's own cost, not the session's running total (which Claude Code 2.1.332 prints after
    # a resume): turns 2 and 3 make one model call each, turn 1 two (and perhaps a title call).
    costs = [t.cost_usd or 0.0 for t in turns]
    assert costs[1] < costs[0] and costs[2] < costs[0] and costs[2] < 1.5 * costs[1], costs
    bash = turns[0].tool_calls[0]
    assert bash.name == "Bash" and bash.output == "ORD-1042" and bash.status is None
    assert ANTHROPIC_KEY not in raw
    # Claude Code kept the session in HOME: it imports and grades as a transcript.
    sessions = list((agent_home / ".claude" / "projects").glob("*/*.jsonl"))
    assert [p.stem for p in sessions] == [turns[0].session_id]
    grade_session(cli, tmp_path, sessions[0], "Bash", ["Create an order for a book", "ORD-1042 is cancelled."])
    # A session cut in the middle of a line is an error with its file and line, not a traceback.
    broken = write(tmp_path / "broken.jsonl", sessions[0].read_text() + '{"type": "user", "mess')
    lines = len(broken.read_text().splitlines())
    code, _, err = cli("import", "transcripts", broken, "-o", tmp_path / "b.eval.yaml")
    assert code == 2 and f"broken.jsonl:{lines}: not a JSON object (a Claude Code session file" in err, err


def test_claude_cache_reads_are_input_tokens_counted_apart(
    clis: dict[str, Path], agent_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Claude Code's tokens read from the prompt cache (Anthropic's `input_tokens` leaves them out)
    are part of `input_tokens` and counted in `cached_input_tokens`, as for the `anthropic:` target."""
    suite = "tests:\n  - id: hi\n    mode: conversation\n    turns:\n      - input: hello there\n"
    with FakeAnthropic() as server:
        server.usage_cached = 60
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        result, _ = run_suite(tmp_path, suite, claude_target(clis))
    (calls,) = turn_calls(server)
    assert result.token_usage.input_tokens == sum(r.usage["input"] for r in calls), result.token_usage
    assert result.token_usage.cached_input_tokens == 60 * len(calls)


def test_claude_bad_key_is_reported_in_words_at_once(
    clis: dict[str, Path], agent_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with FakeAnthropic(RULES, faults=["401"]) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        started = time.monotonic()
        result, raw = run_suite(tmp_path, ORDERS % {"system": SYSTEM, "tool": "Bash"}, claude_target(clis))
        elapsed = time.monotonic() - started
    assert result.execution_status == "execution_error"
    assert "401" in (result.error or "") and "API key" in (result.error or ""), result.error
    assert "{" not in (result.error or "")  # words, not a quoted JSON event
    assert elapsed < 60, elapsed  # Claude Code alone retries a 401 for over 2 minutes
    assert ANTHROPIC_KEY not in raw


def test_claude_api_error_result_is_reported_in_words(
    clis: dict[str, Path], agent_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With its retries limited (CLAUDE_CODE_MAX_RETRIES), Claude Code ends with a `result`
    event that says the error; convoeval quotes its words."""
    with FakeAnthropic(RULES, faults=["401"]) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        target = claude_target(clis, env={"CLAUDE_CODE_MAX_RETRIES": "0"})
        result, _ = run_suite(tmp_path, ORDERS % {"system": SYSTEM, "tool": "Bash"}, target)
    assert result.execution_status == "execution_error"
    assert "Claude Code failed (API status 401): Invalid API key" in (result.error or ""), result.error


def test_claude_recovers_from_a_server_error(
    clis: dict[str, Path], agent_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with FakeAnthropic(RULES, faults=["500"]) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        result, _ = run_suite(tmp_path, ORDERS % {"system": SYSTEM, "tool": "Bash"}, claude_target(clis))
    assert [r.fault for r in server.model_calls if not server.is_side_request(r.body)][:2] == ["500", None]
    assert result.execution_status != "execution_error", result.error
    assert [s.verdict for s in result.scores if s.type == "turn"][1:] == ["pass", "pass"]


def test_claude_recovers_from_a_cut_stream(
    clis: dict[str, Path], agent_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stream that ends mid-text is asked again (Claude Code 2.1.197: without streaming;
    2.1.332: streaming, after a `system/api_retry` with no status); the turn's text is the whole
    answer, not the part that came before the cut."""
    with FakeAnthropic(RULES, faults=["cut"]) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        result, _ = run_suite(tmp_path, ORDERS % {"system": SYSTEM, "tool": "Bash"}, claude_target(clis))
    assert [r.fault for r in server.model_calls if not server.is_side_request(r.body)][:2] == ["cut", None]
    assert result.execution_status != "execution_error", result.error
    answers = [m.content for m in result.output if m.role == "assistant"]
    assert answers[0] == "Created order ORD-1042.", answers
    assert [s.verdict for s in result.scores if s.type == "turn"][1:] == ["pass", "pass"]


def test_claude_cut_stream_not_recovered_is_an_error_in_words(
    clis: dict[str, Path], agent_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With no retries left (CLAUDE_CODE_MAX_RETRIES=0), a cut stream whose one retry is cut too
    ends the turn with Claude Code's words."""
    with FakeAnthropic(RULES, faults=["cut", "cut"]) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        target = claude_target(clis, env={"CLAUDE_CODE_MAX_RETRIES": "0"})
        result, _ = run_suite(tmp_path, ORDERS % {"system": SYSTEM, "tool": "Bash"}, target)
    assert result.execution_status == "execution_error"
    assert (result.error or "").startswith(
        "turn 1: claude: Claude Code failed (error): API Error: Connection to the API was lost"
    ), result.error


def test_claude_denied_tool_is_marked_and_not_counted(
    clis: dict[str, Path], agent_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    suite = """\
tests:
  - id: denied
    mode: conversation
    turns:
      - input: Create an order for a book
        assertions:
          - {type: tool-not-called, tool: Bash}
"""
    rules = [Rule("Create an order", "Could not: {output}", ("Bash", {"command": "echo ORD-1042 > order.txt"}))]
    with FakeAnthropic(rules) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        result, _ = run_suite(tmp_path, suite, claude_target(clis, args=[]))
    call = result.scores[0].tool_calls[0]
    assert call.name == "Bash" and call.status == "denied" and call.error
    assert result.verdict == "pass", result.model_dump_json(indent=1)[:3000]
    assert not (tmp_path / "work" / "order.txt").exists()
    # From 2.1.332 on, the session file says so too: imported, the call is denied there as well.
    if version(clis["claude"]) >= (2, 1, 332):
        (session,) = (agent_home / ".claude" / "projects").glob("*/*.jsonl")
        (test,) = import_transcripts(session)["tests"]
        (imported,) = [c for m in test["transcript"] if m["role"] == "tool" for c in m["tool_calls"]]
        assert imported["name"] == "Bash" and imported.get("status") == "denied", imported


def test_claude_hang_ends_at_the_timeout(
    clis: dict[str, Path], agent_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server error (retried), then no answer: the timeout says what Claude Code was doing."""
    with FakeAnthropic(RULES, faults=["500", "hang"]) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        result, _ = run_suite(tmp_path, ORDERS % {"system": SYSTEM, "tool": "Bash"}, claude_target(clis, timeout_s=8))
    assert result.execution_status == "execution_error"
    assert (result.error or "").endswith(
        "timed out after 8 s (Claude Code was retrying the API: attempt 1 of 10, status 500 (server_error))"
    ), result.error


LONG_JOB = """\
tests:
  - id: long
    mode: conversation
    turns:
      - input: run the long job
        assertions: [{type: contains, value: Out}]
"""


def long_job(mark: str, tool: str, **extra) -> Rule:
    """A rule whose tool call leaves a file, then runs `time.sleep(MARK)` (a command that outlives the turn)."""
    arg = "command" if tool == "Bash" else "cmd"
    command = f"echo go > started.txt; python3 -c 'import time; time.sleep({mark})'"
    return Rule("run the long job", "Out: {output}", (tool, {arg: command, **extra}))


def unique_seconds() -> str:
    """A sleep's length no other process has: it marks the test's commands."""
    return f"{3000 + uuid.uuid4().int % 500}.{uuid.uuid4().int % 1000:03d}"


@pytest.mark.parametrize("stop", ["timeout", "sigterm"])
def test_claude_stopped_mid_command_leaves_no_command_running(
    clis: dict[str, Path], agent_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stop: str
) -> None:
    """Claude Code starts each Bash command in a session of its own, out of reach of its process
    group. Stopped at the timeout, or by a SIGTERM to convoeval (on the host), it now gets SIGTERM
    first and ends its commands itself; before, SIGKILL at once left the command running (its
    parent PID 1)."""
    mark = unique_seconds()
    try:
        with FakeAnthropic([long_job(mark, "Bash")]) as server:
            monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
            if stop == "timeout":
                result, _ = run_suite(tmp_path, LONG_JOB, claude_target(clis, timeout_s=6))
                assert result.execution_status == "execution_error"
                assert "timed out after 6 s" in (result.error or ""), result.error
                # The command it was running is a call (before: left out, as if it never ran).
                (tool,) = [m for m in result.output if m.source == "tool"]
                assert [(c.name, c.arguments["command"]) for c in tool.tool_calls] == [
                    ("Bash", long_job(mark, "Bash").tool[1]["command"])
                ]
            else:
                write(tmp_path / "s.eval.yaml", LONG_JOB)
                write(tmp_path / "targets.yaml", json.dumps({"targets": [claude_target(clis)]}))
                (tmp_path / "work").mkdir()
                args = ["run", "s.eval.yaml", "--targets", "targets.yaml", "--target", "claude", "--judge", "scripted"]
                process = convoeval_process(*args, "--no-cache", cwd=tmp_path)
                try:
                    wait_for(lambda: (tmp_path / "work" / "started.txt").exists())
                    os.kill(process.pid, signal.SIGTERM)
                    _, err = process.communicate(timeout=30)
                finally:
                    if process.poll() is None:
                        os.killpg(process.pid, signal.SIGKILL)
                        process.wait()
                assert process.returncode == 143, err
        assert (tmp_path / "work" / "started.txt").exists()  # the command had started
        wait_for(lambda: not left(f"sleep({mark})"), 5)
    finally:
        kill_marked(f"sleep({mark})")


def test_claude_turn_that_leaves_a_server_running_ends_at_its_answer(
    clis: dict[str, Path], agent_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Claude Code 2.1.332 stays up after its `result` while a background command it started runs
    (a server: Bash's `run_in_background`). The turn ends at that answer, the server ends with
    the CLI, and the next turn resumes the session (before: the turn ran to its timeout, an
    execution error, and the server stayed up until then)."""
    mark = unique_seconds()
    suite = """\
tests:
  - id: server
    mode: conversation
    turns:
      - input: please start the server
        assertions:
          - {type: tool-called, tool: Bash}
          - {type: contains, value: Started}
      - input: is it up?
        assertions: [{type: contains, value: It is up}]
"""
    command = f"echo SERVER-UP; python3 -c 'import time; time.sleep({mark})'"
    server_rule = Rule(
        "start the server", "Started: {output}", ("Bash", {"command": command, "run_in_background": True})
    )
    try:
        with FakeAnthropic([server_rule, Rule("is it up", "It is up.")]) as server:
            monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
            started = time.monotonic()
            result, _ = run_suite(tmp_path, suite, claude_target(clis, timeout_s=60))
            elapsed = time.monotonic() - started
        assert result.verdict == "pass", result.model_dump_json(indent=1)[:3000]
        assert elapsed < 45, elapsed
        turns = [s for s in result.scores if s.type == "turn"]
        assert turns[0].session_id and turns[1].session_id == turns[0].session_id
        (call,) = turns[0].tool_calls
        assert call.name == "Bash" and call.arguments["run_in_background"] is True
        # Turn 2 resumed the session: its model call carries turn 1's message.
        second = turn_calls(server)[1][0]
        assert "please start the server" in json.dumps(second.body["messages"])
        wait_for(lambda: not left(f"sleep({mark})"), 5)
    finally:
        kill_marked(f"sleep({mark})")


class SlowAfterTools(FakeAnthropic):
    """Answers a tool's result only after `delay_s`: a background command ends meanwhile."""

    delay_s = 4.0

    def answer(self, body: dict) -> Answer:
        if self.tool_output(body) is not None and not self.is_side_request(body):
            time.sleep(self.delay_s)
        return super().answer(body)


def test_claude_turn_answered_again_after_its_background_command_counts_every_answer(
    clis: dict[str, Path], agent_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A background command that ends after Claude Code's answer was asked for, but before the
    answer came, makes it answer again in the same run (a second `result`, whose figures count
    only what came after the first). The turn counts the tokens and cost of both and keeps both
    answers (before: only the last, a third of the tokens here, and the first answer lost)."""
    suite = """\
tests:
  - id: job
    mode: conversation
    turns:
      - input: start the job
      - input: is it done?
"""
    rules = [
        Rule("task-notification", "Noted: the job finished."),
        Rule("start the job", "Started.", ("Bash", {"command": "sleep 0.2; echo JOB-DONE", "run_in_background": True})),
        Rule("is it done", "Yes."),
    ]
    with SlowAfterTools(rules) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        result, _ = run_suite(tmp_path, suite, claude_target(clis, timeout_s=60))
    assert result.execution_status == "ok", result.error
    main = [r for r in server.model_calls if not server.is_side_request(r.body)]
    assert [server.last_user_text(r.body) for r in main][-1] == "is it done?"
    first = main[:-1]
    assert len(first) == 3 and "<task-notification>" in server.last_user_text(first[2].body)
    turn = result.scores[0]
    assert turn.token_usage is not None
    assert turn.token_usage.input_tokens == sum(r.usage["input"] for r in first), turn.token_usage
    assert turn.token_usage.output_tokens == sum(r.usage["output"] for r in first), turn.token_usage
    second = result.scores[1]
    assert second.cost_usd and turn.cost_usd and turn.cost_usd > 2.5 * second.cost_usd, (turn.cost_usd, second.cost_usd)
    (answer,) = [m.content for m in result.output if m.source == "target" and m.turn == 1]
    assert answer == "Started.\n\nNoted: the job finished.", answer


@pytest.mark.parametrize("which", ["claude", "codex"])
def test_the_cli_stops_where_the_tests_time_budget_ends(
    clis: dict[str, Path], agent_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, which: str
) -> None:
    """A turn over the test's `budget.turn.seconds` is stopped there (before: it ran to the
    target's timeout, an execution error): `budget_exhausted`, with what it spent and ran. The
    budget leaves the CLI time to start and call its tool on a busy machine (with 5 s, the turn
    was stopped before the CLI printed its call when another test run shared the cores)."""
    mark = unique_seconds()
    suite = LONG_JOB.replace("    turns:", "    budget: {turn: {seconds: 12}}\n    turns:")
    server: FakeAnthropic | FakeResponses
    try:
        if which == "claude":
            with FakeAnthropic([long_job(mark, "Bash")]) as server:
                monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
                started = time.monotonic()
                result, _ = run_suite(tmp_path, suite, claude_target(clis, timeout_s=60))
        else:
            with FakeResponses([long_job(mark, "exec_command", yield_time_ms=60_000)]) as server:
                started = time.monotonic()
                result, _ = run_suite(tmp_path, suite, codex_target(clis, server, tmp_path, timeout_s=60))
        assert time.monotonic() - started < 40
        assert result.execution_status == "budget_exhausted", result.error
        assert result.budget_hit == "seconds=12 at turn 1"
        assert [c.name for c in result.scores[0].tool_calls] == ["Bash" if which == "claude" else "command_execution"]
        assert result.token_usage.input_tokens == sum(r.usage["input"] for r in turn_calls(server)[0])
        wait_for(lambda: not left(f"sleep({mark})"), 5)
    finally:
        kill_marked(f"sleep({mark})")


ONE_TURN_TOOL = """\
tests:
  - id: limited
    mode: conversation
    turns:
      - input: please make a file
        assertions: [{type: contains, value: Made}]
      - input: tell me the secret word
"""


@pytest.mark.parametrize(
    ("limit", "hit", "ran"),
    [
        (["--max-turns", "1"], "max_turns=1 at turn 1", True),  # the command ran, the next model call did not
        (["--max-budget-usd", "0.0005"], "max_budget_usd=0.0005 at turn 1", False),  # the first call spent it all
    ],
)
def test_claude_own_limit_is_a_budget_that_keeps_what_the_turn_spent(
    clis: dict[str, Path],
    agent_home: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    limit: list[str],
    hit: str,
    ran: bool,
) -> None:
    """A turn Claude Code ends on its own limit is `budget_exhausted` (before: an execution error
    with no cost, no tokens and no tool call), with its cost, tokens and the commands that ran."""
    rules = [Rule("make a file", "Made: {output}", ("Bash", {"command": "echo hello > made.txt && cat made.txt"}))]
    with FakeAnthropic(rules) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        result, _ = run_suite(tmp_path, ONE_TURN_TOOL, claude_target(clis, args=["--allowedTools", "Bash", *limit]))
    assert result.execution_status == "budget_exhausted" and result.budget_hit == hit, result.error
    turn, unsent = result.scores[0], result.scores[1]
    assert unsent.verdict == "skip" and len(turn_calls(server)) == 1
    (calls,) = turn_calls(server)
    assert turn.token_usage is not None and turn.token_usage.input_tokens == sum(r.usage["input"] for r in calls)
    assert turn.cost_usd and turn.cost_usd == result.cost_usd
    assert (tmp_path / "work" / "made.txt").exists() == ran
    # A command that ran is a call; one the model asked for that never ran is not.
    assert [(c.name, c.output) for c in turn.tool_calls] == ([("Bash", "hello")] if ran else [])


def test_agentvs_claude_cli_target_drives_claude_code(
    clis: dict[str, Path], agent_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """AgentV's `provider: claude-cli` (its own targets file's `claude` entry) is `claude-code`,
    its `max_turns` Claude Code's `--max-turns` (before: "provider 'claude-cli' is not implemented")."""
    rules = [Rule("make a file", "Made: {output}", ("Bash", {"command": "echo hello > made.txt && cat made.txt"}))]
    with FakeAnthropic(rules) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        target = {**claude_target(clis), "provider": "claude-cli", "max_turns": 1}
        result, _ = run_suite(tmp_path, ONE_TURN_TOOL, target)
    assert result.execution_status == "budget_exhausted" and result.budget_hit == "max_turns=1 at turn 1", result.error
    assert [(c.name, c.output) for c in result.scores[0].tool_calls] == [("Bash", "hello")]


def test_claude_failed_turn_keeps_what_it_spent(
    clis: dict[str, Path], agent_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A turn that fails after its command ran (an API error, no retries left) is an execution
    error that still counts the turn's cost and tokens, and shows the command and what the agent
    said before it in the transcript (before: the text was lost)."""
    command = ("Bash", {"command": "echo hello > made.txt && cat made.txt"})
    rules = [Rule("make a file", "Made: {output}", command, said="Making the file now.")]
    with FakeAnthropic(rules, faults=["ok", "500"]) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        target = claude_target(clis, env={"CLAUDE_CODE_MAX_RETRIES": "0"})
        result, _ = run_suite(tmp_path, ONE_TURN_TOOL, target)
    assert result.execution_status == "execution_error"
    assert "Claude Code failed (API status 500)" in (result.error or ""), result.error
    answered = [r for r in turn_calls(server)[0] if r.fault != "500"]
    assert result.token_usage.input_tokens == sum(r.usage["input"] for r in answered) > 0
    assert result.cost_usd > 0
    (tool,) = [m for m in result.output if m.source == "tool"]
    assert tool.content == "hello" and tool.tool_calls[0].name == "Bash" and tool.turn == 1
    (said,) = [m for m in result.output if m.source == "target"]
    assert (said.role, said.content, said.turn) == ("assistant", "Making the file now.", 1)


def test_claude_turn_that_times_out_keeps_what_it_spent(
    clis: dict[str, Path], agent_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A turn that times out after its command ran (the next model call never answers) keeps
    the tokens of the calls Claude Code printed (input exact, output as the API's stream starts
    it), their cost at the model's list price, and the command (before: 0 tokens, $0, no call)."""
    rules = [Rule("make a file", "Made: {output}", ("Bash", {"command": "echo hello > made.txt && cat made.txt"}))]
    with FakeAnthropic(rules, faults=["ok", "hang"]) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        target = claude_target(clis, timeout_s=15, model="claude-sonnet-4-5")
        result, _ = run_suite(tmp_path, ONE_TURN_TOOL, target)
    assert result.execution_status == "execution_error" and "timed out after 15 s" in (result.error or "")
    (answered,) = [r for r in turn_calls(server)[0] if r.fault != "hang"]
    assert result.token_usage.input_tokens == answered.usage["input"]
    assert 0 < result.token_usage.output_tokens <= answered.usage["output"]
    used = result.token_usage
    assert result.cost_usd == pytest.approx((used.input_tokens * 3.0 + used.output_tokens * 15.0) / 1e6)  # prices.json
    (tool,) = [m for m in result.output if m.source == "tool"]
    assert tool.content == "hello" and tool.tool_calls[0].name == "Bash"


#: A prompt longer than a command-line argument can be (128 KiB on Linux).
HUGE = "summarise this: " + "word " * 30_000

BIG = """\
tests:
  - id: big
    mode: conversation
    input:
      - {role: system, content: "%(system)s"}
    turns:
      - input: "%(prompt)s"
        assertions: [{type: contains, value: "Summary: done"}]
      - input: what did I ask?
        assertions: [{type: contains, value: echo}]
"""


@pytest.mark.parametrize("which", ["claude", "codex"])
def test_prompts_over_128_kib_reach_the_cli_on_its_input(
    clis: dict[str, Path], agent_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, which: str
) -> None:
    """The prompt goes to the CLI's standard input, a resumed turn's too (before: on the command
    line, where over 128 KiB failed with `OSError: [Errno 7] Argument list too long`); a system
    prompt that long is a clear error, and no CLI starts."""
    rules = [Rule("^summarise this", "Summary: done")]
    server: FakeAnthropic | FakeResponses
    with FakeAnthropic(rules) if which == "claude" else FakeResponses(rules) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        target = claude_target(clis) if which == "claude" else codex_target(clis, server, tmp_path)
        result, _ = run_suite(tmp_path, BIG % {"system": SYSTEM, "prompt": HUGE}, target)
        assert result.verdict == "pass", result.model_dump_json(indent=1)[:3000]
        assert [server.last_user_text(t[0].body) for t in turn_calls(server)] == [HUGE, "what did I ask?"]
        before = len(server.requests)
        result, _ = run_suite(tmp_path, BIG % {"system": HUGE, "prompt": "hi"}, target)
        assert len(server.requests) == before
    assert result.execution_status == "execution_error"
    option = "--append-system-prompt" if which == "claude" else "-c developer_instructions=..."
    assert (result.error or "").startswith(
        f"turn 1: {target['name']}: the system prompt is too long for the command line, where the CLI takes it "
        f"({option}): 146 KiB, over the 128 KiB Linux allows in one argument; shorten it"
    ), result.error


TEAM_KEY = "sk-team-real-cli-SECRET-0009"


@pytest.mark.parametrize("given", [{"api_key_env": "TEAM_KEY"}, {"api_key": "${{ TEAM_KEY }}"}])
def test_claude_gets_the_key_the_target_gives(
    clis: dict[str, Path], agent_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, given: dict
) -> None:
    """`api_key_env` / `api_key` reach Claude Code as ANTHROPIC_API_KEY (before: under the
    variable's own name, which Claude Code does not read: "Not logged in")."""
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    monkeypatch.setenv("TEAM_KEY", TEAM_KEY)
    with FakeAnthropic(RULES) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        result, raw = run_suite(tmp_path, ORDERS % {"system": SYSTEM, "tool": "Bash"}, claude_target(clis, **given))
    assert result.execution_status != "execution_error", result.error
    assert {r.headers.get("x-api-key") for r in server.model_calls} == {TEAM_KEY}
    assert TEAM_KEY not in raw


# Codex --------------------------------------------------------------------------------------


def codex_target(clis: dict[str, Path], server: FakeResponses, tmp_path: Path, **extra) -> dict:
    """Codex with a custom model provider on the fake server, and the recommended args. TMPDIR
    is moved out of /tmp: Codex refuses to set up its sandbox helper when its home is under
    the temp folder (as HOME is here)."""
    (tmp_path / "tmpdir").mkdir(exist_ok=True)
    provider = [
        "-c", "model_provider=fake",
        "-c", 'model_providers.fake.name="fake"',
        "-c", f'model_providers.fake.base_url="{server.url}/v1"',
        "-c", 'model_providers.fake.wire_api="responses"',
        "-c", 'model_providers.fake.env_key="OPENAI_API_KEY"',
    ]  # fmt: skip
    return {
        "name": "cx",
        "provider": "codex",
        "model": "gpt-fake",
        "executable": str(clis["codex"]),
        "args": ["--skip-git-repo-check", "--sandbox", "workspace-write", *provider],
        "cwd": "work",
        "env": {"TMPDIR": str(tmp_path / "tmpdir")},
        **extra,
    }


def test_codex_three_turns_resume_with_the_recommended_args(
    clis: dict[str, Path], agent_home: Path, tmp_path: Path, cli
) -> None:
    command = {"cmd": "echo ORD-1042 > order.txt && cat order.txt"}
    rules = [Rule("Create an order", "Created order {output}.", ("exec_command", command)), *RULES[1:]]
    with FakeResponses(rules) as server:
        result, raw = run_suite(
            tmp_path, ORDERS % {"system": SYSTEM, "tool": "command_execution"}, codex_target(clis, server, tmp_path)
        )
    assert result.verdict == "pass", result.model_dump_json(indent=1)[:4000]
    assert result.session == "resumed"
    turns = [s for s in result.scores if s.type == "turn"]
    assert turns[0].session_id and {t.session_id for t in turns} == {turns[0].session_id}
    per_turn = turn_calls(server)
    assert [server.last_user_text(t[0].body) for t in per_turn] == [
        "Create an order for a book",
        "- what is the status of ORD-1042?",
        "--help me cancel ORD-1042",
    ]
    # The system prompt, as Codex's developer instructions, was in every request of every turn.
    assert all(SYSTEM in server.instructions_text(r) for turn in per_turn for r in turn)
    # Codex prints the thread's running total after a resume; convoeval reports each turn's own.
    for entry, calls in zip(turns, per_turn, strict=True):
        assert entry.token_usage is not None
        assert entry.token_usage.input_tokens == sum(r.usage["input"] for r in calls)
        assert entry.token_usage.output_tokens == sum(r.usage["output"] for r in calls)
    command_call = turns[0].tool_calls[0]
    assert command_call.name == "command_execution" and command_call.output == "ORD-1042\n"
    assert (tmp_path / "work" / "order.txt").read_text() == "ORD-1042\n"
    # Codex's own measure of the command (milliseconds), not the gap between two buffered lines.
    rollout_text = next((agent_home / ".codex" / "sessions").glob("*/*/*/rollout-*.jsonl")).read_text()
    measured = json.loads(next(line for line in rollout_text.splitlines() if '"CommandExecution"' in line))
    duration = measured["payload"]["item"]["duration"]
    assert command_call.duration_ms == round(duration["secs"] * 1000 + duration["nanos"] / 1e6, 3)
    assert OPENAI_KEY not in raw
    rollouts = list((agent_home / ".codex" / "sessions").glob("*/*/*/rollout-*.jsonl"))
    assert len(rollouts) == 1 and turns[0].session_id in rollouts[0].name
    grade_session(
        cli, tmp_path, rollouts[0], "command_execution", ["Create an order for a book", "ORD-1042 is cancelled."]
    )


@pytest.mark.parametrize("which", ["claude", "codex"])
def test_a_call_of_a_tool_the_cli_does_not_have_is_a_failed_call(
    clis: dict[str, Path], agent_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, which: str
) -> None:
    """The model calls a tool the CLI does not have: both CLIs answer it with an error, and the
    turn keeps the call with that error (before: Codex's was left out, its event stream has no
    item for it; its rollout has the call and Codex's answer, `unsupported call: NAME`)."""
    suite = """\
tests:
  - id: unknown
    mode: conversation
    turns:
      - input: look it up
        assertions: [{type: tool-called, tool: lookup_order, args: {id: ORD-1}}]
"""
    rules = [Rule("look it up", "Result: {output}", ("lookup_order", {"id": "ORD-1"}))]
    server: FakeAnthropic | FakeResponses
    if which == "claude":
        with FakeAnthropic(rules) as server:
            monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
            result, _ = run_suite(tmp_path, suite, claude_target(clis))
        said = "No such tool available: lookup_order"
    else:
        with FakeResponses(rules) as server:
            result, _ = run_suite(tmp_path, suite, codex_target(clis, server, tmp_path))
        said = "unsupported call: lookup_order"
    assert result.verdict == "pass", result.model_dump_json(indent=1)[:3000]
    (call,) = result.scores[0].tool_calls
    assert call.name == "lookup_order" and call.arguments == {"id": "ORD-1"} and call.status is None
    assert said in str(call.output) and said in (call.error or ""), call


def test_codex_recovered_retries_are_not_errors(clis: dict[str, Path], agent_home: Path, tmp_path: Path) -> None:
    with FakeResponses(RULES, faults=["500", "cut"]) as server:
        result, _ = run_suite(
            tmp_path, ORDERS % {"system": SYSTEM, "tool": "command_execution"}, codex_target(clis, server, tmp_path)
        )
    assert [r.fault for r in server.model_calls][:3] == ["500", "cut", None]
    assert result.execution_status != "execution_error", result.error
    assert [s.verdict for s in result.scores if s.type == "turn"][1:] == ["pass", "pass"]


def test_codex_bad_key_is_reported_in_words(clis: dict[str, Path], agent_home: Path, tmp_path: Path) -> None:
    with FakeResponses(RULES, faults=["401"]) as server:
        started = time.monotonic()
        result, raw = run_suite(
            tmp_path, ORDERS % {"system": SYSTEM, "tool": "command_execution"}, codex_target(clis, server, tmp_path)
        )
        elapsed = time.monotonic() - started
    assert result.execution_status == "execution_error"
    assert (result.error or "").startswith("turn 1: cx: Codex: the API refused the key: unexpected status 401")
    assert "Incorrect API key" in (result.error or ""), result.error
    assert elapsed < 60 and len(server.model_calls) == 1  # stopped at the first refusal, not after 5 retries
    assert OPENAI_KEY not in raw


def test_codex_sandbox_blocked_command_is_marked(clis: dict[str, Path], agent_home: Path, tmp_path: Path) -> None:
    suite = """\
tests:
  - id: blocked
    mode: conversation
    turns:
      - input: Create an order for a book
        assertions:
          - {type: tool-not-called, tool: command_execution}
"""
    rules = [Rule("Create an order", "Could not: {output}", ("exec_command", {"cmd": "echo hi > order.txt"}))]
    with FakeResponses(rules) as server:
        target = codex_target(clis, server, tmp_path)
        target["args"] = [a if a != "workspace-write" else "read-only" for a in target["args"]]
        result, _ = run_suite(tmp_path, suite, target)
    call = result.scores[0].tool_calls[0]
    assert call.status == "blocked" and call.arguments == {"command": "echo hi > order.txt"}
    assert "Read-only file system" in (call.error or "")
    assert result.verdict == "pass", result.model_dump_json(indent=1)[:3000]
    assert not (tmp_path / "work" / "order.txt").exists()


def test_codex_hang_ends_at_the_timeout(clis: dict[str, Path], agent_home: Path, tmp_path: Path) -> None:
    """A cut stream (Codex reconnects), then no answer: the timeout quotes Codex's last error."""
    with FakeResponses(RULES, faults=["cut", "hang"]) as server:
        target = codex_target(clis, server, tmp_path, timeout_s=8)
        result, _ = run_suite(tmp_path, ORDERS % {"system": SYSTEM, "tool": "command_execution"}, target)
    assert result.execution_status == "execution_error"
    assert "timed out after 8 s (Codex's last error: Reconnecting... 1/5 (stream disconnected" in (result.error or "")


def test_codex_cost_comes_from_the_price_table(clis: dict[str, Path], agent_home: Path, tmp_path: Path) -> None:
    """A model in convoeval's price table costs its list price, as it does for an HTTP target
    (before: $0 and no cost known, so a `cost` check was an error)."""
    suite = "tests:\n  - id: hi\n    mode: conversation\n    turns:\n      - input: hello there\n"
    suite += "        assertions: [{type: cost, max_usd: 1.0}]\n"
    with FakeResponses() as server:
        result, _ = run_suite(tmp_path, suite, codex_target(clis, server, tmp_path, model="gpt-5"))
    assert result.verdict == "pass", result.model_dump_json(indent=1)[:3000]
    (calls,) = turn_calls(server)
    used = (sum(r.usage["input"] for r in calls), sum(r.usage["output"] for r in calls))
    assert result.cost_usd == pytest.approx((used[0] * 1.25 + used[1] * 10.0) / 1e6)  # prices.json: gpt-5


def test_codex_cached_input_costs_its_cached_price(clis: dict[str, Path], agent_home: Path, tmp_path: Path) -> None:
    """Input tokens the API read from its prompt cache cost the model's cached-input list price,
    as Claude Code's own cost counts its cache reads (before: the full input price, ~5x an agent
    session's real cost, where most input is cached). Its cache writes are counted as Codex counts
    them (`cache_write_input_tokens`; before: 0)."""
    suite = "tests:\n  - id: hi\n    mode: conversation\n    turns:\n      - input: hello there\n"
    with FakeResponses() as server:
        server.usage_cached, server.usage_cache_written = 60, 25
        result, _ = run_suite(tmp_path, suite, codex_target(clis, server, tmp_path, model="gpt-5"))
    (calls,) = turn_calls(server)
    used = (sum(r.usage["input"] for r in calls), sum(r.usage["output"] for r in calls))
    cached = 60 * len(calls)
    assert result.token_usage.input_tokens == used[0]  # cached ones included, as the API counts them
    assert result.token_usage.cached_input_tokens == cached
    assert result.token_usage.cache_write_tokens == 25 * len(calls)
    assert result.cost_usd == pytest.approx(((used[0] - cached) * 1.25 + cached * 0.125 + used[1] * 10.0) / 1e6)


def test_codex_timeout_says_what_it_was_running(clis: dict[str, Path], agent_home: Path, tmp_path: Path) -> None:
    """The timeout names the command Codex was running (before: "Codex's last error: None", read
    from an `error` item's missing top-level `message`)."""
    mark = unique_seconds()
    try:
        with FakeResponses([long_job(mark, "exec_command", yield_time_ms=60_000)]) as server:
            result, _ = run_suite(tmp_path, LONG_JOB, codex_target(clis, server, tmp_path, timeout_s=8))
        assert result.execution_status == "execution_error"
        assert "timed out after 8 s (Codex was running `/bin/bash -lc" in (result.error or ""), result.error
        assert f"time.sleep({mark})" in (result.error or "") and "None" not in (result.error or "")
        assert "Codex's last error: Model metadata for `gpt-fake` not found" in (result.error or "")
        wait_for(lambda: not left(f"sleep({mark})"), 5)
    finally:
        kill_marked(f"sleep({mark})")


def test_codex_command_still_running_when_the_turn_ends_is_a_call(
    clis: dict[str, Path], agent_home: Path, tmp_path: Path
) -> None:
    """A command the agent leaves running (a server: `exec_command` returns after `yield_time_ms`)
    is a call with its output so far, never "blocked by the Codex sandbox" (before: dropped, or
    marked blocked when the rollout had no record of it), in the run and in its rollout read as a
    transcript."""
    mark = unique_seconds()
    suite = """\
tests:
  - id: server
    mode: conversation
    turns:
      - input: please start the server
        assertions:
          - {type: tool-called, tool: command_execution}
          - {type: contains, value: SERVER-UP}
"""
    command = f'echo SERVER-UP; exec python3 -c "import time; time.sleep({mark})"'
    rules = [Rule("start the server", "Started: {output}", ("exec_command", {"cmd": command, "yield_time_ms": 2000}))]
    try:
        with FakeResponses(rules) as server:
            result, _ = run_suite(tmp_path, suite, codex_target(clis, server, tmp_path))
        assert result.verdict == "pass", result.model_dump_json(indent=1)[:3000]
        (call,) = result.scores[0].tool_calls
        assert call.status is None and call.error is None and "SERVER-UP" in str(call.output), call
        assert call.arguments == {"command": f"/bin/bash -lc '{command}'"}
        # The rollout read as a transcript: the command ran, with or without the record Codex
        # writes of it when it kills it at its exit (the record a quicker exit leaves out).
        (rollout,) = (agent_home / ".codex" / "sessions").glob("*/*/*/rollout-*.jsonl")
        lines = rollout.read_text().splitlines()
        unrecorded = write(tmp_path / "unrecorded.jsonl", "\n".join(x for x in lines if '"CommandExecution"' not in x))
        for path in (rollout, unrecorded):
            (turn,) = read_turns(read_records(path))
            (command_call,) = turn.commands
            assert command_call.status is None and "SERVER-UP" in str(command_call.output), (path, command_call)
            # The stream's call (its start only: no output) takes the rollout's output, though the
            # stream shows the command in Codex's shell and a rollout without the record as written.
            started = ToolCall(name="command_execution", arguments={"command": f"/bin/bash -lc '{command}'"}, output="")
            merge_rollout(reply := ChatReply(text="", tool_calls=[started]), turn)
            assert "SERVER-UP" in str(reply.tool_calls[0].output), (path, reply.tool_calls)
    finally:
        kill_marked(f"sleep({mark})")


def test_codex_failed_turn_keeps_what_it_spent(clis: dict[str, Path], agent_home: Path, tmp_path: Path) -> None:
    """A turn that fails after its command ran is an execution error that still counts its
    tokens (from the rollout) and shows the command and what the agent said in the transcript."""
    command = ("exec_command", {"cmd": "echo hello > made.txt && cat made.txt"})
    rules = [Rule("make a file", "Made: {output}", command, said="Making the file now.")]
    with FakeResponses(rules, faults=["ok", "500"]) as server:
        target = codex_target(clis, server, tmp_path, model="gpt-5")
        target["args"] += ["-c", "model_providers.fake.request_max_retries=0"]
        target["args"] += ["-c", "model_providers.fake.stream_max_retries=0"]
        result, _ = run_suite(tmp_path, ONE_TURN_TOOL, target)
    assert result.execution_status == "execution_error"
    assert "cx: Codex turn failed" in (result.error or ""), result.error
    answered = [r for r in server.model_calls if r.fault != "500"]
    assert result.token_usage.input_tokens == sum(r.usage["input"] for r in answered) > 0
    assert result.cost_usd > 0
    (tool,) = [m for m in result.output if m.source == "tool"]
    assert tool.content == "hello\n" and tool.tool_calls[0].name == "command_execution"
    (said,) = [m for m in result.output if m.source == "target"]
    assert (said.role, said.content, said.turn) == ("assistant", "Making the file now.", 1)


def test_codex_turn_that_times_out_keeps_what_it_spent(clis: dict[str, Path], agent_home: Path, tmp_path: Path) -> None:
    """A turn that times out after its command ran keeps its tokens (from the rollout), their
    cost and the command (before: 0 tokens, $0, no call)."""
    rules = [Rule("make a file", "Made: {output}", ("exec_command", {"cmd": "echo hello > made.txt && cat made.txt"}))]
    with FakeResponses(rules, faults=["ok", "hang"]) as server:
        result, _ = run_suite(
            tmp_path, ONE_TURN_TOOL, codex_target(clis, server, tmp_path, model="gpt-5", timeout_s=15)
        )
    assert result.execution_status == "execution_error" and "timed out after 15 s" in (result.error or "")
    (answered,) = [r for r in server.model_calls if r.fault != "hang"]
    assert (result.token_usage.input_tokens, result.token_usage.output_tokens) == (
        answered.usage["input"],
        answered.usage["output"],
    )
    assert result.cost_usd == pytest.approx((answered.usage["input"] * 1.25 + answered.usage["output"] * 10.0) / 1e6)
    (tool,) = [m for m in result.output if m.source == "tool"]
    assert tool.content == "hello\n" and tool.tool_calls[0].name == "command_execution"


def test_codex_patch_run_as_a_command_is_a_file_change_and_an_empty_output_stays_empty(
    clis: dict[str, Path], agent_home: Path, tmp_path: Path, cli
) -> None:
    """`apply_patch` run through `exec_command` (Codex applies it itself) is one file change, in
    the run and in its rollout read as a transcript (before: also a command "blocked by the
    Codex sandbox"); a command that prints nothing has the output "" (before: the framing Codex
    shows the model, `Chunk ID: ...`)."""
    patch = "apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: notes.txt\n+hello patch\n*** End Patch\nEOF\n"
    suite = """\
tests:
  - id: patch
    mode: conversation
    turns:
      - input: please write the notes
        assertions: [{type: tool-called, tool: file_change}]
      - input: please run true
"""
    rules = [
        Rule("write the notes", "Wrote them.", ("exec_command", {"cmd": patch})),
        Rule("run true", "Ran it.", ("exec_command", {"cmd": "true"})),
    ]
    with FakeResponses(rules) as server:
        result, _ = run_suite(tmp_path, suite, codex_target(clis, server, tmp_path))
    assert result.verdict == "pass", result.model_dump_json(indent=1)[:3000]
    assert (tmp_path / "work" / "notes.txt").read_text() == "hello patch\n"
    first, second = (s.tool_calls for s in result.scores if s.type == "turn")
    assert [(c.name, c.status, c.error) for c in first] == [("file_change", None, None)], first
    assert [(c.name, c.output) for c in second] == [("command_execution", "")], second
    (rollout,) = (agent_home / ".codex" / "sessions").glob("*/*/*/rollout-*.jsonl")
    patched, ran = read_turns(read_records(rollout))
    assert [(c.name, c.status, c.arguments["changes"][0]["kind"]) for c in patched.calls] == [
        ("file_change", None, "add")
    ]
    assert [(c.name, c.output) for c in ran.calls] == [("command_execution", "")]


def test_codex_gets_the_key_the_target_gives(
    clis: dict[str, Path], agent_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`api_key_env` reaches Codex as OPENAI_API_KEY, what its provider reads (and under its own
    name, for a provider whose `env_key` names it)."""
    monkeypatch.delenv("OPENAI_API_KEY")
    monkeypatch.setenv("TEAM_KEY", TEAM_KEY)
    with FakeResponses(RULES) as server:
        target = codex_target(clis, server, tmp_path, api_key_env="TEAM_KEY")
        result, raw = run_suite(tmp_path, ORDERS % {"system": SYSTEM, "tool": "command_execution"}, target)
    assert result.execution_status != "execution_error", result.error
    assert {r.headers.get("authorization") for r in server.model_calls} == {f"Bearer {TEAM_KEY}"}
    assert TEAM_KEY not in raw


HELLO = """\
tests:
  - id: hello
    mode: conversation
    turns:
      - input: hello there
        assertions: [{type: contains, value: "echo: hello there"}]
"""


@pytest.mark.parametrize("where", ["claude base_url", "codex base_url", "codex OPENAI_BASE_URL"])
def test_the_cli_calls_the_endpoint_the_target_names(
    clis: dict[str, Path], agent_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    """A target's `base_url` is where the CLI sends its requests: Claude Code's
    ANTHROPIC_BASE_URL, Codex's `openai_base_url` (which OPENAI_BASE_URL also sets: Codex no
    longer reads that variable). Before, both were ignored, and the CLI called its vendor's API
    with the key."""
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    server: FakeAnthropic | FakeResponses
    with FakeAnthropic([]) if where.startswith("claude") else FakeResponses([]) as server:
        if where.startswith("claude"):
            target = claude_target(clis, base_url=server.url, timeout_s=20)
        else:
            (tmp_path / "tmpdir").mkdir()
            target = {
                "name": "cx",
                "provider": "codex",
                "model": "gpt-5",
                "executable": str(clis["codex"]),
                "args": ["--skip-git-repo-check"],
                "cwd": "work",
                "timeout_s": 20,
                "env": {"TMPDIR": str(tmp_path / "tmpdir")},
            }
            if where.endswith("OPENAI_BASE_URL"):
                monkeypatch.setenv("OPENAI_BASE_URL", f"{server.url}/v1")
            else:
                target["base_url"] = f"{server.url}/v1"
        result, _ = run_suite(tmp_path, HELLO, target)
    assert result.verdict == "pass", result.error
    assert server.model_calls


# Sessions as transcripts ---------------------------------------------------------------------


def grade_session(cli, tmp_path: Path, session: Path, tool: str, texts: list[str]) -> None:
    """`convoeval import transcripts` and `convoeval grade` on a session file: its turns
    replayed, its tool calls checked."""
    graders = write(
        tmp_path / "graders.yaml",
        f"assertions:\n  - {{type: tool_called_in_turn, turn: 1, tool: {tool}}}\n"
        "  - {type: contains, value: cancelled}\n",
    )
    suite = tmp_path / "session.eval.yaml"
    code, out, err = cli("import", "transcripts", session, "-o", suite)
    assert code == 0 and "transcript:" in suite.read_text(), out + err
    graded_file = tmp_path / "graded.jsonl"
    code, out, err = cli("grade", session, "--graders", graders, "-o", graded_file)
    assert code == 0, out + err
    graded = json.loads(graded_file.read_text().splitlines()[0])
    assert graded["verdict"] == "pass"
    contents = [m["content"] for m in graded["output"]]
    assert any(c.startswith(texts[0]) for c in contents) and texts[1] in contents
    assert any(m["tool_calls"] and m["tool_calls"][0]["name"] == tool for m in graded["output"])


def test_claude_s_guess_for_a_model_it_has_no_price_for_is_not_a_cost(
    clis: dict[str, Path], agent_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A gateway's model Claude Code has no price for (`costBasis: unknown`): its guessed
    `costUSD` was the turn's cost. It is priced at the target's own prices, else unknown."""
    suite = "tests:\n  - id: hi\n    mode: conversation\n    turns:\n      - input: hello there\n"
    costs = []
    for prices in ({}, {"price_input_per_mtok": 1, "price_output_per_mtok": 2}):
        with FakeAnthropic() as server:
            monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
            result, _ = run_suite(tmp_path, suite, claude_target(clis, model="my-gateway-model", **prices))
        (calls,) = turn_calls(server)
        used = (sum(r.usage["input"] for r in calls), sum(r.usage["output"] for r in calls))
        assert (result.token_usage.input_tokens, result.token_usage.output_tokens) == used
        costs.append((result.cost_usd, result.scores[0].cost_usd, used))
    assert costs[0][:2] == (0.0, None)
    expected = (costs[1][2][0] * 1 + costs[1][2][1] * 2) / 1e6
    assert costs[1][:2] == (pytest.approx(expected), pytest.approx(expected))
