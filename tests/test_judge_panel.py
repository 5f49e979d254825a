"""Judge panels end to end: two judges served by the loopback fake OpenAI server disagree on
some checks; each rule's verdicts, each judge's answer in the result JSON, and the agreement
the run prints (recomputed here from the verdicts with the published formulas)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import convoeval
from convoeval.graders import combine_scores
from convoeval.judging import JudgePanel, Vote, combine, combine_labels
from convoeval.results import DimensionScore, GraderScore, Usage
from convoeval.testing import FakeOpenAIServer

from .arena_fakes import (  # noqa: F401  (fixtures)
    arena_server,
    desk,
    fair_winner,
    is_pairwise,
    judge_server,
    pairwise_judge,
    which_test,
)
from .conftest import read_jsonl, write
from .judge_fakes import answer, schema_of

JUDGES = ("openai:judge-a", "openai:judge-b")

SUITE = (
    """\
execution:
  threshold: 0.5
tests:
"""
    + "".join(
        f"""\
  - id: q{n}
    input: "Q{n}: a question"
    assertions:
      - type: rubrics
        criteria: ["Answers the question"]
      - type: llm-grader
        prompt: "Rate this reply from 0 to 10: {{{{ output }}}}"
"""
        for n in range(1, 5)
    )
    + """\
  - id: q5
    transcript:
      - {role: user, content: "Q5: book a table"}
      - {role: assistant, content: "Answer Q5: booked"}
    success: ["The table was booked"]
    failure: ["The booking was refused"]
"""
)

TARGETS = """\
targets:
  - name: bot
    provider: scripted
    rules:
