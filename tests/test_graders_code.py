"""`code-grader`: real subprocesses (small Python scripts run with sys.executable)."""

from __future__ import annotations

import asyncio
import json
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from convoeval.graders import (
    GradeContext,
    _code,  # noqa: F401  (registers code-grader)
    lookup_assertion_type,
)
from convoeval.graders._base import Assertion
from convoeval.results import GraderScore, Message, ToolCall, Usage
from convoeval.targets import ChatReply


def make(data: dict[str, Any]) -> Assertion:
    cls = lookup_assertion_type(data["type"])
    assert cls is not None
    return cls.model_validate(data)


def script(tmp_path: Path, body: str, name: str = "grader.py") -> str:
    path = tmp_path / name
    path.write_text(textwrap.dedent(body))
    return str(path)


def ctx(tmp_path: Path, output: str = "Paris is the capital of France.", **kwargs: Any) -> GradeContext:
    history = [
        Message(role="system", content="Be brief.", source="input"),
        Message(role="user", content="Capital of France?", source="input", turn=1),
    ]
    reply = ChatReply(
        text=output,
        latency_ms=812.5,
        usage=Usage(input_tokens=20, output_tokens=7),
        cost_usd=0.001,
        tool_calls=[ToolCall(name="lookup", arguments={"q": "France"})],
    )
    defaults: dict[str, Any] = dict(
        level="turn",
        output=output,
        history=history,
        transcript=[*history, Message(role="assistant", content=output, source="target", turn=1)],
        reply=reply,
        turn=1,
        expected_output="Paris",
        criteria="names the capital",
        variables={"city": "Paris"},
        base_dir=tmp_path,
        test_id="capital",
        trial=2,
    )
    defaults.update(kwargs)
    return GradeContext(**defaults)


async def run(data: dict[str, Any], context: GradeContext) -> GraderScore:
    return await make(data).evaluate(context)


ECHO_CONTEXT = """
    import json, sys
    data = json.load(sys.stdin)
    with open("seen.json", "w") as f:
        json.dump(data, f)
    ok = data["expected_output"].lower() in data["output_text"].lower()
    print(json.dumps({
        "score": 1.0 if ok else 0.25,
        "assertions": [{"text": "mentions the expected city", "passed": ok,
                        "evidence": "found " + data["expected_output"]}],
        "details": {"checked": True},
    }))
"""


async def test_happy_path_passes_the_context_and_reads_the_score(tmp_path: Path) -> None:
    path = script(tmp_path, ECHO_CONTEXT)
    result = await run({"type": "code-grader", "command": [sys.executable, path], "weight": 2}, ctx(tmp_path))
    assert (result.verdict, result.score, result.weight, result.error) == ("pass", 1.0, 2, None)
    assert [(a.text, a.passed, a.evidence) for a in result.assertions] == [
        ("mentions the expected city", True, "found Paris")
    ]
    assert result.details is not None and result.details["checked"] is True
    seen = json.loads((tmp_path / "seen.json").read_text())  # the script ran in base_dir
    assert [(m["role"], m["content"]) for m in seen["output"]] == [("assistant", "Paris is the capital of France.")]
    assert seen["output"][0]["tool_calls"][0]["name"] == "lookup"
    assert seen["output_text"] == seen["answer"] == "Paris is the capital of France."
    assert seen["question"] == "Capital of France?" and seen["config"] == {}
    assert seen["input"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Capital of France?"},
    ]
    assert (seen["expected_output"], seen["criteria"], seen["turn"], seen["level"]) == (
        "Paris",
        "names the capital",
        1,
        "turn",
    )
    assert (seen["test_id"], seen["trial"], seen["variables"]) == ("capital", 2, {"city": "Paris"})
    assert seen["latency_ms"] == 812.5
    assert seen["token_usage"] == {
        "input_tokens": 20,
        "output_tokens": 7,
        "cached_input_tokens": 0,
        "cache_write_tokens": 0,
        "total_tokens": 27,
    }
    assert seen["transcript"][-1]["source"] == "target"
    assert seen["tool_calls"][0]["name"] == "lookup"


