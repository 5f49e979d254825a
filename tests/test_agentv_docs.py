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