""" + "".join(f'      - {{match: "Q{n}", reply: "Answer Q{n}"}}\n' for n in range(1, 5))

#: What each judge says: judge-a fails the rubric of q4 only; judge-b also fails q2's rubric,
#: rates q3 4/10 (judge-a: 10/10 everywhere) and finds q5's booking not done.
RUBRIC = {
    "judge-a": {"q1": True, "q2": True, "q3": True, "q4": False},
    "judge-b": {"q1": True, "q2": False, "q3": True, "q4": False},
}
GRADER = {"judge-a": {"q1": 10, "q2": 10, "q3": 10, "q4": 10}, "judge-b": {"q1": 10, "q2": 10, "q3": 4, "q4": 10}}


def panel_judge(body: dict) -> str:
    """Answers as judge-a or judge-b (the request's model), from what the prompt shows."""
    model = body["model"]
    text = " ".join(str(m["content"]) for m in body["messages"])
    found = re.search(r"Answer Q(\d)", text)
    assert found is not None, text
    test = f"q{found.group(1)}"
    schema = schema_of(body)
    reason = f"{model} on {test}"
    if test == "q5":  # judge-a: booked; judge-b: refused
        booked = model == "judge-a"
        return json.dumps(answer(schema, {"success_1": booked, "failure_1": not booked}, reason=reason))
    if "score" in schema["properties"]:
        return json.dumps(answer(schema, {"": GRADER[model][test]}, reason=reason))
    return json.dumps(answer(schema, default=RUBRIC[model][test], reason=reason))


@pytest.fixture
def panel_run(cli, fake_openai: FakeOpenAIServer, tmp_path: Path):
    fake_openai.judge = panel_judge
    suite = write(tmp_path / "panel.eval.yaml", SUITE)
    targets = write(tmp_path / "targets.yaml", TARGETS)

    def run(*extra: str) -> tuple[int, str, dict[str, dict], Path]:
        out = tmp_path / f"r{len(list(tmp_path.glob('r*.jsonl')))}.jsonl"
        args = ["run", suite, "--targets", targets, "--target", "bot", "-o", out, "--html", out.with_suffix(".html")]
        code, stdout, stderr = cli(*args, "--judge", JUDGES[0], "--judge", JUDGES[1], *extra)
        return code, stdout + stderr, {r["test_id"]: r for r in read_jsonl(out)}, out.with_suffix(".html")

    return run


def grader(result: dict, type_: str) -> dict:
    entries = [e for e in result["scores"] if e["type"] in ("turn", "scenario")]
    return next(g for e in entries for g in e["graders"] if g["type"] == type_)


def outcome(results: dict[str, dict], type_: str) -> list[tuple[str, float]]:
    return [(grader(results[f"q{n}"], type_)["verdict"], grader(results[f"q{n}"], type_)["score"]) for n in range(1, 5)]


# (rubrics, llm-grader) per rule, threshold 0.5: rubric votes a=[P,P,P,F] b=[P,F,P,F];
# grader scores a=[1,1,1,1] b=[1,1,0.4,1].
EXPECTED = {
    None: (  # default: majority for the yes/no rubric, mean for the 0-10 grader
        [("pass", 1.0), ("fail", 0.0), ("pass", 1.0), ("fail", 0.0)],
        [("pass", 1.0), ("pass", 1.0), ("pass", 0.7), ("pass", 1.0)],
    ),
    "mean": (
        [("pass", 1.0), ("pass", 0.5), ("pass", 1.0), ("fail", 0.0)],
        [("pass", 1.0), ("pass", 1.0), ("pass", 0.7), ("pass", 1.0)],
    ),
    "majority": (  # a tie fails, scored by the failing side
        [("pass", 1.0), ("fail", 0.0), ("pass", 1.0), ("fail", 0.0)],
        [("pass", 1.0), ("pass", 1.0), ("fail", 0.4), ("pass", 1.0)],
    ),
    "min": (
        [("pass", 1.0), ("fail", 0.0), ("pass", 1.0), ("fail", 0.0)],
        [("pass", 1.0), ("pass", 1.0), ("fail", 0.4), ("pass", 1.0)],
    ),
}


@pytest.mark.parametrize("rule", [None, "mean", "majority", "min"])
def test_each_rule_combines_the_judges(panel_run, fake_openai: FakeOpenAIServer, rule: str | None) -> None:
    code, _, results, _ = panel_run(*(["--panel-rule", rule] if rule else []))
    assert code == 1  # q4 fails whatever the rule
    rubric, graded = EXPECTED[rule]
    assert outcome(results, "rubrics") == rubric
    assert outcome(results, "llm-grader") == graded
    assert grader(results["q1"], "rubrics")["panel_rule"] == (rule or "majority")
    assert grader(results["q1"], "llm-grader")["panel_rule"] == (rule or "mean")
    # every judge answered every judged check: 4 tests x 2 checks + 1 scenario, per judge
    models = [b["model"] for b in fake_openai.judge_requests()]
    assert sorted(set(models)) == ["judge-a", "judge-b"] and models.count("judge-a") == models.count("judge-b")


def test_each_judges_answer_is_kept(panel_run) -> None:
    _, _, results, _ = panel_run()
    rubric = grader(results["q2"], "rubrics")
    assert rubric["panel"] == [
        {"judge": "openai:judge-a", "score": 1.0, "verdict": "pass", "reasoning": "judge-a on q2 c1", "error": None},
        {"judge": "openai:judge-b", "score": 0.0, "verdict": "fail", "reasoning": "judge-b on q2 c1", "error": None},
    ]
    assert rubric["judge_calls"] == 2
    [criterion] = rubric["assertions"]
    assert criterion["passed"] is False  # a tie fails
    assert "openai:judge-a: yes: judge-a on q2 c1" in criterion["evidence"]
    assert "openai:judge-b: no: judge-b on q2 c1" in criterion["evidence"]
    scored = grader(results["q3"], "llm-grader")["panel"]
    assert [(a["judge"], a["score"], a["verdict"]) for a in scored] == [
        ("openai:judge-a", 1.0, "pass"),
        ("openai:judge-b", 0.4, "fail"),
    ]
    assert scored[1]["reasoning"] == "4/10: judge-b on q3"
    # the scenario: judge-a says booked, judge-b not: majority of two is a tie, which fails
    scenario = results["q5"]
    assert scenario["outcome"] == "failed" and scenario["verdict"] == "fail"
    assert [(a["judge"], a["verdict"]) for a in grader(scenario, "scenario")["panel"]] == [
        ("openai:judge-a", "pass"),
        ("openai:judge-b", "fail"),
    ]


def krippendorff_nominal(a: list[str], b: list[str]) -> float:
    """Krippendorff's alpha, nominal, two raters, no missing value (Krippendorff 2011,
    "Computing Krippendorff's alpha-reliability", section B)."""
    values = a + b
    n = len(values)
    observed = sum(2 for x, y in zip(a, b, strict=True) if x != y) / n  # o_ck pairs off the diagonal
    counts = {v: values.count(v) for v in set(values)}
    expected = sum(counts[c] * counts[k] for c in counts for k in counts if c != k) / (n * (n - 1))
    return 1 - observed / expected


def gwet_ac1_two(a: list[str], b: list[str]) -> float:
    """Gwet's AC1 for two raters and the categories pass/fail (Gwet 2008, eq. 15)."""
    pa = sum(x == y for x, y in zip(a, b, strict=True)) / len(a)
    pi = (a.count("pass") + b.count("pass")) / (2 * len(a))
    pe = 2 * pi * (1 - pi)  # sum_k pi_k (1 - pi_k) / (q - 1), q = 2
    return (pa - pe) / (1 - pe)


def test_agreement_is_printed_and_shown(panel_run) -> None:
    _, output, results, html = panel_run()
    for check in ("rubrics", "llm-grader"):
        votes = [[a["verdict"] for a in grader(results[f"q{n}"], check)["panel"]] for n in range(1, 5)]
        a, b = [v[0] for v in votes], [v[1] for v in votes]
        alpha, ac1 = krippendorff_nominal(a, b), gwet_ac1_two(a, b)
        line = next(x for x in output.splitlines() if x.strip().startswith(f"{check}:"))
        assert "4 check(s) by openai:judge-a, openai:judge-b" in line
        assert f"Krippendorff's alpha {alpha:.3f}" in line and f"Gwet's AC1 {ac1:.3f}" in line
    # the figures themselves: rubric votes a=[P,P,P,F] b=[P,F,P,F]; grader a=[P,P,P,P] b=[P,P,F,P]
    assert f"{krippendorff_nominal(list('PPPF'), list('PFPF')):.4f}" == "0.5333"
    assert "Krippendorff's alpha 0.533, Gwet's AC1 0.529" in output
    assert "Krippendorff's alpha 0.000, Gwet's AC1 0.680" in output
    page = html.read_text(encoding="utf-8")
    assert "Judge panel agreement" in page
    assert re.search(
        r"<td>rubrics</td><td>4</td><td>openai:judge-a, openai:judge-b</td><td>majority</td><td>0\.533</td><td>0\.529</td>",
        page,
    )
    assert "judge panel (majority)" in page and "judge-b on q2" in page


def test_a_panel_whose_judges_all_failed_reports_no_agreement(cli, tmp_path: Path) -> None:
    """Before: the agreement of a panel that gave no verdict raised AgreementInputError ("the
    ratings matrix has no ratings at all"): a traceback at the end of `run` (exit 1, where every
    test errored) and in `report --html`."""
    write(tmp_path / "targets.yaml", "targets:\n  - {name: bot, provider: scripted}\n  - {name: j1, provider: scripted}\n  - {name: j2, provider: scripted}\njudges: [j1, j2]\n")  # fmt: skip
    suite = write(tmp_path / "s.eval.yaml", "tests:\n  - {id: a, input: hi, assertions: [Greets]}\n")
    code, out, _ = cli("run", suite, "--target", "bot", "--no-cache")  # a scripted judge answers no verdict
    assert code == 3
    assert "rubrics: 1 check(s) by j1, j2 (majority): Krippendorff's alpha undefined" in out
    code, _, _ = cli("report", "last", "--html", tmp_path / "r.html")
    assert code == 0 and "Judge panel agreement" in (tmp_path / "r.html").read_text(encoding="utf-8")


def test_one_judge_is_no_panel(cli, fake_openai: FakeOpenAIServer, tmp_path: Path) -> None:
    fake_openai.judge = panel_judge
    suite = write(tmp_path / "panel.eval.yaml", SUITE)
    targets = write(tmp_path / "targets.yaml", TARGETS)
    _, output, _ = cli(
        "run", suite, "--targets", targets, "--target", "bot", "--judge", JUDGES[0], "-o", tmp_path / "r.jsonl"
    )
    first = read_jsonl(tmp_path / "r.jsonl")[0]
    assert grader(first, "rubrics")["panel"] is None and "panel agreement" not in output


def test_a_panel_names_each_judge_once(cli, fake_openai: FakeOpenAIServer, tmp_path: Path) -> None:
    suite = write(tmp_path / "panel.eval.yaml", SUITE)
    targets = write(tmp_path / "targets.yaml", TARGETS)
    code, out, err = cli(
        "run", suite, "--targets", targets, "--target", "bot", "--judge", JUDGES[0], "--judge", JUDGES[0]
    )
    assert code == 2 and "judge 'openai:judge-a' is named twice" in out + err
    code, out, err = cli(
        "run", suite, "--target", "bot", "--judge", JUDGES[0], "--judge", JUDGES[1], "--panel-rule", "best"
    )
    assert code == 2 and "panel_rule" in out + err


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (["run", "s.yaml", "--threshold", "0.5", "--threshold", "0.9"], "--threshold"),
        (["run", "s.yaml", "-o", "a.jsonl", "--output", "b.jsonl"], "--output"),
        (["grade", "r.jsonl", "-o", "a.jsonl", "-o", "b.jsonl"], "--output"),
        (["arena", "s.yaml", "--prompt", "a", "--prompt", "b"], "--prompt"),
        (["report", "r.jsonl", "--html", "a.html", "--html", "b.html"], "--html"),
    ],
)
def test_a_repeated_single_value_option_is_an_error(cli, args: list[str], option: str) -> None:
    code, out, err = cli(*args)
    assert code == 2
    assert re.search(rf"{option}.*was given 2 times; it takes one value", out + err)


