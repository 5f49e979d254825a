"""No regular expression a suite or config author writes can hang a run on a model's text.

Each place a user's pattern meets text a model, an agent or a tool controls is driven with a
catastrophic pattern (`(x+x+)+y` backtracks exponentially in `re` and in `regex`) on a long
crafted text: it ends quickly with that place's error (a grader error, an `execution_error`,
a failed target call), and ordinary patterns behave as they did with `re`.

The in-process cases carry a pytest-timeout bound: on sources without the time bound they
would hang (`re` is deaf to everything but signals), and the bound fails them instead.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import convoeval
from convoeval.errors import TargetError
from convoeval.results import EvaluationResult, ToolCall
from convoeval.spec import validate_paths
from convoeval.targets import ChatReply, ChatRequest, TargetConfig
from convoeval.targets._build import create_target
from convoeval.testing import grade, grade_context

from .conftest import write

CATASTROPHIC = "(x+x+)+y"
CRAFTED = "x" * 5000  # no `y`: every way of splitting the x's is tried
BOUND_S = 0.3  # the bound these tests set (the default, 2 s, is proved end to end below)

pytestmark = pytest.mark.timeout(30)


@pytest.fixture(autouse=True)
def quick_bound(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A short bound keeps these tests quick. (Sources before the time bound have no
    `convoeval._regex`: nothing to set, and the hang is left for pytest-timeout to fail.)"""
    try:
        from convoeval import _regex
    except ImportError:
        yield
        return
    monkeypatch.setattr(_regex, "REGEX_TIMEOUT_S", BOUND_S)
    yield


class _Timer:
    def __enter__(self) -> _Timer:
        self.started = time.monotonic()
        return self

    def __exit__(self, *exc: object) -> None:
        self.seconds = time.monotonic() - self.started


# -- the helper: same answers as `re` for ordinary patterns -------------------------------

ORDINARY = [
    (r"order (ORD-\d+)", 0, "Created order ORD-42."),
    (r"(?P<city>[A-Z][a-z]+), (?P<country>[A-Z]{2})", 0, "Ship to Paris, FR today"),
    (r"\bcat\b", 0, "concatenate the cat"),
    (r"\bcaf\w+", 0, "un café crème"),
    (r"\w+", re.ASCII, "naïve"),
    (r"PARIS", re.IGNORECASE, "to paris"),
    (r"straße", re.IGNORECASE, "STRASSE or STRAßE"),
    (r"^total: \d+$", re.MULTILINE, "items: 3\ntotal: 12\n"),
    (r"a.b", re.DOTALL, "a\nb"),
    (r"(?i)ÉCOLE", 0, "une école"),
    (r"\d+", 0, "١٢٣ and 123"),
    (r"(\w+) \1", 0, "it is is here"),
    (r"x{2,}", 0, "x xx xxx"),
    (r"{{ name }}", 0, "literal {{ name }} braces"),
    (r"nothing", 0, "no match here"),
]


@pytest.mark.parametrize(("pattern", "re_flags", "text"), ORDINARY)
def test_ordinary_patterns_find_what_re_finds(pattern: str, re_flags: int, text: str) -> None:
    from convoeval import _regex

    letters = {re.ASCII: "a", re.IGNORECASE: "i", re.MULTILINE: "m", re.DOTALL: "s", 0: ""}[re_flags]
    expected = re.search(pattern, text, re_flags)
    found = _regex.search(pattern, text, field="t", flags=_regex.flag_bits(letters))
    assert (found is None) == (expected is None)
    if found is not None and expected is not None:
        assert found.span() == expected.span() and found.groups() == expected.groups()
        assert found.groupdict() == expected.groupdict()
        assert _regex.compile_pattern(pattern).groupindex == re.compile(pattern).groupindex


