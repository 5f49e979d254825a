"""What a code-grader of an AgentV file reads on stdin: what the newest AgentV sends
(`graders/code-grader.ts` at v4.42.4 lines 146 and 168-174, main 58f316c lines 234 and 257-262):
`output` the reply's text, `messages` the conversation, `expected_output` the expected messages
with JSON-object content kept, `input_files` the attachments, and no `answer` (main's own contract check requires it absent,
`examples/contract/scripts/check-script-grader-payload.ts`). convoeval's own suites keep
convoeval's shape (`output` the list of messages, `answer`, `expected_output` text).

Real `convoeval run` on a real program that records what it read; then that record on the stdin
of a grader written with AgentV's real SDK (tests/agentv_sdk.py), which validates it with its zod
schema (`CodeGraderInputSchema`, v5's `ScriptGraderInputSchema`) before the grader sees it.
A grader whose SDK is older than 4.36 (v4.15's `@agentv/eval`) reads what AgentV v4.15 sent.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import convoeval
from convoeval.graders._agentv_code import sdk_version

from .agentv_sdk import NEWEST, node_path
from .conftest import REPO, write

BUN = shutil.which("bun", path=str(REPO / ".tools" / "node_modules" / ".bin")) or shutil.which("bun")

RECORDER = """\
import json, pathlib, sys
data = json.load(sys.stdin)
pathlib.Path("seen.json").write_text(json.dumps(data))
print(json.dumps({"score": 1}))
"""

SUITE = f"""\
tests:
  - id: t
    input:
      - role: user
        content: [{{type: file, value: invoice.txt}}, {{type: text, value: Extract the invoice.}}]
    expected_output:
      - role: assistant
        content: {{invoice: INV-7, total: 100}}
    assertions:
      - type: code-grader
        command: [{sys.executable}, grader.py]
"""

TARGETS = """\
targets:
  - {name: extractor, provider: scripted, default: '{"invoice": "INV-7", "total": 100}'}
"""


def _seen(folder: Path) -> dict:
    suite = write(folder / "x.eval.yaml", SUITE)
    write(folder / "grader.py", RECORDER)
    write(folder / "targets.yaml", TARGETS)
    write(folder / "invoice.txt", "INV-7, total 100\n")
    report = convoeval.run(suite, target="extractor", judge="scripted", cache=False)
    assert report.results[0].verdict == "pass", report.results[0].model_dump_json()[:2000]
    return json.loads((folder / "seen.json").read_text())


def test_an_agentv_code_grader_reads_what_the_newest_agentv_sends(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / ".agentv").mkdir()
    seen = _seen(tmp_path / "evals")
    reply = '{"invoice": "INV-7", "total": 100}'
    assert seen["output"] == reply
    assert seen["expected_output"] == [{"role": "assistant", "content": {"invoice": "INV-7", "total": 100}}]
    assert [m["role"] for m in seen["messages"]] == ["user", "assistant"]
    assert seen["messages"][-1]["content"] == reply
    assert "answer" not in seen
    assert seen["input_files"] == [str((tmp_path / "evals" / "invoice.txt").resolve())]
    assert seen["output_text"] == reply  # AgentV v4.15's name, which its old examples read
    # code-graders.mdx (v4.42.4 line 23): the contract's `trace_summary`, as AgentV computes it
    assert seen["trace_summary"] == {"event_count": 0, "tool_calls": {}, "error_count": 0, "llm_call_count": 1}


def test_an_agentv_code_graders_trace_summary_counts_the_agents_tool_calls(tmp_path: Path) -> None:
    """tests/data/agentv-real/suites/edges-agent's timed agent (AgentV's `cli` provider) makes
    three calls, two with a duration: the real agentv 4.42.4 gave its code-grader
    `{"error_count": 0, "event_count": 3, "llm_call_count": 1, "tool_calls": {"fetch": 1,
    "save": 1, "search": 1}, "tool_durations": {"fetch": [900], "search": [120]}}`."""
    shutil.copytree(REPO / "tests" / "data" / "agentv" / "v4.42.4" / ".agentv", tmp_path / ".agentv")
    (tmp_path / ".git").mkdir()
    folder = tmp_path / "suite"
    shutil.copytree(REPO / "tests" / "data" / "agentv-real" / "suites" / "edges-agent", folder)
    write(folder / "grader.py", RECORDER)
    suite = write(
        folder / "evals" / "summary.eval.yaml",
        "execution:\n  target: timed_agent\ntests:\n  - id: t\n    input: Do the task.\n    assertions:\n"
        f"      - type: code-grader\n        command: [{sys.executable}, ../grader.py]\n",
    )
    report = convoeval.run(suite, cache=False)
    assert report.results[0].verdict == "pass", report.results[0].model_dump_json()[:2000]
    seen = json.loads((folder / "evals" / "seen.json").read_text())
    assert json.dumps(seen["trace_summary"], sort_keys=True) == (
        '{"error_count": 0, "event_count": 3, "llm_call_count": 1, "tool_calls": {"fetch": 1, "save": 1, '
        '"search": 1}, "tool_durations": {"fetch": [900], "search": [120]}}'
    )


def test_a_convoeval_code_grader_keeps_convoevals_payload(tmp_path: Path) -> None:
    seen = _seen(tmp_path)
    reply = '{"invoice": "INV-7", "total": 100}'
    assert [(m["role"], m["content"]) for m in seen["output"]] == [("assistant", reply)]
    assert seen["answer"] == seen["output_text"] == reply
    assert json.loads(seen["expected_output"]) == {"invoice": "INV-7", "total": 100}


#: A grader written with AgentV's SDK that reports what the SDK gave it (v5's result, which v4.42's
#: schema reads as `score` and `details`).
SDK_GRADER = """\
import { defineCodeGrader } from 'PACKAGE';

