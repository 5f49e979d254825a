"""AgentV's suite-level `input_files`: attached to the suite's input message, which every test
gets first (a test with `execution.skip_defaults: true` does not)."""

from __future__ import annotations

from pathlib import Path

import convoeval
from convoeval import SpecError, load_suite
from convoeval.testing import FakeOpenAIServer

from .conftest import write

SUITE = """\
input: "Use the attached context to answer travel questions."
input_files:
  - ./context.md
tests:
  - {id: japan, input: When should I visit Japan?}
  - {id: thai, input: What currency does Thailand use?, execution: {skip_defaults: true}}
"""


def test_suite_input_files_reach_every_test_but_skip_defaults(fake_openai: FakeOpenAIServer, tmp_path: Path) -> None:
    write(tmp_path / "context.md", "Spring is cherry blossom season.")
    suite = write(tmp_path / "s.eval.yaml", SUITE)
    convoeval.run(suite, target="openai:m", judge="openai:judge", cache=False, store=False)
    sent = {r["messages"][-1]["content"]: r["messages"] for r in fake_openai.target_requests()}
    japan = sent["When should I visit Japan?"]
    assert japan[0]["role"] == "user"
    assert japan[0]["content"] == (
        '<file path="./context.md">\nSpring is cherry blossom season.\n</file>\n'
        "Use the attached context to answer travel questions."
    )
    assert len(sent["What currency does Thailand use?"]) == 1


def test_a_missing_suite_file_is_a_file_line_error(tmp_path: Path) -> None:
    suite = write(tmp_path / "s.eval.yaml", SUITE)
    try:
        load_suite(suite)
    except SpecError as exc:
        [problem] = exc.problems
    assert (problem.line, problem.field) == (3, "input[0].content[0].value")
    assert problem.message.startswith("file not found: ./context.md")
