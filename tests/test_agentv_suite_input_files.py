"""AgentV's suite-level `input_files`: attached to each test's own (string) input, after the
suite's input message, as AgentV's `resolveInputMessages` does (a test with
`execution.skip_defaults: true` gets neither). Issue 28 changed this from attaching them to the
suite's input message."""

from __future__ import annotations

from pathlib import Path

import pytest

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
    japan = sent['<file path="./context.md">\nSpring is cherry blossom season.\n</file>\nWhen should I visit Japan?']
    assert japan == [
        {"role": "user", "content": "Use the attached context to answer travel questions."},
        {
            "role": "user",
            "content": '<file path="./context.md">\nSpring is cherry blossom season.\n</file>\nWhen should I visit Japan?',
        },
    ]
    assert sent["What currency does Thailand use?"] == [{"role": "user", "content": "What currency does Thailand use?"}]


def test_a_missing_suite_file_is_left_out_with_a_warning(tmp_path: Path, caplog) -> None:
    # Issue 28 changed this: AgentV warns about a missing attachment and drops the block.
    suite = write(tmp_path / "s.eval.yaml", SUITE)
    with caplog.at_level("WARNING", logger="convoeval.spec"):
        loaded = load_suite(suite)
    assert [p.type for p in loaded.tests[0].input[0].content] == ["text"]
    assert f"{suite}:3: tests[0].input[0].content[0]: file not found: ./context.md" in caplog.text


@pytest.mark.parametrize("ref", ["absolute", "../private/id_ed25519"])
def test_an_attachment_outside_the_suites_folder_and_repository_is_an_error(tmp_path: Path, ref: str) -> None:
    """`{type: file, value: /root/.ssh/id_ed25519}` (or `../..`) was read and sent to the suite's
    model, though a template or a prompt file outside the suite's repository is refused."""
    private = write(tmp_path / "private" / "id_ed25519", "PRIVATE-KEY")
    value = str(private) if ref == "absolute" else ref
    suite = write(
        tmp_path / "suite" / "s.eval.yaml",
        f"tests:\n  - id: t\n    input:\n      - role: user\n        content: [{{type: file, value: {value}}}]\n",
    )
    with pytest.raises(SpecError) as raised:
        load_suite(suite)
    said = f"{suite}:5: tests[0].input[0].content[0].value: {private} is outside the suite's folder {suite.parent} "
    assert said in str(raised.value)
