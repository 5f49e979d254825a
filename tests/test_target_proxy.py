"""AgentV's target proxy (`graders/_target_proxy.py`): a code-grader with `target: {max_calls: N}`
calls the check's judge through a loopback proxy of its own, on the host and in bubblewrap.

The graders here are a Python program (every route and refusal, what the program can reach and
what it is given) and, with `bun`, AgentV's own example and client (`createTargetClient` from
AgentV's `target-client.ts`, `createProviderClient` from main's `provider-client.ts`), imported
from AgentV's real SDK of the tag (tests/agentv_sdk.py). The judge is the fake server, which counts
the requests it received.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from convoeval import _sandbox as sandbox
from convoeval.testing import FakeOpenAIServer, Fault

from .agentv_sdk import node_path
from .conftest import DATA, REPO, read_jsonl, write

KEY = "sk-test-SECRET-never-stored-1234"
AGENTV = DATA / "agentv"
BUN = shutil.which("bun", path=str(REPO / ".tools" / "node_modules" / ".bin")) or shutil.which("bun")
needs_bun = pytest.mark.skipif(BUN is None, reason="bun is not installed (.ci/run installs it under .tools/)")

#: A grader that tries every route of the proxy and what else it can reach, and reports it.
PROBE = """\
import json, os, socket, sys, urllib.error, urllib.request

json.load(sys.stdin)
url, token = os.environ["AGENTV_TARGET_PROXY_URL"], os.environ["AGENTV_TARGET_PROXY_TOKEN"]


def call(path, body=None, token=token):
    headers = {"Content-Type": "application/json"}
    if token is not None:
        headers["Authorization"] = "Bearer " + token
    data = None if body is None else json.dumps(body).encode()
    try:
        with urllib.request.urlopen(urllib.request.Request(url + path, data=data, headers=headers)) as r:
            return r.status, json.load(r)
    except urllib.error.HTTPError as e:
        return e.code, json.load(e)


def reaches(port):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
        return True
    except OSError:
        return False


seen = {
    "no_token": call("/info", token=None)[0],
    "wrong_token": call("/invoke", {"question": "proxy-q0"}, token="0" * 64)[0],
    "info": call("/info"),
    "one": call("/invoke", {"question": "proxy-q1", "systemPrompt": "Answer briefly."}),
    "unknown": call("/invoke", {"question": "proxy-q2", "target": "nope"}),
    "batch": call("/invokeBatch", {"requests": [{"question": "proxy-q3"}, {"question": "proxy-q4", "target": "nope"}]}),
    "too_big_batch": call("/invokeBatch", {"requests": [{"question": "x"}] * 3})[0],
    "last": call("/invoke", {"question": "proxy-q5"})[0],
    "over": call("/invoke", {"question": "proxy-q6"}),
    "judge_port_reachable": reaches(int(os.environ["JUDGE_PORT"])),
    "secret_in_env": any("SECRET" in v for v in os.environ.values()),
    "relay_folder": sorted(os.listdir("/run/convoeval-proxy")) if os.path.isdir("/run/convoeval-proxy") else None,
}
print(json.dumps({"score": 1, "details": {"seen": seen}}))
"""


def _eval_file(tmp_path: Path, *, workspace: bool) -> Path:
    write(tmp_path / "probe.py", PROBE)
    hooks = "workspace:\n  hooks:\n    before_each: {command: 'echo made > made.txt'}\n" if workspace else ""
    command = f"[{sys.executable}, {tmp_path / 'probe.py'}]"
    return write(
        tmp_path / "p.eval.yaml",
        f"""\
{hooks}tests:
  - id: t
    input: hello
    assertions:
      - type: code-grader
        command: {command}
        env: [JUDGE_PORT]
        target: {{max_calls: 3}}
