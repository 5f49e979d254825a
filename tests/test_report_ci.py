"""CI outputs of real runs through the loopback fake server: JUnit XML (validated against the Ant
JUnit schema), Markdown, the HTML file, and `convoeval compare` exit codes."""

from __future__ import annotations

import io
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import xmlschema
from rich.console import Console

import convoeval
from convoeval.report import (
    compare_results,
    junit_xml,
    markdown_summary,
    print_summary,
    read_battle_records,
    render_report,
)
from convoeval.results import EvaluationResult
from convoeval.testing import Fault

from .conftest import DATA, read_jsonl, write
from .report_data import SUITE, agent_result, battles, reply, result, write_results

SCHEMA = xmlschema.XMLSchema(DATA / "junit" / "JUnit.xsd")


@pytest.fixture
def run_files(cli, fake_openai, tmp_path: Path):
    """Runs the suite (pass, fail on a second run, an execution error) and returns the CLI runner."""
    fake_openai.reset(reply=reply)
    reply.hello_fails = False
    write(tmp_path / "suite.eval.yaml", SUITE)

    def run(*extra: str, hello_fails: bool = False) -> tuple[int, str, str]:
        reply.hello_fails = hello_fails
        fake_openai.faults.append(Fault(status=400, match="please fail now", purpose="target", times=50))
        return cli("run", "suite.eval.yaml", "-t", "openai:m", "--judge", "openai:judge", "-q", *extra)

    yield run
    reply.hello_fails = False


def test_run_writes_junit_markdown_html_and_junit_validates(run_files, tmp_path: Path) -> None:
    code, stdout, _ = run_files(
        "--junit",
        "ci/junit.xml",
        "--markdown",
        "ci/summary.md",
        "--html",
        "ci/r.html",
        "-o",
        "r.jsonl",
        hello_fails=True,
    )
    assert code == 1, stdout
    xml = (tmp_path / "ci/junit.xml").read_text()
    SCHEMA.validate(xml)  # raises on any deviation from the schema
    suite = ET.fromstring(xml).find("testsuite")
    assert suite is not None and suite.get("name") == "travel"
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("3", "1", "1")
    cases = {c.get("name"): c for c in suite.findall("testcase")}
    assert set(cases) == {"japan-trip [openai:m]", "greeting [openai:m]", "broken [openai:m]"}
    assert list(cases["japan-trip [openai:m]"]) == []
    failure = cases["greeting [openai:m]"].find("failure")
    assert failure is not None and failure.get("type") == "quality_failure"
    assert "turn-1: fail" in (failure.text or "") and "contains 'hello'" in (failure.text or "")
    error = cases["broken [openai:m]"].find("error")
    assert error is not None and error.get("type") == "execution_error" and "HTTP 400" in error.get("message", "")
    markdown = (tmp_path / "ci/summary.md").read_text()
    assert "**1/3 passed**" in markdown and "| ❌ fail | greeting | openai:m |" in markdown
    assert "| ⚠️ error | broken |" in markdown
    page = (tmp_path / "ci/r.html").read_text()
    assert "<script>window.PWNED" not in page and "&lt;script&gt;window.PWNED=1&lt;/script&gt;" in page
    assert "sk-test-SECRET" not in xml + markdown + page


def test_report_command_from_a_run_id_and_from_a_results_file(run_files, cli, tmp_path: Path) -> None:
    code, stdout, _ = run_files("-o", "r.jsonl")
    run_id = next(line.split()[1].rstrip(":") for line in stdout.splitlines() if line.startswith("run "))
    code, stdout, stderr = cli("report", run_id, "--junit", "a.xml", "--markdown", "a.md", "--html", "a.html")
    assert code == 0, stderr
    code, _, stderr = cli("report", "r.jsonl", "--junit", "b.xml")
    assert code == 0, stderr
    first, second = (ET.fromstring((tmp_path / n).read_text()) for n in ("a.xml", "b.xml"))
    assert [c.get("name") for c in first.iter("testcase")] == [c.get("name") for c in second.iter("testcase")]
    assert f"run {run_id}" in (tmp_path / "a.html").read_text()


