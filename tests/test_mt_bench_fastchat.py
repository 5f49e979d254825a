"""MT-Bench judged with FastChat's own judge prompts (tests/data/mt-bench/judge_prompts.jsonl,
unmodified): sent as written, `[[rating]]` answers read as FastChat reads them, and the
per-category, per-turn table of `report --by category`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import convoeval
from convoeval.datasets import import_dataset
from convoeval.spec import load_suite

from .conftest import REPO, write

MT_BENCH = REPO / "tests" / "data" / "mt-bench"
PROMPTS = {
    json.loads(line)["name"]: json.loads(line) for line in (MT_BENCH / "judge_prompts.jsonl").read_text().splitlines()
}


def _sample(tmp_path: Path, ids: tuple[int, ...]) -> Path:
    lines = [json.loads(line) for line in (MT_BENCH / "question.jsonl").read_text().splitlines()]
    (tmp_path / "reference_answer_gpt-4.jsonl").write_text((MT_BENCH / "reference_answer_gpt-4.jsonl").read_text())
    return write(tmp_path / "question.jsonl", "\n".join(json.dumps(r) for r in lines if r["question_id"] in ids))


def test_import_uses_fastchat_prompts_once_each(cli, tmp_path: Path) -> None:
    out_file = tmp_path / "mt.eval.yaml"
    code, out, err = cli(
        "import",
        "mt-bench",
        MT_BENCH / "question.jsonl",
        "--judge-prompts",
        MT_BENCH / "judge_prompts.jsonl",
        "-o",
        out_file,
    )
    assert code == 0 and "80 test(s) written" in out, err
    text = out_file.read_text()
    assert text.count("prompt_template:") == 4  # each prompt written once, then YAML aliases
    suite = load_suite(out_file)
    math_test = next(t for t in suite.tests if t.metadata["category"] == "math")
    first, second = (t.assertions[0] for t in math_test.turns)
    assert (first.prompt.name, second.prompt.name) == ("single-math-v1", "single-math-v1-multi-turn")
    assert second.prompt.prompt_template == PROMPTS["single-math-v1-multi-turn"]["prompt_template"]
    assert second.prompt.system_prompt == PROMPTS["single-math-v1-multi-turn"]["system_prompt"]
    assert len(first.references) == 2
    writing = suite.tests[0].turns[0].assertions[0]
    assert writing.prompt.name == "single-v1" and writing.references == []

    broken = write(tmp_path / "p.jsonl", json.dumps(PROMPTS["single-v1"]) + "\n")
    code, out, err = cli("import", "mt-bench", MT_BENCH / "question.jsonl", "--judge-prompts", broken, "-o", out_file)
    assert code == 2 and f"{broken}:1: no single-answer judge prompt named 'single-v1-multi-turn'" in err
    # Before: KeyError 'single-math-v1-multi-turn' (a traceback) when only that one was missing.
    kept = [p for name, p in PROMPTS.items() if name != "single-math-v1-multi-turn"]
    broken.write_text("".join(json.dumps(p) + "\n" for p in kept))
    code, out, err = cli("import", "mt-bench", MT_BENCH / "question.jsonl", "--judge-prompts", broken, "-o", out_file)
    assert (
        code == 2 and f"{broken}:1: no judge prompt named 'single-math-v1-multi-turn' (for reasoning questions)" in err
    )


def test_judged_with_fastchat_prompts_as_written_and_grouped_by_category_and_turn(
    cli, fake_openai, tmp_path: Path
) -> None:
    source = _sample(tmp_path, (81, 101))
    suite = convoeval.datasets.write_suite(
        import_dataset("mt-bench", source, judge_prompts=MT_BENCH / "judge_prompts.jsonl"), tmp_path / "mt.eval.yaml"
    )
    ratings = iter(["Rating: [[7]]", "The answer is fine. Rating: [[9.5]]", "Rating: [4]", "no rating at all"])

    def reply(body: dict) -> str:
        if body["model"] != "j":
            return f"LIVE-ANSWER to {body['messages'][-1]['content'][:12]}"
        return next(ratings, "no rating here either")

    fake_openai.reply = reply
    report = convoeval.run(suite, target="openai:m", judge="openai:j", store=False, cache=False, concurrency=1)
    judged = [r for r in fake_openai.requests if r["model"] == "j"]
    assert all("response_format" not in r for r in judged)  # FastChat's own answer format, nothing imposed
    first = judged[0]["messages"]
    assert first[0] == {"role": "system", "content": PROMPTS["single-v1"]["system_prompt"]}
    question = json.loads((tmp_path / "question.jsonl").read_text().splitlines()[0])["turns"][0]
    assert first[1]["content"] == PROMPTS["single-v1"]["prompt_template"].format(
        question=question, answer=f"LIVE-ANSWER to {question[:12]}"
    )
    second = judged[1]["messages"][1]["content"]
    assert second.startswith("<|The Start of Assistant A's Conversation with User|>")
    reasoning = [r for r in judged if "<|The Start of Reference Answer|>" in r["messages"][1]["content"]]
    assert reasoning and "### Reference answer:" in reasoning[-1]["messages"][1]["content"]
    writing, math = report.results
    assert [e.score for e in writing.scores if e.type == "turn"] == [0.7, 0.95]
    turns = [e for e in math.scores if e.type == "turn"]
    assert turns[0].score == 0.4  # FastChat's backup pattern "[4]"
    assert turns[1].verdict == "error" and "no rating" in (turns[1].graders[0].error or "")

    results = tmp_path / "r.jsonl"
    results.write_text("".join(r.model_dump_json() + "\n" for r in report.results))
    code, out, err = cli(
        "report", results, "--by", "category", "--markdown", tmp_path / "s.md", "--html", tmp_path / "r.html"
    )
    assert code == 0, err
    assert "results by category" in out and "writing" in out and "reasoning" in out and "turn 2" in out
    markdown = (tmp_path / "s.md").read_text()
    assert "### Results by category" in markdown and "| writing | 1 |" in markdown and "0.825" in markdown
    # FastChat's show_result.py on these judgments (7, 9.5, 4 and a -1 it drops): turn 1 5.5,
    # turn 2 9.5, Average 6.833; the mean of the two tests' scores (0.613) is not MT-Bench's.
    table = markdown.split("### Results by category")[1].split("\n\n")[1].splitlines()
    header, everything = table[0], table[-1]
    assert header.endswith("| turn 1 | turn 2 | turns mean |")
    assert everything.endswith("| 0.613 | 0.550 | 0.950 | 0.683 |")
    assert 'id="by-category"' in (tmp_path / "r.html").read_text()
    code, out, err = cli("report", results, "--by", "nothing")
    assert code == 2 and "no result has this field" in err


def test_an_answer_without_a_usable_rating_is_not_asked_again_and_is_an_error(fake_openai, tmp_path: Path) -> None:
    """FastChat asks its judge once: an answer without `[[N]]` (nor `[N]`) is recorded as -1, which
    show_result.py leaves out. So it is not asked again here (a judge that gives a rating when
    asked again would have scored a turn FastChat drops: on 80 questions x 2 models, 112 of 320
    turns): it is a grader error, which `turns mean` leaves out. FastChat's prompts rate on "a scale
    of 1 to 10": `[[15]]`, `[[100]]` and `[[0]]` are no usable answer either (never clamped: `[[15]]`
    was once the score 1.5, clamped to 1.0, a pass). Decimals stay (FastChat's regex takes them);
    `[[-3]]` has no rating in FastChat's patterns."""
    first = {
        "high": "Rating: [[15]]",
        "hundred": "Rating: [[100]]",
        "zero": "Rating: [[0]]",
        "negative": "Rating: [[-3]]",
        "none": "I cannot rate this.",
        "half": "Rating: [[7.5]]",
        "top": "Rating: [[10]]",
        "bottom": "Rating: [[1]]",
    }

    def reply(body: dict) -> str:
        if body["model"] != "j":
            return "an answer"
        case = next(c for c in first if f"case {c}?" in body["messages"][1]["content"])
        if len(body["messages"]) > 2:  # asked again: a judge that would now comply
            return "Rating: [[8]]"
        return first[case]

    fake_openai.reply = reply
    check = json.dumps({"type": "mt-bench-judge", "prompt": PROMPTS["single-v1"]})
    suite = write(
        tmp_path / "mt.eval.yaml",
        "tests:\n" + "".join(f"  - {{id: {c}, input: 'case {c}?', assertions: [{check}]}}\n" for c in first),
    )
    report = convoeval.run(str(suite), target="openai:m", judge="openai:j", store=False, cache=False)
    graders = {r.test_id: r.scores[0].graders[0] for r in report.results}
    for case in ("high", "hundred", "zero", "negative", "none"):
        grader = graders[case]
        assert (grader.verdict, grader.score, grader.judge_calls, grader.judge_reasks) == ("error", None, 1, 0), case
    for case, rating in (("high", "15"), ("hundred", "100"), ("zero", "0")):
        assert f"the rating {rating} is outside the scale of 1 to 10" in (graders[case].error or "")
    assert "no rating" in (graders["negative"].error or "") and "no rating" in (graders["none"].error or "")
    assert [(graders[c].verdict, graders[c].score, graders[c].judge_calls) for c in ("half", "top", "bottom")] == [
        ("fail", 0.75, 1),
        ("pass", 1.0, 1),
        ("fail", 0.1, 1),
    ]
    assert {r.test_id: r.verdict for r in report.results if r.verdict == "pass"} == {"top": "pass"}


#: FastChat's temperature_config (fastchat/llm_judge/common.py, the snapshot of SOURCE.txt).
FASTCHAT_TEMPERATURES = {
    "writing": 0.7,
    "roleplay": 0.7,
    "extraction": 0.0,
    "math": 0.0,
    "coding": 0.0,
    "reasoning": 0.0,
    "stem": 0.1,
    "humanities": 0.1,
}


def test_answers_are_asked_for_as_fastchat_gen_api_answer_asks_an_openai_model(fake_openai, tmp_path: Path) -> None:
    """gen_api_answer.py: each category's temperature, max_tokens 1024, and the `chatgpt`
    conversation template's system message before the questions, on both turns."""
    suite = import_dataset("mt-bench", MT_BENCH / "question.jsonl")
    temperatures = {t["metadata"]["category"]: t["execution"]["temperature"] for t in suite["tests"]}
    assert temperatures == FASTCHAT_TEMPERATURES
    assert suite["execution"] == {"max_tokens": 1024}

    source = _sample(tmp_path, (81, 101, 131, 141))  # writing, reasoning, extraction, stem
    path = convoeval.datasets.write_suite(import_dataset("mt-bench", source), tmp_path / "mt.eval.yaml")
    fake_openai.judge = lambda body: json.dumps({"reasoning": "fine", "score": 8})
    convoeval.run(path, target="openai:m", judge="openai:j", store=False, cache=False)
    questions = {q["turns"][0]: q["category"] for q in map(json.loads, source.read_text().splitlines())}
    sent = fake_openai.target_requests()
    assert len(sent) == 8
    for body in sent:
        system, first = body["messages"][:2]
        assert system == {"role": "system", "content": "You are a helpful assistant."}
        assert body["temperature"] == FASTCHAT_TEMPERATURES[questions[first["content"]]]
        assert body["max_tokens"] == 1024
    assert all(r["temperature"] == 0.0 for r in fake_openai.judge_requests())  # the judge's own, as FastChat's


def test_a_question_s_required_temperature_is_its_own_and_a_test_s_sampling_is_over_the_target_s(
    cli, tmp_path: Path
) -> None:
    question = {"question_id": 1, "category": "writing", "turns": ["a", "b"], "required_temperature": 0.3}
    source = write(tmp_path / "q.jsonl", json.dumps(question) + "\n")
    assert import_dataset("mt-bench", source)["tests"][0]["execution"] == {"temperature": 0.3}
    write(source, json.dumps({**question, "required_temperature": "hot"}) + "\n")
    code, out, err = cli("import", "mt-bench", source, "-o", tmp_path / "x.eval.yaml")
    assert code == 2 and f"{source}:1: required_temperature: expected a number from 0 to 2" in err
    suite = write(
        tmp_path / "s.eval.yaml",
        "tests:\n  - {id: t, input: hi, execution: {temperature: 3, max_tokens: 0, judge: j}}\n",
    )
    code, out, err = cli("validate", suite)
    assert code == 2 and "execution.temperature" in err and "execution.max_tokens" in err, err


def test_every_category_fastchat_grades_against_a_reference_gets_its_math_prompt(tmp_path: Path) -> None:
    """FastChat's NEED_REF_CATS (fastchat/llm_judge/common.py): math, reasoning, coding and
    arena-hard-200 are judged with `single-math-v1` and the reference answers."""
    question = {"question_id": 1, "category": "arena-hard-200", "turns": ["q1", "q2"], "reference": ["r1", "r2"]}
    source = write(tmp_path / "question.jsonl", json.dumps(question) + "\n")
    (test,) = import_dataset("mt-bench", source, judge_prompts=MT_BENCH / "judge_prompts.jsonl")["tests"]
    first, second = (turn["assertions"][0] for turn in test["turns"])
    assert (first["prompt"]["name"], second["prompt"]["name"]) == ("single-math-v1", "single-math-v1-multi-turn")
    assert first["references"] == ["r1", "r2"]


def test_judge_vs_judge_on_mt_bench_compares_the_raw_1_to_10_ratings(cli, fake_openai, tmp_path: Path) -> None:
    """`agreement --runs --categories 1-10` on two MT-Bench judges compares their ratings. Binning
    the score (rating / 10) into 1-10 gave ratings 5 and 6 the same category: a judge always
    saying [[5]] and one always saying [[6]] agreed 100%."""
    said = {"ja": {"a": 5, "b": 5, "c": 5}, "jb": {"a": 6, "b": 6, "c": 6}, "jc": {"a": 5, "b": 5, "c": 4}}

    def reply(body: dict) -> str:
        if body["model"] not in said:
            return "an answer"
        case = next(c for c in "abc" if f"case {c}?" in body["messages"][1]["content"])
        return f"Rating: [[{said[body['model']][case]}]]"

    fake_openai.reply = reply
    check = json.dumps({"type": "mt-bench-judge", "prompt": PROMPTS["single-v1"]})
    suite = write(
        tmp_path / "mt.eval.yaml",
        "tests:\n" + "".join(f"  - {{id: {c}, input: 'case {c}?', assertions: [{check}]}}\n" for c in "abc"),
    )
    runs = {}
    for judge in said:
        runs[judge] = tmp_path / f"{judge}.jsonl"
        convoeval.run(
            str(suite), target="openai:m", judge=f"openai:{judge}", output=runs[judge], store=False, cache=False
        )
    for other, share in (("jb", 0.0), ("jc", 2 / 3)):
        code, out, err = cli("agreement", "--runs", runs["ja"], runs[other], "--categories", "1-10", "--format", "json")
        assert code == 0, err
        assert json.loads(out)["statistics"]["percent_agreement"]["value"] == pytest.approx(share), other


def test_judge_vs_judge_on_mt_bench_with_the_default_1_to_5_bins_every_rating(cli, fake_openai, tmp_path: Path) -> None:
    """Without `--categories 1-10` (the default 1-5), MT-Bench ratings are binned from their
    score, all alike. Before, a rating that happened to be 1-5 was taken as is: [[5]] was the top
    category, level with [[10]] (so a judge saying 5 and one saying 10 agreed 100%) and above
    [[6]]-[[8]] (binned to 3-4)."""
    said = {"ja": 5, "jb": 10, "jc": 8}
    fake_openai.reply = lambda body: f"Rating: [[{said[body['model']]}]]" if body["model"] in said else "an answer"
    check = json.dumps({"type": "mt-bench-judge", "prompt": PROMPTS["single-v1"]})
    suite = write(
        tmp_path / "mt.eval.yaml",
        "tests:\n" + "".join(f"  - {{id: {c}, input: 'case {c}?', assertions: [{check}]}}\n" for c in "ab"),
    )
    for judge in said:
        convoeval.run(
            str(suite),
            target="openai:m",
            judge=f"openai:{judge}",
            output=tmp_path / f"{judge}.jsonl",
            store=False,
            cache=False,
        )
    for other, share in (("jb", 0.0), ("jc", 0.0)):  # 5 -> 3 of 1-5, 10 -> 5, 8 -> 4
        code, out, err = cli(
            "agreement", "--runs", tmp_path / "ja.jsonl", tmp_path / f"{other}.jsonl", "--format", "json"
        )
        assert code == 0, err
        assert json.loads(out)["statistics"]["percent_agreement"]["value"] == pytest.approx(share), other


def test_report_by_category_counts_every_trial_turn(cli, fake_openai, tmp_path: Path) -> None:
    """With `--trials 2` the per-turn columns and `turns mean` are over every trial's turns, as the
    mean score is: they were the first trial's only (0.200 beside a mean score of 0.500)."""
    asked: dict[str, int] = {}

    def reply(body: dict) -> str:
        if body["model"] != "j":
            return "an answer"
        key = body["messages"][-1]["content"]
        asked[key] = asked.get(key, 0) + 1
        return "Rating: [[2]]" if asked[key] == 1 else "Rating: [[8]]"

    fake_openai.reply = reply
    check = json.dumps({"type": "mt-bench-judge", "prompt": PROMPTS["single-v1"]})
    suite = write(
        tmp_path / "mt.eval.yaml",
        "tests:\n  - id: q\n    metadata: {category: writing}\n    mode: conversation\n"
        f"    turns:\n      - {{input: 'case q?', assertions: [{check}]}}\n",
    )
    results = tmp_path / "r.jsonl"
    convoeval.run(str(suite), target="openai:m", judge="openai:j", output=results, trials=2, store=False, cache=False)
    code, out, err = cli("report", results, "--by", "category", "--markdown", tmp_path / "by.md")
    assert code == 0, err
    rows = (tmp_path / "by.md").read_text().split("### Results by category")[1].split("\n\n")[1].splitlines()
    assert rows[0].startswith("| category | tests | pass | fail | error | skip | mean score | turn 1 | turns mean |")
    assert rows[2].startswith("| writing | 1 | 0 | 1 | 0 | 0 | 0.500 | 0.500 | 0.500 |")
