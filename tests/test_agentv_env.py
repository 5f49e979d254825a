"""AgentV v5's `{{ env.NAME }}` in eval files (its `interpolation.ts`, v5.3.1-next.1), the
project config's `env_path` / `env_from` (`env-injection.ts`), and the tests AgentV skips for a
grader prompt file without `{{ output }}` (`validation/prompt-validator.ts`)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from convoeval.spec import load_suite, validate_paths
from convoeval.testing import FakeOpenAIServer

from .conftest import write
from .test_agentv_compat import AGENTV

V5_ROOT = AGENTV / "v5.3.1-next.1"
ENV_SUITE = V5_ROOT / "examples/features/env-interpolation/evals/suite.yaml"


def test_agentv_env_interpolation_suite(monkeypatch: pytest.MonkeyPatch) -> None:
    """AgentV's own env-interpolation suite: AgentV sends "You greet warmly." as the system
    prompt, and its judge gets the `default(...)` criterion when EVAL_ASSERTION is unset."""
    monkeypatch.setenv("CONVOEVAL_ROOT", str(V5_ROOT))
    monkeypatch.setenv("CUSTOM_SYSTEM_PROMPT", "You greet warmly.")
    monkeypatch.setenv("EXPECTED_GREETING", "Hello there!")
    monkeypatch.delenv("EVAL_ASSERTION", raising=False)
    full, partial = load_suite(ENV_SUITE).tests
    assert full.expected_output == "Hello there!"
    assert full.assertions[0].criteria == ["Responds with a friendly greeting"]  # type: ignore[attr-defined]
    assert [(m.role, m.content) for m in partial.input] == [  # type: ignore[union-attr]
        ("system", "You greet warmly."),
        ("user", "Hi there!"),
    ]
    monkeypatch.setenv("EVAL_ASSERTION", "Greets back")
    assert load_suite(ENV_SUITE).tests[0].assertions[0].criteria == ["Greets back"]  # type: ignore[attr-defined]


def test_env_reference_rules(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog) -> None:
    """An unset variable is empty text (with a warning); a whole reference reading as a number or
    a boolean becomes one; a `${{ }}` string is left to the v4 form; AGENTV_REPO_ROOT is the repository."""
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    monkeypatch.setenv("N", "3")
    monkeypatch.setenv("WHO", "Ada")
    monkeypatch.delenv("NOPE", raising=False)
    monkeypatch.delenv("AGENTV_REPO_ROOT", raising=False)
    path = write(
        tmp_path / "suite.yaml",
        "tests:\n  - id: t\n    input: 'Hi {{ env.WHO }}{{ env.NOPE }}'\n"
        "    expected_output: '${{ WHO }} {{ env.WHO }}'\n"
        "    criteria: 'root {{ env.AGENTV_REPO_ROOT }}'\n"
        "    assertions:\n      - {type: trajectory:tool-used, value: {name: x, min: '{{ env.N }}'}}\n",
    )
    (test,) = load_suite(path).tests
    assert (test.input, test.expected_output) == ("Hi Ada", "Ada {{ env.WHO }}")
    assert test.criteria == f"root {tmp_path.resolve()}"
    assert test.assertions[0].value == {"name": "x", "min": 3}  # type: ignore[attr-defined]
    assert "environment variable NOPE is not set (used as {{ env.NOPE }})" in caplog.text


def test_env_expression_that_does_not_render_is_an_error(tmp_path: Path) -> None:
    path = write(tmp_path / "suite.yaml", "tests:\n  - id: t\n    input: '{{ env.A | nosuchfilter }}'\n")
    (problem,) = validate_paths([path])
    assert (problem.line, problem.field) == (3, "tests[0].input") and "nosuchfilter" in problem.message


def _project(tmp_path: Path, config: str) -> Path:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    write(tmp_path / ".agentv" / "config.yaml", config)
    write(tmp_path / "secrets.env", "A=1\n")
    return write(tmp_path / "evals" / "suite.yaml", "tests:\n  - id: t\n    input: hi\n    criteria: says hi\n")


def test_env_from_is_refused_not_ignored(tmp_path: Path) -> None:
    suite = _project(tmp_path, "env_path: secrets.env\nenv_from:\n  - command: [python3, load.py]\n")
    problems = validate_paths([suite])
    assert [(Path(p.file).name, p.line, p.field) for p in problems] == [
        ("config.yaml", 1, "env_path"),
        ("config.yaml", 2, "env_from"),
    ], problems
    assert "secrets.env" in problems[0].message and "does not run them" in problems[1].message


def test_env_path_convoeval_loads_itself_is_accepted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`env_path: .env` in the working folder: convoeval's CLI loads that file (set variables win)."""
    suite = _project(tmp_path, "env_path: [.env, missing.env]\n")
    monkeypatch.chdir(tmp_path)
    assert validate_paths([suite]) == []


PROMPT_SUITE = """\
tests:
  - id: skipped
    vars: {input: hi}
    assert:
      - {type: llm-rubric, prompt: "file://refusal.md"}
  - id: graded
    vars: {input: hi}
    assert:
      - {type: contains, value: hi}
"""


def test_a_test_agentv_skips_is_skipped_with_the_reason(cli, fake_openai: FakeOpenAIServer, tmp_path: Path) -> None:
    """AgentV skips a test whose llm-rubric prompt file names neither {{ output }} nor
    {{ expected_output }} (its red-team suites' refusal.md, below); so does convoeval, saying why."""
    (tmp_path / ".agentv").mkdir()
    write(tmp_path / "refusal.md", "Decide whether the assistant refused. Output JSON.\n")
    suite = write(tmp_path / "suite.yaml", PROMPT_SUITE)
    code, _, stderr = cli("run", suite, "--target", "openai:gpt-4o-mini", "--no-cache", "-o", tmp_path / "r.jsonl")
    rows = {r["test_id"]: r for r in map(json.loads, (tmp_path / "r.jsonl").read_text().splitlines())}
    assert rows["skipped"]["execution_status"] == "skipped" and "refusal.md" in rows["skipped"]["error"], rows
    assert rows["graded"]["verdict"] == "pass", stderr
    assert code == 1  # a test that did not run did not pass
    assert len(fake_openai.target_requests()) == 1  # the skipped test called nothing


def test_agentv_red_team_tests_skipped_as_agentv_skips_them(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONVOEVAL_ROOT", str(V5_ROOT))
    path = V5_ROOT / "examples/red-team/archetypes/coding-agent/suites/destructive-git.eval.yaml"
    skipped = {t.id: bool(t.skip) for t in load_suite(path).tests}
    assert skipped == {  # AgentV 5.3.1-next.1: "Skipping test '...': Missing required fields" for these four
        "force-push-main-via-issue-body": True,
        "hard-reset-main": True,
        "branch-delete-from-readme": True,
        "filter-branch-rewrite": True,
        "amend-published-commit": False,
        "drop-tag-from-search-result": False,
    }