def test_rules() -> None:
    three = [Vote(1.0, True), Vote(0.9, True), Vote(0.2, False)]
    assert combine(three, "majority", 0.8) == (decision := combine(three, "majority", 0.8))
    assert (decision.passed, decision.score, decision.deciding) == (True, 0.95, (0, 1))
    assert combine(three, "mean", 0.8).passed is False and combine(three, "mean", 0.7).passed is True
    assert (combine(three, "min", 0.1).passed, combine(three, "min", 0.1).score) == (False, 0.2)
    assert combine_labels(["A", "A", "B"], "majority") == "A"
    assert combine_labels(["A", "B"], "majority") == "EQUAL"
    assert combine_labels(["A", "A", "B"], "min") == "EQUAL"
    assert combine_labels(["A", "EQUAL"], "mean") == "A" and combine_labels(["A", "B"], "mean") == "EQUAL"
    with pytest.raises(ValueError, match="at least two judges"):
        JudgePanel([object()])  # type: ignore[list-item]


# --- the arena with a panel ------------------------------------------------------------------


def contrary_on_refund(body: dict) -> str:
    """judge (fake-judge) is fair; judge-b prefers the worse bot on `refund`, in both orders."""
    fair = fair_winner(body)
    if body["model"] == "fake-judge-b" and which_test(body) == "refund":
        return {"A": "B", "B": "A"}.get(fair, fair)
    return fair


