"""A test's own `execution.target(s)` (AgentV's matrix evaluation): on a suite with several
targets each test runs on the targets it names; results stay one per test and target, and a run
resumes by that key. AgentV's own example file runs against two targets on the loopback fake."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import convoeval
from convoeval import SpecError, load_suite
from convoeval.testing import FakeOpenAIServer

from .conftest import DATA, read_jsonl, write

MATRIX = DATA / "agentv" / "40debf5/examples/features/matrix-evaluation/evals/dataset.eval.yaml"

TARGETS = """\
targets:
  - {name: copilot, provider: openai, model: copilot-model}
  - {name: claude, provider: openai, model: claude-model}
  - {name: other, provider: openai, model: other-model}
"""


@pytest.fixture
def matrix(tmp_path: Path) -> Path:
    suite = tmp_path / "dataset.eval.yaml"
    shutil.copy(MATRIX, suite)
    write(tmp_path / "targets.yaml", TARGETS)
    return suite


def _pairs(results) -> list[tuple[str, str]]:
    return sorted((r["test_id"], r["target"]) if isinstance(r, dict) else (r.test_id, r.target) for r in results)


def test_agentv_matrix_runs_each_test_on_its_targets(
    matrix: Path, fake_openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    out = tmp_path / "r.jsonl"
    report = convoeval.run(matrix, judge="openai:judge", output=out, cache=False, store=tmp_path / "runs.sqlite")
    expected = [
        ("code-generation", "claude"),
        ("code-generation", "copilot"),
        ("copilot-only-task", "copilot"),  # its own `execution.targets: [copilot]`
        ("general-greeting", "claude"),
        ("general-greeting", "copilot"),
    ]
    assert _pairs(read_jsonl(out)) == expected  # as AgentV's own baseline for this file
    models = sorted(r["model"] for r in fake_openai.target_requests())
    assert models == ["claude-model"] * 2 + ["copilot-model"] * 3
    sent = [(r["model"], r["messages"][-1]["content"]) for r in fake_openai.target_requests()]
    assert ("claude-model", "Create a GitHub issue") not in sent
    # Resuming the finished run finds every (test, target) result stored and sends nothing.
    fake_openai.requests.clear()
    again = convoeval.run(resume=report.run_id, store=tmp_path / "runs.sqlite", cache=False)
    assert _pairs(again.results) == expected and fake_openai.target_requests() == []


def test_a_single_target_runs_every_test(matrix: Path, fake_openai: FakeOpenAIServer) -> None:
    """As in AgentV, a test's own targets choose among several; one target runs everything."""
    report = convoeval.run(matrix, target="other", judge="openai:judge", cache=False, store=False)
    assert _pairs(report.results) == [
        ("code-generation", "other"),
        ("copilot-only-task", "other"),
        ("general-greeting", "other"),
    ]


def test_targets_given_on_the_command_line_are_chosen_among(
    matrix: Path, fake_openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    notes: list[str] = []
    report = convoeval.run(
        matrix, target=["claude", "other"], judge="openai:judge", cache=False, store=False, on_note=notes.append
    )
    assert ("copilot-only-task", "claude") not in _pairs(report.results)
    assert len(report.results) == 4
    assert any("copilot-only-task: the test's own execution.targets name none of claude, other" in n for n in notes)
    # The first job holds fewer tests than the second: the stored fingerprints cover both.
    store = tmp_path / "runs.sqlite"
    first = convoeval.run(matrix, target=["other", "copilot"], judge="openai:judge", cache=False, store=store)
    assert len(first.results) == 5
    fake_openai.requests.clear()
    notes.clear()
    again = convoeval.run(resume=first.run_id, store=store, cache=False, on_note=notes.append)
    assert _pairs(again.results) == _pairs(first.results) and fake_openai.target_requests() == []
    assert not any("changed since run" in n for n in notes), notes


@pytest.mark.parametrize(
    ("tests", "line", "field", "words"),
    [
        (
            "  - {id: a, input: x, execution: {targets: [copilot, gemini]}}\n",
            5,
            "tests[0].execution.targets",
            "'gemini' is not one of the suite's targets (copilot, claude)",
        ),
        (
            "  - {id: a, input: x, execution: {target: copilot}}\n  - {id: b, input: y, depends_on: a}\n",
            6,
            "tests[1].depends_on",
            "depends on 'a', which runs only on copilot",
        ),
        (
            "  - {id: a, input: x, execution: {judge: openai:j}}\n",
            5,
            "tests[0].execution.judge",
            "`judge` is a suite-level setting",
        ),
    ],
)
def test_a_tests_own_targets_are_checked(tests: str, line: int, field: str, words: str, tmp_path: Path) -> None:
    path = write(tmp_path / "s.eval.yaml", "execution:\n  targets: [copilot, claude]\n\ntests:\n" + tests)
    with pytest.raises(SpecError) as info:
        load_suite(path)
    problem = info.value.problems[0]
    assert (problem.line, problem.field) == (line, field) and words in problem.message, problem


def test_with_one_suite_target_a_tests_own_target_is_not_checked(tmp_path: Path) -> None:
    """AgentV's `basic` example names `target: azure-llm` on a test of a suite on `llm`."""
    text = "execution: {target: llm}\ntests:\n  - {id: a, input: x, execution: {target: azure-llm}}\n"
    assert load_suite(write(tmp_path / "s.eval.yaml", text)).tests[0].id == "a"


def test_a_dependency_on_the_same_targets_is_fine(tmp_path: Path) -> None:
    text = (
        "execution: {targets: [copilot, claude]}\ntests:\n"
        "  - {id: a, input: x, execution: {targets: [copilot, claude]}}\n"
        "  - {id: b, input: y, depends_on: a, execution: {target: copilot}}\n"
    )
    suite = load_suite(write(tmp_path / "s.eval.yaml", text))
    assert suite.tests[1].execution is not None and suite.tests[1].execution.target == "copilot"
