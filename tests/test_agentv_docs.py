"""Eval snippets of AgentV's documentation (tests/data/agentv-docs, see its SOURCE.txt): a `tests`
list entry may name its file of cases without `file://`, and may be a glob or a folder, as AgentV
reads them (yaml-parser.ts `expandInlineTestEntries`, case-file-loader.ts `resolveFileReference`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from convoeval.spec import SpecError, load_suite
from convoeval.testing import FakeOpenAIServer

from .conftest import read_jsonl, write

DOCS = Path(__file__).parent / "data" / "agentv-docs"


def test_the_documented_shorthand_and_globs_load_their_cases_in_order() -> None:
    assert [t.id for t in load_suite(DOCS / "shorthand.eval.yaml").tests] == ["greet", "refund"]
    assert [t.id for t in load_suite(DOCS / "globs.eval.yaml").tests] == ["greet", "refund", "regression", "smoke"]


def test_a_shorthand_suite_runs(cli, fake_openai: FakeOpenAIServer, tmp_path: Path) -> None:
    code, _, _ = cli("run", DOCS / "shorthand.eval.yaml", "--target", "openai:gpt-4o-mini", "-o", tmp_path / "r.jsonl")
    assert code in (0, 1)
    assert [r["test_id"] for r in read_jsonl(tmp_path / "r.jsonl")] == ["greet", "refund"]
    assert {r["execution_status"] for r in read_jsonl(tmp_path / "r.jsonl")} <= {"ok", "quality_failure"}


def test_folders_top_level_globs_and_what_is_refused(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    write(tmp_path / "cases" / "one" / "case.yaml", "input: hi\ncriteria: greets\n")
    write(tmp_path / "more" / "x.yaml", "- id: x\n  input: hi\n")
    suite = write(tmp_path / "f.eval.yaml", "tests:\n  - cases\n  - more/x.yaml\n")
    assert [t.id for t in load_suite(suite).tests] == ["one", "x"]
    write(suite, "tests: more/*.yaml\n")
    assert [t.id for t in load_suite(suite).tests] == ["x"]
    write(suite, "tests:\n  - file://none/*.yaml\n  - id: y\n    input: hi\n")
    assert [t.id for t in load_suite(suite).tests] == ["y"]
    assert f"{suite}:2: tests[0]: none/*.yaml matches no file" in caplog.text
    write(suite, "tests:\n  - What is 2+2?\n  - /etc/*.conf\n  - ../*.yaml\n")
    with pytest.raises(SpecError) as info:
        load_suite(suite)
    outside = f"is outside the suite's folder {suite.parent}"
    assert [str(p).split(" (")[0] if outside not in str(p) else outside for p in info.value.problems] == [
        f"{suite}:1: tests: must contain at least one test",
        f"{suite}:2: tests[0]: tests file not found: What is 2+2?",
        outside,
        outside,
    ]


#: eval-files.mdx "Assert Includes" (v5.3.1-next.1 line 397, main line 441): its `assert` block as written.
ASSERT_INCLUDES = "assert:\n  - include: safe-response\n  - include: ./shared/format.yaml\n"


def test_assertion_templates_are_included(cli, fake_openai: FakeOpenAIServer, tmp_path: Path, monkeypatch) -> None:
    """AgentV's assertion templates (grader-parser.ts `expandGraderEntries`): a bare name is
    `.agentv/templates/NAME.yaml`, found from the eval file's folder up to the repository; a path
    is relative to the eval file; a template may include another. A missing one, or a cycle, is a
    problem at the include."""
    monkeypatch.setenv("PATTERN", "[a-z]")
    (tmp_path / ".git").mkdir()
    write(tmp_path / ".agentv" / "templates" / "safe-response.yaml", "assert:\n  - include: polite\n  - type: not-contains\n    value: password\n")  # fmt: skip
    write(tmp_path / ".agentv" / "templates" / "polite.yaml", "assert:\n  - Greets the user\n")
    write(tmp_path / "evals" / "shared" / "format.yaml", "assert:\n  - type: regex\n    value: '${{ PATTERN }}'\n")
    suite = write(tmp_path / "evals" / "s.eval.yaml", ASSERT_INCLUDES + "tests:\n  - id: t\n    vars: {input: hi}\n")
    code, out, err = cli("run", suite, "--target", "openai:gpt-4o-mini", "--no-cache", "-o", tmp_path / "r.jsonl")
    [row] = read_jsonl(tmp_path / "r.jsonl")
    assert [g["type"] for g in row["scores"][0]["graders"]] == ["rubrics", "not-contains", "regex"], out + err
    assert [a.value for a in load_suite(suite).assertions if a.type == "regex"] == ["[a-z]"]  # ${{ PATTERN }} filled
    write(tmp_path / ".agentv" / "templates" / "polite.yaml", "assert:\n  - include: safe-response\n")
    (tmp_path / "evals" / "shared" / "format.yaml").unlink()
    code, out, err = cli("validate", suite)
    assert code == 2
    assert "s.eval.yaml:2: assertions[0]: assertion templates include each other in a cycle" in out + err
    assert "s.eval.yaml:3: assertions[1]: assertion template not found: ./shared/format.yaml" in out + err


#: AgentV's ADR 0006 (docs/adr/0006-separate-experiments-from-eval-definitions.md, v5.3.1-next.1 line 113):
#: a legacy `include` entry of `tests:`, as written.
LEGACY_INCLUDE = "  - include: ./evals/cases/**/*.cases.yaml\n    type: tests\n"


def test_a_legacy_include_entry_brings_its_cases(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """AgentV's deprecated `tests: [{include, type: tests, select, run}]` (yaml-parser.ts
    `normalizeLegacyIncludeEntry`, `expandImportEntries`): the cases of the files it names, those
    whose id matches `select`, with `run` under each case's own; deprecated, so a warning. `type:
    suite` is refused."""
    write(tmp_path / "evals" / "cases" / "a" / "one.cases.yaml", "- id: smoke-1\n  input: hi\n  criteria: greets\n")
    cases = "- id: smoke-2\n  input: hi\n  criteria: greets\n  run: {threshold: 0.5}\n- id: slow\n  input: hi\n  criteria: greets\n"  # fmt: skip
    write(tmp_path / "evals" / "cases" / "b.cases.yaml", cases)
    suite = write(tmp_path / "s.eval.yaml", "tests:\n" + LEGACY_INCLUDE)
    assert [t.id for t in load_suite(suite).tests] == ["smoke-1", "smoke-2", "slow"]
    assert "s.eval.yaml:2: tests[0]: `include` is deprecated in AgentV" in caplog.text
    write(suite, "tests:\n" + LEGACY_INCLUDE + "    select: smoke-*\n    run: {threshold: 1.0, repeat: 2}\n")
    tests = load_suite(suite).tests
    assert [(t.id, t.execution.threshold, t.execution.trials.count) for t in tests if t.execution and t.execution.trials] == [("smoke-1", 1.0, 2), ("smoke-2", 0.5, 2)]  # fmt: skip
    write(suite, "tests:\n" + LEGACY_INCLUDE.replace("type: tests", "type: suite"))
    with pytest.raises(SpecError) as info:
        load_suite(suite)
    assert "s.eval.yaml:3: tests[0].type: this AgentV form is not supported: `type: suite`" in str(info.value)