def test_report_of_three_battles_where_one_target_never_won(cli, tmp_path: Path) -> None:
    """Before: numpy's LinAlgError traceback (`Singular matrix`) from the bootstrap intervals."""
    write_results(tmp_path / "ok.jsonl", [agent_result()])
    records = [("x", "y", "model_b"), ("y", "x", "model_b"), ("x", "z", "model_a")]
    write(
        tmp_path / "b.jsonl",
        "".join(json.dumps({"model_a": a, "model_b": b, "winner": w}) + "\n" for a, b, w in records),
    )
    code, out, err = cli("report", "ok.jsonl", "--html", "x.html", "--battles", "b.jsonl")
    assert (code, err) == (0, ""), err
    assert "Arena" in (tmp_path / "x.html").read_text()
    code, out, err = cli("arena", "--battles", "b.jsonl")
    assert code == 0 and "Singular" not in err, err


def test_report_bad_input_is_one_line_and_exit_2(cli, tmp_path: Path) -> None:
    assert cli("report", "missing.jsonl", "--html", "x.html")[0] == 2
    code, stdout, stderr = cli("report", "nope-run", "--html", "x.html")
    assert code == 2 and stderr.startswith("error: nope-run: no such results file") and len(stderr.splitlines()) == 1
    write(tmp_path / "bad.jsonl", agent_result().model_dump_json() + '\n{"test_id": 3}\n')
    code, _, stderr = cli("report", "bad.jsonl", "--junit", "x.xml")
    assert code == 2 and stderr.startswith("error: bad.jsonl:2: ") and "Traceback" not in stderr
    write_results(tmp_path / "ok.jsonl", [agent_result()])
    assert cli("report", "ok.jsonl")[0] == 2  # nothing asked for
    code, _, stderr = cli("report", "ok.jsonl", "--html", "x.html", "--battles", "ok.jsonl")
    assert code == 2 and "ok.jsonl:1: missing field model_a" in stderr
    code, _, stderr = cli("report", "ok.jsonl", "--html", tmp_path)
    assert (code, stderr) == (2, f"error: {tmp_path} is a folder; give a file name\n")
    write(tmp_path / "s.eval.yaml", "tests:\n  - {id: t, input: hi}\n")
    code, out, stderr = cli("run", "s.eval.yaml", "-t", "openai:m", "--markdown", tmp_path)  # before any call
    assert (code, out, stderr) == (2, "", f"error: {tmp_path} is a folder; give a file name\n")
    # A folder that passes the check made before writing but takes no new file (/proc).
    for option in ("--junit", "--inspect-log"):
        code, _, stderr = cli("report", "ok.jsonl", option, "/proc/convoeval-report.json")
        assert (code, stderr) == (2, "error: cannot write /proc/convoeval-report.json: No such file or directory\n")


def test_junit_keeps_failures_errors_and_skips_apart_and_strips_control_characters() -> None:
    results = [
        result("ok", 1.0),
        result("low", 0.2, "fail", status="quality_failure"),
        result("crash", None, "error", status="execution_error", error="HTTP 500 \x00\x07boom"),
        result("undecided", None, "error"),
        result("later", None, "skip", status="budget_exhausted"),
        result("other", 1.0, target="bot2"),
    ]
    xml = junit_xml(results, timestamp="2026-01-02T03:04:05.123Z")
    SCHEMA.validate(xml)
    suite = ET.fromstring(xml).find("testsuite")
    assert suite is not None
    assert [suite.get(k) for k in ("tests", "failures", "errors", "skipped")] == ["6", "1", "2", "1"]
    kinds = {c.get("name"): [child.tag for child in c] for c in suite.iter("testcase")}
    assert kinds == {
        "ok [bot]": [],
        "low [bot]": ["failure"],
        "crash [bot]": ["error"],
        "undecided [bot]": ["error"],
        "later [bot]": ["skipped"],
        "other [bot2]": [],
    }
    assert [e.get("type") for e in suite.iter("error")] == ["execution_error", "grader_error"]
    assert "\x00" not in xml and "boom" in xml
    assert [p.get("value") for p in suite.iter("property")] == ["bot", "bot2"]


def test_junit_of_a_suite_and_a_target_named_with_control_characters_is_xml() -> None:
    """A suite's name (`name: "bell\\a suite"`) and a target's are the suite's `name`,
    `package` and `property` values. Before: written as they were, not XML 1.0 (CI rejects it)."""
    named = result("t", 1.0, target="bot\x1b[31m").model_copy(update={"suite": "bell\a suite"})
    xml = junit_xml([named], timestamp="2026-01-02T03:04:05")
    SCHEMA.validate(xml)
    suite = ET.fromstring(xml).find("testsuite")
    assert suite is not None and suite.get("name") == suite.get("package") == "bell\ufffd suite"
    assert [p.get("value") for p in suite.iter("property")] == ["bot\ufffd[31m"]


