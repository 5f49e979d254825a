"""AgentV's composite deciders: a `code_judge` program or the `llm_judge` judge gets the nested
results by name and decides the composite's score; a failing decider is a grader error."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

import convoeval
from convoeval import SpecError, load_suite
from convoeval.testing import FakeOpenAIServer

from .conftest import write

DECIDER = """\
import json, sys
results = json.load(sys.stdin)["results"]
json.dump(results, open("seen.json", "w"))
worst = min(r["score"] for r in results.values())
print(json.dumps({"score": worst, "verdict": "fail" if worst < 1 else "pass",
                  "hits": [n for n, r in results.items() if r["verdict"] == "pass"],
                  "misses": [n for n, r in results.items() if r["verdict"] != "pass"],
                  "reasoning": "weakest link"}))
"""

SUITE = """\
tests:
  - id: gate
    input: Say hello to Paris
    assertions:
      - name: gate
        type: composite
        assertions:
          - {name: greets, type: contains, value: hello}
          - {name: polite, type: contains, value: please}
        aggregator: %s
"""


def _run(tmp_path: Path, aggregator: str):
    suite = write(tmp_path / "s.eval.yaml", SUITE % aggregator)
    result = convoeval.run(suite, target="openai:m", judge="openai:judge", cache=False, store=False).results[0]
    return result.scores[0].graders[0]


def test_a_code_judge_program_decides(fake_openai: FakeOpenAIServer, tmp_path: Path) -> None:
    write(tmp_path / "decide.py", DECIDER)
    grader = _run(tmp_path, f"{{type: code_judge, path: '{sys.executable} decide.py'}}")  # a command line
    assert (grader.score, grader.verdict) == (0.0, "fail")
    assert [(a.text, a.passed) for a in grader.assertions[:2]] == [("greets", True), ("polite", False)]
    assert grader.details is not None and grader.details["aggregator"] == "code_judge"
    seen = json.loads((tmp_path / "seen.json").read_text())
    assert seen["greets"]["verdict"] == "pass" and seen["polite"]["score"] == 0.0
    assert seen["polite"]["misses"] and seen["polite"]["type"] == "contains"


AGENTV_DECIDER = """\
import json, sys
results = json.load(sys.stdin)["results"]
failed = [a["text"] for r in results.values() for a in r["assertions"] if not a["passed"]]
print(json.dumps({"score": 0.25 if failed else 1.0, "assertions": [{"text": t, "passed": False} for t in failed]}))
"""


def test_a_program_reads_and_prints_agentv_assertions(fake_openai: FakeOpenAIServer, tmp_path: Path) -> None:
    """AgentV (v4.15 to main) sends each nested result's `assertions` and reads the program's."""
    write(tmp_path / "decide.py", AGENTV_DECIDER)
    grader = _run(tmp_path, f"{{type: code_judge, path: [{json.dumps(sys.executable)}, decide.py]}}")
    assert grader.score == 0.25
    assert (grader.assertions[0].text, grader.assertions[0].passed) == ("contains 'please'", False)


def test_a_failing_program_is_an_error(fake_openai: FakeOpenAIServer, tmp_path: Path) -> None:
    write(tmp_path / "decide.py", "import sys; sys.exit(4)")
    grader = _run(tmp_path, f"{{type: code_judge, path: [{json.dumps(sys.executable)}, decide.py]}}")
    assert grader.verdict == "error" and "code_judge aggregator" in (grader.error or "")
    assert "exited with code 4" in (grader.error or "")


def test_the_judge_decides_with_the_results_in_its_prompt(fake_openai: FakeOpenAIServer, tmp_path: Path) -> None:
    grader = _run(tmp_path, '{type: llm_judge, prompt: "Weigh these: {{EVALUATOR_RESULTS_JSON}} (safety first)"}')
    [request] = fake_openai.judge_requests()
    prompt = request["messages"][-1]["content"]
    assert prompt.startswith("Weigh these: {") and prompt.endswith("} (safety first)")
    assert json.loads(prompt[len("Weigh these: ") : -len(" (safety first)")])["polite"]["verdict"] == "fail"
    assert (grader.score, grader.judge_calls) == (1.0, 1)  # the fake judge answers 10/10


def test_a_prompt_without_the_placeholder_gets_the_results_appended(
    fake_openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    _run(tmp_path, "{type: llm_judge, prompt: ../prompts/conflict-resolution.md}")
    prompt = fake_openai.judge_requests()[0]["messages"][-1]["content"]
    assert prompt.startswith("../prompts/conflict-resolution.md\n\nEvaluation results:\n{")


@pytest.mark.parametrize(
    ("aggregator", "words"),
    [
        ("{type: code_judge}", "a code_judge aggregator needs `path`"),
        ("{type: weighted_average, prompt: x}", "`prompt` belongs to an llm_judge aggregator"),
        ("{type: majority}", "aggregator.type"),
    ],
)
def test_aggregator_fields_are_checked(aggregator: str, words: str, tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="s.eval.yaml:") as info:
        load_suite(write(tmp_path / "s.eval.yaml", SUITE % aggregator))
    assert words in str(info.value)


TRANSFORMED = """\
tests:
  - id: t
    input: Say hello to Paris
    assertions:
      - type: composite
        transform: {command: [%s, shout.py], config: {mark: "!"}}
        assertions:
          - {type: equals, value: "SAY HELLO TO PARIS!"}
"""


def test_a_transform_rewrites_the_output_its_assertions_grade(fake_openai: FakeOpenAIServer, tmp_path: Path) -> None:
    """promptfoo's `transform`: the nested checks grade what the program prints; a failing
    program makes the composite an error, never a verdict. Before: no such field."""
    fake_openai.reset(reply=lambda body: body["messages"][-1]["content"])
    shout = "import json, sys\np = json.load(sys.stdin)\nprint(p['output_text'].upper() + p['config']['mark'])\n"
    write(tmp_path / "shout.py", shout)
    suite = write(tmp_path / "s.eval.yaml", TRANSFORMED % json.dumps(sys.executable))
    (result,) = convoeval.run(suite, target="openai:m", cache=False, store=False).results
    assert (result.verdict, result.output[-1].content) == ("pass", "Say hello to Paris")  # the reply is kept
    write(tmp_path / "shout.py", "import sys; sys.exit('no output today')")
    (result,) = convoeval.run(suite, target="openai:m", cache=False, store=False).results
    grader = result.scores[0].graders[0]
    assert grader.verdict == "error" and "no output today" in (grader.error or "")
