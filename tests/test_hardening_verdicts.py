"""Nothing passes unjudged: required graders that cannot decide, required rubric criteria, and
judge scores that are not numbers (issue 10, items 2, 3 and 4). Real CLI runs against a loopback judge."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from convoeval.testing import FakeOpenAIServer

from .conftest import read_jsonl, write
from .judge_fakes import judge_with

REQUIRED_LLM = """
tests:
  - id: t
    input: hello
    criteria: says hello back
    assertions:
      - {type: llm-grader, required: true}
      - {type: contains, value: Reply}
"""


def _run(cli, tmp_path: Path, suite_text: str, judge: str = "openai:judge") -> tuple[int, dict, str]:
    suite = write(tmp_path / "s.eval.yaml", suite_text)
    out = tmp_path / "r.jsonl"
    code, stdout, err = cli("run", suite, "--target", "openai:m", "--judge", judge, "-o", out, "--no-cache")
    assert "Traceback" not in stdout + err
    [result] = read_jsonl(out)
    return code, result, stdout


@pytest.mark.parametrize(
    "judge_answer",
    [
        "the judge is confused",  # not JSON
        json.dumps({"reasoning": "great", "score": 42}),  # out of range
    ],
)
def test_a_required_grader_that_cannot_decide_fails_the_test(
    cli, fake_openai: FakeOpenAIServer, tmp_path: Path, judge_answer: str
) -> None:
    fake_openai.judge = lambda body: judge_answer
    code, result, _ = _run(cli, tmp_path, REQUIRED_LLM)
    assert code != 0
    assert result["verdict"] == "error" and result["score"] is None
    assert "required grader 'llm-grader' could not decide" in result["error"]
    [turn] = result["scores"]
    assert turn["verdict"] == "error"
    assert [g["verdict"] for g in turn["graders"]] == ["error", "pass"]


def test_a_required_grader_whose_judge_is_down_fails_the_test(
    cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with FakeOpenAIServer() as target_server:
        monkeypatch.setenv("OPENAI_BASE_URL", target_server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-dummy")
        write(
            tmp_path / "targets.yaml",
            "targets:\n  - {name: judge, provider: openai, model: j, "
            "base_url: 'http://127.0.0.1:9/v1', max_retries: 0}\n",
        )
        code, result, _ = _run(cli, tmp_path, REQUIRED_LLM, judge="judge")
    assert code != 0 and result["verdict"] == "error"
    assert "required grader 'llm-grader' could not decide" in result["error"]


def test_a_grader_that_is_not_required_and_errors_decides_nothing_it_could_have_changed(
    cli, fake_openai, tmp_path: Path
) -> None:
    """Left out of the mean, it let the other check pass the test, though it might have failed
    it: the test passes or fails only when it would whatever the grader had scored."""
    fake_openai.judge = lambda body: "not json"
    optional = REQUIRED_LLM.replace("required: true", "required: false")
    code, result, _ = _run(cli, tmp_path, optional)  # 1 and ? against 0.8: 0.5 or 1
    assert (code, result["verdict"], result["score"], result["grader_errors"]) == (1, "error", None, 1)
    assert result["error"].startswith("turn-1 could not be decided, and the verdict depends on it (judge output")
    lenient = optional.replace("    criteria:", "    execution: {threshold: 0.5}\n    criteria:")
    code, result, _ = _run(cli, tmp_path, lenient)  # 0.5 at worst: a pass whatever the judge said
    assert (code, result["verdict"], result["score"], result["grader_errors"]) == (0, "pass", 1.0, 1)


RUBRIC = """
tests:
  - id: t
    input: hello
    assertions:
      - type: rubrics
        criteria:
          - {id: a, outcome: Greets the user, weight: 9, required: false}
          - {id: b, outcome: Names the user, weight: 1, required: true}
"""


def test_a_failed_required_rubric_criterion_fails_the_turn_whatever_the_weighted_score(
    cli, fake_openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    fake_openai.judge = judge_with({"a": True, "b": False})
    code, result, _ = _run(cli, tmp_path, RUBRIC)
    assert code == 1
    assert result["verdict"] == "fail" and result["score"] == 0.0
    [grader] = result["scores"][0]["graders"]
    assert grader["verdict"] == "fail" and grader["failed_required"] == ["b"]
    fake_openai.judge = judge_with({"a": True, "b": True})
    code, result, _ = _run(cli, tmp_path, RUBRIC)
    assert code == 0 and result["score"] == 1.0


@pytest.mark.parametrize(
    ("criteria", "decided"),
    [
        ("[Greets the user]", False),  # a plain string is a required criterion
        ("[{id: b, outcome: Names the user, required: true}]", False),
        ("[{id: b, outcome: Names the user, required: false}]", True),
    ],
)
def test_a_rubric_with_required_criteria_that_cannot_decide_leaves_the_test_undecided(
    cli, fake_openai: FakeOpenAIServer, tmp_path: Path, criteria: str, decided: bool
) -> None:
    """Had the judge answered, a failed required criterion would fail the test whatever the
    mean; so when it cannot answer the test is an error, not a pass on the other check (at
    threshold 0.5, 1.0 and anything the rubric scores reaches it)."""
    fake_openai.judge = lambda body: "not json"
    suite = f"""