def test_markdown_escapes_model_and_suite_text() -> None:
    bad = result("t|<img src=x onerror=alert(1)>", 0.1, "fail", status="quality_failure")
    text = markdown_summary([bad, agent_result()])
    assert "<img" not in text and "&lt;img src=x onerror=alert(1)&gt;" in text and "t\\|" in text
    assert "**Confirms the price** " not in text and "x Confirms the price - no price given" in text
    assert "! latency (latency): could not decide: judge timed out" in text


def test_markdown_failure_details_read_as_github_renders_them() -> None:
    """A `<details>` line is an HTML block: GitHub shows Markdown escapes in it as typed."""
    from markdown_it import MarkdownIt

    page = MarkdownIt("gfm-like").render(markdown_summary([agent_result(test_id="my_test|<b>")]))
    assert "<td>my_test|&lt;b&gt;</td>" in page
    assert "<summary>my_test|&lt;b&gt; @ agent-cli</summary>" in page and "\\" not in page


def test_reports_count_what_the_simulated_user_spent() -> None:
    spent = {"cost_usd": 0.001, "judge_cost_usd": 0.002, "simulator_cost_usd": 0.003}
    usage = {"token_usage": {"input_tokens": 10}, "simulator_token_usage": {"input_tokens": 900, "output_tokens": 7}}
    results = [agent_result(**spent, **usage)]
    assert "| $0.0060 | 917 |" in markdown_summary(results) and "cost $0.0060" in markdown_summary(results)
    page = render_report(results)
    assert '<div class="v">$0.0060</div>' in page and "simulated user $0.0030" in page
    assert '<div class="v">917</div>' in page and "simulated user 907" in page


def test_html_renders_tool_calls_sources_trials_and_errors_as_text() -> None:
    page = render_report([agent_result()], title="agents <b>run</b>")
    assert "agents &lt;b&gt;run&lt;/b&gt;" in page
    for source in ("simulator", "target", "tool", "hint", "input"):
        assert f"msg src-{source}" in page
    assert '<details class="tool-call">' in page and "search_flights" in page
    assert "&lt;img src=x onerror=alert(1)&gt;" in page and "<img src=x" not in page
    assert page.count('<details class="trial"') == 2 and "judge timed out" in page
    assert "http://" not in page.replace("http://www.w3.org", "") and "https://" not in page


def test_html_arena_shows_leaderboard_plot_and_battles(tmp_path: Path) -> None:
    runs = [
        result("japan-trip", 0.9, target="openai:a"),
        result("japan-trip", 0.5, target="openai:b"),
        result("greeting", 1.0, target="openai:a"),
        result("greeting", 1.0, target="openai:b"),
    ]
    page = render_report(runs, arena=read_battle_records(battles(tmp_path / "b.jsonl")))
    assert 'id="leaderboard"' in page and page.count('<details class="battle">') == 3
    assert 'src="data:image/svg+xml;base64,' in page
    assert "A is &lt;b&gt;warmer&lt;/b&gt;" in page
    assert "this conversation is not among the results shown" in page  # `broken` was not run


def test_compare_outcomes_sorted_by_regression() -> None:
    a = [
        result("same", 0.9),
        result("worse", 0.9),
        result("better", 0.5, "fail"),
        result("gone", 1.0),
        result("crashed", 0.9),
        result("flipped", 0.81),
    ]
    b = [
        result("same", 0.92),
        result("worse", 0.4, "fail"),
        result("better", 0.95),
        result("new", 1.0),
        result("crashed", None, "error", status="execution_error"),
        result("flipped", 0.79, "fail"),
    ]
    comparison = compare_results(a, b, tolerance=0.05)
    assert [(p.test_id, p.outcome) for p in comparison.pairs] == [
        ("crashed", "loss"),
        ("worse", "loss"),
        ("flipped", "loss"),
        ("gone", "gone"),
        ("new", "new"),
        ("better", "win"),
        ("same", "tie"),
    ]
    assert comparison.pairs[0].delta == pytest.approx(-0.9)
    assert comparison.counts == {"loss": 3, "win": 1, "tie": 1, "new": 1, "gone": 1}