def test_a_catastrophic_pattern_is_stopped_with_an_error_naming_field_and_pattern() -> None:
    from convoeval import _regex

    long_pattern = CATASTROPHIC + "|" + "z" * 80
    with _Timer() as timer, pytest.raises(_regex.RegexTimeout) as raised:
        _regex.search(long_pattern, CRAFTED, field="capture order: regex", what="reply")
    assert timer.seconds < 5
    message = str(raised.value)
    assert message.startswith("capture order: regex /(x+x+)+y|zzz") and "…/" in message  # shortened
    assert f"took over {BOUND_S:g} s on a 5000-char reply" in message


# -- graders: a check that could not decide is a grader error ------------------------------


def test_tool_called_args_regex_over_the_bound_is_a_grader_error() -> None:
    reply = ChatReply(text="done", tool_calls=[ToolCall(name="search", arguments={"q": CRAFTED})])
    check = {"type": "tool-called", "tool": "search", "args": {"q": CATASTROPHIC}, "args_match": "regex"}
    with _Timer() as timer:
        score = grade(check, grade_context("done", reply=reply))
    assert timer.seconds < 5
    assert score.verdict == "error" and score.score is None
    assert "args.q: regular expression /(x+x+)+y/ took over" in (score.error or "")
    # ordinary patterns pass and fail as before
    ordinary = ChatReply(text="done", tool_calls=[ToolCall(name="search", arguments={"q": "paris hotels"})])
    assert grade({**check, "args": {"q": "^par"}}, grade_context("done", reply=ordinary)).verdict == "pass"
    assert grade({**check, "args": {"q": "^hot"}}, grade_context("done", reply=ordinary)).verdict == "fail"


def test_json_schema_pattern_over_the_bound_is_a_grader_error() -> None:
    schema = {"type": "object", "properties": {"code": {"type": "string", "pattern": CATASTROPHIC}}}
    with _Timer() as timer:
        score = grade({"type": "json-schema", "schema": schema}, output=json.dumps({"code": CRAFTED}))
    assert timer.seconds < 5
    assert score.verdict == "error" and "schema pattern /(x+x+)+y/ took over" in (score.error or "")
    keyed = {"type": "object", "patternProperties": {CATASTROPHIC: {"type": "integer"}}}
    score = grade({"type": "json-schema", "schema": keyed}, output=json.dumps({CRAFTED: 1}))
    assert score.verdict == "error" and "schema patternProperties" in (score.error or "")
    # ordinary patterns: as jsonschema decides them with `re`
    plain = {"type": "object", "properties": {"code": {"type": "string", "pattern": "^[A-Z]{3}$"}}}
    assert grade({"type": "json-schema", "schema": plain}, output='{"code": "ABC"}').verdict == "pass"
    failed = grade({"type": "json-schema", "schema": plain}, output='{"code": "abcd"}')
    assert failed.verdict == "fail" and "'abcd' does not match '^[A-Z]{3}$'" in failed.assertions[0].evidence


# -- captures and post-conditions: the test is an execution_error, the run goes on --------


class CraftedAgent:
    """Replies with the crafted text to the test named `bad`, with `Order ORD-7 ok` otherwise."""

    name = "crafted-agent"

    async def chat(self, request: ChatRequest) -> ChatReply:
        return ChatReply(text=CRAFTED if request.test_id and request.test_id.startswith("bad") else "Order ORD-7 ok")

    async def aclose(self) -> None:
        pass