""",
    )


def _bwrap_works() -> bool:
    if shutil.which("bwrap") is None:
        return False
    return (
        subprocess.run(["bwrap", "--unshare-all", "--ro-bind", "/", "/", "true"], capture_output=True).returncode == 0
    )


@pytest.mark.parametrize("where", ["host", "bubblewrap"])
def test_the_program_reaches_the_judge_only_through_its_proxy(
    where: str, fake_openai: FakeOpenAIServer, cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Outside a workspace the program runs on the host (`run_program`); in a workspace, in
    bubblewrap with no network, where the relay is its only way to the proxy."""
    if where == "bubblewrap" and not _bwrap_works():
        pytest.skip("bubblewrap is not usable here")
    monkeypatch.setenv("JUDGE_PORT", fake_openai.base_url.split(":")[2].split("/")[0])
    path = _eval_file(tmp_path, workspace=where == "bubblewrap")
    out = tmp_path / "r.jsonl"
    sandbox_name = "bubblewrap" if where == "bubblewrap" else "none"
    code, stdout, stderr = cli(
        "run", path, "--target", "openai:gpt-4o-mini", "--judge", "openai:gpt-4o-mini",
        "--no-cache", "--sandbox", sandbox_name, "-o", out,
    )  # fmt: skip
    assert code == 0, stdout + stderr
    [result] = read_jsonl(out)
    [grader] = [g for s in result["scores"] for g in s.get("graders", [s]) if g["type"] == "code-grader"]
    seen = grader["details"]["seen"]
    assert (seen["no_token"], seen["wrong_token"]) == (401, 401)
    assert seen["info"] == [
        200,
        {
            "targetName": "openai:gpt-4o-mini",
            "providerLabel": "openai:gpt-4o-mini",
            "maxCalls": 3,
            "callCount": 0,
            "availableTargets": ["openai:gpt-4o-mini"],
            "availableProviderLabels": ["openai:gpt-4o-mini"],
        },
    ]
    status, one = seen["one"]
    assert status == 200 and one["rawText"] == "Reply to: proxy-q1"
    assert one["output"] == [{"role": "assistant", "content": "Reply to: proxy-q1"}]
    assert one["tokenUsage"]["input"] > 0 and one["tokenUsage"]["output"] > 0
    assert seen["unknown"] == [400, {"error": "Unknown target 'nope'. Available: openai:gpt-4o-mini"}]
    status, batch = seen["batch"]
    assert status == 200 and [r["rawText"] for r in batch["responses"]] == [
        "Reply to: proxy-q3",
        "Error: Unknown target 'nope'. Available: openai:gpt-4o-mini",
    ]
    assert seen["too_big_batch"] == 429  # 2 calls made, 3 more asked, 3 allowed
    assert seen["last"] == 200
    assert seen["over"] == [429, {"error": "Max calls exceeded (limit: 3)"}]
    # The judge received exactly the 3 calls made, with the system prompt given.
    proxied = [r["messages"] for r in fake_openai.requests if "proxy-q" in json.dumps(r["messages"])]
    assert [m[-1]["content"] for m in proxied] == ["proxy-q1", "proxy-q3", "proxy-q5"]
    assert proxied[0][0] == {"role": "system", "content": "Answer briefly."}
    # Counted as the check's judge calls, in the test's and the run's totals.
    assert grader["details"]["target_proxy"] == {"call_count": 3, "max_calls": 3}
    assert grader["judge_calls"] == 3 and grader["judge_usage"]["input_tokens"] > 0
    assert result["judge_token_usage"]["input_tokens"] >= grader["judge_usage"]["input_tokens"]
    assert "4 model call(s)" in stdout  # the target's reply and the 3 proxied calls
    # The key never reaches the program nor the results.
    assert seen["secret_in_env"] is False
    assert KEY not in out.read_text() and KEY not in stdout + stderr
    if where == "bubblewrap":
        assert seen["judge_port_reachable"] is False  # the host's loopback is not the sandbox's
        assert seen["relay_folder"] == ["proxy.sock"]


def test_without_target_the_program_gets_no_proxy(fake_openai: FakeOpenAIServer, cli, tmp_path: Path) -> None:
    write(
        tmp_path / "g.py",
        "import json, os, sys\nprint(json.dumps({'score': 1, 'details': {'env': sorted(os.environ)}}))\n",
    )
    path = write(
        tmp_path / "p.eval.yaml",
        f"tests:\n  - id: t\n    input: hi\n    assertions:\n      - type: code-grader\n"
        f"        command: [{sys.executable}, {tmp_path / 'g.py'}]\n",
    )
    code, stdout, stderr = cli("run", path, "--target", "openai:gpt-4o-mini", "--no-cache", "-o", tmp_path / "r.jsonl")
    assert code == 0, stdout + stderr
    [grader] = read_jsonl(tmp_path / "r.jsonl")[0]["scores"][0]["graders"]
    assert not [k for k in grader["details"]["env"] if k.startswith("AGENTV_")]
    assert "target_proxy" not in grader["details"]


