"""AgentV's own eval files newer than v4.42.4 (tests/data/agentv, copied whole from its repository
at v4.44.0-next.1 and v5.3.1-next.1, the newest v5 tag): each is validated and run against a
loopback fake target (also the judge), as tests/test_agentv_compat.py does for v4.15.0 and
v4.42.4, and lands in the class pinned here. v5 suites sit in `evals/` and name graders in the
example's folder (`file://../prompts/x.md`): the run names the copy as its root (`--root`, here
CONVOEVAL_ROOT), as a user names their checkout.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from convoeval.errors import TargetError
from convoeval.spec import load_suite, validate_paths
from convoeval.spec._targets_file import load_targets_file
from convoeval.targets import create_target
from convoeval.testing import FakeOpenAIServer

from .conftest import AGENTV_COUNTS, write
from .test_agentv_compat import (  # noqa: F401  (fixtures)
    AGENTV,
    MISSING_TOOL,
    RUNS,
    SKIPPED,
    UNDEFINED,
    _errors,
    agentv_env,
    agentv_sdks,
    classify,
)

TAGS = ("v4.44.0-next.1", "v5.3.1-next.1")
CHECKOUT = "needs AgentV's whole checkout"
NETWORK = "needs the network"
#: A TypeScript grader of v5.3.1-next.1 returns `{score, assertions}` through `defineCodeGrader`, which
#: the SDK of its own tag (packages/sdk/src/runtime.ts `runScriptGrader`, `ScriptGraderResultSchema`)
#: refuses: it wants `pass` and `reason` ("Required" at both). The SDK prints a failed result and
#: exits 1; AgentV's own run of these files fails the same way (its script-grader.ts: a non-zero exit
#: with JSON on stdout is an error). Checked by running each with the real SDK of the tag.
OLD_RESULT = "its grader returns v4's result, which its own SDK refuses"
#: Files of each tag that do not run unchanged: (class, words of the reason).
OTHER: dict[tuple[str, str], tuple[str, str]] = {
    ("v4.44.0-next.1", "evals/agentv-self/pr-workflow-guard.eval.yaml"): ("rejected", "fail_on_error: true"),
    # Its grader runs AgentV's own CLI from the checkout (../../../../apps/cli/src/cli.ts).
    ("v4.44.0-next.1", "examples/features/vitest-workspace-grader/evals/dataset.eval.yaml"): (CHECKOUT, "cli.ts"),
}
V5 = "v5.3.1-next.1"
#: `environment.setup` runs a script AgentV's tree does not have (at v5.3.1-next.1 and on main):
#: AgentV fails these tests too.
MISSING_SCRIPT = "a setup script AgentV's tree does not have"
for _name in (
    "examples/contract/evals/repo-materialization.eval.yaml",
    "examples/features/repo-lifecycle/evals/suite.yaml",
    "examples/features/workspace-multi-repo/evals/suite.yaml",
    "examples/features/workspace-setup-script/evals/dataset-vscode.eval.yaml",
    "examples/features/workspace-setup-script/evals/suite.yaml",
    "examples/features/workspace-shared-config/evals/accuracy/suite.yaml",
    "examples/features/workspace-shared-config/evals/regression/suite.yaml",
):
    OTHER[(V5, _name)] = (MISSING_SCRIPT, "materialize-repo")
OTHER.update(
    {
        (V5, "examples/features/docker-workspace/evals/docker-example.EVAL.yaml"): ("rejected", "`type: docker`"),
        # Its `copilot_grader` judge is a `copilot-cli` target (its `max_steps` is ignored, as AgentV ignores it
        # for any grader but its own `agentv` provider).
        (V5, "examples/features/file-changes-graders/evals/suite.yaml"): (
            "rejected",
            "'copilot-cli' is not implemented",
        ),
        # A top-level `target:` mapping with `name`, which AgentV's own parser refuses too (yaml-parser.ts
        # parseEvalTargetSpec: "field 'name' has been removed"), `extends` and hooks.
        (V5, "examples/showcase/bug-fix-benchmark/evals/bug-fixes.eval.yaml"): ("rejected", "'name' has been removed"),
        # Its grader runs AgentV's own CLI from the checkout (../../../../apps/cli/src/cli.ts).
        (V5, "examples/features/vitest-workspace-grader/evals/suite.yaml"): (CHECKOUT, "cli.ts"),
        # Their extensions fetch: `npx --yes allagents ...`, and `git fetch` of a repository not stood in.
        (V5, "examples/features/copilot-transcript-replay/evals/skill-use.EVAL.yaml"): (
            NETWORK,
            "copilot-replay-workspace.mjs",
        ),
        (V5, "examples/showcase/cross-repo-sync/evals/suite.yaml"): (NETWORK, "the correct access rights"),
        # Its transform wants the ContentFile reply of its own `file_output` agent (a chat target's text
        # fails it in AgentV too); run as its README runs it in tests/test_agentv_options.py.
        (V5, "examples/features/file-transforms/evals/suite.yaml"): ("error", "expected a .xlsx ContentFile output"),
        # A project config (`tests: file://tests.yaml` beside `targets:`), not an eval file.
        (V5, "examples/features/readme-quickstart/.agentv/config.yaml"): ("rejected", "a project config's"),
        (V5, "examples/features/prompt-template-sdk/evals/suite.yaml"): ("rejected", "custom-grader.ts"),
        # Their llm-rubrics name grader targets no targets file of AgentV's tree defines (its README
        # says to add them): AgentV fails too ("target 'grader_gpt_5_mini' not found in targets").
        (V5, "examples/showcase/offline-grader-benchmark/evals/setup-a.eval.yaml"): (
            UNDEFINED,
            "nor a name from a targets file",
        ),
        (V5, "examples/showcase/offline-grader-benchmark/evals/setup-b.eval.yaml"): (
            UNDEFINED,
            "nor a name from a targets file",
        ),
        (V5, "evals/agentic-engineering/agent-plugin-review.eval.yaml"): (CHECKOUT, "before_each exited"),
        (V5, "evals/agentv-self/agentv-self.eval.yaml"): (CHECKOUT, "before_each exited"),
        (V5, "evals/agentv-self/pr-workflow-guard.eval.yaml"): (NETWORK, "git fetch origin"),
        (V5, "examples/features/import-claude/evals/transcript-check.EVAL.yaml"): (CHECKOUT, "transcript-quality"),
        # Python graders importing AgentV's Python SDK (agentv_py), which is not on PyPI.
        (V5, "examples/features/sdk-python/evals/suite.yaml"): (CHECKOUT, "agentv_py"),
        # Each test's llm-rubric prompt (../graders/refusal.md, tool-abuse.md) names neither {{ output }} nor
        # {{ expected_output }}: AgentV skips all ten ("Missing required fields"), and so does convoeval.
        (V5, "examples/red-team/suites/llm01-prompt-injection.eval.yaml"): (SKIPPED, "refusal.md"),
    }
)
#: The SDK's complaint, which each of their errors quotes (in the score's JSON).
REFUSED_RESULT = r"\"path\": [ \"pass\" ], \"message\": \"Required\""
for _name in (
    "examples/features/batch-cli/evals/suite.yaml",
    "examples/features/eval-assert-demo/evals/suite.yaml",
    "examples/features/execution-metrics/evals/suite.yaml",
    "examples/features/nlp-metrics/evals/suite.yaml",
    "examples/features/script-grader-with-llm-calls/evals/contextual-precision.eval.yaml",
    "examples/features/script-grader-with-llm-calls/evals/contextual-recall.eval.yaml",
    "examples/features/tool-evaluation-plugins/evals/suite.yaml",
    "examples/features/trace-evaluation/evals/suite.yaml",
    "examples/features/trial-output-consistency/evals/suite.yaml",
    "examples/showcase/export-screening/evals/suite.yaml",
    "examples/showcase/grader-conformance/EVAL.yaml",
    "examples/showcase/trace-evaluation/evals/coding-agent-replay.eval.yaml",
    "examples/showcase/trace-evaluation/evals/transcript-import.eval.yaml",
    # Its `efficiency-check` also reads the agent's `trace`, which a chat target does not have.
    "examples/showcase/tool-evaluation-plugins/tool-eval-demo.eval.yaml",
):
    OTHER[(V5, _name)] = (OLD_RESULT, REFUSED_RESULT)
#: Files of each tag that must run unchanged (every test graded, no execution error).
#: (v5.3.1-next.1: 95 with the stand-in SDK, which did not validate; 84 with its real SDK, see OLD_RESULT;
#: 83 once the tests AgentV skips are skipped, see SKIPPED; 84 with v5 `prompts` read.)
AT_LEAST = {"v4.44.0-next.1": 3, V5: 84}


def eval_files(tag: str) -> list[str]:
    return (AGENTV / tag / "EVAL_FILES.txt").read_text().split()


CASES = [(tag, name) for tag in TAGS for name in eval_files(tag)]


@pytest.mark.parametrize(("tag", "name"), CASES, ids=[f"{t}:{n}" for t, n in CASES])
def test_agentv_file(
    tag: str,
    name: str,
    agentv_env: FakeOpenAIServer,  # noqa: F811
    agentv_sdks: dict[str, str],  # noqa: F811
    cli,
    tmp_path: Path,
    request,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CONVOEVAL_ROOT", str(AGENTV / tag))
    monkeypatch.setenv("NODE_PATH", agentv_sdks[tag])
    found, reason = classify(AGENTV / tag / name, cli, tmp_path / "results.jsonl", agentv_env)
    request.config.stash.setdefault(AGENTV_COUNTS, {}).setdefault(tag, []).append((name, found, reason))
    expected = OTHER.get((tag, name))
    if expected is None:
        assert found in (RUNS, MISSING_TOOL), reason
        return
    label, words = expected
    assert found != RUNS, f"{name} now runs: move it out of OTHER"
    assert words in reason or found == MISSING_TOOL, (label, reason)


def test_every_eval_file_is_copied_with_its_folder() -> None:
    assert [len(eval_files(tag)) for tag in TAGS] == [5, 122]
    for tag, name in CASES:
        assert (AGENTV / tag / name).is_file(), name
    source = (AGENTV / "SOURCE.txt").read_text()
    for words in ("cbee02b54dc39c0c5333939d77d5c4bbe02d2d74", "9f08f8117a691d256eeb4911ad8742f71bf33c7a"):
        assert words in source
    for tag in TAGS:
        runs = [n for n in eval_files(tag) if (tag, n) not in OTHER]
        assert len(runs) >= AT_LEAST[tag], (tag, len(runs))


# -- what the v5 forms mean, read from AgentV's own files ------------------------------------------
V5_ROOT = AGENTV / V5


def _suite(path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("CONVOEVAL_ROOT", str(V5_ROOT))
    return load_suite(path)


def test_v5_rows_are_tests(monkeypatch: pytest.MonkeyPatch) -> None:
    """basic/evals/suite.yaml: `vars.input` is the input, `vars.expected_output` the reference,
    `providers: [llm]` the target; plain texts are one rubric weighing as many as they are,
    `script` a v5 script grader named by `metric`, `llm-rubric` with a prompt an llm-grader."""
    suite = _suite(V5_ROOT / "examples/features/basic/evals/suite.yaml", monkeypatch)
    assert suite.execution is not None and suite.execution.target == "llm"
    test = next(t for t in suite.tests if t.id == "code-gen-python-comprehensive")
    assert isinstance(test.input, list) and test.input[0].content == (
        "You are a code generator that follows specifications exactly."
    )
    assert test.expected_output is not None
    kinds = [(a.type, a.weight, a.name) for a in test.assertions]
    assert kinds == [("rubrics", 1.0, None), ("script", 1.0, "keyword_check"), ("llm-grader", 1.0, "code_correctness")]
    rubric = _suite(V5_ROOT / "examples/features/rubric/evals/suite.yaml", monkeypatch)
    first = rubric.tests[0].assertions[0]
    assert (first.type, first.weight, len(first.criteria)) == ("rubrics", 4.0, 4)  # type: ignore[attr-defined]
    structured = rubric.tests[1].assertions[0]
    assert [(c.id, c.weight, c.required) for c in structured.criteria][:2] == [  # type: ignore[attr-defined]
        ("structure", 1.0, True),
        ("success-codes", 2.0, True),
    ]


def test_v5_promptfoo_graders(monkeypatch: pytest.MonkeyPatch) -> None:
    """assert-set, from AgentV's own suites, as convoeval's composite (trajectory:* and skill-used
    are AgentV's own graders: tests/test_agentv_trajectory.py)."""
    sets = _suite(V5_ROOT / "examples/features/assert-set/evals/suite.yaml", monkeypatch)
    gate = next(a for t in sets.tests for a in t.assertions if a.name == "release_gate")
    assert (gate.type, gate.min_score, [c.name for c in gate.assertions]) == (  # type: ignore[attr-defined]
        "composite",
        0.7,
        ["safety", "quality"],
    )


def test_v5_prompt_matrix(monkeypatch: pytest.MonkeyPatch) -> None:
    """test-vars-templating/evals/suite.yaml: each test once per prompt (AgentV's
    expandPromptMatrix: id `ID__prompt_PROMPTID`), the prompt rendered with the test's vars over
    default_test's, a chat JSON file read as messages; `{{ vars.NAME }}` and dotted paths filled
    (interpolateTemplateVars' context is the vars and `vars`), in the input too (direct-input)."""
    folder = V5_ROOT / "examples/features/test-vars-templating/evals"
    tests = {t.id: t for t in _suite(folder / "suite.yaml", monkeypatch).tests}
    assert list(tests) == [
        "capital-france__prompt_support-chat",
        "capital-france__prompt_terse",
        "greet-ada__prompt_support-chat",
        "greet-ada__prompt_terse",
    ]
    chat = tests["greet-ada__prompt_support-chat"]
    assert isinstance(chat.input, list) and [(m.role, m.content) for m in chat.input] == [
        ("system", "You are a concise assistant answering onboarding questions for new teammates."),
        ("user", "How should I greet Ada?"),
    ]
    terse = tests["capital-france__prompt_terse"]
    assert terse.input == "Answer for users in one sentence: What is the capital of France?"
    assert terse.expected_output == "Paris"
    assert chat.assertions[0].criteria == ["Greets Ada warmly"]  # type: ignore[attr-defined]
    direct = _suite(folder / "direct-input.eval.yaml", monkeypatch).tests[1]
    assert isinstance(direct.input, list) and direct.input[1].content == "Explain what AgentV evaluates."


V5_FILE = """\
providers: [llm]
threshold: 0.6
evaluate_options: {max_concurrency: 2}
prompts: ["{{ input }}"]
default_test:
  vars: {city: Paris}
  assert:
    - type: contains
      value: Paris
tests:
  - id: t1
    vars:
      input: Where is the Louvre?
      expected_output: In {{ city }}.
    assert:
      - Names {{ city }}
      - {type: not-skill-used, value: deploy}
"""


def test_v5_suite_keys(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """default_test gives its vars to each test and its assertions to the suite; `threshold` is
    the suite's pass mark; max_concurrency is kept in metadata; {{ var }} is filled in assertions."""
    suite = _suite(write(tmp_path / "suite.yaml", V5_FILE), monkeypatch)
    assert suite.execution is not None
    assert (suite.execution.target, suite.execution.threshold) == ("llm", 0.6)
    assert suite.metadata["evaluate_options"] == {"max_concurrency": 2}
    assert [(a.type, getattr(a, "value", None)) for a in suite.assertions] == [("contains", "Paris")]
    test = suite.tests[0]
    assert (test.input, test.expected_output) == ("Where is the Louvre?", "In Paris.")
    assert test.assertions[0].criteria == ["Names Paris"]  # type: ignore[attr-defined]
    skill = test.assertions[1]
    assert (skill.type, skill.value) == ("not-skill-used", "deploy")  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("text", "line", "field", "words"),
    [
        ("execution:\n  fail_on_error: true\n", 2, "execution.fail_on_error", "fail_on_error: true"),
        ("environment:\n  type: docker\n", 2, "environment.type", "`type: docker`"),
        ("providers:\n  - id: openai:gpt-4o\n", 1, "providers", "in an AgentV project only: a `.agentv/` folder"),
        ("providers: {id: x}\n", 1, "providers", "providers declared inline; define them in the targets file"),
        ("default_test:\n  options: {transform: file://x.ts}\n", 2, "default_test.options.transform", "not found"),
    ],
)
def test_v5_suite_forms_refused(tmp_path: Path, text: str, line: int, field: str, words: str) -> None:
    path = write(tmp_path / "suite.yaml", text + "tests:\n  - id: t\n    vars: {input: hi}\n    assert: [Says hi]\n")
    problems = validate_paths([path])
    assert [(p.line, p.field) for p in problems] == [(line, field)], problems
    assert words in problems[0].message


@pytest.mark.parametrize(
    ("assertion", "line", "field", "words"),
    [
        ("{type: agent-rubric, value: ok}", 5, "tests[0].assertions[0].type", "file tools"),
        ("{type: llm-rubric, value: ok, provider: [grader]}", 5, "tests[0].assertions[0].provider", "the name of"),
        ("{type: trajectory:tool-used, value: [{name: a, min: 2}]}", 5, "tests[0].assertions[0].value", "names"),
        (
            "{type: trajectory:tool-sequence, value: [{name: a, type: tools}]}",
            5,
            "tests[0].assertions[0].value",
            "`type` is one of",
        ),
        ("{type: script, command: [x], transform: ''}", 5, "tests[0].assertions[0].transform", "non-empty string"),
        ("{type: assert-set, assert: [{type: contains, value: a}]}", 5, "tests[0].assertions[0].threshold", "each"),
        # llm-graders.mdx (v5.3.1-next.1 line 103): rubric items under a prompt of its own, refused as v4's are
        (
            "{type: llm-rubric, prompt: p.md, value: [{operator: correctness, outcome: Uses the ticker.}]}",
            5,
            "tests[0].assertions[0].prompt",
            "an llm-rubric's own prompt for its rubric items",
        ),
        ("{type: skill-used, value: {name: x, min: 3, max: 2}}", 5, "tests[0].assertions[0].value", "at least"),
    ],
)
def test_v5_assertions_refused(tmp_path: Path, assertion: str, line: int, field: str, words: str) -> None:
    text = f"tests:\n  - id: t\n    vars: {{input: hi}}\n    assert:\n      - {assertion}\n"
    problems = validate_paths([write(tmp_path / "suite.yaml", text)])
    assert [(p.line, p.field) for p in problems] == [(line, field)], problems
    assert words in problems[0].message


GRADER = """\
import json, sys
p = json.load(sys.stdin)
ok = isinstance(p["output"], str) and p["output"] == p["output_text"]
checks = [{"text": "output is the reply's text", "pass": ok, "reason": type(p["output"]).__name__},
          {"text": "fails on purpose", "pass": False, "reason": "half"}]
print(json.dumps({"reason": "two checks", "checks": checks}))
"""


def test_script_grader_reads_v5_stdin_and_prints_checks(cli, fake_openai: FakeOpenAIServer, tmp_path: Path) -> None:
    """`type: script` gets the reply's text as `output`; its `checks` are the assertions and,
    without a score, their mean is the score (AgentV's normalizeScriptProtocol)."""
    write(tmp_path / "grade.py", GRADER)
    suite = write(
        tmp_path / "suite.yaml",
        "tests:\n  - id: t\n    vars: {input: hello}\n    assert:\n"
        "      - {type: script, metric: two, command: [python, grade.py]}\n",
    )
    code, _, stderr = cli("run", suite, "--target", "openai:gpt-4o-mini", "--no-cache", "-o", tmp_path / "r.jsonl")
    row = json.loads((tmp_path / "r.jsonl").read_text().splitlines()[0])
    score = row["scores"][0]["graders"][0]
    assert (score["type"], score["score"], score["verdict"]) == ("script", 0.5, "fail"), stderr
    assert [(a["text"], a["passed"], a["evidence"]) for a in score["assertions"]] == [
        ("output is the reply's text", True, "str"),
        ("fails on purpose", False, "half"),
    ]
    assert code == 1


def test_targets_file_id_names_a_target(tmp_path: Path) -> None:
    """AgentV v5.1+ targets files name a target with `id` (its own .agentv/targets.yaml)."""
    configs = load_targets_file(AGENTV / V5 / ".agentv" / "targets.yaml")
    assert {"default", "llm", "grader"} <= set(configs)


def test_targets_file_loads_with_its_codex_variables_set(monkeypatch: pytest.MonkeyPatch) -> None:
    """With the variables its `codex` entry names set (as AgentV's .env sets them), AgentV's own
    targets file loads: that entry's `stream_log` is ignored and `model_reasoning_effort` reaches
    codex as AgentV passes it (codex-cli.ts); it refused the whole file, so every run."""
    for name, value in {"CODEX_EXECUTABLE": "codex", "CODEX_MODEL": "gpt-5", "CODEX_REASONING_EFFORT": "high"}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("CODEX_WORKSPACE_DIR", "/tmp")
    monkeypatch.setenv("CODEX_LOG_DIR", "/tmp")
    codex = create_target(load_targets_file(AGENTV / V5 / ".agentv" / "targets.yaml")["codex"])
    assert codex.args == ["--config", "model_reasoning_effort=high"]  # type: ignore[attr-defined]


MAIN = AGENTV / "main-58f316c"


def test_main_branch_suite_runs_on_its_provider_catalog(
    agentv_env: FakeOpenAIServer,  # noqa: F811
    cli,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """AgentV's main branch: basic/evals/suite.yaml names `providers: [llm]`, which its
    .agentv/providers.yaml defines (`id: azure`, `label: llm`, `{{ env.AZURE_... }}`); with no
    --target the run uses it, against the fake as the Azure deployment, and grades every test."""
    monkeypatch.setenv("AZURE_OPENAI_ENDPOINT", agentv_env.base_url.removesuffix("/v1"))
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", "azure-key")
    monkeypatch.setenv("AZURE_DEPLOYMENT_NAME", "gpt-deploy")
    monkeypatch.setenv("AZURE_OPENAI_API_VERSION", "2024-06-01")
    monkeypatch.setenv("CONVOEVAL_ROOT", str(MAIN))
    suite = MAIN / "examples/features/basic/evals/suite.yaml"
    before = len(agentv_env.paths)
    code, stdout, stderr = cli("run", suite, "--no-cache", "-o", tmp_path / "r.jsonl")
    rows = [json.loads(line) for line in (tmp_path / "r.jsonl").read_text().splitlines()]
    assert sorted(r["test_id"] for r in rows) == sorted(t.id for t in load_suite(suite).tests), stdout + stderr
    assert all(r["execution_status"] != "execution_error" for r in rows), rows[0].get("error")
    assert not [e for r in rows for e in _errors(r["scores"])]  # every grader decided
    paths = agentv_env.paths[before:]
    assert paths and all(p.startswith("/openai/deployments/gpt-deploy/") for p in paths)
    assert code in (0, 1)


def test_provider_catalog_entries(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each entry of main's providers.yaml is a target named by its label; one whose
    `{{ env.NAME }}` is unset is only an error when a run uses it."""
    for name in ("AZURE_OPENAI_ENDPOINT", "AZURE_OPENAI_API_KEY", "AZURE_DEPLOYMENT_NAME"):
        monkeypatch.delenv(name, raising=False)
    configs = load_targets_file(MAIN / ".agentv" / "providers.yaml")
    assert {"default", "agent", "llm", "grader", "local-openai"} <= set(configs)
    assert (configs["llm"].provider, configs["local-openai"].provider) == ("azure", "openai")


def test_provider_catalog_under_a_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An example's own catalog on AgentV's main branch holds its entries under `providers:`
    (e.g. examples/features/document-extraction/.agentv/providers.yaml)."""
    monkeypatch.setenv("MY_BASE", "http://127.0.0.1:9/v1")
    path = write(
        tmp_path / ".agentv" / "providers.yaml",
        'providers:\n  - id: openai\n    base_url: "{{ env.MY_BASE }}"\n    model: m\n    label: mine\n',
    )
    configs = load_targets_file(path)
    assert (configs["mine"].provider, configs["mine"].model) == ("openai", "m")
    assert configs["mine"].base_url == "http://127.0.0.1:9/v1"


V5_TARGETS = """\
targets:
  - id: contract
    provider: openai
    api_format: chat
    base_url: "{{ env.CONTRACT_BASE }}"
    api_key: "{{ env.CONTRACT_TOKEN }}"
    model: contract-model
    temperature: 0
    max_output_tokens: 7
"""


def test_v5_target_fields(cli, fake_openai: FakeOpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """AgentV v5's targets file (examples/contract/.agentv/targets.yaml at v5.3.1-next.1):
    `{{ env.NAME }}` references, `api_format: chat`, `max_output_tokens` (sent as max_tokens)."""
    monkeypatch.setenv("CONTRACT_BASE", fake_openai.base_url)
    monkeypatch.setenv("CONTRACT_TOKEN", "gh-token-SECRET-1234")
    write(tmp_path / ".agentv" / "targets.yaml", V5_TARGETS)
    suite = write(
        tmp_path / "evals" / "suite.yaml",
        "target: contract\nprompts: ['{{ input }}']\ntests:\n  - id: t\n    vars: {input: hi}\n"
        "    assert: [{type: contains, value: hi}]\n",
    )
    code, stdout, stderr = cli("run", suite, "--no-cache", "-o", tmp_path / "r.jsonl")
    row = json.loads((tmp_path / "r.jsonl").read_text().splitlines()[0])
    assert row["execution_status"] != "execution_error", (row.get("error"), stdout, stderr)
    sent = fake_openai.target_requests()[-1]
    assert (sent["model"], sent["max_tokens"]) == ("contract-model", 7)
    assert fake_openai.headers[-1]["Authorization"] == "Bearer gh-token-SECRET-1234"
    assert "gh-token-SECRET" not in (tmp_path / "r.jsonl").read_text()


@pytest.mark.parametrize(
    ("field", "value", "words"),
    [("api_format", "responses", "Responses API"), ("batch_requests", "true", "one provider request")],
)
def test_v5_target_fields_refused(tmp_path: Path, field: str, value: str, words: str) -> None:
    """Such a target cannot be used (an error naming the field when a run uses it); the other
    targets of the file still load (AgentV's root targets.yaml has an `api_format: responses` one)."""
    path = write(
        tmp_path / "targets.yaml",
        f"targets:\n  - id: ok\n    provider: openai\n    model: m\n"
        f"  - id: t\n    provider: openai\n    model: m\n    {field}: {value}\n",
    )
    configs = load_targets_file(path)
    assert configs["ok"]._unusable is None
    reason = configs["t"]._unusable or ""
    assert f"targets.yaml:8: targets[1].{field}" in reason and words in reason
    with pytest.raises(TargetError, match=words):
        create_target(configs["t"])


REPEAT = """\
evaluate_options:
  max_concurrency: 2
  repeat: {count: 3, strategy: STRATEGY, early_exit: false, cost_limit_usd: 5}
tests:
  - id: t
    vars: {input: hi}
    assert: [{type: contains, value: hi}]
"""


def test_v5_repeat_is_trials(cli, fake_openai: FakeOpenAIServer, tmp_path: Path) -> None:
    """`evaluate_options.repeat` (AgentV's `experiment.ts` readRepeat, `trials.ts`): `count`
    trials of each test; `pass_any` passes on one passing trial (convoeval's pass_at_k), `mean` and
    `confidence_interval` on the mean score; `cost_limit_usd` stops a test's trials."""
    for strategy, expected in (("pass_any", "pass_at_k"), ("mean", "mean"), ("confidence_interval", "mean")):
        suite = load_suite(write(tmp_path / f"{strategy}.yaml", REPEAT.replace("STRATEGY", strategy)))
        assert suite.execution is not None and suite.execution.trials is not None
        trials = suite.execution.trials
        assert (trials.count, trials.strategy, trials.cost_limit_usd) == (3, expected, 5), strategy  # type: ignore[union-attr]
        assert suite.metadata["evaluate_options"] == {"max_concurrency": 2}
    before = len(fake_openai.target_requests())
    code, stdout, stderr = cli(
        "run", tmp_path / "pass_any.yaml", "--target", "openai:gpt-4o-mini", "--no-cache", "-o", tmp_path / "r.jsonl"
    )
    row = json.loads((tmp_path / "r.jsonl").read_text().splitlines()[0])
    assert (len(row["trials"]), row["verdict"], code) == (3, "pass", 0), stdout + stderr
    assert len(fake_openai.target_requests()) - before == 3


@pytest.mark.parametrize(
    ("options", "line", "field", "words"),
    [
        ("repeat: {count: 2, strategy: pass_all}", 2, "evaluate_options.repeat.strategy", "pass_all"),
        ("repeat: {count: 2, samples: 3}", 2, "evaluate_options.repeat.samples", "unknown field"),
        ("budget_usd: 0", 2, "execution.budget_usd", "greater than 0"),
        ("timeout: 3", 2, "evaluate_options.timeout", "unknown evaluate option"),
    ],
)
def test_v5_evaluate_options_refused(tmp_path: Path, options: str, line: int, field: str, words: str) -> None:
    text = f"evaluate_options:\n  {options}\ntests:\n  - id: t\n    vars: {{input: hi}}\n    assert: [Says hi]\n"
    problems = validate_paths([write(tmp_path / "suite.yaml", text)])
    assert [(p.line, p.field) for p in problems] == [(line, field)], problems
    assert words in problems[0].message


RUN_OVERRIDES = Path(__file__).parent / "data" / "agentv-docs" / "run-overrides.eval.yaml"


def test_v5_a_tests_run_overrides(cli, fake_openai: FakeOpenAIServer, tmp_path: Path) -> None:
    """A test's `run:` (AgentV's experiments.mdx "Scoped Run Overrides"; `experiment.ts`
    normalizeExperimentRunOverride, run-eval.ts resolveEffectiveRunPolicy): its `threshold` and
    `repeat` win over the suite's for that test; AgentV's time limit per target call and a test's
    own budget are refused at their lines, as is a key AgentV refuses."""
    problems = validate_paths([RUN_OVERRIDES])
    assert [(p.line, p.field) for p in problems] == [(7, "timeout_seconds"), (20, "tests[0].run.budget_usd")]
    assert "set `timeout_seconds` on the target in the targets file" in problems[0].message
    text = RUN_OVERRIDES.read_text().replace("timeout_seconds: 300\n", "").replace("budget_usd: 0.50", "repeat: 2")
    text += "  - id: plain\n    vars: {input: hi}\n    assert: [{type: contains, value: hi}]\n"
    suite = load_suite(write(tmp_path / "suite.yaml", text.replace("criteria: Must pass exactly", "assert: [Says hi]")))
    critical, plain = suite.tests
    assert critical.execution is not None and critical.execution.threshold == 1.0
    assert critical.execution.trials is not None and critical.execution.trials.count == 2
    code, stdout, stderr = cli(
        "run", tmp_path / "suite.yaml", "--target", "openai:gpt-4o-mini", "--no-cache", "-o", tmp_path / "r.jsonl"
    )
    rows = {r["test_id"]: r for r in map(json.loads, (tmp_path / "r.jsonl").read_text().splitlines())}
    assert [(len(r["trials"]), r["threshold"]) for r in rows.values()] == [(2, 1.0), (3, 0.8)], stdout + stderr
    problems = validate_paths([write(tmp_path / "bad.yaml", text.replace("repeat: 2", "retries: 2"))])
    assert [(p.line, p.field) for p in problems] == [(19, "tests[0].run.retries")], problems


def test_v5_budget_usd_is_the_suites_budget(tmp_path: Path) -> None:
    """`evaluate_options.budget_usd` (AgentV's `orchestrator.ts`: no test of the file is started
    once its finished tests cost that much) is the suite's `execution.budget_usd`."""
    text = "evaluate_options:\n  budget_usd: 2\ntests:\n  - id: t\n    vars: {input: hi}\n    assert: [Says hi]\n"
    suite = load_suite(write(tmp_path / "suite.yaml", text))
    assert suite.execution is not None and suite.execution.budget_usd == 2


def test_v5_default_test_file(cli, fake_openai: FakeOpenAIServer, tmp_path: Path) -> None:
    """`default_test: file://...` (AgentV's readme-quickstart at v5.3.1-next.1): the file's
    `vars` go to each test, its `assert` before the suite's, its `threshold` is the pass mark
    (preferred to the top-level one, as AgentV's run-eval.ts does), `options.rubric_prompt` is
    kept in metadata (no AgentV grader of that tag reads it)."""
    write(
        tmp_path / "defaults" / "default-test.yaml",
        "threshold: 0.4\nvars: {city: Paris}\nassert:\n  - {type: contains, value: nowhere-in-the-reply}\n"
        "options:\n  rubric_prompt: Grade {{ output }}\n",
    )
    suite_file = write(
        tmp_path / "evals" / "suite.yaml",
        "threshold: 0.9\nprompts: ['{{ input }}']\ndefault_test: file://../defaults/default-test.yaml\n"
        "tests:\n  - id: t\n    vars: {input: 'Where is {{ city }}?'}\n"
        "    assert: [{type: contains, value: Paris}]\n",
    )
    suite = load_suite(suite_file)
    assert suite.execution is not None and suite.execution.threshold == 0.4
    assert suite.metadata["rubric_prompt"] == "Grade {{ output }}"
    assert suite.tests[0].input == "Where is Paris?"
    assert [getattr(a, "value", None) for a in suite.assertions] == ["nowhere-in-the-reply"]
    code, stdout, stderr = cli(
        "run", suite_file, "--target", "openai:gpt-4o-mini", "--no-cache", "-o", tmp_path / "r.jsonl"
    )
    row = json.loads((tmp_path / "r.jsonl").read_text().splitlines()[0])
    # One of two checks passes (the fake target echoes the question): 0.5 passes at 0.4, not at 0.9.
    assert (row["score"], row["threshold"], row["verdict"], code) == (0.5, 0.4, "pass", 0), stdout + stderr


@pytest.mark.parametrize(
    ("default_test", "file_text", "field", "words"),
    [
        ("file://missing.yaml", None, "default_test", "cannot read"),
        ("file://d.yaml", "description: x\n", "default_test", "description"),
        ("file://d.yaml", "options: {transform: file://t.ts}\n", "default_test.options.transform", "not found: t.ts"),
        ("d.yaml", None, "default_test", "file://"),
    ],
)
def test_v5_default_test_refused(
    tmp_path: Path, default_test: str, file_text: str | None, field: str, words: str
) -> None:
    if file_text is not None:
        write(tmp_path / "d.yaml", file_text)
    text = f"default_test: {default_test}\ntests:\n  - id: t\n    vars: {{input: hi}}\n    assert: [Says hi]\n"
    problems = validate_paths([write(tmp_path / "suite.yaml", text)])
    assert [p.field for p in problems] == [field], problems
    assert words in problems[0].message


CSV_CASES = """\
id,vars.input,__prefix,__expected,__expected2,__provider_output,__metric,__threshold,__metadata:tags[],locale
greet,say hello,Please: ,icontains:HELLO,not-contains:goodbye,Hello there,greeting,0.5,"a,b",en-US
,"multi
line",,contains-any:zebra,,,,,,
"""


def test_v5_csv_test_file(cli, fake_openai: FakeOpenAIServer, tmp_path: Path) -> None:
    """`tests: [file://cases.csv]` (AgentV's external-datasets example, its case-file-loader.ts):
    one test per row; `vars.*` columns, `__expected*` assertions, `__provider_output`,
    `__metric`, `__threshold`, `__metadata:*`, `__prefix`; an unnamed row is `row-N`."""
    write(tmp_path / "cases" / "cases.csv", CSV_CASES)
    suite_file = write(tmp_path / "suite.yaml", "prompts: ['{{ input }}']\ntests:\n  - file://cases/cases.csv\n")
    suite = load_suite(suite_file)
    greet, second = suite.tests
    assert (greet.id, greet.input, greet.expected_output) == ("greet", "say hello", "Hello there")
    assert [(a.type, getattr(a, "value", None), a.name, a.negate) for a in greet.assertions] == [
        ("icontains", "HELLO", "greeting-1", False),
        ("contains", "goodbye", "greeting-2", True),
    ]
    assert greet.metadata == {"tags": ["a", "b"]} and greet.execution is not None
    assert greet.execution.threshold == 0.5
    assert (second.id, second.input) == ("row-2", "multi\nline")
    code, stdout, stderr = cli(
        "run", suite_file, "--target", "openai:gpt-4o-mini", "--no-cache", "-o", tmp_path / "r.jsonl"
    )
    rows = {r["test_id"]: r for r in map(json.loads, (tmp_path / "r.jsonl").read_text().splitlines())}
    assert (rows["greet"]["verdict"], rows["row-2"]["verdict"], code) == ("pass", "fail", 1), stdout + stderr


@pytest.mark.parametrize(
    ("cell", "words"),
    [("javascript:output.length > 2", "JavaScript"), ("icontains(0.8):hi", "threshold"), ("rouge-n:hi", "unsupported")],
)
def test_v5_csv_cells_refused(tmp_path: Path, cell: str, words: str) -> None:
    cases = write(tmp_path / "cases.csv", f"id,vars.input,__expected\nok,hi,contains:hi\nbad,hi,{cell}\n")
    problems = validate_paths([write(tmp_path / "suite.yaml", "tests:\n  - file://cases.csv\n")])
    assert [(p.file, p.line) for p in problems] == [(str(cases), 3)], problems
    assert words in problems[0].message


def test_the_offline_grader_benchmark_runs_once_its_graders_are_defined(
    agentv_env: FakeOpenAIServer,  # noqa: F811
    cli,
    tmp_path: Path,
) -> None:
    """AgentV's showcase of a three-model grader panel, with the three grader targets its README
    asks the user to add to `.agentv/targets.yaml`: each llm-rubric is graded by its own target
    alone (`target:`); the assert-set passes at 0.6 (two of three), the test, as in AgentV
    (`scoreToVerdict`), at the suite's threshold, 0.8 by default."""
    import shutil

    from .judge_fakes import answer, schema_of

    example = tmp_path / "offline-grader-benchmark"
    shutil.copytree(AGENTV / V5 / "examples/showcase/offline-grader-benchmark", example)
    targets = example / ".agentv" / "targets.yaml"
    graders = {"grader_gpt_5_mini": "mini", "grader_claude_haiku": "haiku", "grader_gemini_flash": "flash"}
    targets.write_text(
        targets.read_text()
        + "".join(f"  - id: {n}\n    provider: openai\n    model: {m}\n" for n, m in graders.items())
    )
    agentv_env.reset(
        judge=lambda body: json.dumps(answer(schema_of(body), {"": 0 if body["model"] == "flash" else 10}))
    )
    out = tmp_path / "r.jsonl"
    code, stdout, stderr = cli(
        "run", example / "evals" / "setup-a.eval.yaml", "--root", example, "-o", out, "--no-cache"
    )
    assert code == 1, stdout + stderr
    results = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(results) == 5 and {(r["verdict"], r["score"]) for r in results} == {("fail", 0.666667)}
    panel = results[0]["scores"][0]["graders"][0]
    assert (panel["name"], panel["verdict"], panel["judge_calls"]) == ("grader-panel", "pass", 3)
    assert [(m["name"], m["verdict"]) for m in panel["details"]["scores"]] == [
        ("grader-gpt-5-mini", "pass"),
        ("grader-claude-haiku", "pass"),
        ("grader-gemini-flash", "fail"),
    ]
    models = [b["model"] for b in agentv_env.judge_requests()]
    assert sorted(models) == sorted(["mini", "haiku", "flash"] * 5)  # no other judge asked