CONTROLS = f"""\
tests:
  - id: bad-capture
    mode: conversation
    turns:
      - input: Create an order
        capture: {{name: order, regex: "{CATASTROPHIC}"}}
      - input: "Status of {{{{ order }}}}?"
  - id: bad-post
    mode: conversation
    turns:
      - input: Create an order
        post_condition: {{must_contain_all: ["x", {{regex: "{CATASTROPHIC}"}}]}}
      - input: And then?
  - id: good
    mode: conversation
    turns:
      - input: Create an order
        capture: {{name: order, regex: "(ORD-\\\\d+)"}}
        post_condition: {{must_contain_any: [{{regex: "ORD-\\\\d"}}]}}
      - input: "Status of {{{{ order }}}}?"
        assertions: [{{type: contains, value: ok}}]
"""


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ("bad-capture", "turn 1: capture order: regex /(x+x+)+y/ took over"),
        ("bad-post", "turn 1: post_condition.must_contain_all: regex /(x+x+)+y/ took over"),
    ],
)
def test_capture_and_post_condition_regexes_over_the_bound_are_execution_errors(
    tmp_path: Path, bad: str, message: str
) -> None:
    # One catastrophic test a run: without the bound, pytest-timeout's one alarm stops its search.
    path = write(tmp_path / "s.eval.yaml", CONTROLS)
    assert validate_paths([path]) == []
    with _Timer() as timer:
        run = convoeval.run(path, target=CraftedAgent(), cache=False, test_ids=[bad, "good"])
    assert timer.seconds < 20
    results = {r.test_id: r for r in run.results}
    assert results[bad].execution_status == "execution_error" and results[bad].verdict == "error"
    assert message in (results[bad].error or "")
    assert [m.content for m in results[bad].output if m.role == "user"] == ["Create an order"]  # turn 2 never sent
    assert results["good"].verdict == "pass", _explain(results["good"])


def _explain(result: EvaluationResult) -> object:
    return result.error, [(s.name, s.verdict, [(a.text, a.evidence) for a in s.assertions]) for s in result.scores]


# -- targets ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("settings", "field"),
    [
        ({"rules": [{"match": "^hello", "reply": "hi"}, {"match": CATASTROPHIC, "reply": "?"}]}, "rules[1].match"),
        ({"rules": [{"match": "^hello", "reply": "hi"}], "fail_on": CATASTROPHIC}, "fail_on"),
    ],
)
def test_a_scripted_rule_over_the_bound_fails_the_call(settings: dict, field: str) -> None:
    target = create_target(TargetConfig.model_validate({"name": "bot", "provider": "scripted", **settings}))
    with _Timer() as timer, pytest.raises(TargetError) as raised:
        asyncio.run(target.chat(ChatRequest(messages=[{"role": "user", "content": CRAFTED}])))
    assert timer.seconds < 5
    assert f"bot: {field}: regex /(x+x+)+y/ took over" in str(raised.value)
    reply = asyncio.run(target.chat(ChatRequest(messages=[{"role": "user", "content": "hello there"}])))
    assert reply.text == "hi"


def test_scripted_rule_patterns_are_validated_with_file_and_line(tmp_path: Path) -> None:
    write(
        tmp_path / "targets.yaml",
        "targets:\n  - name: bot\n    provider: scripted\n    rules: [{match: '(', reply: x}]\n",
    )
    suite = write(tmp_path / "s.eval.yaml", "execution: {target: bot}\ntests:\n  - id: t\n    input: hi\n")
    proc = subprocess.run(
        [sys.executable, "-m", "convoeval", "run", str(suite), "--no-cache"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 2, proc.stderr
    assert "targets.yaml:" in proc.stderr and "rules[0].match: not a valid regular expression" in proc.stderr
    assert "Traceback" not in proc.stderr


CLI_AGENT = """\
import sys
print("x" * 5000)
"""


def test_a_cli_id_regex_over_the_bound_finds_no_session_id_and_says_why(tmp_path: Path) -> None:
    write(tmp_path / "agent.py", CLI_AGENT)
    target = create_target(
        TargetConfig.model_validate(
            {
                "name": "mycli",
                "provider": "cli",
                "command": f"{sys.executable} agent.py",
                "cwd": str(tmp_path),
                "session": {"resume_args": "--session {SESSION_ID}", "id_regex": CATASTROPHIC},
            }
        )
    )
    with _Timer() as timer, pytest.raises(TargetError) as raised:
        asyncio.run(target.chat(ChatRequest(messages=[{"role": "user", "content": "hi"}])))
    assert timer.seconds < 10
    message = str(raised.value)
    assert "mycli: no session id in the output" in message
    assert "session.id_regex /(x+x+)+y/ took over" in message and "5000-char output" in message


# -- end to end: `convoeval run` with the default bound ------------------------------------

E2E_SUITE = f"""\
execution: {{target: bot}}
tests:
  - id: crafted
    mode: conversation
    turns:
      - input: Reply please
        capture: {{name: code, regex: "{CATASTROPHIC}"}}
      - input: "Code {{{{ code }}}}?"
  - id: plain
    input: Reply please
    assertions: [{{type: contains, value: xxxx}}]
  - id: also-plain
    input: Reply again
    assertions: [{{type: regex, value: "^x+$"}}]
"""


def test_convoeval_run_finishes_with_the_catastrophic_test_an_error_and_the_others_passing(tmp_path: Path) -> None:
    write(tmp_path / "targets.yaml", f"targets:\n  - {{name: bot, provider: scripted, default: '{CRAFTED}'}}\n")
    suite = write(tmp_path / "s.eval.yaml", E2E_SUITE)
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "convoeval", "run", str(suite), "--no-cache", "-o", "results.jsonl"],
        cwd=tmp_path,
        env={**os.environ, "COLUMNS": "200"},
        capture_output=True,
        text=True,
        timeout=25,  # without the bound `re` never returns: the subprocess is killed, the test fails
        stdin=subprocess.DEVNULL,
    )
    assert time.monotonic() - started < 60
    assert proc.returncode == 1, proc.stdout + proc.stderr  # a test did not pass (not every test errored)
    results = {r["test_id"]: r for r in map(json.loads, (tmp_path / "results.jsonl").read_text().splitlines())}
    crafted = results["crafted"]
    assert crafted["execution_status"] == "execution_error" and crafted["verdict"] == "error"
    assert "capture code: regex /(x+x+)+y/ took over 2 s on a 5000-char reply" in crafted["error"]
    assert results["plain"]["verdict"] == "pass" and results["also-plain"]["verdict"] == "pass"


