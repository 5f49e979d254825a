"""AgentV's own eval files (tests/data/agentv, copied whole from its repository at v4.15.0 and
v4.42.4): each is validated and run against a loopback fake target (which is also the judge),
and lands in the class pinned here: it runs unchanged (every test graded, no execution error),
it needs something this machine cannot give (the network, Docker), or
it is refused with the reason. The count by class is printed at the end of the test session.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from convoeval.graders._agentv_code import FAILED
from convoeval.spec import load_suite, validate_paths
from convoeval.testing import FakeOpenAIServer

from .agentv_sdk import NEWEST, PACKAGES, node_path
from .conftest import AGENTV_COUNTS, DATA, REPO, read_jsonl

AGENTV = DATA / "agentv"
TAGS = ("v4.15.0", "v4.42.4")

#: The files that do not run unchanged here, each with its class and words of its reason.
NETWORK = "needs the network"
UPSTREAM = "fails in AgentV's own tree too"
CHECKOUT = "needs AgentV's whole checkout"  # a hook copies files from the repository root (git rev-parse)
#: An llm-grader names its own grader target (`target`, `provider`) that no targets file defines: AgentV
#: fails too (v5.3.1 `builtin-graders.ts`: "target '...' not found in targets").
UNDEFINED = "names a grader target no targets file defines"
OTHER = {
    "examples/features/docker-workspace/evals/docker-example.EVAL.yaml": ("needs Docker", "Docker daemon"),
    "examples/features/workspace-setup-script/evals/dataset-vscode.eval.yaml": (NETWORK, "allagents"),
    "examples/features/workspace-setup-script/evals/dataset.eval.yaml": (NETWORK, "allagents"),
    "examples/features/copilot-log-eval/evals/skill-trigger.EVAL.yaml": (NETWORK, "allagents"),
    # Its hook runs TypeScript with `node --import tsx`, then clones agentevals from GitHub at a commit.
    "examples/showcase/cross-repo-sync/evals/dataset.eval.yaml": (NETWORK, "before_each exited"),
    "examples/contract/evals/repo-materialization.eval.yaml": (NETWORK, "agentv-contract-fixture"),
    "examples/features/sdk-python/evals/dataset.eval.yaml": (NETWORK, "uv run python"),
    "evals/agentic-engineering/agent-plugin-review.eval.yaml": (CHECKOUT, "before_each exited"),
    "evals/agentv-self/agentv-self.eval.yaml": (CHECKOUT, "expected AGENTS.md"),
    "examples/features/import-claude/evals/transcript-check.EVAL.yaml": (UPSTREAM, "Module not found"),
    "examples/features/prompt-template-sdk/evals/dataset.eval.yaml": (UPSTREAM, "custom-grader.ts"),
    "examples/showcase/offline-grader-benchmark/evals/setup-a.eval.yaml": (UNDEFINED, "nor a name from a targets file"),
    "examples/showcase/offline-grader-benchmark/evals/setup-b.eval.yaml": (UNDEFINED, "nor a name from a targets file"),
    # Its copilot_grader is a `copilot-cli` target (its `max_steps` is ignored, as AgentV ignores it
    # for any grader but its own `agentv` provider).
    "examples/features/file-changes-graders/evals/dataset.eval.yaml": ("rejected", "'copilot-cli' is not implemented"),
    "examples/showcase/bug-fix-benchmark/evals/bug-fixes.eval.yaml": ("rejected", "written inline"),
}
#: Files run as their README runs them (`agentv eval FILE --target NAME`), NAME defined in a
#: targets file of the test's own that points at the fake server. The code-graders of
#: code-grader-with-llm-calls find the retrieval context in the expected messages' tool calls
#: (AgentV's `expected_output` on stdin) and ask the model through AgentV's target proxy, naming
#: `gemini-llm` in each request: the run's target, and so (AgentV's fallback) its judge. AgentV's
#: own targets file (at both tags) defines no `gemini-llm`.
README_TARGET = {
    "examples/features/code-grader-with-llm-calls/evals/contextual-precision.eval.yaml": "gemini-llm",
    "examples/features/code-grader-with-llm-calls/evals/contextual-recall.eval.yaml": "gemini-llm",
}
#: Files whose class differs between the two tags: (tag, file) -> class and words (None: runs).
#: v4.15.0's TypeScript graders import `@agentv/eval` 4.15.0, whose schema wants `output` as
#: messages: convoeval finds that SDK's version and sends them what AgentV v4.15 sent
#: (tests/test_agentv_code_payload.py), so they run, this prompt template among them.
BY_TAG: dict[tuple[str, str], tuple[str, str] | None] = {
    ("v4.15.0", "examples/features/prompt-template-sdk/evals/dataset.eval.yaml"): None,
}
RUNS = "runs unchanged"
MISSING_TOOL = "runs with a grader needing a missing tool"
#: Every test of the file is one AgentV skips (a grader prompt file without {{ output }}): none runs.
SKIPPED = "AgentV skips each of its tests"
#: Bars: files of each tag that must run unchanged when `bun` and `uv` are on the machine (v4.15.0:
#: 68 with its real SDK, as with the stand-in SDK before, which did not validate).
AT_LEAST = {"v4.15.0": 68, "v4.42.4": 70}

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


#: Stand-ins for the GitHub repositories AgentV's workspaces clone (`ref: main`), as files.
REPOSITORIES = {
    "EntityProcess/agentv": {"packages/core/package.json": '{"name": "@agentv/core", "version": "4.15.0"}\n'},
    "EntityProcess/allagents": {"package.json": '{"name": "allagents", "version": "0.1.0"}\n'},
}


def git_stand_ins(root: Path) -> dict[str, str]:
    """Local bare repositories for REPOSITORIES, and the environment that makes git fetch
    `https://github.com/OWNER/NAME` from them (git's `url.<base>.insteadOf`, in a global
    config file of the test's own)."""
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.org", "-c", "init.defaultBranch=main"]
    for name, files in REPOSITORIES.items():
        work = root / "work" / name
        for path, text in files.items():
            (work / path).parent.mkdir(parents=True, exist_ok=True)
            (work / path).write_text(text)
        subprocess.run([*git, "init", "-q", str(work)], check=True)
        subprocess.run([*git, "-C", str(work), "add", "-A"], check=True)
        subprocess.run([*git, "-C", str(work), "commit", "-qm", "stand-in"], check=True)
        bare = root / "github" / f"{name}.git"
        subprocess.run([*git, "clone", "-q", "--bare", str(work), str(bare)], check=True)
    config = root / "gitconfig"
    config.write_text(f'[url "file://{root / "github"}/"]\n\tinsteadOf = https://github.com/\n')
    return {"GIT_CONFIG_GLOBAL": str(config)}


@pytest.fixture(scope="module")
def agentv_sdks(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """NODE_PATH by tag: AgentV's real grader SDK of that tag (tests/agentv_sdk.py)."""
    return {tag: node_path(tag, tmp_path_factory.mktemp("node")) for tag in PACKAGES}


@pytest.fixture(scope="module")
def agentv_env(tmp_path_factory: pytest.TempPathFactory, agentv_sdks: dict[str, str]):
    """A fake server, `bun`/`uv` on PATH, the newest tag's grader SDK on NODE_PATH (a test sets
    its own tag's), and local stand-ins for the GitHub repositories the workspaces clone."""
    git_env = git_stand_ins(tmp_path_factory.mktemp("git"))
    with FakeOpenAIServer() as server, pytest.MonkeyPatch.context() as mp:
        mp.setenv("PATH", tools_path())
        mp.setenv("NODE_PATH", agentv_sdks[NEWEST])
        # The copies live inside convoeval's checkout: `uv run` must not take convoeval's
        # pyproject.toml for the grader's project (nor download anything).
        mp.setenv("UV_NO_PROJECT", "1")
        # AgentV's hooks fetch with npx and git: they ran on the host before the sandbox existed, and
        # without the network (the sandbox's default) npx retries for a minute. The sandbox has its
        # own tests (test_sandbox.py); here the files run as AgentV runs them.
        mp.setenv("CONVOEVAL_SANDBOX", "none")
        mp.setenv("UV_OFFLINE", "1")
        mp.setenv("npm_config_offline", "true")  # hooks that run `npx --yes PACKAGE` fail here, offline
        for key, value in git_env.items():
            mp.setenv(key, value)
        mp.setenv("OPENAI_BASE_URL", server.base_url)
        mp.setenv("OPENAI_API_KEY", "sk-test-SECRET-never-stored-1234")
        for key, value in ENV.items():
            mp.setenv(key, value)
        yield server


def classify(path: Path, cli, out: Path, server: FakeOpenAIServer, named: str | None = None) -> tuple[str, str]:
    """(class, reason) of one eval file run with the fake target (and judge); `named`: run as
    `--target NAME`, NAME defined in a targets file of its own (README_TARGET)."""
    # The run below gives --target, which replaces the file's own execution.target(s) (some name
    # targets AgentV's targets file does not define: its READMEs pass --target): not a problem here.
    problems = [p for p in validate_paths([path]) if not p.field.startswith("execution.target")]
    if problems:
        first = problems[0]
        return "rejected", f"{Path(first.file).name}:{first.line}: {first.field}: {first.message}"
    before = len(server.target_requests())
    target = ["--target", "openai:gpt-4o-mini"]
    if named is not None:
        targets = out.parent / "targets.yaml"
        targets.write_text(f"targets:\n  - name: {named}\n    provider: openai\n    model: gpt-4o-mini\n")
        target = ["--targets", str(targets), "--target", named]
    code, stdout, stderr = cli("run", path, *target, "--no-cache", "-o", out)
    results = read_jsonl(out) if out.exists() else []
    if not results:
        return "target refused", (stdout + stderr).strip()[-300:]
    assert sorted(r["test_id"] for r in results) == sorted(t.id for t in load_suite(path).tests)
    skipped = [r for r in results if r["execution_status"] == "skipped"]
    if len(skipped) == len(results):  # AgentV skips each of its tests too (each says why)
        return SKIPPED, str(skipped[0].get("error") or "")
    failed = [r for r in results if r["execution_status"] == "execution_error"]
    errors = [s for r in results for s in _errors(r["scores"])]
    reason = str(failed[0].get("error") or "") if failed else (errors[0] if errors else "")
    if not failed and not errors:
        assert len(server.target_requests()) > before
        if named is not None:  # the graders' calls reached the judge through the proxy
            proxied = [g for r in results for s in r["scores"] for g in s.get("graders", [s]) if g.get("judge_calls")]
            assert proxied and all(g["details"]["target_proxy"]["call_count"] for g in proxied), results
        return RUNS, ""
    if "command not found: 'bun'" in reason or "command not found: 'uv'" in reason:
        return MISSING_TOOL, reason
    return "error", reason


def _errors(scores: list) -> list[str]:
    """Graders that could not decide, and AgentV code-graders whose program failed (AgentV,
    and so convoeval for its files, scores those 0: here they count as not running unchanged)."""
    found = []
    for score in scores:
        for item in [*score.get("graders", []), *score.get("scores", []), score]:  # a grader's own error first
            if not isinstance(item, dict):
                continue
            failed = [a for a in item.get("assertions") or [] if str(a.get("text", "")).startswith(FAILED)]
            if item.get("verdict") == "error" or (item.get("type") == "code-grader" and failed):
                first = {k: item[k] for k in ("name", "type", "error") if item.get(k)}  # why, first
                found.append(json.dumps({**first, **item})[:600])
    return found


@pytest.mark.parametrize(("tag", "name"), CASES, ids=[f"{t}:{n}" for t, n in CASES])
def test_agentv_file(
    tag: str,
    name: str,
    agentv_env: FakeOpenAIServer,
    agentv_sdks: dict[str, str],
    cli,
    tmp_path: Path,
    request,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("NODE_PATH", agentv_sdks[tag])
    found, reason = classify(AGENTV / tag / name, cli, tmp_path / "results.jsonl", agentv_env, README_TARGET.get(name))
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
