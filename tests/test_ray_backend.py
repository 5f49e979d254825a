"""The Ray backend on a local Ray with 2 CPUs: the same suite gives the same results as the
local backend, a trial whose worker dies is retried, and request limits hold across workers."""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path

import pytest

import convoeval
from convoeval.testing import FakeOpenAIServer

from .conftest import write

ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'convoeval[ray]')")


@pytest.fixture(scope="module", autouse=True)
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, logging_level="ERROR", log_to_driver=False)
    yield
    ray.shutdown()


@pytest.fixture
def suite(tmp_path: Path):
    with FakeOpenAIServer(latency_s=0.05) as server:
        write(
            tmp_path / "targets.yaml",
            f"targets:\n  - {{name: bot, provider: openai, model: m, base_url: '{server.base_url}'}}\n"
            f"  - {{name: grader, provider: openai, model: j, base_url: '{server.base_url}'}}\n"
            f"  - {{name: second-grader, provider: openai, model: j2, base_url: '{server.base_url}'}}\n",
        )
        tests = "".join(
            f"  - id: t{i}\n    mode: conversation\n    turns:\n"
            f"      - {{input: 'a{i}', assertions: [Says something useful]}}\n"
            f"      - {{input: 'b{i}', assertions: [{{type: contains, value: 'b{i}'}}, {{type: contains, value: nope}}]}}\n"
            for i in range(6)
        )
        yield write(tmp_path / "s.eval.yaml", "tests:\n" + tests), server


def outcomes(report: convoeval.RunReport) -> list[tuple[str, str, float | None]]:
    return [(r.test_id, r.verdict, r.score) for r in report.results]


def test_the_same_suite_gives_the_same_results_under_both_backends(suite, tmp_path: Path) -> None:
    path, server = suite
    local = convoeval.run(path, target="bot", judge="grader", cache=False, store=False)
    on_ray = convoeval.run(
        path, target="bot", judge="grader", backend="ray", cache=False, store=tmp_path / "runs.sqlite"
    )
    assert outcomes(on_ray) == outcomes(local) and len(local.results) == 6
    assert on_ray.summary["calls"] == local.summary["calls"] == 18  # the workers' calls are counted
    assert on_ray.results[0].scores[0].graders[0].judge_calls == 1


def test_a_judge_panel_is_rebuilt_in_the_workers(suite, tmp_path: Path) -> None:
    path, server = suite
    options = {"target": "bot", "judge": ["grader", "second-grader"], "panel_rule": "min", "cache": False}
    local = convoeval.run(path, store=False, **options)
    on_ray = convoeval.run(path, backend="ray", store=tmp_path / "runs.sqlite", **options)
    assert outcomes(on_ray) == outcomes(local)
    rubric = on_ray.results[0].scores[0].graders[0]
    assert [a.judge for a in rubric.panel or []] == ["grader", "second-grader"] and rubric.panel_rule == "min"
    assert {b["model"] for b in server.judge_requests()} == {"j", "j2"}


def test_a_checks_own_judge_is_rebuilt_in_the_workers(suite, tmp_path: Path) -> None:
    path, server = suite
    own = path.read_text().replace(
        "{type: contains, value: nope}", "{type: rubrics, criteria: [Polite], judge: second-grader}"
    )
    path.write_text(own)
    local = convoeval.run(path, target="bot", judge="grader", cache=False, store=False)
    on_ray = convoeval.run(
        path, target="bot", judge="grader", backend="ray", cache=False, store=tmp_path / "runs.sqlite"
    )
    assert outcomes(on_ray) == outcomes(local)
    models = [b["model"] for b in server.judge_requests()]
    assert models.count("j") == models.count("j2") == 12  # each run: 6 turn-1 rubrics by `grader`, 6 by its own


def test_requests_in_flight_stay_bounded_across_workers(suite) -> None:
    path, server = suite
    report = convoeval.run(
        path, target="bot", judge="grader", backend="ray", max_connections=1, concurrency=6, cache=False, store=False
    )
    assert len(report.results) == 6 and server.max_in_flight == 1


AGENT = """
import os
from pathlib import Path

def reply(messages):
    marker = Path(__file__).with_name("crashed-once")
    if not marker.exists():
        marker.write_text("x")
        os._exit(1)  # the worker dies in the middle of the trial
    return "fine"
"""


def test_a_trial_whose_worker_dies_is_retried(tmp_path: Path) -> None:
    write(tmp_path / "agent.py", AGENT)
    write(tmp_path / "targets.yaml", "targets:\n  - {name: agent, provider: python, callable: agent.py:reply}\n")
    path = write(
        tmp_path / "s.eval.yaml", "tests:\n  - {id: a, input: hi, assertions: [{type: contains, value: fine}]}\n"
    )
    [result] = convoeval.run(path, target="agent", backend="ray", cache=False, store=False).results
    assert (tmp_path / "crashed-once").exists() and result.verdict == "pass", result.error


def test_a_python_object_target_is_refused_with_a_clear_error(tmp_path: Path) -> None:
    path = write(tmp_path / "s.eval.yaml", "tests:\n  - {id: a, input: hi}\n")
    [result] = convoeval.run(path, target=lambda messages: "hi", backend="ray", cache=False, store=False).results
    assert result.execution_status == "execution_error" and "is a Python object" in (result.error or "")


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")
def test_a_model_command_in_a_ray_worker_cannot_show_the_eval_file() -> None:
    """Ray workers did not get the run's files a model's commands never see (`--processes`
    workers did): a command tool next to the suite printed the eval file's answer."""
    from convoeval.testing import tool_calls

    answer = "ANSWER-7d1c"
    folder = Path("/var/tmp") / f"convoeval-ray-view-{uuid.uuid4().hex}"  # outside /tmp, as a user's files are
    try:
        write(folder / "show.py", "import json, os\nprint(open(json.loads(os.environ['TOOL_ARGS'])['path']).read())\n")
        with FakeOpenAIServer() as server:
            server.reset(
                reply=lambda body: (
                    "done"
                    if body["messages"][-1]["role"] == "tool"
                    else tool_calls(("show", {"path": str(folder / "s.eval.yaml")}))
                )
            )
            write(
                folder / "targets.yaml",
                f"targets:\n  - {{name: bot, provider: openai, model: m, base_url: '{server.base_url}', api_key: sk-x1234567,"
                f" agent: {{tools: [{{name: show, command: 'python3 {folder}/show.py'}}]}}}}\n",
            )
            suite = write(
                folder / "s.eval.yaml",
                f"execution: {{target: bot}}\ntests:\n  - id: t\n    workspace: {{}}\n    input: go\n"
                f"    assertions: [{{type: contains, value: {answer}}}]\n",
            )
            report = convoeval.run(suite, judge="scripted", cache=False, store=False, backend="ray")
        [call] = [c for m in report.results[0].output for c in m.tool_calls]
        assert call.output is not None and answer not in call.output and "tests:" not in call.output, call
    finally:
        shutil.rmtree(folder, ignore_errors=True)
