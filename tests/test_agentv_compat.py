"""AgentV's own eval files (tests/data/agentv, copied whole from its repository at v4.15.0 and
v4.42.4): each is validated and run against a loopback fake target (which is also the judge),
and lands in the class pinned here: it runs unchanged (every test graded, no execution error),
it needs something this machine cannot give (the network, Docker, AgentV's target proxy), or
it is refused with the reason. The count by class is printed at the end of the test session.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from convoeval.spec import load_suite, validate_paths
from convoeval.testing import FakeOpenAIServer

from .conftest import AGENTV_COUNTS, DATA, REPO, read_jsonl

AGENTV = DATA / "agentv"
TAGS = ("v4.15.0", "v4.42.4")
SDK = Path(__file__).parent / "fakes" / "agentv_sdk.mjs"

#: The files that do not run unchanged here, each with its class and words of its reason.
NETWORK = "needs the network"
OTHER = {
    "examples/features/docker-workspace/evals/docker-example.EVAL.yaml": ("needs Docker", "Docker daemon"),
    "examples/features/repo-lifecycle/evals/dataset.eval.yaml": (NETWORK, "github.com"),
    "examples/features/repo-lifecycle/evals/pool-e2e.eval.yaml": (NETWORK, "github.com"),
    "examples/features/workspace-multi-repo/evals/dataset.eval.yaml": (NETWORK, "github.com"),
    "examples/features/workspace-setup-script/evals/dataset-vscode.eval.yaml": (NETWORK, "github.com"),
    "examples/features/workspace-setup-script/evals/dataset.eval.yaml": (NETWORK, "github.com"),
    "examples/features/workspace-shared-config/evals/accuracy/dataset.eval.yaml": (NETWORK, "github.com"),
    "examples/features/workspace-shared-config/evals/regression/dataset.eval.yaml": (NETWORK, "github.com"),
    "examples/contract/evals/repo-materialization.eval.yaml": (NETWORK, "github.com"),
    "examples/features/copilot-log-eval/evals/skill-trigger.EVAL.yaml": (NETWORK, "registry.npmjs.org/allagents"),
    "examples/showcase/cross-repo-sync/evals/dataset.eval.yaml": ("hook fails", "before_each exited"),
    "evals/agentic-engineering/agent-plugin-review.eval.yaml": ("hook fails", "before_each exited"),
    "evals/agentv-self/agentv-self.eval.yaml": ("hook fails", "expected AGENTS.md"),
    "examples/features/code-grader-sdk/evals/dataset.eval.yaml": ("grader fails", "verify-attachments.ts"),
    "examples/features/import-claude/evals/transcript-check.EVAL.yaml": ("grader fails", "Module not found"),
    "examples/contract/evals/code-grader-contract.eval.yaml": ("grader fails", "Module not found"),
    "examples/features/trial-output-consistency/evals/dataset.eval.yaml": ("grader fails", "Export named 'z'"),
    "examples/features/sdk-python/evals/dataset.eval.yaml": ("grader fails", "uv run python"),
    "examples/contract/evals/release-gate.eval.yaml": ("missing in AgentV's tree", "workspace-template"),
    "examples/features/basic-jsonl/evals/dataset.eval.yaml": ("rejected", "unknown field 'evaluator'"),
    "examples/features/file-changes-graders/evals/dataset.eval.yaml": ("rejected", "unknown field 'max_steps'"),
    "examples/features/preprocessors/evals/dataset.eval.yaml": ("rejected", "unknown field 'preprocessors'"),
    "examples/features/sdk-custom-assertion/evals/dataset.eval.yaml": ("rejected", "'word-count'"),
    "examples/showcase/offline-grader-benchmark/evals/setup-a.eval.yaml": ("rejected", "at least 1 item"),
    "examples/showcase/offline-grader-benchmark/evals/setup-b.eval.yaml": ("rejected", "at least 1 item"),
    "examples/features/autoresearch/EVAL.yaml": ("rejected", "unknown field 'defaults'"),
    "examples/features/prompt-template-sdk/evals/dataset.eval.yaml": ("rejected", "custom-grader.ts"),
    "examples/features/test-vars-templating/evals/dataset.eval.yaml": ("rejected", "`vars` is AgentV v5"),
    "examples/showcase/bug-fix-benchmark/evals/bug-fixes.eval.yaml": ("rejected", "execution.targets[0]"),
    "examples/showcase/directory-discovery/EVAL.yaml": ("rejected", "is not a regular file"),
    "examples/showcase/trace-evaluation/evals/coding-agent-replay.eval.yaml": ("target refused", "provider_batching"),
    "examples/showcase/trace-evaluation/evals/transcript-import.eval.yaml": ("target refused", "provider_batching"),
}
#: Files whose class differs between the two tags: (tag, file) -> class and words.
BY_TAG = {
    ("v4.42.4", "examples/features/basic-jsonl/evals/dataset.eval.yaml"): None,  # runs at v4.42.4
    ("v4.15.0", "examples/features/prompt-template-sdk/evals/dataset.eval.yaml"): None,
    ("v4.42.4", "examples/features/basic/evals/dataset.eval.yaml"): ("grader fails", "keyword"),
}
RUNS = "runs unchanged"
MISSING_TOOL = "runs with a grader needing a missing tool"
#: Bars: files of each tag that must run unchanged when `bun` and `uv` are on the machine.
AT_LEAST = {"v4.15.0": 58, "v4.42.4": 57}

ENV = {"EXPECTED_GREETING": "Hello there!", "CUSTOM_SYSTEM_PROMPT": "You greet warmly.", "VAR": "example"}


def eval_files(tag: str) -> list[str]:
    return (AGENTV / tag / "EVAL_FILES.txt").read_text().split()


CASES = [(tag, name) for tag in TAGS for name in eval_files(tag)]


def expected_class(tag: str, name: str) -> tuple[str, str] | None:
    if (tag, name) in BY_TAG:
        return BY_TAG[(tag, name)]
    return OTHER.get(name)


def tools_path() -> str:
    """`bun` (npm, installed by .ci/run under .tools/) and `uv` (PyPI, in the virtualenv)."""
    places = [REPO / ".tools" / "node_modules" / ".bin", Path(sys.executable).parent]
    return os.pathsep.join([*(str(p) for p in places if p.is_dir()), os.environ["PATH"]])


@pytest.fixture(scope="module")
def agentv_env(tmp_path_factory: pytest.TempPathFactory):
    """A fake server, `bun`/`uv` on PATH, and the stand-in grader SDK on NODE_PATH."""
    modules = tmp_path_factory.mktemp("node") / "node_modules"
    for package in ("eval", "sdk"):
        folder = modules / "@agentv" / package
        folder.mkdir(parents=True)
        shutil.copy(SDK, folder / "index.mjs")
        (folder / "package.json").write_text(
            json.dumps({"name": f"@agentv/{package}", "type": "module", "main": "index.mjs"})
        )
    with FakeOpenAIServer() as server, pytest.MonkeyPatch.context() as mp:
        mp.setenv("PATH", tools_path())
        mp.setenv("NODE_PATH", os.pathsep.join([str(modules), str(REPO / ".tools" / "node_modules")]))
        # The copies live inside convoeval's checkout: `uv run` must not take convoeval's
        # pyproject.toml for the grader's project (nor download anything).
        mp.setenv("UV_NO_PROJECT", "1")
        mp.setenv("UV_OFFLINE", "1")
        mp.setenv("OPENAI_BASE_URL", server.base_url)
        mp.setenv("OPENAI_API_KEY", "sk-test-SECRET-never-stored-1234")
        for key, value in ENV.items():
            mp.setenv(key, value)
        yield server


def classify(path: Path, cli, out: Path, server: FakeOpenAIServer) -> tuple[str, str]:
    """(class, reason) of one eval file run with the fake target (and judge)."""
    problems = validate_paths([path])
    if problems:
        first = problems[0]
        return "rejected", f"{Path(first.file).name}:{first.line}: {first.field}: {first.message}"
    before = len(server.target_requests())
    code, stdout, stderr = cli("run", path, "--target", "openai:gpt-4o-mini", "--no-cache", "-o", out)
    results = read_jsonl(out) if out.exists() else []
    if not results:
        return "target refused", (stdout + stderr).strip()[-300:]
    assert sorted(r["test_id"] for r in results) == sorted(t.id for t in load_suite(path).tests)
    failed = [r for r in results if r["execution_status"] == "execution_error"]
    errors = [s for r in results for s in _errors(r["scores"])]
    reason = str(failed[0].get("error") or "") if failed else (errors[0] if errors else "")
    if not failed and not errors:
        assert len(server.target_requests()) > before
        return RUNS, ""
    if "command not found: 'bun'" in reason or "command not found: 'uv'" in reason:
        return MISSING_TOOL, reason
    return "error", reason


def _errors(scores: list) -> list[str]:
    found = []
    for score in scores:
        for item in [score, *score.get("graders", []), *score.get("scores", [])]:
            if isinstance(item, dict) and item.get("verdict") == "error":
                found.append(json.dumps(item)[:400])
    return found


@pytest.mark.parametrize(("tag", "name"), CASES, ids=[f"{t}:{n}" for t, n in CASES])
def test_agentv_file(tag: str, name: str, agentv_env: FakeOpenAIServer, cli, tmp_path: Path, request) -> None:
    found, reason = classify(AGENTV / tag / name, cli, tmp_path / "results.jsonl", agentv_env)
    request.config.stash.setdefault(AGENTV_COUNTS, {}).setdefault(tag, []).append((name, found, reason))
    expected = expected_class(tag, name)
    if expected is None:
        assert found in (RUNS, MISSING_TOOL), reason
        return
    label, words = expected
    assert found != RUNS, f"{name} now runs: move it out of OTHER"
    assert words in reason or found == MISSING_TOOL, (label, reason)


def test_every_eval_file_is_copied_with_its_folder() -> None:
    assert (len(eval_files("v4.15.0")), len(eval_files("v4.42.4"))) == (78, 79)
    for tag, name in CASES:
        assert (AGENTV / tag / name).is_file(), name
    source = (AGENTV / "SOURCE.txt").read_text()
    for words in ("MIT", "b506d9e7adb4f261b8f57333fccc1ef4ad373b4b", "719513785ed4bcd8bcd6bee66b988cb68cb24e91"):
        assert words in source


def test_the_bars_hold_for_the_pinned_classes() -> None:
    """The pinned table keeps at least AT_LEAST files of each tag running unchanged."""
    for tag in TAGS:
        runs = [n for n in eval_files(tag) if expected_class(tag, n) is None]
        assert len(runs) >= AT_LEAST[tag], (tag, len(runs))
