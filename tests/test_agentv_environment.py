"""AgentV v5's `environment` (host recipes) and `extensions` (lifecycle hook modules), run as a
user runs them: `convoeval run` on an eval file against a loopback fake target, the setup a real
Python program, the extension a real JavaScript module run by bun, a script grader reading the
trial's workspace (read from AgentV v5.3.1-next.1's `loaders/environment-recipe.ts`,
`environment/host.ts`, `extensions/runner.ts`; see spec/_agentv_environment.py)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from convoeval.spec import load_suite, validate_paths
from convoeval.testing import FakeOpenAIServer

from .conftest import write
from .test_agentv_compat import tools_path

SETUP = """\
import json, os, sys
payload = json.load(sys.stdin)
workdir = os.environ["AGENTV_ENVIRONMENT_WORKDIR"]
with open(os.path.join(workdir, "setup.json"), "w") as f:
    json.dump({"payload": payload, "cwd": os.getcwd(), "arg": sys.argv[1], "env": os.environ.get("EXPORT_TEST")}, f)
"""
HOOKS = """\
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
function record(ctx, where) {
  const seen = existsSync(join(ctx.workspace_path, 'setup.json'));
  writeFileSync(where, JSON.stringify({ ...ctx, seen_setup: seen }));
}
export function beforeAll(ctx) { record(ctx, join(ctx.workspace_path, 'beforeAll.json')); }
export function beforeEach(ctx) { record(ctx, join(ctx.workspace_path, 'beforeEach.json')); }
export function afterEach(ctx) { record(ctx, join(ctx.eval_dir, '..', `after-${ctx.test_id}.json`)); }
"""
GRADE = """\
import json, os, sys
ws = json.load(sys.stdin)["workspace_path"]
def read(name):
    path = os.path.join(ws, name)
    return json.load(open(path)) if os.path.exists(path) else {}
setup, first, each = read("setup.json"), read("beforeAll.json"), read("beforeEach.json")
facts = {
    "template": os.path.exists(os.path.join(ws, "README.md")),
    "workdir": setup.get("payload", {}).get("environment", {}).get("workdir") == ws,
    "cwd": setup.get("cwd") == os.path.join(ws, "sub"),
    "arg": setup.get("arg"),
    "env": setup.get("env"),
    "before_all": (first.get("test_id"), first.get("seen_setup")),
    "before_each": (each.get("test_id"), each.get("case_input"), each.get("case_metadata"), each.get("eval_dir")),
    "skills": os.path.exists(os.path.join(ws, ".agentv/agent-rules/skills/deploy/SKILL.md")),
}
checks = [{"text": k, "pass": bool(v), "reason": json.dumps(v)} for k, v in facts.items()]
print(json.dumps({"checks": checks}))
"""
SUITE = """\
environment:
  type: host
  workdir: ../testbed
  setup:
    command: [python3, ../setup.py, marker]
    cwd: sub
  env:
    EXPORT_TEST: it's "quoted" $HOME
extensions:
  - file://hooks.mjs:beforeAll
  - file://hooks.mjs:beforeEach
  - file://hooks.mjs:afterEach
  - {id: agentv:agent-rules, skills: [skills/deploy]}
prompts: ["{{ input }}"]
tests:
  - id: t1
    metadata: {ticket: 42}
    vars: {input: hello}
    assert:
      - {type: script, metric: testbed, command: [python3, grade.py]}
"""


@pytest.fixture
def testbed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An eval folder beside its testbed (workdir), with bun on PATH; the suite file's path."""
    if not shutil.which("bun", path=tools_path()):
        pytest.skip("bun is not installed (.ci/run installs it under .tools/)")
    monkeypatch.setenv("PATH", tools_path())
    monkeypatch.setenv("CONVOEVAL_SANDBOX", "none")  # the afterEach hook writes beside the eval folder
    write(tmp_path / "testbed" / "README.md", "the testbed\n")
    write(tmp_path / "testbed" / "setup.py", SETUP)
    (tmp_path / "testbed" / "sub").mkdir()
    write(tmp_path / "evals" / "hooks.mjs", HOOKS)
    write(tmp_path / "evals" / "grade.py", GRADE)
    write(tmp_path / "evals" / "skills" / "deploy" / "SKILL.md", "# deploy\n")
    return write(tmp_path / "evals" / "suite.yaml", SUITE)