class OrderAgent:
    """Turn 1 announces an order id holding regex syntax, `ORD-(4.2)`; turn 2 names it (or, in
    test `near`, a text that the unescaped pattern `ORD-(4.2)` would match) and calls a tool with it."""

    name = "order-agent"

    async def chat(self, request: ChatRequest) -> ChatReply:
        if len([m for m in request.messages if m["role"] == "user"]) == 1:
            return ChatReply(text="Created order ORD-(4.2).")
        named = "ORD-4x2" if request.test_id == "near" else "ORD-(4.2)"
        return ChatReply(text=f"{named} has shipped.", tool_calls=[ToolCall(name="status", arguments={"id": named})])


FILLED_IN = """\
tests:
"""
FILLED_IN += "".join(
    f"""\
  - id: {test_id}
    mode: conversation
    turns:
      - input: Create an order
        capture: {{name: order, regex: "order (\\\\S+)\\\\."}}
      - input: Status?
        post_condition: {{must_contain_any: [{{regex: "^{{{{ order }}}} has"}}]}}
        assertions: [{{type: tool-called, tool: status, args: {{id: "^{{{{ order }}}}$"}}, args_match: regex}}]
"""
    for test_id in ("same", "near")
)


def test_a_captured_value_goes_into_a_regex_as_the_text_it_is(tmp_path: Path) -> None:
    """`ORD-(4.2)` in a post-condition's or an argument's regex matches that text, not
    `ORD-4x2` (as the unescaped pattern would), and never makes the pattern invalid."""
    path = write(tmp_path / "s.eval.yaml", FILLED_IN)
    results = {r.test_id: r for r in convoeval.run(path, target=OrderAgent(), cache=False).results}
    same, near = results["same"], results["near"]
    assert same.verdict == "pass", same.error
    assert same.scores[0].captures == {"order": "ORD-(4.2)"}
    turn = same.scores[1]
    assert "must contain any of /^ORD\\-\\(4\\.2\\) has/" in [a.text for a in turn.assertions]
    assert near.execution_status == "quality_failure"
    turn = near.scores[1]
    assert turn.verdict == "fail" and not any(a.passed for a in turn.assertions)
    grader = next(g for g in turn.graders if g.type == "tool-called")
    assert grader.verdict == "fail" and "0 matching of 1 call(s)" in grader.assertions[0].evidence