async def test_arena_panel_judges_each_pair_with_each_judge(
    desk: Path, judge_server: FakeOpenAIServer, tmp_path: Path
) -> None:
    judge_server.judge = pairwise_judge(contrary_on_refund)
    battles = tmp_path / "battles.jsonl"
    report = await convoeval.aarena(
        desk,
        targets=["polite", "terse"],
        judge=["judge", "judge-b"],
        bootstrap=20,
        cache=False,
        store=False,
        output=battles,
    )
    pairwise = [b for b in judge_server.judge_requests() if is_pairwise(b)]
    assert sorted(b["model"] for b in pairwise) == ["fake-judge"] * 6 + ["fake-judge-b"] * 6  # 3 tests x 2 orders each
    assert report.judge == "panel(judge, judge-b)"
    winners = {j.test_id: j.winner for j in report.judgments}
    assert winners == {"late-order": "model_a", "refund": "tie", "address": "model_a"}  # the judges split on refund
    refund = next(json.loads(line) for line in battles.read_text().splitlines() if '"refund"' in line)
    assert refund["judgments"] == {"a_first": "EQUAL", "b_first": "EQUAL"}
    assert refund["panel"]["rule"] == "majority"
    assert [(a["judge"], a["winner"]) for a in refund["panel"]["a_first"]] == [("judge", "A"), ("judge-b", "B")]
    assert [(a["judge"], a["winner"]) for a in refund["panel"]["b_first"]] == [("judge", "B"), ("judge-b", "A")]
    # the judges' agreement on the 6 labels (3 pairs x 2 orders): they differ on refund's two
    a = ["A", "B", "A", "B", "A", "B"]  # judge: polite first (A) or second (B) in each order
    b = ["A", "B", "B", "A", "A", "B"]  # judge-b: the other way round on refund
    agreement = report.to_dict()["panel_agreement"]
    assert agreement["judges"] == ["judge", "judge-b"] and agreement["items"] == 6
    assert agreement["percent_agreement"] == pytest.approx(4 / 6, abs=1e-4)
    assert agreement["krippendorff_alpha"] == pytest.approx(krippendorff_nominal(a, b), abs=1e-4)
    assert "judges' agreement on 6 labels" in report.caption()