def test_host_environment_and_extensions_prepare_each_trial(
    testbed: Path, cli, fake_openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    """The workdir is copied into the trial's workspace; `setup` runs there in `cwd` with
    AgentV's stdin payload, AGENTV_ENVIRONMENT_WORKDIR and the recipe's `env`; the beforeAll then beforeEach
    extensions get AgentV's context (the test's id, input and metadata), afterEach runs at the
    end; agent-rules skills are staged; the workdir itself is left as it was."""
    # the testbed lies beside the eval folder: in AgentV's checkout both are inside its git
    # repository, which workspaces may copy from; here `--root` names that project folder
    code, stdout, stderr = cli(
        "run", testbed, "--root", tmp_path, "--target", "openai:gpt-4o-mini", "--no-cache", "-o", tmp_path / "r.jsonl"
    )
    row = json.loads((tmp_path / "r.jsonl").read_text().splitlines()[0])
    assert row["execution_status"] == "ok", (row.get("error"), stdout, stderr)
    grader = row["scores"][0]["graders"][0]
    facts = {a["text"]: json.loads(a["evidence"]) for a in grader["assertions"]}
    assert facts == {
        "template": True,
        "workdir": True,
        "cwd": True,
        "arg": "marker",
        "env": 'it\'s "quoted" $HOME',  # main's `environment.env`, as written
        "before_all": ["__before_all__", True],
        "before_each": ["t1", "hello", {"ticket": 42}, str(testbed.parent)],
        "skills": True,
    }
    assert (grader["verdict"], code) == ("pass", 0)
    after = json.loads((tmp_path / "after-t1.json").read_text())
    assert (after["hook_name"], after["test_id"]) == ("afterEach", "t1")
    assert sorted(p.name for p in (tmp_path / "testbed").iterdir()) == ["README.md", "setup.py", "sub"]


def test_recipe_file_paths_are_its_own(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`environment: file://...` reads the recipe; its workdir is relative to the recipe file."""
    write(tmp_path / "shared" / "bed" / "a.txt", "a\n")
    write(tmp_path / "shared" / "environment.yaml", "type: host\nworkdir: ./bed\n")
    suite_file = write(
        tmp_path / "evals" / "suite.yaml",
        "environment: file://../shared/environment.yaml\ntests:\n  - id: t\n    vars: {input: hi}\n    assert: [Says hi]\n",
    )
    suite = load_suite(suite_file)
    assert suite.workspace is not None
    assert suite.workspace.template == str(tmp_path / "shared" / "bed")
    assert suite.tests[0].workspace is not None and suite.tests[0].workspace.template == suite.workspace.template


def test_failing_setup_is_the_tests_execution_error(cli, fake_openai: FakeOpenAIServer, tmp_path: Path) -> None:
    """AgentV fails the test when setup exits non-zero; convoeval marks it execution_error."""
    (tmp_path / "bed").mkdir()
    suite = write(
        tmp_path / "suite.yaml",
        "environment:\n  type: host\n  workdir: bed\n  setup:\n    command: [bash, -c, 'echo broken >&2; exit 3']\n"
        "tests:\n  - id: t\n    vars: {input: hi}\n    assert: [{type: contains, value: hi}]\n",
    )
    code, stdout, stderr = cli("run", suite, "--target", "openai:gpt-4o-mini", "--no-cache", "-o", tmp_path / "r.jsonl")
    row = json.loads((tmp_path / "r.jsonl").read_text().splitlines()[0])
    assert row["execution_status"] == "execution_error", row
    assert "exited with code 3" in row["error"] and "broken" in row["error"]
    assert code != 0


@pytest.mark.parametrize(
    ("text", "line", "field", "words"),
    [
        ("environment:\n  type: docker\n  image: python:3.11\n  workdir: /w\n", 2, "environment.type", "container"),
        ("environment:\n  type: host\n  workdir: w\n  env: {A: 1}\n", 4, "environment.env", "text values"),
        ("environment:\n  type: host\n", 1, "environment.workdir", "must be a folder"),
        ("environment:\n  type: vm\n  workdir: w\n", 2, "environment.type", "host` or `docker"),
        (
            "environment:\n  type: host\n  workdir: w\n  setup: {command: 'make'}\n",
            4,
            "environment.setup.command",
            "list",
        ),
        ("environment: ./env.yaml\n", 1, "environment", "file://"),
        ("environment: file://missing.yaml\n", 1, "environment", "cannot read"),
        ("extensions:\n  - file://hooks.mjs:setup\n", 2, "extensions[0]", "beforeAll"),
        ("extensions:\n  - file://nothere.mjs:beforeAll\n", 2, "extensions[0]", "not a file"),
        ("extensions:\n  - agentv:other\n", 2, "extensions[0]", "agentv:agent-rules"),
        ("extensions:\n  - {id: agentv:agent-rules, skills: [no-skills]}\n", 2, "extensions[0].skills", "not found"),
    ],
)
def test_environment_forms_refused(tmp_path: Path, text: str, line: int, field: str, words: str) -> None:
    write(tmp_path / "hooks.mjs", "export function beforeAll() {}\n")
    path = write(tmp_path / "suite.yaml", text + "tests:\n  - id: t\n    vars: {input: hi}\n    assert: [Says hi]\n")
    problems = validate_paths([path])
    assert [(p.line, p.field) for p in problems] == [(line, field)], problems
    assert words in problems[0].message


def test_agent_rules_paths_are_staged_in_the_workspace(tmp_path: Path) -> None:
    """`agentv:agent-rules` with `skills` copies them into `.agentv/agent-rules/skills/` of the
    workspace (AgentV's staging); without paths it adds nothing."""
    write(tmp_path / "skills" / "deploy" / "SKILL.md", "# deploy\n")
    suite = load_suite(
        write(
            tmp_path / "suite.yaml",
            "extensions:\n  - agentv:agent-rules\n  - {id: agentv:agent-rules, skills: [skills/deploy]}\n"
            "tests:\n  - id: t\n    vars: {input: hi}\n    assert: [Says hi]\n",
        )
    )
    hook = suite.workspace.hooks.before_each if suite.workspace else None
    assert hook is not None and "cp -R" in hook.command and ".agentv/agent-rules/skills" in hook.command
    assert hook.command.count("cp -R") == 1


def test_a_recipe_files_problem_names_the_file(tmp_path: Path) -> None:
    recipe = write(tmp_path / "env.yaml", "type: docker\nimage: python:3.11\nworkdir: /w\n")
    text = "environment: file://env.yaml\ntests:\n  - id: t\n    vars: {input: hi}\n    assert: [Says hi]\n"
    problems = validate_paths([write(tmp_path / "suite.yaml", text)])
    assert [(p.line, p.field) for p in problems] == [(1, "environment")], problems
    assert f"in {recipe}: type:" in problems[0].message and "`type: docker`" in problems[0].message
