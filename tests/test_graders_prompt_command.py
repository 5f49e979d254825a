"""Executable prompt templates (AgentV `prompt: {command, config}`): a real program writes the
judge prompt from the grading context on stdin (AgentV's: `output` and `answer` the reply's text); a missing file is a load error, a failing
program a grader error; the program never sees API keys."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

import convoeval
from convoeval import SpecError, load_suite
from convoeval.testing import FakeOpenAIServer

from .conftest import write

TEMPLATE = """\
import json, os, sys
ctx = json.load(sys.stdin)
leaked = any("SECRET" in value for value in os.environ.values())
print(f"Q: {ctx['question']}")
print(f"A: {ctx['output']}" if ctx["output"] == ctx["answer"] else "output is not the reply's text")
print(f"Reference: {ctx['expected_output'][0]['content'] if ctx['expected_output'] else '-'}")
print(f"Criteria: {ctx['criteria']}")
print(f"Rubric: {ctx['config'].get('rubric')}; strict: {ctx['config'].get('strictMode')}")
print(f"Ran in: {os.path.basename(os.getcwd())}; secret seen: {leaked}")
"""

SUITE = """\
tests:
  - id: ts
    criteria: Explains the benefits.
    input: What are the benefits of TypeScript?
    expected_output: Static types.
    assertions:
      - name: custom
        type: llm-grader
        prompt:
          %s: [%s, ../prompts/make_prompt.py]
          config: {rubric: Must mention types, strictMode: true}
"""


def _suite(tmp_path: Path, key: str = "command", template: str = TEMPLATE) -> Path:
    write(tmp_path / "prompts" / "make_prompt.py", template)
    return write(tmp_path / "evals" / "s.eval.yaml", SUITE % (key, json.dumps(sys.executable)))


@pytest.mark.parametrize("key", ["command", "script"])  # `script`: AgentV's older name
def test_the_program_writes_the_judge_prompt(key: str, fake_openai: FakeOpenAIServer, tmp_path: Path) -> None:
    suite = _suite(tmp_path, key)
    result = convoeval.run(suite, target="openai:m", judge="openai:judge", cache=False, store=False).results[0]
    [grader] = result.scores[0].graders
    assert (grader.verdict, result.verdict) == ("pass", "pass"), grader
    assert grader.assertions[0].text.startswith("custom: prompt from `")
    [request] = fake_openai.judge_requests()
    assert request["messages"][-1]["content"] == (
        "Q: What are the benefits of TypeScript?\n"
        "A: Reply to: What are the benefits of TypeScript?\n"
        "Reference: Static types.\n"
        "Criteria: Explains the benefits.\n"
        "Rubric: Must mention types; strict: True\n"
        "Ran in: prompts; secret seen: False"  # the template's folder; no API key in its environment
    )


def test_a_missing_template_file_is_a_load_error(tmp_path: Path) -> None:
    suite = write(tmp_path / "evals" / "s.eval.yaml", SUITE % ("command", "python"))
    with pytest.raises(SpecError) as info:
        load_suite(suite)
    [problem] = info.value.problems
    assert (problem.line, problem.field) == (10, "tests[0].assertions[0].prompt.command")
    assert problem.message.startswith("prompt command file not found: ../prompts/make_prompt.py")


@pytest.mark.parametrize(
    ("template", "error"),
    [
        ("import sys; sys.stderr.write('no rubric'); sys.exit(3)", "exited with code 3; stderr: no rubric"),
        ("print('   ')", "printed no prompt"),
    ],
)
def test_a_failing_program_is_a_grader_error(
    template: str, error: str, fake_openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    suite = _suite(tmp_path, template=template)
    result = convoeval.run(suite, target="openai:m", judge="openai:judge", cache=False, store=False).results[0]
    [grader] = result.scores[0].graders
    assert grader.verdict == "error" and grader.error is not None and error in grader.error, grader
    assert grader.error.startswith("llm-grader prompt command `")
    assert fake_openai.judge_requests() == []


def test_prompt_command_fields_are_checked(tmp_path: Path) -> None:
    text = "tests:\n  - id: a\n    input: hi\n    assertions:\n      - {type: llm-grader, prompt: {command: []}}\n"
    with pytest.raises(SpecError, match=r"s.eval.yaml:5: tests\[0\].assertions\[0\].*command"):
        load_suite(write(tmp_path / "s.eval.yaml", text))
