"""The Ray backend on a real cluster: a head and a second node started with `ray start` on this
machine (separate raylets, tests/ray_nodes.py), joined with `--ray-address`. A chat suite and a
workspace suite give the local backend's results, `--max-connections` holds across both nodes,
trials land on both, and the run's sandbox choice reaches the workers (the second node's own
environment says `CONVOEVAL_SANDBOX=none`, which must not loosen a run that chose bubblewrap)."""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import pytest

import convoeval
from convoeval.results import EvaluationResult
from convoeval.testing import FakeOpenAIServer, schema_instance, tool_calls

from .conftest import REPO, write

ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'convoeval[ray]')")
from .ray_nodes import RAY_ENV, RayNodes  # noqa: E402 - needs psutil, which comes with Ray

needs_bwrap = pytest.mark.skipif(
    shutil.which("bwrap") is None, reason="bubblewrap is not installed (.ci/run installs it)"
)
PLACEMENT = re.compile(r"ray: (\d+) trial\(s\) on (\d+) node\(s\) \((.*)\)")


@pytest.fixture(scope="module")
def cluster() -> Iterator[RayNodes]:
    with pytest.MonkeyPatch.context() as env:
        for name, value in RAY_ENV.items():
            env.setenv(name, value)
        env.delenv("RAY_ADDRESS", raising=False)
        env.delenv("CONVOEVAL_SANDBOX", raising=False)
        nodes = RayNodes(cpus=1, second_env={"CONVOEVAL_SANDBOX": "none"})
        try:
            ray.init(address=nodes.address, logging_level="ERROR", log_to_driver=False)
            yield nodes
        finally:
            ray.shutdown()
            nodes.stop()


def node_ids() -> set[str]:
    return {n["NodeID"][:8] for n in ray.nodes() if n["Alive"]}


def placement(notes: list[str] | str) -> dict[str, int]:
    """Trials per node (id prefix) from the run's `ray: ... on N node(s)` note."""
    [found] = PLACEMENT.findall(notes if isinstance(notes, str) else "\n".join(notes))
    return {node: int(n) for node, n in (part.split(": ") for part in found[2].split(", "))}


def cli_run(suite: Path, *options: str) -> tuple[list[EvaluationResult], str]:
    """`convoeval run` in its own process (a fresh Ray driver): the results and what it printed."""
    out = suite.with_name(f"r-{uuid.uuid4().hex[:8]}.jsonl")
    argv = [sys.executable, "-m", "convoeval", "run", str(suite), *options, "--no-cache", "-o", str(out)]
    done = subprocess.run(argv, cwd=suite.parent, capture_output=True, text=True, timeout=300)
    assert out.exists(), done.stdout + done.stderr
    return [EvaluationResult.model_validate_json(line) for line in out.read_text().splitlines()], done.stdout


def on_both_nodes(
    run: Callable[[], tuple[list[EvaluationResult], str]], check: Callable[[list[EvaluationResult]], None]
) -> Counter[str]:
    """Trials per node over runs of `run`, each checked, until both nodes ran some (3 runs at
    most): Ray's SPREAD is best effort, and a short suite may fit on the first node."""
    ran: Counter[str] = Counter()
    for _ in range(3):
        results, printed = run()
        check(results)
        ran.update(placement(printed))
        if set(ran) == node_ids():
            break
    return ran


def outcomes(results: Sequence[EvaluationResult]) -> list[tuple[str, str, float | None, list[str | None]]]:
    return sorted((r.test_id, r.verdict, r.score, [s.verdict for s in r.scores]) for r in results)


def judge(body: dict[str, Any]) -> str:
    """A judge that fails conversation c3's rubric and passes the others."""
    schema = body["response_format"]["json_schema"]["schema"]
    return json.dumps(schema_instance(schema, satisfied="'c3'" not in json.dumps(body).replace('"', "'")))