async def test_low_score_fails_and_negate_min_score_apply(tmp_path: Path) -> None:
    path = script(tmp_path, ECHO_CONTEXT)
    data = {"type": "code_grader", "command": [sys.executable, path]}
    result = await run(data, ctx(tmp_path, output="It is Lyon."))
    assert (result.verdict, result.score) == ("fail", 0.25)
    assert result.type == "code-grader"  # underscores read as dashes
    result = await run({**data, "min_score": 0.2}, ctx(tmp_path, output="It is Lyon."))
    assert result.verdict == "pass"
    result = await run({**data, "negate": True}, ctx(tmp_path, output="It is Lyon."))
    assert (result.verdict, result.score) == ("fail", 0.75)  # below the default 0.8 threshold
    result = await run({**data, "negate": True, "min_score": 0.7}, ctx(tmp_path, output="It is Lyon."))
    assert (result.verdict, result.score) == ("pass", 0.75)
    assert result.assertions[0].text == "NOT mentions the expected city"


PRINT_SCORE = """
    import json, sys
    print(json.dumps({"score": float(sys.argv[1])}))
"""


@pytest.mark.parametrize(
    ("printed", "extra", "threshold", "score"),
    [
        ("0.9", {"negate": True, "min_score": 0.1}, 0.8, 0.1),  # 1 - 0.9 = 0.09999999999999998
        ("0.9", {"negate": True}, 0.1, 0.1),  # the test's threshold as the mark
        ("0.9999999", {}, 1.0, 1.0),
        ("0.4999999", {"min_score": 0.5}, 0.8, 0.5),
    ],
)
async def test_the_pass_mark_is_met_at_the_6_decimals_the_score_is_kept_at(
    tmp_path: Path, printed: str, extra: dict[str, Any], threshold: float, score: float
) -> None:
    path = script(tmp_path, PRINT_SCORE)
    data = {"type": "code-grader", "command": [sys.executable, path, printed], "required": True, **extra}
    result = await run(data, ctx(tmp_path, threshold=threshold))
    assert (result.score, result.verdict, result.failed_required) == (score, "pass", [])


async def test_string_command_cwd_env_and_conversation_level(tmp_path: Path) -> None:
    sub = tmp_path / "graders"
    sub.mkdir()
    script(
        sub,
        """
        import json, os, sys
        data = json.load(sys.stdin)
        print("some log line")
        print(json.dumps({"pass": os.environ["MODE"] == "strict" and data["level"] == "conversation",
                          "reason": "looked at " + str(len(data["transcript"])) + " messages"}))
    """,
        name="check.py",
    )
    transcript = [
        Message(role="user", content="hi", source="input", turn=1),
        Message(role="assistant", content="hello", source="target", turn=1),
    ]
    conversation = GradeContext(
        level="conversation",
        output="hello",
        history=transcript,
        transcript=transcript,
        base_dir=tmp_path,
        latencies_ms=[10.0],
        usage=Usage(input_tokens=3, output_tokens=4),
    )
    data = {
        "type": "code-grader",
        "command": f'"{sys.executable}" check.py',
        "cwd": "graders",
        "env": {"MODE": "strict"},
    }
    result = await run(data, conversation)
    assert (result.verdict, result.score) == ("pass", 1.0)
    assert result.details is not None and result.details["reason"] == "looked at 2 messages"


@pytest.mark.parametrize(
    ("stdout", "verdict", "score"),
    [
        ('{"pass": false}', "fail", 0.0),
        ('{"score": 0.9, "pass": false}', "fail", 0.9),  # an explicit pass decides the verdict
        ('{"score": 1}', "pass", 1.0),
        ('{"score": 0.5, "assertions": [{"text": "t", "passed": true}]}', "fail", 0.5),
    ],
)
async def test_result_shapes(tmp_path: Path, stdout: str, verdict: str, score: float) -> None:
    path = script(tmp_path, f"import sys; sys.stdin.read(); print({stdout!r})")
    result = await run({"type": "code-grader", "command": [sys.executable, path]}, ctx(tmp_path))
    assert (result.verdict, result.score) == (verdict, score)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            "import sys; sys.stderr.write('boom: bad input\\n'); sys.exit(3)",
            "exited with code 3; stderr: boom: bad input",
        ),
        ("raise ValueError('kaput')", "ValueError: kaput"),
        ("print('not json at all')", "did not print a JSON object"),
        ("pass", "printed nothing on stdout"),
        ("print('{\"details\": {}}')", "without `score` or `pass`"),
        ("print('{\"score\": 1.5}')", "score 1.5"),
        ('print(\'{"score": "high"}\')', "score 'high'"),
        ('print(\'{"pass": "yes"}\')', "pass='yes'"),
        ('print(\'{"score": 1, "assertions": [{"passed": true}]}\')', "assertions[0] must be"),
        ("print('[1, 2]')", "did not print a JSON object"),
        (
            "import os, signal; os.kill(os.getpid(), signal.SIGABRT)",
            "killed by signal 6 (SIGABRT; a runtime that could not reserve memory aborts: raise `sandbox: {memory_mb",
        ),
    ],
)
async def test_failures_are_grader_errors(tmp_path: Path, body: str, message: str) -> None:
    path = script(tmp_path, body)
    result = await run({"type": "code-grader", "command": [sys.executable, path]}, ctx(tmp_path))
    assert result.verdict == "error" and result.score is None
    assert message in (result.error or ""), result.error
    assert "Traceback (most recent call last)" not in (result.error or "")[:40]


