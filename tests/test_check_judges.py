"""A judged check that names its own `judge` (AgentV: an llm-grader's `target`, v5's `provider`)
is graded by that model alone, whatever the run's judge or panel; in one process and in worker
processes; against the loopback fake OpenAI server, whose judge answers as the model asked."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import convoeval
from convoeval.errors import SpecError
from convoeval.targets import TargetConfig, create_target
from convoeval.testing import FakeOpenAIServer, agrade, grade_context

from .conftest import read_jsonl, write
from .test_judge_panel import GRADER, RUBRIC, TARGETS, panel_judge
from .test_judge_panel import SUITE as PANEL_SUITE

#: q1-q4 of tests/test_judge_panel.py (not q5, its scenario): the rubric names judge-b as its own
#: judge; the 0-10 llm-grader is the run's (judge-b fails q2's rubric and rates q3 4/10; judge-a does not).
SUITE = PANEL_SUITE.split("  - id: q5")[0].replace(
    '        criteria: ["Answers the question"]\n',
    '        criteria: ["Answers the question"]\n        judge: openai:judge-b\n',
)


@pytest.fixture
def desk(fake_openai: FakeOpenAIServer, tmp_path: Path) -> Path:
    fake_openai.judge = panel_judge
    write(tmp_path / "targets.yaml", TARGETS)
    return write(tmp_path / "own.eval.yaml", SUITE)


def graders(result: dict, type_: str) -> dict:
    return next(g for e in result["scores"] for g in e["graders"] if g["type"] == type_)


def judged_by(server: FakeOpenAIServer) -> dict[str, list[str]]:
    """The models asked, by the kind of check: `rubrics` (no score asked) or `llm-grader`."""
    asked: dict[str, list[str]] = {"rubrics": [], "llm-grader": []}
    for body in server.judge_requests():
        schema = json.dumps(body.get("response_format", {}))
        asked["llm-grader" if '"score"' in schema else "rubrics"].append(body["model"])
    return asked


def run(desk: Path, tmp_path: Path, **options: object) -> dict[str, dict]:
    out = tmp_path / f"r{len(list(tmp_path.glob('r*.jsonl')))}.jsonl"
    convoeval.run(desk, targets_file=desk.parent / "targets.yaml", target="bot", output=out, cache=False, **options)
    return {r["test_id"]: r for r in read_jsonl(out)}


@pytest.mark.parametrize("processes", [1, 2])
def test_a_check_with_its_own_judge_is_graded_by_it_alone(desk: Path, tmp_path: Path, fake_openai, processes) -> None:
    results = run(desk, tmp_path, judge="openai:judge-a", processes=processes, store=False)
    for n in range(1, 5):
        rubric, scored = graders(results[f"q{n}"], "rubrics"), graders(results[f"q{n}"], "llm-grader")
        assert rubric["verdict"] == ("pass" if RUBRIC["judge-b"][f"q{n}"] else "fail")
        assert scored["score"] == GRADER["judge-a"][f"q{n}"] / 10  # judge-a rates 10/10 everywhere
        assert rubric["judge_calls"] == scored["judge_calls"] == 1
    assert judged_by(fake_openai) == {"rubrics": ["judge-b"] * 4, "llm-grader": ["judge-a"] * 4}


def test_a_panel_leaves_a_check_with_its_own_judge_alone(desk: Path, tmp_path: Path, fake_openai) -> None:
    results = run(desk, tmp_path, judge=["openai:judge-a", "openai:judge-b"], store=False)
    rubric, scored = graders(results["q2"], "rubrics"), graders(results["q3"], "llm-grader")
    assert rubric["verdict"] == "fail" and rubric["panel"] is None and rubric["judge_calls"] == 1
    assert [(a["judge"], a["score"]) for a in scored["panel"]] == [("openai:judge-a", 1.0), ("openai:judge-b", 0.4)]
    asked = judged_by(fake_openai)
    assert asked["rubrics"] == ["judge-b"] * 4 and sorted(asked["llm-grader"]) == ["judge-a"] * 4 + ["judge-b"] * 4


def test_a_run_whose_judged_checks_all_name_their_judge_needs_no_other(
    fake_openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    fake_openai.judge = panel_judge
    write(tmp_path / "targets.yaml", TARGETS)
    suite = write(
        tmp_path / "own.eval.yaml",
        SUITE.replace("      - type: llm-grader\n", "      - type: llm-grader\n        judge: openai:judge-a\n"),
    )
    results = run(suite, tmp_path, store=tmp_path / "runs.sqlite")  # no --judge: the target is not asked to judge
    assert [graders(results[f"q{n}"], "rubrics")["verdict"] for n in range(1, 5)] == ["pass", "fail", "pass", "fail"]
    assert judged_by(fake_openai) == {"rubrics": ["judge-b"] * 4, "llm-grader": ["judge-a"] * 4}


def test_a_judge_nobody_defines_is_a_clear_error(fake_openai: FakeOpenAIServer, tmp_path: Path) -> None:
    write(tmp_path / "targets.yaml", TARGETS)
    suite = write(tmp_path / "own.eval.yaml", SUITE.replace("judge: openai:judge-b", "judge: grader_gpt_5_mini"))
    lines = [n for n, text in enumerate(SUITE.splitlines(), 1) if text == "        judge: openai:judge-b"]
    with pytest.raises(SpecError) as info:  # every place the file names it, before any call
        run(suite, tmp_path, judge="openai:judge-a", store=False)
    problems = info.value.problems
    assert [(p.line, p.field) for p in problems] == [
        (n, f"tests[{i}].assertions[0].judge") for i, n in enumerate(lines)
    ]
    assert all(
        "'grader_gpt_5_mini' is neither `provider:model` nor a name from a targets file" in p.message for p in problems
    )
    assert fake_openai.requests == []


AGENTV_TARGETS = """\
targets:
  - {{name: bot, provider: openai, model: m, base_url: '{url}', grader_target: grader_a}}
  - {{name: grader_a, provider: openai, model: judge-a, base_url: '{url}'}}
  - {{name: grader_b, provider: openai, model: judge-b, base_url: '{url}'}}