def test_compare_cli_exit_codes(cli, tmp_path: Path) -> None:
    write_results(tmp_path / "a.jsonl", [result("t1", 0.9), result("t2", 0.8)])
    write_results(tmp_path / "b.jsonl", [result("t1", 0.85), result("t2", 0.8)])
    # the exact per-test gate (the default before issue 32) fails on any loss
    code, stdout, _ = cli("compare", "a.jsonl", "b.jsonl", "--fail-on-regression", "--gate", "exact")
    assert code == 1 and "loss 1" in stdout
    assert cli("compare", "a.jsonl", "b.jsonl", "--fail-on-regression", "--gate", "exact", "--tolerance", "0.1")[0] == 0
    # the default significance gate cannot reach alpha with two tests whatever B did: it says so
    code, stdout, stderr = cli("compare", "a.jsonl", "b.jsonl", "--fail-on-regression")
    assert code == 2 and "loss 1" in stdout and "cannot decide: with 2 paired test(s)" in stdout
    assert stderr.startswith("error: the significance gate cannot decide") and "at least 6 tests" in stderr
    assert cli("compare", "a.jsonl", "b.jsonl")[0] == 0  # reporting only
    code, stdout, _ = cli("compare", "a.jsonl", "b.jsonl", "--format", "json")
    data = json.loads(stdout)
    assert data["counts"]["loss"] == 1 and data["pairs"][0]["delta"] == pytest.approx(-0.05)
    code, stdout, _ = cli("compare", "a.jsonl", "b.jsonl", "--format", "markdown")
    assert code == 0 and "| loss | t1 | bot | 0.90 | 0.85 | -0.05 |" in stdout
    code, _, stderr = cli("compare", "a.jsonl", "missing.jsonl")
    assert code == 2 and stderr.strip() == "error: missing.jsonl: file not found"
    code, _, stderr = cli("compare", "a.jsonl", "b.jsonl", "--html", tmp_path)
    assert (code, stderr) == (2, f"error: {tmp_path} is a folder; give a file name\n")
    code, _, stderr = cli("compare", "a.jsonl", "b.jsonl", "--html", "/proc/convoeval-compare.html")
    assert (code, stderr) == (2, "error: cannot write /proc/convoeval-compare.html: No such file or directory\n")


def test_the_exact_gate_takes_a_change_of_exactly_the_tolerance_as_a_tie(cli, tmp_path: Path) -> None:
    # 0.70 - 0.75 is -0.05000000000000004 in floats: within --tolerance 0.05, a tie
    write_results(tmp_path / "a.jsonl", [result("t1", 0.75)])
    write_results(tmp_path / "b.jsonl", [result("t1", 0.7)])
    code, stdout, _ = cli(
        "compare", "a.jsonl", "b.jsonl", "--fail-on-regression", "--gate", "exact", "--tolerance", "0.05"
    )
    assert code == 0 and "loss 0, win 0, tie 1" in stdout


def test_the_significance_gate_fails_on_a_drop_of_exactly_min_delta(cli, tmp_path: Path) -> None:
    # six tests 0.9 -> 0.8 (a drop of 0.09999999999999998 in floats): significant, and at least --min-delta 0.1
    write_results(tmp_path / "a.jsonl", [result(f"t{i}", 0.9) for i in range(6)])
    write_results(tmp_path / "b.jsonl", [result(f"t{i}", 0.8) for i in range(6)])
    code, stdout, stderr = cli("compare", "a.jsonl", "b.jsonl", "--fail-on-regression", "--min-delta", "0.1")
    assert code == 1 and "significant regression: mean score fell by 0.100" in stderr


def test_compare_keeps_apart_two_suites_of_one_file_name_in_different_folders(cli, tmp_path: Path) -> None:
    def run(first: float, second: float, *, only_first: bool = False) -> list[EvaluationResult]:
        made = [
            result(test, score).model_copy(update={"suite": "x", "checks": {"file": f"/ci/evals/{folder}/x.eval.yaml"}})
            for folder, score in (("d1", first), ("d2", second))
            for test in ("t0", "t1")
        ]
        return made[:2] if only_first else made

    write_results(tmp_path / "a.jsonl", run(1.0, 0.0))
    write_results(tmp_path / "b.jsonl", run(0.0, 1.0))
    code, stdout, _ = cli("compare", "a.jsonl", "b.jsonl", "--format", "json")
    pairs = [(p["suite"], p["test_id"], p["score_a"], p["score_b"]) for p in json.loads(stdout)["pairs"]]
    assert sorted(pairs) == [
        ("d1/x", "t0", 1.0, 0.0),
        ("d1/x", "t1", 1.0, 0.0),
        ("d2/x", "t0", 0.0, 1.0),
        ("d2/x", "t1", 0.0, 1.0),
    ]  # each result was hidden by the other suite's of the same key
    code, stdout, _ = cli("compare", "a.jsonl", "b.jsonl", "--format", "markdown")
    assert "| loss | d1/x / t0 | bot | 1.00 | 0.00 |" in stdout
    write_results(tmp_path / "a.jsonl", run(1.0, 0.0, only_first=True))  # a run of one of them pairs too
    code, stdout, _ = cli("compare", "a.jsonl", "b.jsonl")
    assert "d1/x / t0" in stdout and "loss 2, win 0, tie 0, new 2, gone 0" in stdout