def test_bad_target_settings_are_one_line_errors(cli, tmp_path: Path) -> None:
    write(tmp_path / "g.py", "")
    path = write(
        tmp_path / "bad.eval.yaml",
        """\
tests:
  - id: t
    input: hi
    assertions:
      - {type: code-grader, command: [python3, g.py], target: {max_calls: -1}}
      - {type: code-grader, command: [python3, g.py], target: {max_calls: many}}
      - {type: code-grader, command: [python3, g.py], target: {max_call: 3}}
      - {type: code-grader, command: [python3, g.py], target: {max_calls: 3}, provider: true}
      - {type: code-grader, command: [python3, g.py], judge: openai:gpt-4o-mini}
      - {type: code-grader, command: [python3, g.py], target: 7}
""",
    )
    code, stdout, stderr = cli("validate", path)
    assert code == 2
    lines = [line.removeprefix(f"{tmp_path}/") for line in (stdout + stderr).splitlines() if "bad.eval.yaml:" in line]
    assert len(lines) == 6, stdout + stderr
    assert (
        "bad.eval.yaml:5: tests[0].assertions[0].target.max_calls: Input should be greater than or equal to 0" in lines
    )
    assert lines[1].startswith(
        "bad.eval.yaml:6: tests[0].assertions[1].target.max_calls: Input should be a valid integer"
    )
    assert lines[2].startswith("bad.eval.yaml:7: tests[0].assertions[2].target.max_call: unknown field 'max_call'")
    assert "give `target` or `provider`" in lines[3] and "add `target: {max_calls: N}`" in lines[4]
    assert lines[5] == (
        "bad.eval.yaml:10: tests[0].assertions[5].target: the target proxy is `true` or a mapping like `{max_calls: 10}`"
    )
    assert "Traceback" not in stdout + stderr


