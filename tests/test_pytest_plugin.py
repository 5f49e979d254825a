"""The pytest plugin collects eval files (only when asked) and fails the right items with the
failed turns and checks; `assert_conversation` does the same from a Python test."""

from __future__ import annotations

from pathlib import Path

import pytest

from convoeval.testing import assert_conversation

from .conftest import write
from .report_data import SUITE, reply

pytest_plugins = ["pytester"]
QUIET = ("-p", "no:cacheprovider", "-p", "no:asyncio")
TARGET = ("--convoeval-target", "openai:m", "--convoeval-judge", "openai:judge")


@pytest.fixture
def suite_dir(pytester: pytest.Pytester, fake_openai) -> pytest.Pytester:
    fake_openai.reset(reply=reply)
    reply.hello_fails = True  # `greeting` fails; `broken` never says "anything"
    pytester.makefile(".eval.yaml", travel=SUITE)
    pytester.makepyfile(test_plain="def test_plain():\n    assert True\n")
    yield pytester
    reply.hello_fails = False


def test_eval_files_are_not_collected_unless_asked(suite_dir: pytest.Pytester) -> None:
    result = suite_dir.runpytest_inprocess(*QUIET)
    result.assert_outcomes(passed=1)


def test_a_session_without_eval_files_loads_none_of_convoeval(pytester: pytest.Pytester) -> None:
    """pytest loads the plugin (its entry point) in every session of the environment: that must
    not load convoeval's engine (0.3-0.5 s before the plugin deferred it)."""
    pytester.makeconftest(
        "import sys\n"
        "def pytest_sessionfinish(session):\n"
        "    loaded = sorted(m for m in sys.modules if m.startswith('convoeval'))\n"
        "    print('\\nLOADED', loaded)\n"
    )
    pytester.makepyfile(test_plain="def test_plain():\n    assert True\n")
    result = pytester.runpytest_subprocess("-s", *QUIET)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        ["LOADED ['convoeval', 'convoeval._lazy', 'convoeval._version', 'convoeval.pytest_plugin']"]
    )


def test_eval_file_items_pass_and_fail_with_their_checks(suite_dir: pytest.Pytester) -> None:
    result = suite_dir.runpytest_inprocess("--convoeval", *TARGET, "-v", *QUIET)
    result.assert_outcomes(passed=2, failed=2)
    result.stdout.fnmatch_lines(
        [
            "*travel.eval.yaml::japan-trip PASSED*",
            "*travel.eval.yaml::greeting FAILED*",
            "*travel.eval.yaml::broken FAILED*",
            "*greeting @ openai:m: score 0.00 < threshold 0.8 (fail)*",
            "*turn-1: fail (score 0.00)*",
            "*x contains 'hello' (ignoring case)*",
        ]
    )
    assert "Traceback" not in result.stdout.str()


def test_ini_glob_and_several_targets(suite_dir: pytest.Pytester) -> None:
    suite_dir.path.joinpath("travel.eval.yaml").rename(suite_dir.path / "travel.convo.yaml")
    suite_dir.makeini("[pytest]\nconvoeval_files = *.convo.yaml\nconvoeval_judge = openai:judge\n")
    result = suite_dir.runpytest_inprocess(
        "--convoeval-target", "openai:m", "--convoeval-target", "openai:n", "-v", *QUIET
    )
    result.assert_outcomes(passed=3, failed=4)
    result.stdout.fnmatch_lines(["*travel.convo.yaml::japan-trip?openai:n? PASSED*"])


def test_invalid_eval_file_is_a_collection_error_with_file_and_line(pytester: pytest.Pytester) -> None:
    pytester.makefile(".eval.yaml", bad="tests:\n  - id: t\n    turns:\n      - input: hi\n")
    result = pytester.runpytest_inprocess("--convoeval", *QUIET)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*bad.eval.yaml:3: *mode*"])


def test_assert_conversation(fake_openai, tmp_path: Path) -> None:
    fake_openai.reset(reply=reply)
    path = write(tmp_path / "travel.eval.yaml", SUITE)
    results = assert_conversation(path, test_id="japan-trip", target="openai:m", judge="openai:judge")
    assert [r.test_id for r in results] == ["japan-trip"]
    with pytest.raises(AssertionError) as failure:
        assert_conversation(path, target="openai:m", judge="openai:judge")
    assert str(failure.value).splitlines()[0] == "broken @ openai:m: score 0.00 < threshold 0.8 (fail)"
    assert "x contains 'anything'" in str(failure.value)
    with pytest.raises(AssertionError, match="no test 'nope'"):
        assert_conversation(path, test_id="nope", target="openai:m", judge="openai:judge")


def test_http_500_is_an_error_in_pytest_as_in_junit(pytester: pytest.Pytester, fake_openai) -> None:
    """An execution error (the target answered HTTP 500) is a pytest error, not a failure, the
    same as in convoeval's JUnit XML; a quality failure stays a failure."""
    from convoeval.testing import Fault

    fake_openai.reset(reply=reply)
    fake_openai.faults.append(Fault(status=500, match="please fail now", purpose="target"))
    pytester.makefile(".yaml", targets="targets:\n  - {name: t, provider: openai, model: m, max_retries: 0}\n")
    pytester.makefile(".eval.yaml", travel=SUITE)
    result = pytester.runpytest_inprocess(
        "--convoeval", "--convoeval-target", "t", "--convoeval-judge", "openai:judge",
        "--junitxml", "pytest-junit.xml", "-v", *QUIET,
    )  # fmt: skip
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines(["*travel.eval.yaml::broken ERROR*", "*broken @ t: execution error: turn 1: HTTP 500*"])
    assert "Traceback" not in result.stdout.str()
    junit = (pytester.path / "pytest-junit.xml").read_text()
    assert junit.count("<error") == 1 and "<failure" not in junit


def test_only_the_selected_items_tests_are_run(suite_dir: pytest.Pytester, fake_openai) -> None:
    """`-k` (as `--lf` and `--deselect`) leaves the other tests of the file uncalled; before,
    the whole file ran (and was paid for) whatever was selected."""
    result = suite_dir.runpytest_inprocess("--convoeval", *TARGET, "-k", "greeting", *QUIET)
    result.assert_outcomes(failed=1, deselected=3)
    asked = [r["messages"][-1]["content"] for r in fake_openai.target_requests()]
    assert asked == ["Say hello"]


def test_a_store_error_fails_each_item_with_one_line(suite_dir: pytest.Pytester, monkeypatch) -> None:
    """Any ConvoevalError of the run (here the run store cannot be opened) is said once per
    item, without a traceback; before, only spec and config errors were, and each item ran the
    file again."""
    (suite_dir.path / "home").write_text("a file where the state folder should be")
    monkeypatch.setenv("CONVOEVAL_HOME", str(suite_dir.path / "home"))
    result = suite_dir.runpytest_inprocess("--convoeval", *TARGET, *QUIET)
    result.assert_outcomes(passed=1, failed=3)
    result.stdout.fnmatch_lines(["*travel.eval.yaml: cannot write */home/runs.sqlite*"])
    assert "Traceback" not in result.stdout.str() and "StoreError" not in result.stdout.str()