def test_compare_keeps_apart_two_suites_of_one_name_in_one_folder(cli, tmp_path: Path) -> None:
    # `name: shared` in d/x.eval.yaml and d/y.eval.yaml: one result hid the other (both `d/shared`)
    def run(x: float, y: float) -> list[EvaluationResult]:
        return [
            result("t", score).model_copy(update={"suite": "shared", "checks": {"file": f"/ci/d/{file}.eval.yaml"}})
            for file, score in (("x", x), ("y", y))
        ]

    write_results(tmp_path / "a.jsonl", run(1.0, 1.0))
    write_results(tmp_path / "b.jsonl", run(1.0, 0.0))
    code, stdout, _ = cli("compare", "a.jsonl", "b.jsonl", "--format", "json")
    pairs = [(p["suite"], p["score_a"], p["score_b"]) for p in json.loads(stdout)["pairs"]]
    assert sorted(pairs) == [("shared (x)", 1.0, 1.0), ("shared (y)", 1.0, 0.0)]


def test_compare_with_no_test_in_both_runs_cannot_decide(cli, tmp_path: Path) -> None:
    """Runs of another target (or a renamed suite) pair no test: no gate may pass them (exit 2)."""
    write_results(tmp_path / "a.jsonl", [result(f"t{i}", 1.0) for i in range(8)])
    write_results(
        tmp_path / "b.jsonl", [result(f"t{i}", 0.0, "fail").model_copy(update={"target": "other"}) for i in range(8)]
    )
    for gate in ("significance", "exact"):
        code, stdout, stderr = cli("compare", "a.jsonl", "b.jsonl", "--fail-on-regression", "--gate", gate)
        assert code == 2 and "new 8, gone 8" in stdout, stdout + stderr
        assert (
            stderr
            == f"error: the {gate} gate cannot decide: no test is in both runs (tests are paired by suite, test id and target)\n"
        )
    assert cli("compare", "a.jsonl", "b.jsonl")[0] == 0  # reporting only


def test_compare_with_no_judged_test_in_a_run_cannot_decide(cli, tmp_path: Path) -> None:
    """Two runs whose every test errored (a provider down both times) compared as ties: "no
    significant regression", exit 0. Neither run was judged: no gate can pass them (exit 2)."""
    errored = [result(f"t{i}", None, "error", status="execution_error") for i in range(8)]
    write_results(tmp_path / "a.jsonl", [result(f"t{i}", 1.0) for i in range(8)])
    write_results(tmp_path / "b.jsonl", errored)
    for a in ("a.jsonl", "b.jsonl"):
        code, stdout, stderr = cli("compare", a, "b.jsonl", "--fail-on-regression")
        assert code == 2 and "power" not in stdout, stdout + stderr
        assert stderr == (
            "error: the significance gate cannot decide: no test of b.jsonl in both runs was judged (each had an "
            "execution error or was skipped)\n"
        )


def test_compare_two_stored_runs_by_id(run_files, cli) -> None:
    ids = []
    for fails in (False, True):
        _, stdout, _ = run_files("--no-cache", hello_fails=fails)
        ids.append(next(line.split()[1].rstrip(":") for line in stdout.splitlines() if line.startswith("run ")))
    code, stdout, _ = cli("compare", *ids, "--fail-on-regression", "--gate", "exact")
    assert code == 1 and "greeting" in stdout and "loss 1" in stdout
    assert cli("compare", ids[1], "last")[0] == 0  # the same run twice: all ties