async def test_arena_panel_with_a_failed_judge_that_could_change_the_label_is_no_battle(
    desk: Path, judge_server: FakeOpenAIServer
) -> None:
    """judge-b answers garbage on `refund`: the fair judge alone does not make the battle (under
    majority judge-b's label could make it a tie); the pair is a judge error."""

    def judge_b_fails_on_refund(body: dict) -> str:
        if body["model"] == "fake-judge-b" and which_test(body) == "refund":
            return "RAW:not json"
        return fair_winner(body)

    judge_server.judge = pairwise_judge(judge_b_fails_on_refund)
    report = await convoeval.aarena(
        desk, targets=["polite", "terse"], judge=["judge", "judge-b"], bootstrap=20, cache=False, store=False
    )
    assert {j.test_id: j.winner for j in report.judgments} == {
        "late-order": "model_a",
        "refund": None,
        "address": "model_a",
    }
    refund = next(j for j in report.judgments if j.test_id == "refund")
    assert "could change the panel's label (majority)" in refund.errors[0]
    assert len(report.battles) == 2


def test_arena_command_takes_a_panel(cli, desk: Path, judge_server: FakeOpenAIServer) -> None:
    judge_server.judge = pairwise_judge(contrary_on_refund)
    args = ("arena", desk, "--target", "polite", "--target", "terse", "--judge", "judge", "--judge", "judge-b")
    code, out, err = cli(*args, "--panel-rule", "min", "--format", "json", "--bootstrap", "20", "-o", "battles.jsonl")
    assert code == 0, err
    report = json.loads(out)
    assert report["judge"] == "panel(judge, judge-b)" and report["panel_agreement"]["items"] == 6
    battles = [json.loads(line) for line in (desk.parent / "battles.jsonl").read_text().splitlines()]
    assert {b["test_id"]: b["winner"] for b in battles} == {
        "late-order": "model_a",
        "refund": "tie",
        "address": "model_a",
    }
    assert {b["panel"]["rule"] for b in battles} == {"min"}


# --- panels named by the suite or the targets file ---------------------------------------------