"""


def test_agentv_names_a_graders_target_or_provider(fake_openai: FakeOpenAIServer, tmp_path: Path, cli) -> None:
    """AgentV v5.3's `target` and later v5's `provider`: both name the target that grades the check."""
    fake_openai.judge = panel_judge
    fake_openai.reply = lambda body: "Answer Q2"  # noqa: ARG005
    write(tmp_path / ".agentv" / "targets.yaml", AGENTV_TARGETS.format(url=fake_openai.base_url))
    suite = write(
        tmp_path / "evals" / "panel.eval.yaml",
        """\
target: bot
tests:
  - id: q2
    vars: {input: "Q2: a question"}
    assert:
      - {type: llm-rubric, value: [Answers the question], provider: grader_b}
      - {type: llm-rubric, value: [Answers the question], target: grader_a}
      - {type: llm-rubric, value: [Answers the question]}
""",
    )
    code, out, err = cli("run", suite, "-o", tmp_path / "r.jsonl", "--no-cache")
    assert code == 1, out + err
    [result] = read_jsonl(tmp_path / "r.jsonl")
    assert [g["verdict"] for g in result["scores"][0]["graders"]] == ["fail", "pass", "pass"]
    assert sorted(judged_by(fake_openai)["rubrics"]) == ["judge-a", "judge-a", "judge-b"]


def test_agentv_refuses_a_provider_that_names_no_target(tmp_path: Path, cli) -> None:
    suite = write(
        tmp_path / "evals" / "p.eval.yaml",
        "tests:\n  - id: a\n    vars: {input: hi}\n    assert:\n"
        "      - {type: llm-rubric, value: [Polite], provider: {id: 'openai:gpt-4o', config: {temperature: 0}}}\n",
    )
    code, out, err = cli("validate", suite)
    assert code == 2
    assert "p.eval.yaml:5: tests[0].assertions[0].provider: the name of the target that grades this check" in out + err


async def test_the_python_api_gives_a_check_its_judge_by_name(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.judge = panel_judge
    check = {"type": "rubrics", "criteria": ["Answers the question"], "judge": "strict"}
    alone = await agrade(check, grade_context("Answer Q2", history="Q2: a question"))
    assert alone.verdict == "error" and "this check's judge 'strict' is not among the judges given" in (
        alone.error or ""
    )
    config = TargetConfig(name="strict", provider="openai", model="judge-b", base_url=fake_openai.base_url)
    strict = create_target(config)
    try:
        judged = await agrade(check, grade_context("Answer Q2", history="Q2: a question", judges={"strict": strict}))
    finally:
        await strict.aclose()
    assert judged.verdict == "fail" and [b["model"] for b in fake_openai.judge_requests()] == ["judge-b"]