def test_the_docker_sandbox_says_it_has_no_proxy(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No daemon is needed: the refusal comes before docker is asked anything."""
    monkeypatch.setattr(sandbox, "backend", lambda: "docker")
    relay = sandbox.Relay(tmp_path / "proxy.sock", "AGENTV_TARGET_PROXY_URL")
    with pytest.raises(sandbox.SandboxError, match="not available in the docker sandbox"):
        asyncio.run(sandbox.run(["true"], tmp_path, timeout_s=5, relay=relay))


_NODE = re.compile(r"Retrieved Node \(Rank \d+\):\n(.*)")


def _relevance(body: dict) -> str:
    """The judge of AgentV's contextual-precision example: a node is relevant when it names
    the answer (the eval file's comments say which nodes are)."""
    text = body["messages"][-1]["content"]
    node = _NODE.search(text)
    if node is None:
        return "An answer."
    relevant = any(word in node.group(1) for word in ("JavaScript", "Paris", "sky"))
    return json.dumps({"relevant": relevant, "reasoning": "names it" if relevant else "does not"})


@needs_bun
@pytest.mark.parametrize("tag", ["v4.15.0", "v4.42.4"])
def test_agentv_contextual_precision_scores_as_its_file_says(
    tag: str, cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """AgentV's example, unchanged, run as its README says (`--target gemini-llm`): each
    retrieval node is judged through the proxy (`invokeBatch`, target `gemini-llm`), and the
    scores are the ones the file's comments give."""
    folder = AGENTV / tag / "examples" / "features" / "code-grader-with-llm-calls"
    targets = write(tmp_path / "targets.yaml", "targets:\n  - name: gemini-llm\n    provider: openai\n    model: m\n")
    with FakeOpenAIServer(reply=_relevance) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        monkeypatch.setenv("NODE_PATH", node_path(tag, tmp_path))
        monkeypatch.setenv("PATH", f"{Path(BUN or 'bun').parent}{os.pathsep}{os.environ['PATH']}")
        out = tmp_path / "r.jsonl"
        code, stdout, stderr = cli(
            "run", folder / "evals" / "contextual-precision.eval.yaml", "--targets", targets,
            "--target", "gemini-llm", "--no-cache", "--sandbox", "none", "-o", out,
        )  # fmt: skip
        judged = [r for r in server.requests if _NODE.search(r["messages"][-1]["content"])]
    assert code == 1, stdout + stderr  # relevant-node-last is meant to fail
    scores = {r["test_id"]: r["score"] for r in read_jsonl(out)}
    assert scores == pytest.approx({"perfect-ranking": 1.0, "mixed-ranking": 5 / 6, "relevant-node-last": 1 / 3})
    assert len(judged) == 9  # 3 nodes in each of 3 tests, one call each
    for result in read_jsonl(out):
        [grader] = result["scores"][0]["graders"]
        assert grader["details"]["target_proxy"] == {"call_count": 3, "max_calls": 10}
        assert grader["judge_calls"] == 3
    assert KEY not in out.read_text()


#: A grader written against AgentV's own client (CLIENT: `createTargetClient` of `@agentv/sdk`, or
#: `createProviderClient` of `agentv`, AgentV's name after v5.3): its errors carry the status.
CLIENT_GRADER = """\
import { CLIENT, defineCodeGrader } from 'PACKAGE';

export default defineCodeGrader(async () => {
  const target = CLIENT();
  const info = await target.getInfo();
  const first = await target.invoke({ question: 'client-q1', systemPrompt: 'Be brief.' });
  const statuses = [];
  for (const request of [{ question: 'client-q2', FIELD: 'other' }, { question: 'client-q3' }, { question: 'client-q4' }]) {
    try {
      await target.invoke(request);
      statuses.push(200);
    } catch (error) {
      statuses.push(error.statusCode);
    }
  }
  const details = { info, first: first.rawText, statuses, url: process.env.VARIABLE };
  return { pass: true, score: 1, reason: 'called', details };  // v5's result; v4.42's keeps score and details
});
"""
#: field -> (client, package, URL variable, assertion type, SDK's tag): `provider:` as AgentV's main writes it.
CLIENTS_BY_FIELD = {
    "target": ("createTargetClient", "@agentv/sdk", "AGENTV_TARGET_PROXY_URL", "code-grader", "v4.42.4"),
    "provider": ("createProviderClient", "agentv", "AGENTV_PROVIDER_PROXY_URL", "script", "main-58f316c"),
}


@needs_bun
@pytest.mark.parametrize("field", ["target", "provider"])
def test_agentv_client_in_bubblewrap(field: str, cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """AgentV's client from a TypeScript grader in a workspace (bubblewrap): it reaches the
    proxy through the relay, an unknown target is a 400 and the call past `max_calls` a 429."""
    if not _bwrap_works():
        pytest.skip("bubblewrap is not usable here")
    client, package, variable, kind, tag = CLIENTS_BY_FIELD[field]
    grader = CLIENT_GRADER.replace("CLIENT", client).replace("PACKAGE", package).replace("FIELD", field)
    write(tmp_path / "grader.ts", grader.replace("VARIABLE", variable))
    # The SDK validates its stdin: a code-grader of convoeval's own file sends AgentV's payload when told.
    protocol = "        agentv_protocol: true\n" if kind == "code-grader" else ""
    path = write(
        tmp_path / "c.eval.yaml",
        f"""\
workspace:
  hooks:
    before_each: {{command: 'echo made > made.txt'}}
tests:
  - id: t
    input: hello
    assertions:
      - type: {kind}
        command: [{BUN}, run, {tmp_path / "grader.ts"}]
        env: [NODE_PATH]
        {field}: {{max_calls: 2}}
{protocol}""",
    )
    with FakeOpenAIServer() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        # copied, not linked: the sandbox hides a checkout under /tmp (its tests/data and .tools)
        monkeypatch.setenv("NODE_PATH", node_path(tag, tmp_path, copy=True))
        out = tmp_path / "r.jsonl"
        code, stdout, stderr = cli(
            "run", path, "--target", "openai:gpt-4o-mini", "--judge", "openai:gpt-4o-mini",
            "--no-cache", "--sandbox", "bubblewrap", "-o", out,
        )  # fmt: skip
        proxied = [r for r in server.requests if "client-q" in r["messages"][-1]["content"]]
    assert code == 0, stdout + stderr
    [grader] = read_jsonl(out)[0]["scores"][0]["graders"]
    details = grader["details"]
    assert details["info"]["maxCalls"] == 2 and details["info"]["targetName"] == "openai:gpt-4o-mini"
    assert details["first"] == "Reply to: client-q1"
    assert details["statuses"] == [400, 200, 429]
    assert details["url"].startswith("http://127.0.0.1:") and details["url"] not in server.base_url
    assert [r["messages"][-1]["content"] for r in proxied] == ["client-q1", "client-q3"]
    assert details["target_proxy"] == {"call_count": 2, "max_calls": 2}


def test_the_relay_source_is_stdlib_only() -> None:
    """The relay runs with `python -I -S` in the sandbox: it may import nothing installed."""
    imported = re.findall(r"^import (.+)$", sandbox._relay.RELAY_SOURCE, re.M)
    assert imported and all(name.strip() in sys.stdlib_module_names for line in imported for name in line.split(","))
    assert textwrap.dedent(sandbox._relay.RELAY_SOURCE) == sandbox._relay.RELAY_SOURCE


FAILING = """\
import json, os, sys, urllib.error, urllib.request

json.load(sys.stdin)
request = urllib.request.Request(
    os.environ["AGENTV_TARGET_PROXY_URL"] + "/invoke",
    data=json.dumps({"question": "proxy-fails"}).encode(),
    headers={"Authorization": "Bearer " + os.environ["AGENTV_TARGET_PROXY_TOKEN"]},
)
try:
    urllib.request.urlopen(request)
    answer = [200, None]
except urllib.error.HTTPError as e:
    answer = [e.code, json.load(e)]
print(json.dumps({"score": 1, "details": {"answer": answer}}))
"""


def test_a_failed_model_call_is_a_500_without_the_key(fake_openai: FakeOpenAIServer, cli, tmp_path: Path) -> None:
    """The provider's error body quotes the key: the program reads why, redacted; the call counts."""
    write(tmp_path / "g.py", FAILING)
    path = write(
        tmp_path / "p.eval.yaml",
        f"tests:\n  - id: t\n    input: hi\n    assertions:\n      - type: code-grader\n"
        f"        command: [{sys.executable}, {tmp_path / 'g.py'}]\n        target: true\n",
    )
    body = json.dumps({"error": {"message": f"bad request for key {KEY}"}})
    fake_openai.faults.append(Fault(status=400, body=body, match="proxy-fails"))
    out = tmp_path / "r.jsonl"
    code, stdout, stderr = cli(
        "run", path, "--target", "openai:gpt-4o-mini", "--judge", "openai:gpt-4o-mini", "--no-cache", "-o", out
    )
    assert code == 0, stdout + stderr
    [grader] = read_jsonl(out)[0]["scores"][0]["graders"]
    status, answer = grader["details"]["answer"]
    assert status == 500 and answer["error"].startswith("model call failed:"), answer
    assert grader["details"]["target_proxy"] == {"call_count": 1, "max_calls": 50}
    assert KEY not in out.read_text() and KEY not in stdout + stderr


def test_proxied_calls_take_the_runs_cache(fake_openai: FakeOpenAIServer, cli, tmp_path: Path) -> None:
    """The same run again answers the program's calls from the response cache, as judge calls."""
    write(tmp_path / "g.py", FAILING.replace("proxy-fails", "cached-question"))
    path = write(
        tmp_path / "p.eval.yaml",
        f"tests:\n  - id: t\n    input: hi\n    assertions:\n      - type: code-grader\n"
        f"        command: [{sys.executable}, {tmp_path / 'g.py'}]\n        target: {{max_calls: 1}}\n",
    )
    args = ("run", path, "--target", "openai:gpt-4o-mini", "--judge", "openai:gpt-4o-mini", "-o", tmp_path / "r.jsonl")
    code, first, _ = cli(*args)
    assert code == 0 and "2 model call(s), 0 cache hit(s)" in first, first
    code, second, _ = cli(*args)
    assert code == 0 and "0 model call(s), 2 cache hit(s)" in second, second
    assert len(fake_openai.requests) == 2
    [grader] = read_jsonl(tmp_path / "r.jsonl")[0]["scores"][0]["graders"]
    assert grader["details"]["answer"] == [200, None] and grader["judge_calls"] == 1