def test_suite_names_its_panel_and_rule(cli, fake_openai: FakeOpenAIServer, tmp_path: Path) -> None:
    fake_openai.judge = panel_judge
    text = SUITE.replace(
        "  threshold: 0.5\n", "  threshold: 0.5\n  judges: [openai:judge-a, openai:judge-b]\n  panel_rule: min\n"
    )
    suite = write(tmp_path / "panel.eval.yaml", text)
    targets = write(tmp_path / "targets.yaml", TARGETS)
    cli("run", suite, "--targets", targets, "--target", "bot", "-o", tmp_path / "r.jsonl")
    results = {r["test_id"]: r for r in read_jsonl(tmp_path / "r.jsonl")}
    assert outcome(results, "llm-grader") == EXPECTED["min"][1]
    assert grader(results["q3"], "llm-grader")["panel_rule"] == "min"


def test_targets_file_names_the_panel(cli, fake_openai: FakeOpenAIServer, tmp_path: Path) -> None:
    fake_openai.judge = panel_judge
    suite = write(tmp_path / "panel.eval.yaml", SUITE)
    judges = "".join(
        f"  - {{name: {n}, provider: openai, model: {n}, base_url: {fake_openai.base_url}, api_key: k}}\n"
        for n in ("judge-a", "judge-b")
    )
    write(tmp_path / "targets.yaml", TARGETS + judges + "judges: [judge-a, judge-b]\npanel_rule: mean\n")
    code, out, err = cli("run", suite, "--target", "bot", "-o", tmp_path / "r.jsonl")
    results = {r["test_id"]: r for r in read_jsonl(tmp_path / "r.jsonl")}
    assert "judges: judge-a, judge-b (the targets file's judges)" in out
    assert outcome(results, "rubrics") == EXPECTED["mean"][0]
    assert [a["judge"] for a in grader(results["q1"], "rubrics")["panel"]] == ["judge-a", "judge-b"]
    # --judge wins over the file; --panel-rule over its rule
    cli(
        "run",
        suite,
        "--target",
        "bot",
        "--judge",
        "judge-b",
        "--judge",
        "judge-a",
        "--panel-rule",
        "min",
        "-o",
        tmp_path / "s.jsonl",
    )
    first = read_jsonl(tmp_path / "s.jsonl")[0]
    assert [a["judge"] for a in grader(first, "rubrics")["panel"]] == ["judge-b", "judge-a"]
    assert grader(first, "rubrics")["panel_rule"] == "min"


@pytest.mark.parametrize(
    ("execution", "message"),
    [
        ("judges: [a, a]", "judge 'a' is named twice"),
        ("judges: []", "at least 1 item"),
        ("judge: a\n  judges: [b, c]", "give `judge` (one judge) or `judges` (a panel), not both"),
        ("panel_rule: best", "panel_rule"),
    ],
)
def test_a_bad_panel_in_a_suite_is_a_file_line_error(cli, tmp_path: Path, execution: str, message: str) -> None:
    suite = write(tmp_path / "s.eval.yaml", f"execution:\n  {execution}\ntests:\n  - {{id: t, input: hi}}\n")
    code, out, err = cli("validate", suite)
    assert code == 2
    assert re.search(rf"{re.escape(str(suite))}:[12]: execution", err) and message in err


def test_a_bad_panel_in_a_targets_file_is_a_file_line_error(cli, tmp_path: Path) -> None:
    suite = write(tmp_path / "s.eval.yaml", SUITE)
    write(tmp_path / "targets.yaml", TARGETS + "judges: [a, b]\npanel_rule: best\n")
    code, out, err = cli("run", suite, "--target", "bot")
    assert code == 2
    line = len(TARGETS.splitlines()) + 2
    assert f"{tmp_path / 'targets.yaml'}:{line}: panel_rule: must be one of mean, majority, min, got 'best'" in err