execution: {{threshold: 0.5}}
tests:
  - id: t
    input: hello
    assertions:
      - {{type: rubrics, criteria: {criteria}}}
      - {{type: contains, value: Reply}}
"""
    code, result, _ = _run(cli, tmp_path, suite)
    if decided:
        assert (code, result["verdict"], result["score"]) == (0, "pass", 1.0)
        return
    assert (code, result["verdict"], result["score"]) == (3, "error", None)
    assert "required grader 'rubrics' could not decide" in result["error"]
    assert [(g["verdict"], g["required"]) for g in result["scores"][0]["graders"]] == [("error", True), ("pass", False)]


@pytest.mark.parametrize("bad_score", [True, "9", False])
def test_a_judge_score_that_is_not_a_number_is_re_asked_once_then_an_error(
    cli, fake_openai: FakeOpenAIServer, tmp_path: Path, bad_score: object
) -> None:
    fake_openai.judge = lambda body: json.dumps({"reasoning": "fine", "score": bad_score})
    code, result, _ = _run(cli, tmp_path, REQUIRED_LLM.replace("required: true", "required: false"))
    assert len(fake_openai.judge_requests()) == 2  # the answer, then one re-ask
    [grader, _] = result["scores"][0]["graders"]
    assert grader["verdict"] == "error" and grader["score"] is None
    assert "number" in grader["error"]


def test_a_numeric_judge_score_is_still_accepted(cli, fake_openai: FakeOpenAIServer, tmp_path: Path) -> None:
    fake_openai.judge = lambda body: json.dumps({"reasoning": "fine", "score": 9.0})
    code, result, _ = _run(cli, tmp_path, REQUIRED_LLM)
    assert code == 0 and result["scores"][0]["graders"][0]["score"] == 0.9


# -- item 7: grader prompts are sandboxed ------------------------------------------------------

EXPLOITS = [
    "{{ cycler.__init__.__globals__.os.popen('touch PWNED').read() }}",
    "{% for c in ''.__class__.__mro__[1].__subclasses__() %}{% if c.__name__ == 'Popen' %}"
    "{{ c(['touch', 'PWNED']) }}{% endif %}{% endfor %}",
    "{{ output.__class__.__mro__[1].__subclasses__() }}",
    "{{ lipsum.__globals__['os'].system('touch PWNED') }}",
]


def _prompt_suite(prompt: str) -> str:
    return (
        "tests:\n  - id: t\n    input: hello\n    assertions:\n"
        f"      - type: llm-grader\n        prompt: {json.dumps(prompt)}\n"
    )


@pytest.mark.parametrize("exploit", EXPLOITS)
def test_an_exploit_prompt_is_refused_by_validate_with_file_and_line(cli, tmp_path: Path, exploit: str) -> None:
    suite = write(tmp_path / "s.eval.yaml", _prompt_suite(exploit))
    code, out, err = cli("validate", suite)
    assert code == 2
    assert err.startswith(f"{suite}:6: tests[0].assertions[0].prompt: "), err
    assert not (tmp_path / "PWNED").exists()


@pytest.mark.parametrize("exploit", EXPLOITS)
def test_an_exploit_in_a_prompt_file_runs_nothing(
    cli, fake_openai: FakeOpenAIServer, tmp_path: Path, exploit: str
) -> None:
    write(tmp_path / "prompt.md", exploit + "\n{{ output }}")
    code, result, _ = _run(cli, tmp_path, _prompt_suite("file://prompt.md"))
    assert not (tmp_path / "PWNED").exists()
    grader = result["scores"][0]["graders"][0]
    assert grader["verdict"] == "error" and ("sandbox" in grader["error"] or "undefined" in grader["error"])
    assert not fake_openai.judge_requests()


def test_an_undefined_name_in_a_prompt_is_a_validate_error(cli, tmp_path: Path) -> None:
    suite = write(tmp_path / "s.eval.yaml", _prompt_suite("Rate {{ output }} against {{ expected }}"))
    code, _, err = cli("validate", suite)
    assert code == 2 and "unknown template variable(s) expected" in err