def test_a_chat_suite_through_ray_address_matches_local_with_the_limit_held_across_both_nodes(
    cluster: RayNodes, tmp_path: Path
) -> None:
    with FakeOpenAIServer(judge=judge, latency_s=0.05) as server:
        write(
            tmp_path / "targets.yaml",
            f"targets:\n  - {{name: bot, provider: openai, model: m, base_url: '{server.base_url}'}}\n"
            f"  - {{name: grader, provider: openai, model: j, base_url: '{server.base_url}'}}\n",
        )
        tests = "".join(
            f"  - id: c{i}\n    mode: conversation\n    turns:\n"
            f"      - {{input: 'c{i} first', assertions: [Answers the question]}}\n"
            f"      - {{input: 'c{i} second', assertions: [{{type: contains, value: 'c{i} second'}},"
            f" {{type: contains, value: {'Reply' if i % 2 else 'nope'}}}]}}\n"
            for i in range(8)
        )
        suite = write(tmp_path / "chat.eval.yaml", "tests:\n" + tests)
        local = convoeval.run(suite, target="bot", judge="grader", cache=False, store=False)
        server.reset(judge=judge)
        out = tmp_path / "ray.jsonl"
        argv = [sys.executable, "-m", "convoeval", "run", str(suite), "--target", "bot", "--judge", "grader"]
        argv += ["--backend", "ray", "--ray-address", cluster.address, "--max-connections", "1"]
        argv += ["--concurrency", "8", "--no-cache", "-o", str(out)]
        done = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=300)
        assert done.returncode == 1, done.stdout + done.stderr  # some tests fail, none errs
        on_cluster = [EvaluationResult.model_validate_json(line) for line in out.read_text().splitlines()]
        assert outcomes(on_cluster) == outcomes(local.results) and len(on_cluster) == 8
        assert {r.verdict for r in on_cluster} == {"pass", "fail"}
        assert len(server.requests) == len(local.results) * 3  # two turns and one judge call each
        assert server.max_in_flight == 1  # --max-connections 1 held by both nodes together
        ran = placement(done.stdout + done.stderr)
        assert set(ran) == node_ids() and len(ran) == 2 and sum(ran.values()) == 8, ran


def repair_suite(tmp_path: Path) -> Path:
    """examples/repair-loop (a Python agent editing files, `verify` in the sandbox) as six tests;
    r5 gets no hint, so it never verifies and fails."""
    folder = tmp_path / "repair"
    shutil.copytree(REPO / "examples" / "repair-loop", folder, ignore=shutil.ignore_patterns(".convoeval"))
    text = (folder / "repair.eval.yaml").read_text()
    head, test = text.split("tests:\n")
    tests = [test.replace("- id: repair-calc", f"- id: r{i}") for i in range(6)]
    tests[5] = tests[5].replace('      - "Hint: add() must return the sum of its arguments."\n', "")
    tests[5] = tests[5].replace("    hints:\n", "    hints: []\n")
    return write(folder / "repair.eval.yaml", head + "tests:\n" + "".join(tests))


@needs_bwrap
def test_a_workspace_suite_runs_across_both_nodes_with_local_results(cluster: RayNodes, tmp_path: Path) -> None:
    suite = repair_suite(tmp_path)
    options: dict[str, Any] = {"judge": "scripted", "cache": False, "store": False, "concurrency": 6}
    local = convoeval.run(suite, **options)

    def check(on_cluster: list[EvaluationResult]) -> None:
        assert outcomes(on_cluster) == outcomes(local.results)
        assert [r.verdict for r in sorted(on_cluster, key=lambda r: r.test_id)] == ["pass"] * 5 + ["fail"]
        verify = next(s for s in on_cluster[0].scores if s.name == "verify")
        assert verify.assertions and all(r.sandbox == "bubblewrap" for r in on_cluster)

    args = ("--judge", "scripted", "--concurrency", "6", "--backend", "ray", "--ray-address", cluster.address)
    ran = on_both_nodes(partial(cli_run, suite, *args), check)
    assert set(ran) == node_ids(), ran


def bash_home(body: dict[str, Any]) -> str | dict[str, Any]:
    """A model that asks `bash` where its HOME is, then stops."""
    return tool_calls(("bash", {"command": "echo home=$HOME"})) if body["messages"][-1]["role"] == "user" else "done"


