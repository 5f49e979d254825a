"""AgentV's suite-level `input_files`: attached to the suite's input message, which every test
gets first (a test with `execution.skip_defaults: true` does not)."""

from __future__ import annotations

from pathlib import Path

import convoeval
from convoeval import load_suite
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


def test_a_missing_suite_file_is_left_out_with_a_warning(tmp_path: Path, caplog) -> None:
    # Issue 28 changed this: AgentV warns about a missing attachment and drops the block.
    suite = write(tmp_path / "s.eval.yaml", SUITE)
    with caplog.at_level("WARNING", logger="convoeval.spec"):
        loaded = load_suite(suite)
    assert [p.type for p in loaded.input[0].content] == ["text"]
    assert f"{suite}:3: input[0].content[0]: file not found: ./context.md" in caplog.text