async def test_stderr_is_cut_to_300_chars(tmp_path: Path) -> None:
    path = script(tmp_path, "import sys; sys.stderr.write('x' * 5000); sys.exit(1)")
    result = await run({"type": "code-grader", "command": [sys.executable, path]}, ctx(tmp_path))
    assert result.verdict == "error"
    assert 300 <= (result.error or "").count("x") <= 301


async def test_timeout_kills_the_command(tmp_path: Path) -> None:
    path = script(
        tmp_path,
        """
        import subprocess, sys, time
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])  # a grandchild
        open("child.pid", "w").write(str(child.pid))
        time.sleep(30)
    """,
    )
    started = time.perf_counter()
    result = await run({"type": "code-grader", "command": [sys.executable, path], "timeout_s": 0.5}, ctx(tmp_path))
    assert time.perf_counter() - started < 5
    assert result.verdict == "error" and "timed out after 0.5s" in (result.error or "")
    child = int((tmp_path / "child.pid").read_text())
    for _ in range(50):  # the grandchild was killed with the process group (reaped by init)
        if not _alive(child):
            break
        time.sleep(0.02)
    assert not _alive(child)


async def test_cancelling_the_grade_kills_the_command(tmp_path: Path) -> None:
    path = script(
        tmp_path,
        """
        import os, time
        open("me.pid", "w").write(str(os.getpid()))
        time.sleep(30)
    """,
    )
    task = asyncio.create_task(run({"type": "code-grader", "command": [sys.executable, path]}, ctx(tmp_path)))
    for _ in range(250):
        if (tmp_path / "me.pid").exists() and (tmp_path / "me.pid").read_text():
            break
        await asyncio.sleep(0.02)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert not _alive(int((tmp_path / "me.pid").read_text()))


def _alive(pid: int) -> bool:
    if not Path("/proc/self/stat").exists():  # pragma: no cover - not Linux: cannot tell
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"  # a zombie is dead


async def test_missing_command_and_cwd(tmp_path: Path) -> None:
    result = await run({"type": "code-grader", "command": "no-such-grader-xyz --flag"}, ctx(tmp_path))
    assert result.verdict == "error" and "command not found: 'no-such-grader-xyz'" in (result.error or "")
    result = await run({"type": "code-grader", "command": [sys.executable, "-c", "pass"], "cwd": "nope"}, ctx(tmp_path))
    assert result.verdict == "error" and "does not exist" in (result.error or "")
    not_exec = tmp_path / "grader.sh"
    not_exec.write_text("#!/bin/sh\necho '{\"score\": 1}'\n")
    result = await run({"type": "code-grader", "command": str(not_exec)}, ctx(tmp_path))
    assert result.verdict == "error" and "not executable" in (result.error or "")


async def test_a_script_that_ignores_stdin_still_works(tmp_path: Path) -> None:
    path = script(tmp_path, "print('{\"score\": 1}')")
    big = ctx(tmp_path, output="y" * 2_000_000)  # larger than a pipe buffer
    result = await run({"type": "code-grader", "command": [sys.executable, path]}, big)
    assert result.verdict == "pass"


@pytest.mark.parametrize(
    "data",
    [
        {"type": "code-grader"},
        {"type": "code-grader", "command": ""},
        {"type": "code-grader", "command": []},
        {"type": "code-grader", "command": "python 'unbalanced"},
        {"type": "code-grader", "command": "x", "timeout_s": 0},
        {"type": "code-grader", "command": "x", "config": "not a mapping"},
    ],
)
def test_invalid_config_is_a_load_error(data: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        make(data)


def test_command_string_is_split_like_a_shell() -> None:
    grader = make({"type": "code-grader", "command": "python 'my grader.py' --strict"})
    assert grader.argv == ["python", "my grader.py", "--strict"]  # type: ignore[attr-defined]
    assert lookup_assertion_type("code_grader") is lookup_assertion_type("code-grader")