@needs_bwrap
def test_the_runs_sandbox_choice_reaches_the_workers_of_every_node(cluster: RayNodes, tmp_path: Path) -> None:
    with FakeOpenAIServer(reply=bash_home, latency_s=0.05) as server:
        write(
            tmp_path / "targets.yaml",
            f"targets:\n  - {{name: bot, provider: openai, model: m, base_url: '{server.base_url}', "
            "agent: {tools: [bash]}}\n",
        )
        tests = "".join(f"  - {{id: p{i}, workspace: {{}}, input: go}}\n" for i in range(6))
        suite = write(tmp_path / "s.eval.yaml", "execution: {target: bot}\ntests:\n" + tests)
        options = ("--backend", "ray", "--ray-address", cluster.address)
        homes: dict[str, set[str]] = {"bubblewrap": set(), "none": set()}
        for choice in homes:

            def check(results: list[EvaluationResult], choice: str = choice) -> None:
                calls = [c for r in results for s in r.scores for c in s.tool_calls]
                assert len(calls) == 6, [(r.error, r.notes) for r in results]
                assert all(r.sandbox == choice for r in results)
                homes[choice] |= {
                    re.sub(r"convoeval-home-\w+", "convoeval-home-*", str(c.output).strip()) for c in calls
                }

            run = partial(cli_run, suite, "--judge", "scripted", "--concurrency", "6", "--sandbox", choice, *options)
            ran = on_both_nodes(run, check)
            assert set(ran) == node_ids(), ran  # both nodes ran trials: the second one too
    # Bubblewrap's HOME is /tmp/home on every node, though the second node's environment says
    # CONVOEVAL_SANDBOX=none; chosen by name, `none` gives each command a fresh convoeval-home-*.
    fresh = f"exit code 0\nhome={Path(tempfile.gettempdir()) / 'convoeval-home-*'}"
    assert homes == {"bubblewrap": {"exit code 0\nhome=/tmp/home"}, "none": {fresh}}, homes


@pytest.mark.skipif(importlib.util.find_spec("grpc") is None, reason="Ray Client needs ray[client] (grpcio)")
def test_the_cli_joins_through_ray_client_too(cluster: RayNodes, tmp_path: Path) -> None:
    with FakeOpenAIServer() as server:
        write(
            tmp_path / "targets.yaml",
            f"targets:\n  - {{name: bot, provider: openai, model: m, base_url: '{server.base_url}'}}\n",
        )
        suite = write(
            tmp_path / "s.eval.yaml",
            "tests:\n  - {id: a, input: hi, assertions: [{type: contains, value: hi}]}\n"
            "  - {id: b, input: yo, assertions: [{type: contains, value: nope}]}\n",
        )
        argv = [sys.executable, "-m", "convoeval", "run", str(suite), "--target", "bot", "--backend", "ray"]
        argv += ["--ray-address", cluster.client_address, "--no-cache", "-o", str(tmp_path / "r.jsonl")]
        done = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=300)
        if any(sign in done.stderr for sign in ("Starting Ray client server failed", "ZombieProcess")):
            # Every Ray Client proxier starts a client's server on the first free port from 23000
            # up, checked seconds before that server binds it: two clusters on one machine (a
            # parallel test session) can pick the same port. The server that lost exits, and the
            # proxier says so either way (or, when it looks at the dead process's command line,
            # with psutil's ZombieProcess). The proxier tries the next port now.
            done = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=300)
        logs = "".join(p.read_text()[-3000:] for p in cluster.folder.glob("ray/session_latest/logs/ray_client_server*"))
        assert (tmp_path / "r.jsonl").exists(), done.stdout + done.stderr + logs
        results = [
            EvaluationResult.model_validate_json(line) for line in (tmp_path / "r.jsonl").read_text().splitlines()
        ]
        assert [(r.test_id, r.verdict) for r in results] == [("a", "pass"), ("b", "fail")], done.stdout + done.stderr
        assert done.returncode == 1 and len(server.requests) == 2 and sum(placement(done.stdout).values()) == 2
