"""AgentV v5's test `options` (`default_test.options`, a test's own): `transform` rewrites the
reply before the test's checks grade it, `provider` is their judge; read from AgentV's own files
(tests/data/agentv: file-transforms at v5.3.1-next.1 and main, main's promptfoo-export fixture)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from convoeval.spec import load_suite, validate_paths
from convoeval.testing import FakeOpenAIServer

from .conftest import read_jsonl, write
from .test_agentv_compat import AGENTV, tools_path

TRANSFORMED = "spreadsheet: revenue,total\nQ1,42"


@pytest.fixture(autouse=True)
def _bun(monkeypatch: pytest.MonkeyPatch) -> None:
    """`bun` (.tools/, as .ci/run installs it) on PATH: it runs AgentV's transforms."""
    monkeypatch.setenv("PATH", tools_path())


def _project(source: Path, tmp_path: Path) -> Path:
    """AgentV's example folder copied into a repository of its own (its `cli` target writes
    `generated/` beside it)."""
    folder = tmp_path / "example"
    shutil.copytree(source, folder)
    subprocess.run(["git", "init", "-q", str(folder)], check=True)
    return folder


@pytest.mark.parametrize(("tree", "target"), [("v5.3.1-next.1", "file_output"), ("main-58f316c", "file_output")])
def test_file_transforms_grades_what_its_transform_makes_of_the_file_reply(
    tree: str, target: str, cli, fake_openai: FakeOpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """examples/features/file-transforms, run as its README runs it (`--target file_output`, a `cli`
    agent whose reply is a ContentFile block): its `default_test.options.transform`
    (scripts/transforms/xlsx-to-csv.ts, run by bun) gets the block and finds the spreadsheet the
    agent wrote; the judge grades the text it returns."""
    folder = _project(AGENTV / tree / "examples/features/file-transforms", tmp_path)
    suite = folder / "evals/suite.yaml"
    assert validate_paths([suite]) == []
    out = tmp_path / "r.jsonl"
    code, stdout, stderr = cli(
        "run", suite, "--target", target, "--judge", "openai:gpt-4o-mini", "--no-cache", "-o", out
    )
    [row] = read_jsonl(out)
    assert row["execution_status"] == "ok", stdout + stderr
    judged = [m["content"] for r in fake_openai.judge_requests() for m in r["messages"]]
    assert judged and all(TRANSFORMED in "".join(judged) for _ in judged), judged
    [grader] = row["scores"][0]["graders"]
    assert (grader["type"], grader["verdict"]) == ("composite", "pass")
    assert code == 0


@pytest.mark.parametrize("tree", ["v5.3.1-next.1", "main-58f316c"])
@pytest.mark.parametrize("transformed", [True, False])
def test_file_transforms_own_grader_target_judges_in_agentvs_protocol(
    tree: str, transformed: bool, cli, tmp_path: Path
) -> None:
    """Without --judge the example's own grader target judges (`grader_check`, a bun program):
    it answers AgentV's rubric JSON (`{checks: [{id: rubric-1, satisfied, reasoning}],
    overall_reasoning}`), read as AgentV's `calculateRubricScore` reads it: the check of
    `rubric-1` is the first criterion's, the criterion it names no check for is left out. The
    verdict is AgentV's: pass when the transformed text reached the judge, else fail."""
    folder = _project(AGENTV / tree / "examples/features/file-transforms", tmp_path)
    suite = folder / "evals/suite.yaml"
    if not transformed:  # the judge sees the ContentFile block: grader_check says unsatisfied
        suite.write_text(suite.read_text().split("default_test:")[0])
    out = tmp_path / "r.jsonl"
    code, stdout, stderr = cli("run", suite, "--target", "file_output", "--no-cache", "-o", out)
    assert "judge: grader_check" in stdout + stderr
    [row] = read_jsonl(out)
    [grader] = row["scores"][0]["graders"]
    assert (grader["verdict"], grader["score"], code) == (("pass", 1.0, 0) if transformed else ("fail", 0.0, 1)), (
        stdout + stderr
    )
    [rubric] = grader["details"]["scores"] if grader["type"] == "composite" else [grader]  # composite: the transform
    assert list(rubric["details"]["criteria"]) == ["c1"] and rubric["judge_reasks"] == 0
    assert rubric["assertions"][0]["evidence"].startswith(
        "found" if transformed else "transformed spreadsheet text missing"
    )


SUITE = """\
default_test:
  options:
    transform: "output.toUpperCase()"
tests:
  - id: upper
    vars: {input: say hi}
    assert:
      - {type: contains, value: HELLO}
  - id: own
    vars: {input: say hi}
    options:
      transform: "JSON.stringify({len: output.length})"
    assert:
      - {type: contains, value: '"len"'}
"""


def test_inline_transforms_of_default_test_and_of_a_test(cli, fake_openai: FakeOpenAIServer, tmp_path: Path) -> None:
    """An inline transform is a JavaScript expression of `output` (AgentV's `new Function`); a
    test's own replaces default_test's."""
    fake_openai.reply = lambda _: "hello there"
    out = tmp_path / "r.jsonl"
    code, stdout, stderr = cli(
        "run", write(tmp_path / "suite.yaml", SUITE), "--target", "openai:gpt-4o-mini", "--no-cache", "-o", out
    )
    verdicts = {r["test_id"]: r["verdict"] for r in read_jsonl(out)}
    assert verdicts == {"upper": "pass", "own": "pass"}, stdout + stderr
    assert code == 0


def test_a_failing_transform_is_an_error_never_a_verdict(cli, fake_openai: FakeOpenAIServer, tmp_path: Path) -> None:
    """A transform returning nothing fails (AgentV: "Transform function did not return a value")."""
    text = SUITE.replace('"output.toUpperCase()"', '"null"')
    out = tmp_path / "r.jsonl"
    cli("run", write(tmp_path / "suite.yaml", text), "--target", "openai:gpt-4o-mini", "--no-cache", "-o", out)
    row = next(r for r in read_jsonl(out) if r["test_id"] == "upper")
    assert row["verdict"] == "error"
    assert "Transform function did not return a value" in json.dumps(row)


ORACLE = AGENTV / "main-58f316c/scripts/fixtures/promptfoo-export/oracle-matrix.agentv.yaml"


def test_options_provider_judges_the_tests_checks_and_the_suites(monkeypatch: pytest.MonkeyPatch, caplog) -> None:
    """main's promptfoo-export fixture: `options.provider` grades the test's LLM checks that name
    no judge, default_test's included (grader-parser.ts parseGraders); an assertion's own
    `provider` wins; a test's `providers` is ignored (AgentV's runner reads none)."""
    monkeypatch.setenv("CONVOEVAL_ROOT", str(AGENTV / "main-58f316c"))
    tests = {t.id: t for t in load_suite(ORACLE).tests}
    judges = {
        i: [getattr(a, "judge", None) for a in t.assertions if a.uses_judge or getattr(a, "judge", None)]
        for i, t in tests.items()
    }
    assert judges == {
        "default-provider-and-grader": [],  # the suite's llm-rubric, judged by defaults.grader
        "test-options-grader": ["grader-test-options"],
        "assertion-provider-and-target-override": ["grader-assertion"],
    }
    assert tests["test-options-grader"].execution is not None and tests["test-options-grader"].execution.skip_defaults
    assert "tests[2].providers: ignored, as AgentV ignores it" in caplog.text


def test_a_test_with_its_own_provider_and_a_bad_execution_is_a_problem_not_a_traceback(tmp_path: Path) -> None:
    text = (
        "default_test:\n  assert: [Greets]\n  options: {provider: openai:j}\ntests:\n"
        "  - id: t\n    vars: {input: hi}\n    execution: oops\n    options: {provider: openai:k}\n"
    )
    problems = validate_paths([write(tmp_path / "suite.yaml", text)])
    assert [(p.line, p.field) for p in problems] == [(7, "tests[0].execution")], problems


@pytest.mark.parametrize(
    ("options", "field", "words"),
    [
        ("{transform: file://nowhere.ts}", "tests[0].options.transform", "transform file not found: nowhere.ts"),
        ("{transform: ''}", "tests[0].options.transform", "non-empty string"),
        ("{provider: [a]}", "tests[0].options.provider", "non-empty string"),
        ("{repeat: 2}", "tests[0].options.repeat", "`options.repeat`"),
    ],
)
def test_bad_options_are_file_line_errors(tmp_path: Path, options: str, field: str, words: str) -> None:
    text = f"tests:\n  - id: t\n    vars: {{input: hi}}\n    options: {options}\n    assert: [Says hi]\n"
    problems = validate_paths([write(tmp_path / "suite.yaml", text)])
    assert [(p.line, p.field) for p in problems] == [(4, field)], problems
    assert words in problems[0].message


def test_a_transform_file_outside_the_suites_folder_and_repository_is_refused(tmp_path: Path) -> None:
    """A transform is a suite's file like its scripts: one elsewhere on the host is refused."""
    outside = write(tmp_path / "elsewhere" / "t.ts", "export default (o: string) => o;\n")
    suite = write(
        tmp_path / "suite" / "suite.yaml",
        f"tests:\n  - id: t\n    vars: {{input: hi}}\n    options: {{transform: 'file://{outside}'}}\n"
        "    assert: [Says hi]\n",
    )
    subprocess.run(["git", "init", "-q", str(suite.parent)], check=True)
    problems = validate_paths([suite])
    assert [(p.line, p.field) for p in problems] == [(4, "tests[0].options.transform")], problems
    assert "is outside the suite's folder" in problems[0].message


def test_the_fixtures_javascript_providers_are_refused_saying_agentv_cannot_run_them(
    cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its `file://oracle-*.cjs` providers are promptfoo's: AgentV makes each a `cli` target running
    `bun run .agentv/providers/file.ts` (targets.ts), which fails; its promptfoo export runs them."""
    monkeypatch.setenv("CONVOEVAL_ROOT", str(AGENTV / "main-58f316c"))
    code, stdout, stderr = cli("run", ORACLE, "--no-cache", "-o", tmp_path / "r.jsonl")
    assert code == 2
    assert "oracle-matrix.agentv.yaml:8: providers[0].provider: provider 'file://oracle-target-provider.cjs'" in stderr
    assert "AgentV cannot run either" in stderr


#: eval-cases.mdx at v5.3.1-next.1 (line 547, "add `transform` directly to that grader"): an
#: assertion's own transform runs after the test's (orchestrator.ts `transformEvaluationContextForGrader`).
ASSERTION_TRANSFORMS = """\
default_test:
  options:
    transform: "output.toUpperCase()"
tests:
  - id: own
    vars: {input: say hi}
    assert:
      - type: contains
        value: '"upper":true'
        transform: "JSON.stringify({upper: output === output.toUpperCase()})"
      - type: script
        command: [python3, -c, "import json,sys; print(json.dumps({'score': float(json.load(sys.stdin)['output'].strip() == '11')}))"]
        transform: file://count.js
      - {type: contains, value: HELLO THERE}
"""


def test_an_assertions_own_transform_runs_after_the_tests(cli, fake_openai: FakeOpenAIServer, tmp_path: Path) -> None:
    fake_openai.reply = lambda _: "hello there"
    write(tmp_path / "count.js", "module.exports = (output) => String(output.length);\n")
    out = tmp_path / "r.jsonl"
    suite = write(tmp_path / "suite.yaml", ASSERTION_TRANSFORMS)
    code, stdout, stderr = cli("run", suite, "--target", "openai:gpt-4o-mini", "--no-cache", "-o", out)
    [row] = read_jsonl(out)
    graded = [(g["type"], g["verdict"]) for g in row["scores"][0]["graders"]]
    assert graded == [("composite", "pass"), ("composite", "pass"), ("composite", "pass")], stdout + stderr
    assert row["verdict"] == "pass" and code == 0


def test_an_assertions_missing_transform_file_is_a_file_line_error(tmp_path: Path) -> None:
    text = ASSERTION_TRANSFORMS.replace("file://count.js", "file://nowhere.js")
    problems = validate_paths([write(tmp_path / "suite.yaml", text)])
    assert [(p.line, p.field) for p in problems] == [(13, "tests[0].assertions[1].transform")], problems
    assert "transform file not found: nowhere.js" in problems[0].message
