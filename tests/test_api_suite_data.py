"""A suite written in Python: `convoeval.run` takes the eval file's shape as Python data (the
README's "tests in YAML or Python"). Before, `run` took paths only (a mapping was `run option
paths: ...`)."""

from __future__ import annotations

from pathlib import Path

import pytest

import convoeval
from convoeval import ConfigError, GradeContext, SpecError, grader
from convoeval.testing import assert_conversation

pytestmark = pytest.mark.usefixtures("clean_registry")


def bot(messages: list[dict[str, str]]) -> str:
    return "Hello! " + messages[-1]["content"]


SUITE = {
    "name": "greetings",
    "tests": [
        {
            "id": "greet",
            "mode": "conversation",
            "turns": [
                {"input": "hi", "assertions": [{"type": "contains", "value": "Hello"}, {"type": "py-short"}]},
                {"input": "now something longer than thirty characters", "assertions": [{"type": "py-short"}]},
            ],
        },
        {"id": "one", "input": "yo", "assertions": [{"type": "icontains", "value": "hello"}]},
    ],
}


def test_a_suite_as_python_data_runs_reruns_and_says_where_it_is_wrong(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CONVOEVAL_HOME", str(tmp_path / "state"))

    @grader("py-short")
    def short(ctx: GradeContext) -> bool:
        return len(ctx.output) < 30

    report = convoeval.run(SUITE, target=bot)
    assert [(r.test_id, r.suite, r.verdict, r.score) for r in report.results] == [
        ("greet", "greetings", "fail", 0.5),
        ("one", "greetings", "pass", 1.0),
    ]
    (written,) = (tmp_path / "state" / "suites").glob("*/greetings.eval.yaml")
    assert convoeval.load_suite(written).tests[0].id == "greet"
    again = convoeval.run(rerun_failed="last", target=bot)  # the run store finds the suite again
    assert [r.test_id for r in again.results] == ["greet"]
    assert [r.verdict for r in assert_conversation(SUITE, test_id="one", target=bot, store=False)] == ["pass"]

    wrong = {"tests": [{"id": "x", "input": "hi", "assertions": [{"type": "containz", "value": "x"}]}]}
    with pytest.raises(SpecError) as raised:
        convoeval.run(wrong, target=bot, store=False)
    assert str(raised.value).endswith(
        "suite.eval.yaml:5: tests[0].assertions[0].type: unknown assertion type 'containz' (did you mean 'contains'?)"
    )
    with pytest.raises(ConfigError, match="a suite given as data holds only YAML values .*, not <function bot"):
        convoeval.run({"tests": [{"id": "x", "input": bot}]}, target=bot, store=False)


def test_an_arena_of_a_suite_as_python_data(fake_openai, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONVOEVAL_HOME", str(tmp_path / "state"))
    suite = {
        "name": "hello",
        "tests": [{"id": "hi", "input": "hi", "assertions": [{"type": "contains", "value": "!"}]}],
    }

    def terse(messages: list[dict[str, str]]) -> str:
        return "Hi."

    report = convoeval.arena(suite, targets=[bot, terse], judge="openai:judge", bootstrap=0, store=False)
    assert sorted(row["target"] for row in report.rows()) == ["bot", "terse"]
    assert fake_openai.judge_requests()


def test_an_arenas_targets_may_be_plain_functions(fake_openai, tmp_path: Path) -> None:
    """As `run`'s may; before, `AttributeError: 'function' object has no attribute 'name'`."""
    suite = tmp_path / "s.eval.yaml"
    suite.write_text("tests:\n  - {id: hi, input: hi, assertions: [{type: contains, value: '!'}]}\n")

    def terse(messages: list[dict[str, str]]) -> str:
        return "Hi."

    report = convoeval.arena(suite, targets=[bot, terse], judge="openai:judge", bootstrap=0, store=False)
    assert [(row["target"], row["passed"]) for row in report.rows()] == [("bot", 1), ("terse", 0)]
    with pytest.raises(ConfigError, match="arena option targets: .*got a int"):
        convoeval.arena(suite, targets=[bot, 42], judge="openai:judge", store=False)


def test_what_is_neither_a_path_nor_a_suite_as_data_is_one_config_error(tmp_path: Path) -> None:
    """Before: a loaded Suite was `Input is not a valid path for <class 'pathlib.Path'>`, and a
    number a `TypeError: 'int' object is not iterable` traceback."""
    suite = tmp_path / "s.eval.yaml"
    suite.write_text("tests:\n  - {id: hi, input: hi}\n")
    with pytest.raises(ConfigError, match=r"got a Suite \(a loaded Suite: give its file, `suite.path`\)"):
        convoeval.run(convoeval.load_suite(suite), target=bot, store=False)
    with pytest.raises(ConfigError, match="^paths: expected eval files, folders or suites as data .*got a int$"):
        convoeval.run(42, target=bot, store=False)  # type: ignore[arg-type]
