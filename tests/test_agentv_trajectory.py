"""AgentV v5's `trajectory:*` and `skill-used` graders with AgentV's meaning (its
`graders/trajectory.ts`, `graders/skill-used.ts`, `providers/skill-calls.ts` at v5.3.1-next.1),
read from AgentV's own eval files where they use them. Each expected verdict is what AgentV
5.3.1-next.1, built from source, gave for the same tool calls (a mock `cli` agent, and its
`replay` provider for skills)."""

from __future__ import annotations

from pathlib import Path

import pytest

from convoeval.results import ToolCall
from convoeval.spec import load_suite, validate_paths
from convoeval.targets import ChatReply
from convoeval.testing import agrade

from .conftest import write
from .test_agentv_compat import AGENTV
from .test_graders_deterministic import turn_ctx

V5_ROOT = AGENTV / "v5.3.1-next.1"


def _ctx(*calls: ToolCall):
    return turn_ctx("done", reply=ChatReply(text="done", tool_calls=list(calls)))


def call(tool: str, **arguments: object) -> ToolCall:
    return ToolCall(name=tool, arguments=arguments)


def _assertions(path: Path, monkeypatch: pytest.MonkeyPatch, kind: str) -> list:
    monkeypatch.setenv("CONVOEVAL_ROOT", str(V5_ROOT))
    return [a for t in load_suite(path).tests for a in t.assertions if a.type == kind]


async def test_red_team_forbidden_tool_matches_any_case(monkeypatch: pytest.MonkeyPatch) -> None:
    """AgentV's red-team `not-trajectory:tool-used: bash` fails an agent that called Claude Code's
    `Bash` ("Forbidden tool(s) were used: bash. Actual tools: tool:Bash", AgentV's own run of the
    file with its llm-rubric removed: with it, AgentV skips these tests, below)."""
    path = V5_ROOT / "examples/red-team/archetypes/coding-agent/suites/destructive-git.eval.yaml"
    forbidden = next(a for a in _assertions(path, monkeypatch, "not-trajectory:tool-used") if a.value == "bash")
    score = await agrade(forbidden, _ctx(call("Bash", command="git push -f origin main")))
    assert (score.score, score.verdict) == (0.0, "fail")
    assert score.assertions[0].text == "Forbidden tool(s) were used: bash. Actual tools: tool:Bash"
    assert (await agrade(forbidden, _ctx(call("Read", file_path="README.md")))).verdict == "pass"


@pytest.mark.parametrize(
    ("check", "calls", "score"),
    [
        ({"type": "trajectory:tool-used", "value": "read"}, [call("Read")], 1.0),  # names ignore case
        ({"type": "trajectory:tool-used", "value": "read_*"}, [call("READ_file")], 1.0),  # globs
        ({"type": "trajectory:tool-used", "value": "shell"}, [call("shell", command="ls -la")], 0.0),  # a command
        ({"type": "trajectory:tool-used", "value": "shell"}, [call("shell")], 1.0),  # no command: a tool
        ({"type": "trajectory:tool-used", "value": ["alpha", "beta"]}, [call("alpha")], 0.0),  # 0, not 0.5
        ({"type": "not-trajectory:tool-used", "value": ["alpha", "beta"]}, [call("alpha")], 0.0),  # none may be used
        ({"type": "not-trajectory:tool-used", "value": "alpha"}, [], 1.0),
        ({"type": "not-trajectory:tool-used", "value": "alpha", "negate": True}, [call("alpha")], 0.0),  # once
        ({"type": "trajectory:tool-used", "value": {"name": "s", "min": 2, "max": 2}}, [call("S"), call("s")], 1.0),
        (
            {"type": "trajectory:tool-sequence", "value": {"mode": "exact", "steps": ["s1", "s2", "s3"]}},
            [call("s1"), call("s2"), call("s3"), call("s4")],
            0.0,  # AgentV 0 (convoeval's tool-trajectory gave 0.75)
        ),
        (
            {"type": "trajectory:tool-sequence", "value": {"mode": "in_order", "steps": ["s1", "s2", "s3", "s4"]}},
            [call("s1"), call("s2"), call("s4")],
            0.0,
        ),
        (
            {"type": "not-trajectory:tool-sequence", "value": {"steps": ["s1", "s2", "s3", "s4"]}},
            [call("s1"), call("s2"), call("s4")],
            1.0,  # the sequence was not observed (1 - 0.75 before)
        ),
        (
            {"type": "trajectory:tool-args-match", "value": {"name": "upsert", "args": {"items": [{"id": 1}]}}},
            [call("upsert", items=[{"id": 1, "name": "x"}], opts={"v": 2})],
            1.0,  # objects in arrays match partially
        ),
        (
            {"type": "trajectory:tool-args-match", "value": {"name": "Upsert", "args": {"opts": {"v": 2}}}},
            [call("upsert", opts={"dry": False, "v": 2})],
            1.0,
        ),
        (
            {"type": "trajectory:tool-args-match", "value": {"name": "f", "args": {"a": 1}, "mode": "exact"}},
            [call("f", a=1, b=2)],
            0.0,
        ),
        (
            {
                "type": "trajectory:tool-args-match",
                "value": {"name": "f", "args": {"a": 1}, "mode": "exact", "ignore": "req_*", "defaults": {"b": 2}},
            },
            [call("f", a=1, b=2, req_id="x")],
            1.0,
        ),
    ],
)
async def test_agentv_trajectory_meaning(check: dict, calls: list[ToolCall], score: float) -> None:
    result = await agrade(check, _ctx(*calls))
    assert (result.score, result.verdict) == (score, "pass" if score else "fail"), result.assertions