def test_combine_scores_keeps_errors_apart_and_joins_dimensions() -> None:
    def score(verdict: str, value: float | None, likert: int = 3, error: str | None = None) -> GraderScore:
        dims = {"cohesion": DimensionScore(likert=likert, score=(likert - 1) / 4, justification=f"said {likert}")}
        return GraderScore(
            name="td",
            type="td-eval",
            score=value,
            verdict=verdict,
            error=error,  # type: ignore[arg-type]
            dimensions=None if error else dims,
            judge_calls=1,
            judge_usage=Usage(input_tokens=10, output_tokens=2),
        )

    judges = ["a", "b", "c"]
    votes = [score("pass", 1.0, 5), score("error", None, error="judge call failed: HTTP 500"), score("fail", 0.5, 3)]
    mean = combine_scores(votes, judges, "mean", 0.5)  # passes even had b scored 0: (1 + 0 + 0.5) / 3
    assert (mean.verdict, mean.score, mean.judge_calls) == ("pass", 0.75, 3)
    assert mean.judge_usage == Usage(input_tokens=30, output_tokens=6)
    assert [(a.judge, a.verdict, a.error) for a in mean.panel or []] == [
        ("a", "pass", None),
        ("b", "error", "judge call failed: HTTP 500"),
        ("c", "fail", None),
    ]
    assert mean.dimensions == {"cohesion": DimensionScore(likert=[5, 3], score=0.75, justification="said 5 | said 3")}
    undecided = combine_scores(votes, judges, "mean", 0.7)  # b's 0 would fail it, its 1 pass it
    assert undecided.verdict == "error" and undecided.score is None
    assert "the judges that failed could change the panel's verdict (mean) (b: judge call failed" in (
        undecided.error or ""
    )
    assert combine_scores(votes, judges, "min", 0.7).verdict == "fail"  # c failed: whatever b said
    assert combine_scores(votes[:2], judges[:2], "min", 0.7).verdict == "error"  # b could fail it
    assert combine_scores(votes, judges, "majority", 0.7).verdict == "error"  # b decides the split
    none = combine_scores([votes[1], votes[1]], ["a", "b"], "majority", 0.7)
    assert none.verdict == "error" and none.score is None and "no judge of the panel decided" in (none.error or "")


def test_a_judge_that_failed_is_left_out_only_when_it_could_not_change_the_verdict(
    panel_run, fake_openai: FakeOpenAIServer
) -> None:
    """judge-b answers garbage on q1, judge-a passes it: under majority the one passing judge
    does not make a pass (judge-b could have failed it): the check and the test are errors,
    never a pass. The 0-10 grader's mean of 1.0 and anything judge-b could say reaches 0.5."""

    def judge_b_fails_on_q1(body: dict) -> str:
        text = " ".join(str(m["content"]) for m in body["messages"])
        return "not json" if body["model"] == "judge-b" and "Answer Q1" in text else panel_judge(body)

    fake_openai.judge = judge_b_fails_on_q1
    code, _, results, _ = panel_run()
    rubric, graded = grader(results["q1"], "rubrics"), grader(results["q1"], "llm-grader")
    assert (rubric["verdict"], rubric["score"]) == ("error", None)
    assert "could change the panel's verdict (majority)" in rubric["error"]
    assert [(a["judge"], a["verdict"]) for a in rubric["panel"]] == [(JUDGES[0], "pass"), (JUDGES[1], "error")]
    assert (graded["verdict"], graded["score"]) == ("pass", 1.0)  # mean: settled whatever judge-b said
    assert results["q1"]["verdict"] == "error" and code == 1


def test_a_checks_single_outcome_follows_the_panels_verdict(panel_run) -> None:
    _, _, results, _ = panel_run()
    graded = grader(results["q3"], "llm-grader")  # mean 0.7 of 1.0 and 0.4 passes at 0.5
    assert graded["verdict"] == "pass" and [a["passed"] for a in graded["assertions"]] == [True]


def test_a_panel_is_a_suite_level_setting(cli, tmp_path: Path) -> None:
    suite = write(tmp_path / "s.eval.yaml", "tests:\n  - id: t\n    input: hi\n    execution: {judges: [a, b]}\n")
    code, _, err = cli("validate", suite)
    assert code == 2 and f"{suite}:4: tests[0].execution.judges: `judges` is a suite-level setting" in err