def test_run_output_suffix_picks_the_format(run_files, cli, tmp_path: Path) -> None:
    for name in ("out.html", "out.xml", "out.md", "out.json"):
        code, _, stderr = run_files("-o", name)
        assert code == 1, stderr
    assert "<!doctype html>" in (tmp_path / "out.html").read_text()
    SCHEMA.validate((tmp_path / "out.xml").read_text())
    assert (tmp_path / "out.md").read_text().startswith("## convoeval results")
    assert len(json.loads((tmp_path / "out.json").read_text())) == 3
    code, _, stderr = run_files("-o", "out.txt")
    assert code == 2 and "unknown results format '.txt'" in stderr
    code, _, stderr = cli("report", "out.json", "--html", "again.html")  # a .json array reads back
    assert code == 0, stderr


def test_result_writer_without_a_store(fake_openai, tmp_path: Path) -> None:
    fake_openai.reset(reply=reply)
    suite = write(tmp_path / "suite.eval.yaml", SUITE)
    report = convoeval.run(suite, target="openai:m", judge="openai:judge", output=tmp_path / "r.md", store=False)
    assert len(report.results) == 3
    assert "| openai:m | 3 |" in (tmp_path / "r.md").read_text()


BUDGET_SUITE = """\
tests:
  - id: conv-budget
    mode: conversation
    budget: {conversation: {tokens: 15}}
    turns:
      - {input: a, assertions: [{type: contains, value: "42"}]}
      - {input: b, assertions: [{type: contains, value: "42"}]}
      - {input: c, assertions: [{type: contains, value: "42"}]}
  - id: later
    input: d
"""


def test_junit_follows_the_verdict_of_a_test_a_budget_ended(cli, fake_openai, tmp_path: Path) -> None:
    """A conversation its own token budget ended is verdict `fail` (`budget_exhausted`): a
    `<failure>` naming the budget, in `run --junit` as in `report`. Before: `<skipped message="not
    run: the cost budget was reached">`, while the results, Markdown and exit code said fail. A
    test the run's --max-cost kept from starting (verdict `skip`) stays skipped."""
    fake_openai.reset(reply=lambda body: "Hello world, the answer is 42.")
    write(
        tmp_path / "targets.yaml",
        "targets:\n  - name: bot\n    provider: openai\n    model: m\n"
        "    price_input_per_mtok: 1000000\n    price_output_per_mtok: 1000000\n",
    )
    write(tmp_path / "bud.eval.yaml", BUDGET_SUITE)
    code, out, err = cli(
        "run", "bud.eval.yaml", "-t", "bot", "--concurrency", "1", "--max-cost", "0.5",
        "-o", "r.jsonl", "--junit", "run.xml", "--markdown", "r.md",
    )  # fmt: skip
    assert code == 1, out + err
    results = {r["test_id"]: r for r in read_jsonl(tmp_path / "r.jsonl")}
    assert [(r["verdict"], r["execution_status"]) for r in results.values()] == [
        ("fail", "budget_exhausted"),
        ("skip", "budget_exhausted"),
    ]
    assert cli("report", "last", "-o", "last.xml")[0] == 0
    for name in ("run.xml", "last.xml"):
        xml = (tmp_path / name).read_text()
        SCHEMA.validate(xml)
        suite = ET.fromstring(xml).find("testsuite")
        assert suite is not None
        assert [suite.get(k) for k in ("tests", "failures", "errors", "skipped")] == ["2", "1", "0", "1"], name
        cases = {c.get("name"): c for c in suite.iter("testcase")}
        failure = cases["conv-budget [bot]"].find("failure")
        assert failure is not None and failure.get("type") == "budget_exhausted"
        message = failure.get("message", "")
        assert "budget reached: tokens=15 per conversation at turn 2" in message and "not run" not in message
        assert "(fail)" in message and "turn-3: skip" in (failure.text or "")
        skipped = cases["later [bot]"].find("skipped")
        assert skipped is not None and "not started: the --max-cost budget was reached" in skipped.get("message", "")
    markdown = (tmp_path / "r.md").read_text()
    assert "| ❌ fail | conv-budget | bot |" in markdown and "budget reached: tokens=15" in markdown


def test_a_summary_too_wide_for_an_80_column_log_is_not_cut() -> None:
    """Before: piped to a log (80 columns), the demo's table lost its `time` column: rich cut
    the table at the right edge once the whole ids made it wider than the page."""
    console = Console(width=80, file=io.StringIO(), color_system=None)
    results = [result("capital-of-france-and-more", 1.0), result("count-the-letters", 0.0, "fail")]
    print_summary(results, console, turns=False)
    shown = console.file.getvalue()  # type: ignore[attr-defined]
    assert "time" in shown and all(r.test_id in shown for r in results), shown
    assert all(len(line) <= 80 or "┃" not in line for line in shown.splitlines())