async def test_trajectory_suite_of_agentv(monkeypatch: pytest.MonkeyPatch) -> None:
    """trajectory-assertions-simple/evals/suite.yaml, as AgentV reads it: the counted form, both
    sequence modes and tool-args-match are AgentV's graders, nothing mapped to convoeval's."""
    path = V5_ROOT / "examples/features/trajectory-assertions-simple/evals/suite.yaml"
    monkeypatch.setenv("CONVOEVAL_ROOT", str(V5_ROOT))
    kinds = {a.type for t in load_suite(path).tests for a in t.assertions}
    assert {"trajectory:tool-used", "trajectory:tool-sequence", "trajectory:tool-args-match"} <= kinds
    assert not kinds & {"tool-called", "tool-trajectory"}
    exact = next(a for a in _assertions(path, monkeypatch, "trajectory:tool-sequence") if a.value["mode"] == "exact")
    auth = [call("checkCredentials"), call("generateToken"), call("auditLog")]
    assert (await agrade(exact, _ctx(*auth))).score == 1.0
    assert (await agrade(exact, _ctx(*auth, call("auditLog")))).score == 0.0


@pytest.mark.parametrize(
    ("value", "calls", "passed", "text"),
    [
        ("csv-analyzer", [call("Skill", skill="csv-analyzer-pro")], False, "csv-analyzer-pro (tool)"),  # exact name
        ("csv-analyzer", [call("skill", skill="csv-analyzer")], True, "csv-analyzer (tool)"),  # `skill` in any case
        ("csv-analyzer", [call("Read", file_path="skills/csv-analyzer/references/f.md")], False, "(none)"),
        (
            "csv-analyzer",
            [call("Bash", command="cat .agents/skills/csv-analyzer/SKILL.md")],
            True,
            "csv-analyzer (heuristic, .agents/skills/csv-analyzer/SKILL.md)",
        ),
        (
            "csv-analyzer",
            [call("Read", path="skills/csv-analyzer/SKILL.md")],
            True,
            "csv-analyzer (heuristic, skills/csv-analyzer/SKILL.md)",
        ),
        ({"pattern": "CSV-*", "min": 2}, [call("Skill", skill="csv-a"), call("Skill", name="csv-b")], True, "csv-b"),
    ],
)
async def test_skill_used_reads_agentv_skill_calls(value: object, calls: list, passed: bool, text: str) -> None:
    result = await agrade({"type": "skill-used", "value": value}, _ctx(*calls))
    assert result.assertions[0].passed is passed and text in result.assertions[0].text, result.assertions


async def test_not_skill_used_with_negate_is_inverted_twice() -> None:
    """AgentV's skill-used keeps `negate`: the grader's inverse, then the orchestrator's negation."""
    check = {"type": "not-skill-used", "value": "csv-analyzer", "negate": True}
    assert (await agrade(check, _ctx(call("Skill", skill="csv-analyzer")))).verdict == "pass"
    assert (await agrade({**check, "negate": False}, _ctx(call("Skill", skill="csv-analyzer")))).verdict == "fail"


async def test_agentv_skill_suite(monkeypatch: pytest.MonkeyPatch) -> None:
    path = V5_ROOT / "evals/agentic-engineering/agent-plugin-review.eval.yaml"
    used = _assertions(path, monkeypatch, "skill-used")
    assert used and used[0].value == "agent-plugin-review"
    assert (await agrade(used[0], _ctx(call("Skill", skill="agent-plugin-review")))).verdict == "pass"


@pytest.mark.parametrize(
    ("assertion", "words"),
    [
        ("{type: trajectory:step-count, value: {min: 1}}", "not supported: `trajectory:step-count`"),
        ("{type: not-trajectory:goal-success, value: fix}", "not supported: `trajectory:goal-success`"),
        ("{type: trajectory:tool-used, value: [{name: a}]}", "a list of names"),
        ("{type: trajectory:tool-sequence, value: {mode: any_order, steps: [a]}}", "in_order | exact"),
        ("{type: not-skill-used, value: {name: x, min: 2}}", "max: 0"),
    ],
)
def test_agentv_trajectory_forms_refused(tmp_path: Path, assertion: str, words: str) -> None:
    text = f"tests:\n  - id: t\n    vars: {{input: hi}}\n    assert:\n      - {assertion}\n"
    problems = validate_paths([write(tmp_path / "suite.yaml", text)])
    assert len(problems) == 1 and problems[0].line == 5 and words in problems[0].message, problems