export default defineCodeGrader((input) => ({
  pass: true,
  score: 1,
  reason: 'read',
  details: {
    output: input.output,
    expected: input.expectedOutput,
    roles: input.messages.map((m) => m.role),
    inputFiles: input.inputFiles,
    criteria: input.criteria,
    tokenUsage: input.tokenUsage ?? null,
    traceSummary: input.traceSummary ?? null,
  },
}));
"""


def _through_sdk(tag: str, package: str, payload: dict, folder: Path) -> tuple[int, dict]:
    """Exit status and printed JSON of SDK_GRADER run with `tag`'s SDK on `payload`."""
    grader = write(folder / "grader.ts", SDK_GRADER.replace("PACKAGE", package))
    env = {"PATH": str(Path(BUN or "bun").parent), "NODE_PATH": node_path(tag, folder)}
    ran = subprocess.run(
        [BUN or "bun", "run", str(grader)],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    return ran.returncode, json.loads(ran.stdout)


@pytest.mark.skipif(BUN is None, reason="bun is not installed (.ci/run installs it under .tools/)")
@pytest.mark.parametrize(
    ("tag", "package"), [(NEWEST, "@agentv/sdk"), ("main-58f316c", "agentv"), ("v4.42.4", "@agentv/sdk")]
)
def test_agentvs_sdk_accepts_what_convoeval_sends(tag: str, package: str, tmp_path: Path) -> None:
    """The newest SDKs' schemas accept convoeval's payload and give the grader each field as sent."""
    (tmp_path / ".git").mkdir()
    (tmp_path / ".agentv").mkdir()
    seen = _seen(tmp_path / "evals")
    code, printed = _through_sdk(tag, package, seen, tmp_path / "sdk")
    assert code == 0, printed
    details = printed["details"]
    assert details["output"] == seen["output"] == '{"invoice": "INV-7", "total": 100}'
    assert details["expected"] == [{"role": "assistant", "content": {"invoice": "INV-7", "total": 100}}]
    assert details["roles"] == ["user", "assistant"]
    assert details["inputFiles"] == seen["input_files"] and details["criteria"] == ""
    assert details["tokenUsage"] == (
        {"input": seen["token_usage"]["input"], "output": seen["token_usage"]["output"]}
        if seen["token_usage"]
        else None
    )
    assert details["traceSummary"] == {"eventCount": 0, "toolCalls": {}, "errorCount": 0, "llmCallCount": 1}


#: A grader written with AgentV v4.15's SDK (`@agentv/eval` 4.15.0) reporting what it was given.
V4_15_GRADER = """\
import { defineCodeGrader } from '@agentv/eval';

export default defineCodeGrader((input) => ({
  score: 1,
  details: {
    output: input.output,
    expected: input.expectedOutput,
    inputFiles: input.inputFiles,
    criteria: input.criteria,
  },
}));
"""


@pytest.mark.skipif(BUN is None, reason="bun is not installed (.ci/run installs it under .tools/)")
def test_agentv_v4_15_sdk_refuses_the_newest_form(tmp_path: Path) -> None:
    """`@agentv/eval` 4.15.0 wants `output` as messages (and message content as text or blocks):
    its schema refuses the newest form, which convoeval sends when it finds no older SDK."""
    (tmp_path / ".git").mkdir()
    (tmp_path / ".agentv").mkdir()
    seen = _seen(tmp_path / "evals")
    code, printed = _through_sdk("v4.15.0", "@agentv/eval", seen, tmp_path / "sdk")
    [failed] = printed["assertions"]
    issues = json.loads(failed["text"].removeprefix("Evaluation failed: "))
    assert code == 1 and printed["score"] == 0
    assert [i["path"] for i in issues] == [["expectedOutput", 0, "content"], ["output"]]
    assert next(i for i in issues if i["path"] == ["output"])["message"] == "Expected array, received string"


@pytest.mark.skipif(BUN is None, reason="bun is not installed (.ci/run installs it under .tools/)")
def test_a_grader_with_agentv_v4_15_sdk_reads_what_v4_15_sent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With `@agentv/eval` 4.15.0 on the grader's NODE_PATH, convoeval sends what AgentV v4.15
    sent (`output` the reply as messages; the expected JSON object as v4.15's JSON text), and
    that SDK's schema accepts it and gives the grader each field as sent."""
    (tmp_path / ".git").mkdir()
    (tmp_path / ".agentv").mkdir()
    monkeypatch.setenv("NODE_PATH", node_path("v4.15.0", tmp_path / "modules"))
    seen = _seen(tmp_path / "evals")
    reply = '{"invoice": "INV-7", "total": 100}'
    expected = [{"role": "assistant", "content": '{\n  "invoice": "INV-7",\n  "total": 100\n}'}]
    assert seen["output"] == [{"role": "assistant", "content": reply}]
    assert seen["expected_output"] == expected
    grader = write(tmp_path / "sdk" / "grader.ts", V4_15_GRADER)
    ran = subprocess.run(
        [BUN or "bun", "run", str(grader)],
        input=json.dumps(seen),
        capture_output=True,
        text=True,
        env={"PATH": str(Path(BUN or "bun").parent), "NODE_PATH": node_path("v4.15.0", tmp_path / "sdk")},
        timeout=60,
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    details = json.loads(ran.stdout)["details"]
    assert details["output"] == [{"role": "assistant", "content": reply}]
    assert details["expected"] == expected
    assert details["inputFiles"] == seen["input_files"] and details["criteria"] == ""


def test_the_grader_sdk_found_is_the_one_node_would_import(tmp_path: Path) -> None:
    """The nearest node_modules above the script wins over NODE_PATH; a package.json without a
    version, or no SDK at all, means the newest form."""
    for folder, version in [(tmp_path / "node_modules", "4.15.0"), (tmp_path / "path" / "node_modules", "5.3.1")]:
        write(folder / "@agentv" / "eval" / "package.json", json.dumps({"name": "@agentv/eval", "version": version}))
    write(tmp_path / "bare" / "node_modules" / "agentv" / "package.json", json.dumps({"name": "agentv"}))
    node = str(tmp_path / "path" / "node_modules")
    assert sdk_version(str(tmp_path / "evals" / "graders"), node) == (4, 15, 0)
    assert sdk_version(str(tmp_path / "bare"), node) is None
    other = tmp_path.parent / f"{tmp_path.name}-other"
    other.mkdir()
    assert sdk_version(str(other), node) == (5, 3, 1)
    assert sdk_version(str(other)) is None
