"""Importing other tools' tests: promptfoo configs (its own examples, copied in tests/data/promptfoo)
and DeepEval datasets; the suites validate and run against the loopback fake server."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

import convoeval
from convoeval.datasets import DatasetWarning, import_dataset, write_suite
from convoeval.errors import DatasetError
from convoeval.spec import load_suite

from .conftest import DATA, read_jsonl, write

PROMPTFOO = DATA / "promptfoo"
DEEPEVAL = DATA / "deepeval"


def _schema(body: dict[str, Any]) -> str:
    return body["response_format"]["json_schema"]["name"]


def simulator_then_verdicts() -> Any:
    """A fake judge: the simulated user speaks twice (stopping the second time, objective met);
    every scenario criterion and score question gets a passing answer."""
    steps: list[int] = []

    def judge(body: dict[str, Any]) -> str:
        name = _schema(body)
        if name == "user_step":
            steps.append(1)
            stop = len(steps) >= 2
            reason = "objective_met" if stop else "none"
            return json.dumps({"message": "I want to fly to Seattle on May 20.", "stop": stop, "stop_reason": reason})
        if name == "scenario":
            keys = list(body["response_format"]["json_schema"]["schema"]["properties"])
            return json.dumps({k: {"reasoning": "the agent did it", "satisfied": True} for k in keys})
        if "score" in body["response_format"]["json_schema"]["schema"].get("properties", {}):
            return json.dumps({"reasoning": "good", "score": 9})
        return convoeval.testing.default_judge(body)

    return judge


# -- promptfoo -------------------------------------------------------------------------------


def test_promptfoo_multi_turn_example_imports_validates_and_runs_as_conversations(cli, fake_openai, tmp_path) -> None:
    config = PROMPTFOO / "multiple-turn-conversation" / "promptfooconfig.yaml"
    code, out, err = cli("import", "promptfoo", config, "-o", tmp_path / "mt.eval.yaml")
    assert code == 0, err
    assert "3 test(s) written" in out and "warning" not in err
    suite = load_suite(tmp_path / "mt.eval.yaml")
    assert [t.id for t in suite.tests] == ["facebook_thread", "weather_thread", "food_thread"]
    facebook = suite.tests[0]
    assert facebook.mode == "conversation"
    assert [t.input for t in facebook.turns or []] == [
        "Who founded Facebook?",
        "Where does he live?",
        "Which state is that in?",
    ]
    assert suite.execution is not None and suite.execution.target == "openai:gpt-4.1-mini"
    assert cli("validate", tmp_path / "mt.eval.yaml")[0] == 0

    fake_openai.reset(reply=lambda body: f"reply to: {body['messages'][-1]['content']}")
    report = convoeval.run(tmp_path / "mt.eval.yaml", target="openai:m", store=False, cache=False)
    assert len(report.results) == 3 and all(r.execution_status == "ok" for r in report.results)
    third = [r for r in fake_openai.target_requests() if r["messages"][-1]["content"] == "Which state is that in?"]
    # the whole conversation goes to the target, with the ACTUAL earlier replies, as promptfoo's
    # `_conversation` loop renders it
    assert [(m["role"], m["content"]) for m in third[0]["messages"]] == [
        ("system", "You are a helpful assistant"),
        ("user", "Who founded Facebook?"),
        ("assistant", "reply to: Who founded Facebook?"),
        ("user", "Where does he live?"),
        ("assistant", "reply to: Where does he live?"),
        ("user", "Which state is that in?"),
    ]


def test_promptfoo_simulated_user_example_becomes_simulated_users_and_runs(cli, fake_openai, tmp_path) -> None:
    config = PROMPTFOO / "tau-simulated-user" / "promptfooconfig.yaml"
    code, out, err = cli("import", "promptfoo", config, "-o", tmp_path / "tau.eval.yaml")
    assert code == 0, err
    suite = load_suite(tmp_path / "tau.eval.yaml")
    budget = suite.tests[0]
    assert budget.id == "Budget-traveler-booking-flight"
    assert budget.simulated_user is not None and budget.simulated_user.max_turns == 10
    assert budget.simulated_user.objective.startswith("You are mia_li_3668.")
    assert budget.input[0].role == "system" and "airline booking agent" in budget.input[0].text
    rubric = budget.assertions[0]
    assert rubric.type == "llm-grader" and "Pass if: Got economy flight" in rubric.criteria

    fake_openai.reset(reply=lambda body: "Which date would you like to fly?", judge=simulator_then_verdicts())
    imported = import_dataset("promptfoo", config)
    single = write_suite({**imported, "tests": imported["tests"][:1]}, tmp_path / "one.eval.yaml")
    report = convoeval.run(single, target="openai:m", judge="openai:j", store=False, cache=False)
    (result,) = report.results
    assert result.execution_status == "ok" and result.verdict == "pass", result.error
    assert [m.source for m in result.output if m.role != "system"][:2] == ["simulator", "target"]


def test_promptfoo_assertions_map_to_convoeval_types_and_the_rest_are_errors(cli, tmp_path) -> None:
    """Types with no convoeval equivalent stay in the eval file as written, so that validating
    it names each with its line. Before, they were dropped with a warning and a test whose
    only check was one of them passed."""
    config = PROMPTFOO / "assertions" / "promptfooconfig.yaml"
    code, out, err = cli("import", "promptfoo", config, "-o", tmp_path / "a.eval.yaml")
    assert code == 2, err
    assert err.count("warning:") == 1
    assert (
        "4 promptfoo assertion(s) with no convoeval equivalent, kept as written for you to replace or remove: "
        "perplexity (1), rouge-n (1), similar (2)" in err
    )
    unknown = [line.split(": ", 1)[1] for line in err.splitlines() if "unknown assertion type" in line]
    assert unknown == [
        "tests[3].assertions[7].type: unknown assertion type 'similar'",
        "tests[3].assertions[8].type: unknown assertion type 'rouge-n'",
        "tests[3].assertions[9].type: unknown assertion type 'perplexity'",
        "tests[3].assertions[10].type: unknown assertion type 'similar'",
    ]
    written = yaml.safe_load((tmp_path / "a.eval.yaml").read_text())
    for test in written["tests"]:  # what the user does: remove them (or replace them)
        test["assertions"] = [a for a in test["assertions"] if a["type"] not in ("similar", "rouge-n", "perplexity")]
    write(tmp_path / "a.eval.yaml", yaml.safe_dump(written))
    suite = load_suite(tmp_path / "a.eval.yaml")
    by_id = {t.id: t for t in suite.tests}
    text = [a.type for a in by_id["text-checks"].assertions]
    assert text == [
        "not-icontains",  # from defaultTest, as promptfoo applies it to every test
        "equals",
        "contains",
        "icontains",
        "contains-any",
        "contains-all",
        "icontains-any",
        "icontains-all",
        "not-contains",
        "not-contains-any",
        "regex",
        "not-regex",
        "starts-with",
    ]
    prefix = by_id["text-checks"].assertions[-1]
    assert prefix.weight == 2 and prefix.name == "prefix"
    json_checks = by_id["json-checks"].assertions[1:]
    assert [(a.type, a.negated) for a in json_checks] == [("is-json", False), ("jsonpath", False), ("is-json", True)]
    assert json_checks[0].json_schema == {"type": "object", "required": ["capital"]}
    judged = by_id["judged-checks"].assertions[1:]
    assert [a.type for a in judged] == ["llm-grader"] * 4 + ["latency", "cost"]
    assert judged[0].min_score == 0.7 and "for Explain photosynthesis." in judged[0].criteria
    assert judged[3].expected_output.startswith("Plants turn light")
    assert judged[4].threshold_ms == 5000 and judged[5].max_usd == 0.01


def test_promptfoo_python_and_javascript_assertions_run_as_code_graders(fake_openai, tmp_path) -> None:
    config = PROMPTFOO / "assertions" / "promptfooconfig.yaml"
    with pytest.warns(DatasetWarning, match="4 promptfoo assertion"):
        suite = import_dataset("promptfoo", config)
    suite["tests"] = [t for t in suite["tests"] if t["id"] in ("text-checks", "code-checks")]
    path = write_suite(suite, tmp_path / "a.eval.yaml")
    fake_openai.reset(reply=lambda body: "Paris is the capital of France.")
    report = convoeval.run(path, target="openai:m", store=False, cache=False)
    results = {r.test_id: r for r in report.results}
    text = results["text-checks"].scores[0]
    assert all(g.verdict == "pass" for g in text.graders), [(g.type, g.verdict, g.error) for g in text.graders]
    code = results["code-checks"].scores[0].graders
    verdicts = [(g.name, g.verdict) for g in code]
    expected_js = "pass" if shutil.which("node") else "error"  # never a pass it could not check
    assert verdicts == [
        ("not-icontains", "pass"),
        ("python", "pass"),
        ("python", "pass"),
        ("python", "pass"),
        ("javascript", expected_js),
    ], [(g.name, g.verdict, g.error) for g in code]
    evidence = [a.evidence for g in code for a in g.assertions]
    assert "6 word(s)" in evidence and "checked by check.py" in evidence

    fake_openai.reset(reply=lambda body: "no")
    report = convoeval.run(path, target="openai:m", store=False, cache=False)
    code = next(r for r in report.results if r.test_id == "code-checks").scores[0].graders
    assert [g.verdict for g in code[1:4]] == ["fail", "pass", "pass"]
    if shutil.which("node"):
        assert code[4].verdict == "fail"  # "no".length > 3 is false


def test_promptfoo_verdicts_are_promptfoos(fake_openai, tmp_path) -> None:
    """Each test's verdict is the one promptfoo 0.123.1's code gives (tests/data/promptfoo/
    verdicts). Before: a `file://` or YAML-text JSON schema was dropped (any JSON passed), a
    python score of 0.3 failed against convoeval's 0.8 (promptfoo: a number above 0 passes),
    and four checks of five passing was a pass (promptfoo: every check must pass)."""
    suite = import_dataset("promptfoo", PROMPTFOO / "verdicts" / "promptfooconfig.yaml")
    replies = {
        "weather as JSON": '{"temperature": 21}',
        "city in a sentence": 'Sure! Here it is: {"city": "Paris"} - enjoy.',
        "the answer": "The answer is 42.",
    }
    fake_openai.reset(reply=lambda body: replies[body["messages"][-1]["content"]])
    report = convoeval.run(write_suite(suite, tmp_path / "v.eval.yaml"), target="openai:m", store=False, cache=False)
    assert {r.test_id: r.verdict for r in report.results} == {
        "is-json-with-a-file-schema": "fail",
        "is-json-with-an-inline-YAML-schema": "fail",
        "contains-json-with-a-YAML-schema-the-reply-meets": "pass",
        "contains-json-with-a-YAML-schema-the-reply-does-not-meet": "fail",
        "a-python-score-above-0-no-threshold": "pass",
        "a-python-score-under-the-assertion-s-threshold": "fail",
        "one-failing-check-of-five-no-threshold": "fail",
        "one-failing-check-of-two-the-test-s-threshold-met": "pass",
    }, [(r.test_id, r.error) for r in report.results]
    scores = {r.test_id: r.score for r in report.results}
    assert scores["a-python-score-above-0-no-threshold"] == 0.3  # promptfoo's score, kept
    assert scores["one-failing-check-of-two-the-test-s-threshold-met"] == 0.75


def test_promptfoo_simple_test_example_sends_and_decides_as_promptfoo(fake_openai, tmp_path) -> None:
    """promptfoo's own examples/simple-test, as promptfoo 0.123.1 ran it (tests/data/promptfoo/
    SOURCE.txt). Before: prompts.txt's two prompts (split at `---`) were one message holding
    both, `body: Yes` was sent as "True" (YAML 1.1), and the `$ref`'d assertion was dropped."""
    with pytest.warns(DatasetWarning) as caught:
        suite = import_dataset("promptfoo", PROMPTFOO / "simple-test" / "promptfooconfig.yaml")
    assert [str(w.message) for w in caught] == [
        "2 promptfoo assertion(s) with no convoeval equivalent, kept as written for you to replace or remove: "
        "similar (2)"
    ]
    for test in suite["tests"]:  # removed, as the user must (test 4 fails on its python check anyway)
        test["assertions"] = [a for a in test["assertions"] if a["type"] != "similar"]
    inputs = [t["input"][-1]["content"] for t in suite["tests"]]
    assert inputs[0] == "Rephrase this from English to Pirate: Yes"
    assert inputs[5] == "Pretend you're a pirate and speak these words: Yes"
    pirate = "Ahoy matey! Arrr, ye be hungry fer grub."
    fake_openai.reset(reply=lambda b: '{"age": 42}' if "JSON" in b["messages"][-1]["content"] else pirate)
    report = convoeval.run(
        write_suite(suite, tmp_path / "s.eval.yaml"), target="openai:m", judge="openai:j", store=False, cache=False
    )
    verdicts = ["fail", "pass", "pass", "fail", "pass"] * 2  # promptfoo's, test by test
    assert [r.verdict for r in report.results] == verdicts, [(r.test_id, r.error) for r in report.results]
    fake_openai.reset(reply=lambda b: "Ahoy! No pirate noise here.")
    last = write_suite({**suite, "tests": suite["tests"][4:5]}, tmp_path / "l.eval.yaml")
    (result,) = convoeval.run(last, target="openai:m", judge="openai:j", store=False, cache=False).results
    assert result.verdict == "fail"  # the `$ref`'d `icontains: arrr`


def test_promptfoo_weight_zero_never_fails(fake_openai, tmp_path) -> None:
    """promptfoo 0.123.1 makes a weight-0 assertion pass (`runAssertionInternal`), and reads YAML
    as js-yaml does. Before: a failed weight-0 check failed the test; `1:30` was sent as 90 and
    `on` as True."""
    config = write(
        tmp_path / "promptfooconfig.yaml",
        "prompts: ['At {{ t }}, {{ s }}']\n"
        "tests:\n"
        "  - vars: {t: 1:30, s: on}\n"
        "    assert:\n"
        "      - {type: contains, value: nope, weight: 0}\n"
        "      - {type: icontains, value: At}\n",
    )
    (test,) = import_dataset("promptfoo", config)["tests"]
    assert test["input"] == [{"role": "user", "content": "At 1:30, on"}]
    assert [a.get("required") for a in test["assertions"]] == [False, True]
    fake_openai.reset(reply=lambda body: body["messages"][-1]["content"])
    suite = {"name": "w", "tests": [test]}
    report = convoeval.run(write_suite(suite, tmp_path / "w.eval.yaml"), target="openai:m", store=False, cache=False)
    assert [r.verdict for r in report.results] == ["pass"]


@pytest.mark.skipif(shutil.which("node") is None, reason="promptfoo's transforms run on Node.js")
def test_promptfoo_transforms_are_applied_as_promptfoo_applies_them(fake_openai, tmp_path) -> None:
    """promptfoo 0.123.1's verdicts on this config, against a server echoing the prompt
    (tests/data/promptfoo/transforms). A test's `options.transform` replaces
    `defaultTest`'s; an assertion's own runs after it; an object result is JSON text; a Python
    file's `get_transform`; a transform that throws is an error. Before: none was applied (a
    warning named them): the first three failed, the last was a plain failure."""
    config = PROMPTFOO / "transforms" / "promptfooconfig.yaml"
    suite = import_dataset("promptfoo", config)
    fake_openai.reset(reply=lambda body: body["messages"][-1]["content"])
    report = convoeval.run(write_suite(suite, tmp_path / "t.eval.yaml"), target="openai:m", store=False, cache=False)
    assert {r.test_id: r.verdict for r in report.results} == {
        "the-test-s-transform-over-defaultTest-s": "pass",
        "defaultTest-s-then-the-assertion-s": "pass",
        "a-Python-file": "pass",
        "a-transform-that-throws": "error",
        "a-named-export-of-a-JavaScript-file": "pass",
        "an-ES-module-s-default-export-whatever-name-is-given": "pass",
    }, [(r.test_id, r.error) for r in report.results]
    thrown = next(r for r in report.results if r.verdict == "error")
    assert "transform `node -e '<script>' 'output.toUpperCase()' output.nosuch.foo` exited" in (thrown.error or "")
    assert "Cannot read properties of undefined" in (thrown.error or "")


def test_running_a_promptfoo_config_says_to_import_it(cli, tmp_path) -> None:
    """Before: `convoeval run promptfooconfig.yaml` printed eleven AgentV problems (`tests[0].id:
    required field is missing`, `outputPath: unknown field`...) and no word of the importer."""
    config = PROMPTFOO / "simple-test" / "promptfooconfig.yaml"
    hint = f"{config}:1: (file): a promptfoo config, not an eval file: `convoeval import promptfoo {config} -o "
    for command in ("run", "validate"):
        code, _, err = cli(command, config)
        assert code == 2 and err.startswith(hint) and len(err.splitlines()) == 1, err
    renamed = shutil.copy(config, tmp_path / "pirate.yaml")  # known by its promptfoo-only keys
    code, _, err = cli("validate", renamed)
    assert code == 2 and "a promptfoo config, not an eval file" in err and len(err.splitlines()) == 1, err
    plain = tmp_path / "chat.yaml"  # no promptfoo-only key: known by its prompts, providers and tests without ids
    plain.write_text(
        'prompts: ["Answer: {{question}}"]\nproviders:\n  - id: openai:gpt-4o-mini\n'
        'tests:\n  - vars: {question: 2+2?}\n    assert: [{type: contains, value: "4"}]\n'
    )
    for command in ("run", "validate"):
        code, _, err = cli(command, plain)
        assert code == 2 and "a promptfoo config, not an eval file" in err and len(err.splitlines()) == 1, err
    plain.write_text(plain.read_text().replace("  - vars:", "  - id: q1\n    vars:"))  # an id: not promptfoo's
    code, _, err = cli("validate", plain)
    assert code == 2 and "a promptfoo config" not in err, err


def test_promptfoo_results_files_are_recorded_conversations_with_promptfoos_verdicts(
    cli, fake_openai, tmp_path
) -> None:
    """promptfoo's own results files (`promptfoo eval -o`). Before: `grade` said "none of the
    formats" and `import promptfoo` read one as a config."""
    suite = import_dataset("promptfoo", PROMPTFOO / "results" / "simple-test.json")
    tests = {t["id"]: t for t in suite["tests"]}
    assert len(tests) == 10
    first = tests["Check-for-exact-match@prompt-1"]
    assert first["transcript"] == [
        {"role": "user", "content": "Rephrase this from English to Pirate: Yes"},
        {"role": "assistant", "content": "Ahoy matey! Arrr, ye be hungry fer grub."},
    ]
    assert first["metadata"]["promptfoo_success"] is False
    similar = tests["Check-for-semantic-similarity@prompt-2"]["metadata"]
    assert round(similar["promptfoo_score"], 2) == 0.61
    assert [(a["type"], a["pass"]) for a in similar["promptfoo_assertions"]] == [
        ("javascript", True),
        ("python", False),
        ("similar", True),
    ]
    conversation = import_dataset("promptfoo", PROMPTFOO / "results" / "multiple-turn-conversation.json")
    third = conversation["tests"][2]["transcript"]
    assert [m["role"] for m in third] == ["system", "user", "assistant", "user", "assistant", "user", "assistant"]
    assert third[-2:] == [
        {"role": "user", "content": "Which state is that in?"},
        {"role": "assistant", "content": "Reply to: Which state is that in?"},
    ]
    code, out, err = cli("grade", PROMPTFOO / "results" / "simple-test.json", "--judge", "openai:j")
    assert code == 0 and "10 result(s): PASS 10" in out, err
    with pytest.warns(DatasetWarning, match=r"1 result\(s\) without a reply left out: one@openai:chat:down \(API"):
        down = import_dataset("promptfoo", PROMPTFOO / "results" / "one-provider-down.json")
    assert [t["id"] for t in down["tests"]] == ["one@openai:chat:up"]  # promptIdx 1 is the 2nd provider's


def test_promptfoo_results_of_a_conversation_grade_only_each_results_reply(cli, tmp_path) -> None:
    """promptfoo's multiple-turn-conversation results: the third result sent the two earlier
    turns (earlier results' replies) and got one reply. Before, `grade` graded all three
    replies again in it (and both earlier ones in the second)."""
    write(tmp_path / "g.yaml", "turn_assertions:\n  - {type: not-contains, value: zzzz}\n")
    out = tmp_path / "r.jsonl"
    code, stdout, err = cli(
        "grade", PROMPTFOO / "results" / "multiple-turn-conversation.json", "--graders", tmp_path / "g.yaml", "-o", out
    )
    assert code == 0, err + stdout
    results = read_jsonl(out)
    assert [[s["name"] for s in r["scores"]] for r in results] == [["turn-1"]] * 7
    third = results[2]["output"]
    assert [(m["role"], m["source"]) for m in third if m["role"] == "assistant"] == [
        ("assistant", "input"),
        ("assistant", "input"),
        ("assistant", "target"),
    ]


@pytest.mark.filterwarnings("ignore::convoeval.datasets.DatasetWarning")
def test_promptfoo_jsonl_results_are_read_as_its_json_results(cli, fake_openai) -> None:
    """One promptfoo 0.123.1 run written as `-o transforms.jsonl -o transforms.json`. Before: the
    JSONL was "not YAML" (import) and "expected `messages`" (grade)."""
    from_jsonl = import_dataset("promptfoo", PROMPTFOO / "results" / "transforms.jsonl")["tests"]
    assert from_jsonl == import_dataset("promptfoo", PROMPTFOO / "results" / "transforms.json")["tests"]
    assert len(from_jsonl) == 5  # the sixth, whose transform threw, has no reply
    code, out, err = cli("grade", PROMPTFOO / "results" / "transforms.jsonl", "--judge", "openai:j")
    assert code == 0 and "5 result(s)" in out, err


def test_promptfoo_bad_configs_are_file_errors(cli, tmp_path) -> None:
    bad = write(tmp_path / "p.yaml", "prompts: [hi]\ntests: {not: a list}\n")
    code, _, err = cli("import", "promptfoo", bad, "-o", tmp_path / "x.eval.yaml")
    assert code == 2 and f"{bad}:1: tests: expected a list" in err and "Traceback" not in err
    missing = write(tmp_path / "m.yaml", "prompts: [file://nope.json]\ntests: [{vars: {a: 1}}]\n")
    code, _, err = cli("import", "promptfoo", missing, "-o", tmp_path / "x.eval.yaml")
    assert code == 2 and "nope.json: no such file" in err
    broken = write(tmp_path / "b.yaml", "prompts: [\n")
    code, _, err = cli("import", "promptfoo", broken, "-o", tmp_path / "x.eval.yaml")
    assert code == 2 and f"{broken}:" in err and "not YAML" in err
    # Before: OSError (File name too long), a traceback, for a file:// name longer than a file's can be.
    long = "x" * 300
    named = write(tmp_path / "n.yaml", f"prompts: [hi]\ntests: file://{long}.yaml\n")
    code, _, err = cli("import", "promptfoo", named, "-o", tmp_path / "x.eval.yaml")
    assert (code, err) == (2, f"error: {tmp_path / long}.yaml: cannot read: File name too long\n")
    named.write_text(f"prompts: [file://{long}.json]\ntests: [{{vars: {{a: 1}}}}]\n")
    code, _, err = cli("import", "promptfoo", named, "-o", tmp_path / "x.eval.yaml")
    assert (code, err) == (2, f"error: {named}:1: prompts[0]: {tmp_path / long}.json: no such file\n")
    loop = write(tmp_path / "r.yaml", "prompts: [hi]\nt: {$ref: '#/t'}\ntests: [{assert: [{$ref: '#/t'}]}]\n")
    code, _, err = cli("import", "promptfoo", loop, "-o", tmp_path / "x.eval.yaml")
    assert (code, err) == (2, f"error: {loop}:1: $ref '#/t': refers to itself\n")
    loop.write_text("prompts: [hi]\ntests: [{assert: [{$ref: '#/assertionTemplates/no'}]}]\n")
    code, _, err = cli("import", "promptfoo", loop, "-o", tmp_path / "x.eval.yaml")
    assert (code, err) == (2, f"error: {loop}:1: $ref '#/assertionTemplates/no': no such place in the config\n")


# -- DeepEval --------------------------------------------------------------------------------


def test_deepeval_conversational_goldens_become_simulated_users_with_success_criteria(
    cli, fake_openai, tmp_path
) -> None:
    code, out, err = cli("import", "deepeval", DEEPEVAL / "conversational-goldens.json", "-o", tmp_path / "d.eval.yaml")
    assert code == 0, err
    suite = load_suite(tmp_path / "d.eval.yaml")
    lisbon, refund = suite.tests
    assert lisbon.id == "change-lisbon-flight"
    assert [t.input for t in lisbon.turns or []] == ["Hi, I need to change my flight to Lisbon."]
    assert lisbon.turns[0].metadata["recorded_reply"].startswith("Of course.")
    assert lisbon.turns[0].context == ["Booking QX7R2P: LIS, Friday 08:10, fare class Y, gold member."]
    assert lisbon.simulated_user is not None and "frequent flyer" in lisbon.simulated_user.objective
    assert lisbon.simulated_user.persona.startswith("Maria Santos")
    assert lisbon.success == [
        "The flight is moved to Sunday and the agent confirms that no change fee applies to a gold member."
    ]
    assert lisbon.metadata["context"] == ["Gold members change flights free of charge."]
    assert refund.turns is None and refund.simulated_user is not None and refund.success

    fake_openai.reset(reply=lambda body: "Done: your flight is now on Sunday, no fee.", judge=simulator_then_verdicts())
    report = convoeval.run(tmp_path / "d.eval.yaml", target="openai:m", judge="openai:j", store=False, cache=False)
    first = next(r for r in report.results if r.test_id == "change-lisbon-flight")
    assert first.execution_status == "ok" and first.verdict == "pass", first.error
    sources = [m.source for m in first.output if m.role != "system"]
    assert sources[:3] == ["user", "target", "simulator"]  # the scripted turn first, then the simulator
    assert any(e.type == "scenario" for e in first.scores)


def test_deepeval_test_cases_chatbot_role_and_recorded_transcripts(cli, fake_openai, tmp_path) -> None:
    source = DEEPEVAL / "conversational-test-cases.json"
    suite = import_dataset("deepeval", source)
    (test,) = suite["tests"]
    assert test["mode"] == "conversation" and [t["input"] for t in test["turns"]] == [
        "What's the weather in Paris tomorrow?",
        "So do I need an umbrella?",
    ]
    assert test["assertions"][0] == {
        "type": "role-adherence",
        "role": "A concise weather assistant that only talks about the weather.",
    }
    assert test["input"] == [
        {"role": "system", "content": "A concise weather assistant that only talks about the weather."}
    ]

    code, _, err = cli("import", "deepeval", source, "--recorded", "-o", tmp_path / "r.eval.yaml")
    assert code == 0, err
    recorded = load_suite(tmp_path / "r.eval.yaml").tests[0]
    assert recorded.transcript is not None and [m.role for m in recorded.transcript] == [
        "system",
        "user",
        "assistant",
        "user",
        "assistant",
    ]
    assert recorded.transcript[2].tool_calls == [
        {
            "name": "get_forecast",
            "arguments": {"city": "Paris", "day": "tomorrow"},
            "output": {"summary": "light rain", "temp_c": 14},
        }
    ]
    fake_openai.reset()
    code, out, err = cli("grade", tmp_path / "r.eval.yaml", "--judge", "openai:j", "-o", tmp_path / "graded.jsonl")
    assert code in (0, 1), err
    graded = json.loads((tmp_path / "graded.jsonl").read_text().splitlines()[0])
    assert graded["execution_status"] == "ok" and {e["name"] for e in graded["scores"]} >= {"conversation"}
    assert not fake_openai.target_requests()  # graded without calling a target


def test_deepeval_single_turn_goldens_and_errors(cli, tmp_path) -> None:
    suite = import_dataset("deepeval", DEEPEVAL / "goldens.json")
    assert suite["tests"] == [
        {
            "id": "capital-portugal",
            "input": "What is the capital of Portugal?",
            "expected_output": "Lisbon",
            "assertions": [{"type": "llm-grader"}],
            "metadata": {"context": ["Lisbon is the capital and largest city of Portugal."]},
        }
    ]
    bad = write(tmp_path / "bad.json", '[\n  {"name": "x"},\n  {"turns": [{"role": "robot", "content": "hi"}]}\n]\n')
    code, _, err = cli("import", "deepeval", bad, "-o", tmp_path / "x.eval.yaml")
    assert code == 2 and f"{bad}:2: not a DeepEval golden" in err
    bad.write_text('[\n  {"turns": [{"role": "robot", "content": "hi"}]}\n]\n')
    code, _, err = cli("import", "deepeval", bad, "-o", tmp_path / "x.eval.yaml")
    assert code == 2 and f"{bad}:2: turns[0]: expected {{role: user|assistant, content}}" in err


def test_deepeval_persona_without_characteristics_keeps_its_traits(cli, tmp_path) -> None:
    """Before: KeyError 'characteristics' (a traceback) for a persona of named traits only."""
    goldens = json.loads((DEEPEVAL / "conversational-goldens.json").read_text(encoding="utf-8"))
    goldens[0]["persona"] = {"name": "Maria", "mood": "in a hurry"}
    source = write(tmp_path / "goldens.json", json.dumps(goldens))
    code, _, err = cli("import", "deepeval", source, "-o", tmp_path / "d.eval.yaml")
    assert code == 0, err
    lisbon = load_suite(tmp_path / "d.eval.yaml").tests[0]
    assert lisbon.simulated_user is not None and lisbon.simulated_user.persona == "name: Maria; mood: in a hurry"


def test_promptfoo_dump_of_an_unknown_var_is_nothing_as_in_nunjucks(cli, tmp_path) -> None:
    """Before: `{{ context | dump }}` with no `context` var ended in TypeError (Object of type
    Undefined is not JSON serializable), a traceback."""
    config = write(
        tmp_path / "promptfooconfig.yaml",
        "prompts: ['Context: {{ context | dump }} {{ [context, 1] | dump }} Question: {{ question }}']\n"
        "tests:\n  - vars:\n      question: Why?\n",
    )
    code, _, err = cli("import", "promptfoo", config, "-o", tmp_path / "p.eval.yaml")
    assert code == 0, err
    (message,) = load_suite(tmp_path / "p.eval.yaml").tests[0].input
    assert message.content == "Context:  [null,1] Question: Why?"


def test_promptfoo_csv_tests_that_are_not_csv_are_file_errors(cli, tmp_path) -> None:
    """Before: a cell longer than the csv module takes ended in `_csv.Error: field larger than
    field limit`, a binary file in UnicodeDecodeError: tracebacks."""
    config = write(tmp_path / "promptfooconfig.yaml", "prompts: ['{{ q }}']\ntests: file://tests.csv\n")
    csv_file = tmp_path / "tests.csv"
    csv_file.write_text(f"q,__expected\nhi,contains: h\n{'y' * 200_000},contains: y\n", encoding="utf-8")
    code, _, err = cli("import", "promptfoo", config, "-o", tmp_path / "p.eval.yaml")
    assert (code, err) == (2, f"error: {csv_file}:3: not CSV (field larger than field limit (131072))\n")
    csv_file.write_bytes(b"q\n\xd8\x00\n")
    code, _, err = cli("import", "promptfoo", config, "-o", tmp_path / "p.eval.yaml")
    assert (code, err) == (2, f"error: {csv_file}: not a text file: invalid UTF-8 (byte 0xd8 at offset 2)\n")


@pytest.mark.parametrize("kind", ["promptfoo", "deepeval", "inspect", "agentv-transcript", "langfuse", "otel"])
def test_every_new_kind_names_a_missing_file(cli, tmp_path: Path, kind: str) -> None:
    code, _, err = cli("import", kind, tmp_path / "missing.json", "-o", tmp_path / "x.eval.yaml")
    assert code == 2 and "missing.json:1: no such file" in err
    (tmp_path / "logs").mkdir()  # a folder (Inspect's log folder): said so; "no such file" before
    code, _, err = cli("import", kind, tmp_path / "logs", "-o", tmp_path / "x.eval.yaml")
    assert code == 2 and f"{tmp_path / 'logs'} is a folder; give the dataset file" in err, err


#: A promptfoo test without a threshold passes when every assertion does: each is required, at
#: its own pass mark (the test's threshold is 0).
EVERY = {"required": True, "min_score": 0.8}


def test_promptfoo_list_vars_expand_into_one_test_each_with_unique_ids(tmp_path) -> None:
    config = write(
        tmp_path / "promptfooconfig.yaml",
        """\
prompts: ['Translate to {{language}}: {{text}}']
tests:
  - description: translate
    vars: {language: [French, German], text: [hi, bye]}
    assert: [{type: icontains, value: '{{language}}'}]
  - description: translate
    vars: {language: Spanish, text: hi}
""",
    )
    suite = import_dataset("promptfoo", config)
    assert [(t["id"], t["input"][0]["content"], t.get("assertions")) for t in suite["tests"]] == [
        ("translate", "Translate to French: hi", [{"type": "icontains", "value": "French", **EVERY}]),
        ("translate-2", "Translate to French: bye", [{"type": "icontains", "value": "French", **EVERY}]),
        ("translate-3", "Translate to German: hi", [{"type": "icontains", "value": "German", **EVERY}]),
        ("translate-4", "Translate to German: bye", [{"type": "icontains", "value": "German", **EVERY}]),
        ("translate-5", "Translate to Spanish: hi", []),
    ]
    path = write_suite(suite, tmp_path / "t.eval.yaml")
    assert len(load_suite(path).tests) == 5
    config.write_text(
        config.read_text() + "providers: [openai:chat:gpt-4o, anthropic:messages:claude-sonnet-4-5]\n"
        "defaultTest: {options: {disableVarExpansion: true}}\n"
    )
    again = import_dataset("promptfoo", config)
    assert len(again["tests"]) == 2
    assert again["execution"] == {"targets": ["openai:gpt-4o", "anthropic:claude-sonnet-4-5"]}


def test_promptfoo_csv_tests_with_expected_shorthand(fake_openai, tmp_path) -> None:
    write(
        tmp_path / "tests.csv",
        "question,__expected,__expected2,__description\n"
        'What is the capital of France?,icontains: paris,"javascript: output.length < 60",capital\n'
        "Say OK,OK,,ok\n",
    )
    config = write(tmp_path / "promptfooconfig.yaml", "prompts: ['{{question}}']\ntests: file://tests.csv\n")
    suite = import_dataset("promptfoo", config)
    capital, ok = suite["tests"]
    assert capital["id"] == "capital" and capital["input"] == [
        {"role": "user", "content": "What is the capital of France?"}
    ]
    assert capital["assertions"][0] == {"type": "icontains", "value": "paris", **EVERY}
    assert capital["assertions"][1]["type"] == "code-grader" and capital["assertions"][1]["name"] == "javascript"
    assert ok["assertions"] == [{"type": "equals", "value": "OK", **EVERY}]
    fake_openai.reset(reply=lambda body: "Paris." if "France" in body["messages"][-1]["content"] else "OK")
    report = convoeval.run(write_suite(suite, tmp_path / "c.eval.yaml"), target="openai:m", store=False, cache=False)
    expected = "pass" if shutil.which("node") else "error"
    assert {r.test_id: r.verdict for r in report.results} == {"capital": expected, "ok": "pass"}


def test_promptfoo_settings_left_out_are_named_in_a_warning(cli, tmp_path) -> None:
    config = write(
        tmp_path / "promptfooconfig.yaml",
        "prompts: ['{{q}}']\nscenarios: []\ntests:\n"
        "  - vars: {q: a}\n    options: {transform: output.trim(), storeOutputAs: x}\n"
        "  - vars: {q: b}\n    options: {storeOutputAs: y}\n",
    )
    code, out, err = cli("import", "promptfoo", config, "-o", tmp_path / "x.eval.yaml")
    assert code == 0, err
    assert "warning: promptfoo settings not imported: scenarios, tests[].options.storeOutputAs (2)" in err


def test_promptfoo_chat_prompt_few_shot_messages_stay_before_the_turn(tmp_path) -> None:
    write(
        tmp_path / "prompt.json",
        json.dumps(
            [
                {"role": "system", "content": "Answer in {{style}}."},
                {"role": "user", "content": "2+2?"},
                {"role": "assistant", "content": "Four."},
                {"role": "user", "content": "{{question}}"},
            ]
        ),
    )
    config = write(
        tmp_path / "promptfooconfig.yaml",
        "prompts: [file://prompt.json]\ntests:\n  - vars: {style: words, question: '3+3?'}\n",
    )
    (test,) = import_dataset("promptfoo", config)["tests"]
    assert test["input"] == [
        {"role": "system", "content": "Answer in words."},
        {"role": "user", "content": "2+2?"},
        {"role": "assistant", "content": "Four."},
        {"role": "user", "content": "3+3?"},
    ]


def test_deepeval_saved_test_case_as_recorded_transcript(tmp_path) -> None:
    """A file DeepEval itself wrote from a ConversationalTestCase (tool call dumped by alias)."""
    (test,) = import_dataset("deepeval", DEEPEVAL / "saved-test-cases.json", recorded=True)["tests"]
    assert [m["role"] for m in test["transcript"]] == ["user", "assistant", "user", "assistant"]
    assert test["transcript"][1]["tool_calls"] == [
        {
            "name": "get_forecast",
            "arguments": {"city": "Paris", "day": "tomorrow"},
            "output": {"summary": "light rain", "temp_c": 14},
        }
    ]
    assert test["criteria"].startswith("The assistant answers the follow-up") and test["assertions"] == [
        {"type": "goal-completion"}
    ]
    path = write_suite({"tests": [test]}, tmp_path / "r.eval.yaml")
    assert load_suite(path).tests[0].transcript is not None


def test_promptfoo_file_vars_are_read_as_promptfoo_reads_them(tmp_path) -> None:
    """promptfoo 0.123.1 sent this prompt as the expected text (its `renderPrompt`: a text file
    stripped, YAML as compact JSON, any other file as text). Before: `file://doc.txt` was sent."""
    write(tmp_path / "doc.txt", "\n  Document text line 1\nline 2\n\n")
    write(tmp_path / "cfg.yaml", "city: Paris\nn: [1, 2]\nok: yes\n")
    write(tmp_path / "data.json", '{"a": 1}\n')
    config = write(
        tmp_path / "promptfooconfig.yaml",
        "prompts: ['Doc: {{ doc }} | Cfg: {{ cfg }} | J: {{ j }}']\n"
        "tests:\n  - vars: {doc: file://doc.txt, cfg: file://cfg.yaml, j: file://data.json}\n",
    )
    (test,) = import_dataset("promptfoo", config)["tests"]
    sent = 'Doc: Document text line 1\nline 2 | Cfg: {"city":"Paris","n":[1,2],"ok":"yes"} | J: {"a": 1}'
    assert test["input"] == [{"role": "user", "content": sent}]
    write(config, "prompts: ['{{ v }}']\ntests:\n  - vars: {v: file://v.py}\n")
    with pytest.raises(DatasetError, match=r"vars\.v: file://v\.py: var functions"):
        import_dataset("promptfoo", config)


def test_promptfoo_grader_provider_judges_its_checks(fake_openai, tmp_path) -> None:
    """promptfoo grades `llm-rubric` with the assertion's `provider`, else the test's (or
    `defaultTest`'s) `options.provider`. Before: both were dropped (named in a warning) and the
    run's judge graded every check."""
    config = write(
        tmp_path / "promptfooconfig.yaml",
        "prompts: ['{{ q }}']\n"
        "defaultTest: {options: {provider: 'openai:chat:grader-a'}}\n"
        "tests:\n"
        "  - vars: {q: hello}\n"
        "    assert:\n"
        "      - {type: llm-rubric, value: is a greeting}\n"
        "      - {type: llm-rubric, value: is polite, provider: {id: 'anthropic:messages:grader-b'}}\n"
        "  - vars: {q: bye}\n"
        "    options: {provider: 'openai:grader-c'}\n"
        "    assert: [{type: llm-rubric, value: is short}]\n",
    )
    suite = import_dataset("promptfoo", config)
    judges = [a.get("judge") for t in suite["tests"] for a in t["assertions"]]
    assert judges == ["openai:grader-a", "anthropic:grader-b", "openai:grader-c"]
    del suite["tests"][0]["assertions"][1]  # no Anthropic server here
    convoeval.run(
        write_suite(suite, tmp_path / "g.eval.yaml"), target="openai:m", judge="openai:j", store=False, cache=False
    )
    assert sorted(r["model"] for r in fake_openai.judge_requests()) == ["grader-a", "grader-c"]


def test_promptfoo_assert_set_decides_as_promptfoo(fake_openai, tmp_path) -> None:
    """promptfoo 0.123.1's verdicts and scores on tests/data/promptfoo/assert-set (a set passes at
    its threshold, else when each of its checks passes; its score is their weighted mean).
    Before: `assert-set` was left out (named in a warning), so a failing set passed."""
    suite = import_dataset("promptfoo", PROMPTFOO / "assert-set" / "promptfooconfig.yaml")
    fake_openai.reset(reply=lambda body: body["messages"][-1]["content"])
    report = convoeval.run(write_suite(suite, tmp_path / "s.eval.yaml"), target="openai:m", store=False, cache=False)
    assert {r.test_id: r.verdict for r in report.results} == {
        "set-threshold-met": "pass",
        "set-threshold-missed": "fail",
        "set-no-threshold-one-fails": "fail",
        "set-weighted-in-test-threshold": "pass",
    }
    scores = {r.test_id: r.score for r in report.results}
    assert scores["set-threshold-met"] == 0.5 and round(scores["set-weighted-in-test-threshold"], 4) == 0.8333


def test_promptfoo_tests_from_jsonl_files_and_globs(tmp_path) -> None:
    """promptfoo 0.123.1 ran the four tests of this config (a JSONL file and a glob of YAML
    files), and a prompt for each file of a glob. Before: "tests.jsonl:2: not YAML",
    "tests/*.yaml:1: no such file", "prompts[0]: prompts/*.txt: no such file"."""
    write(tmp_path / "tests.jsonl", '{"vars": {"q": "one"}}\n{"vars": {"q": "two"}}\n')
    write(tmp_path / "more" / "a.yaml", "- vars: {q: three}\n")
    write(tmp_path / "more" / "b.yaml", "- vars: {q: four}\n")
    config = write(
        tmp_path / "promptfooconfig.yaml", "prompts: ['{{ q }}']\ntests: [file://tests.jsonl, file://more/*.yaml]\n"
    )
    suite = import_dataset("promptfoo", config)
    assert [t["input"][-1]["content"] for t in suite["tests"]] == ["one", "two", "three", "four"]
    write(tmp_path / "prompts" / "a.txt", "A: {{ q }}")
    write(tmp_path / "prompts" / "b.txt", "B: {{ q }}")
    write(config, "prompts: [file://prompts/*.txt]\ntests: [{vars: {q: hi}}]\n")  # promptfoo: "A: hi", "B: hi"
    suite = import_dataset("promptfoo", config)
    assert [(t["id"], t["input"][-1]["content"]) for t in suite["tests"]] == [
        ("test-1@a.txt", "A: hi"),
        ("test-1@b.txt", "B: hi"),
    ]
    write(config, "prompts: ['{{ q }}']\ntests: file://none/*.yaml\n")
    with pytest.raises(DatasetError, match=r"promptfooconfig.yaml:1: tests: file://none/\*.yaml: no file matches"):
        import_dataset("promptfoo", config)


def test_promptfoo_files_outside_the_configs_folder_and_repository_are_refused(tmp_path, monkeypatch) -> None:
    """A promptfoo config names files that go into the eval file, and to the model: they obey the
    rule of any suite (its folder, its repository, `--root`). Before: `file:///root/.ssh/id_rsa`
    as a var (or `../..` to it, a glob's link to it, a prompt or `defaultTest` file, an `is-json`
    schema) was read in."""
    monkeypatch.delenv("CONVOEVAL_ROOT", raising=False)
    secret = write(tmp_path / "home" / "secret.yaml", "- vars: {q: s3cret}\n")
    folder = tmp_path / "project"
    write(folder / "t" / "a.yaml", "- vars: {q: mine}\n")
    (folder / "t" / "b.yaml").symlink_to(secret)
    config = folder / "promptfooconfig.yaml"
    for text in (
        f"prompts: ['{{{{ q }}}}']\ntests: [{{vars: {{q: 'file://{secret}'}}}}]\n",
        "prompts: ['{{ q }}']\ntests: [{vars: {q: file://../home/secret.yaml}}]\n",
        "prompts: ['{{ q }}']\ntests: file://t/*.yaml\n",
        f"prompts: ['file://{secret}']\ntests: [{{vars: {{q: a}}}}]\n",
        f"prompts: ['{{{{ q }}}}']\ndefaultTest: file://{secret}\ntests: [{{vars: {{q: a}}}}]\n",
        f"prompts: [q]\ntests: [{{assert: [{{type: is-json, value: 'file://{secret}'}}]}}]\n",
        f"prompts: [q]\ntests: [{{assert: [{{type: contains-any, value: 'file://{secret}'}}]}}]\n",
    ):
        write(config, text)
        with pytest.raises(DatasetError, match=f"file '[^']*' is outside the suite's folder {folder}"):
            import_dataset("promptfoo", config)
    monkeypatch.setenv("CONVOEVAL_ROOT", str(tmp_path / "home"))  # --root: the user widens it
    write(config, "prompts: ['{{ q }}']\ntests: file://t/*.yaml\n")
    assert [t["input"][-1]["content"] for t in import_dataset("promptfoo", config)["tests"]] == ["mine", "s3cret"]


def test_promptfoo_file_assertion_values_are_read_as_promptfoo_reads_them(tmp_path) -> None:
    """promptfoo's `processFileReference`: a `file://` value is a .txt file's text, trimmed, or a
    .json/.yaml file's data; a value computed by a script cannot be imported (an error).
    Before: the reference itself was the value (`contains: "file://expected.txt"`)."""
    write(tmp_path / "expected.txt", "Paris\n")
    write(tmp_path / "rubric.txt", "Names the capital of France.\n")
    write(tmp_path / "cities.yaml", "[Paris, Lyon]\n")
    checks = [
        {"type": "contains", "value": "file://expected.txt"},
        {"type": "llm-rubric", "value": "file://rubric.txt"},
        {"type": "contains-any", "value": "file://cities.yaml"},
    ]
    write(tmp_path / "promptfooconfig.yaml", yaml.safe_dump({"prompts": ["q"], "tests": [{"assert": checks}]}))
    (test,) = import_dataset("promptfoo", tmp_path / "promptfooconfig.yaml")["tests"]
    contains, rubric, any_of = test["assertions"]
    assert contains["value"] == "Paris" and rubric["criteria"] == "Names the capital of France."
    assert any_of["value"] == ["Paris", "Lyon"]
    checks.append({"type": "equals", "value": "file://computed.js"})
    write(tmp_path / "promptfooconfig.yaml", yaml.safe_dump({"prompts": ["q"], "tests": [{"assert": checks}]}))
    with pytest.raises(DatasetError, match="file://computed.js: a value computed by a script cannot be imported"):
        import_dataset("promptfoo", tmp_path / "promptfooconfig.yaml")
    checks[-1] = {"type": "llm-rubric", "value": "file://rubric.md"}  # promptfoo: "Unsupported file type"
    write(tmp_path / "promptfooconfig.yaml", yaml.safe_dump({"prompts": ["q"], "tests": [{"assert": checks}]}))
    with pytest.raises(DatasetError, match=r"file://rubric.md: unsupported file type \(promptfoo reads"):
        import_dataset("promptfoo", tmp_path / "promptfooconfig.yaml")


def test_promptfoo_vars_print_as_nunjucks_prints_them(tmp_path) -> None:
    """promptfoo 0.123.1 sent `L=x,1,true O=[object Object] B=false N=2 F=0.1 U= Z=` for this
    prompt (JavaScript's `String()` of each value). Before: Python's text of them
    (`['x', 1, True]`, `{'a': 1}`, `False`, `2.0`, `None`)."""
    config = write(
        tmp_path / "promptfooconfig.yaml",
        "prompts: ['L={{ items }} O={{ obj }} B={{ flag }} N={{ num }} F={{ f }} U={{ missing }} Z={{ none }}']\n"
        "defaultTest: {options: {disableVarExpansion: true}}\n"
        "tests:\n  - vars: {items: [x, 1, true], obj: {a: 1}, flag: false, num: 2.0, f: 0.1, none: null}\n",
    )
    (test,) = import_dataset("promptfoo", config)["tests"]
    assert test["input"][-1]["content"] == "L=x,1,true O=[object Object] B=false N=2 F=0.1 U= Z="
    # Nunjucks' `truncate` cuts at the last space (Jinja's: "hello..."); `round` prints 3, not 3.0
    write(
        config, "prompts: ['{{ s | truncate(11) }}|{{ n | round }}']\ntests: [{vars: {s: hello world foo, n: 2.6}}]\n"
    )
    (test,) = import_dataset("promptfoo", config)["tests"]
    assert test["input"][-1]["content"] == "hello world...|3"


def test_csv_files_saved_with_a_byte_order_mark_import(tmp_path) -> None:
    """Spreadsheets save "CSV UTF-8" with a byte-order mark; promptfoo (csv-parse `bom: true`)
    and DeepEval (pandas) drop it. Before: the first column was named "\\ufeffq" (the prompt
    was sent empty) and a DeepEval golden had no `scenario`."""
    (tmp_path / "tests.csv").write_bytes("\ufeffq,__expected\r\nhello,contains: hello\r\n".encode())
    config = write(tmp_path / "promptfooconfig.yaml", "prompts: ['{{ q }}']\ntests: file://tests.csv\n")
    (test,) = import_dataset("promptfoo", config)["tests"]
    assert test["input"] == [{"role": "user", "content": "hello"}]
    goldens = tmp_path / "goldens.csv"
    goldens.write_bytes("\ufeffscenario,expected_outcome\r\nBook a table,Table booked\r\n".encode())
    (golden,) = import_dataset("deepeval", goldens)["tests"]
    assert golden["simulated_user"]["objective"] == "Book a table" and golden["success"] == ["Table booked"]


def test_csv_cells_keep_their_carriage_returns(tmp_path) -> None:
    """A quoted CSV cell holding "\r\n" or "\r" (as DeepEval 4.3.1's `save_as("csv")` writes a
    golden's input that has them; csv-parse and pandas keep them). Before: both became "\n"."""
    cell = "Q\r\nCRLF\rCR\n"
    goldens = tmp_path / "goldens.csv"
    goldens.write_bytes(f'input,expected_output\r\n"{cell}",A\r\n'.encode())
    (golden,) = import_dataset("deepeval", goldens)["tests"]
    assert golden["input"] == cell
    (tmp_path / "tests.csv").write_bytes(f'q,__expected\r\n"{cell}",contains: Q\r\n'.encode())
    config = write(tmp_path / "promptfooconfig.yaml", "prompts: ['{{ q }}']\ntests: file://tests.csv\n")
    (test,) = import_dataset("promptfoo", config)["tests"]
    assert test["input"] == [{"role": "user", "content": cell[:-1]}]  # a var loses one trailing newline


@pytest.mark.skipif(shutil.which("node") is None, reason="promptfoo's transforms run on Node.js")
def test_promptfoo_provider_transform_runs_first(fake_openai, tmp_path) -> None:
    """promptfoo 0.123.1 passed this test (output "HI THERE!": the provider's transform, then the
    test's, then the assertion's own). Before: the provider's `transform` was dropped unsaid."""
    config = write(
        tmp_path / "promptfooconfig.yaml",
        "prompts: ['{{ q }}']\n"
        "providers: [{id: 'openai:chat:m', transform: output.toUpperCase()}]\n"
        "tests:\n"
        "  - vars: {q: hi there}\n"
        "    options: {transform: \"output + '!'\"}\n"
        "    assert:\n"
        "      - {type: equals, value: HI THERE!}\n"
        "      - {type: equals, value: HI, transform: \"output.split(' ')[0]\"}\n",
    )
    suite = import_dataset("promptfoo", config)
    fake_openai.reset(reply=lambda body: body["messages"][-1]["content"])
    report = convoeval.run(write_suite(suite, tmp_path / "p.eval.yaml"), target="openai:m", store=False, cache=False)
    assert [r.verdict for r in report.results] == ["pass"], [r.error for r in report.results]
    write(config, "prompts: [x]\nproviders: [{id: 'openai:a', transform: a}, {id: 'openai:b', transform: b}]\n")
    with pytest.warns(DatasetWarning, match="provider transforms not applied: they differ"):
        import_dataset("promptfoo", write(config, config.read_text() + "tests: [{vars: {}}]\n"))


def test_promptfoo_text_checks_and_unasserted_tests_decide_as_promptfoo(fake_openai, tmp_path) -> None:
    """Verdicts read from promptfoo's `contains.ts` / `endsWith.ts`: a quoted `contains-any` part
    keeps its comma, `ends-with` and `not-ends-with` are imported, and a test with no `assert`
    passes without a judge. Before: the quoted part was split (fail), both ends-with checks were
    dropped (the not-ends-with test passed), and the description was a criterion a judge graded."""
    checks = {
        "quoted": [{"type": "contains-any", "value": '"Paris, France", zebra'}],
        "split": [{"type": "icontains-all", "value": "PARIS , france"}],
        "ends": [{"type": "ends-with", "value": "France."}],
        "not-ends": [{"type": "not-ends-with", "value": "France."}],
        "no-assert": None,
    }
    tests = [{"description": name, "vars": {"q": name}, **({"assert": a} if a else {})} for name, a in checks.items()]
    config = {"prompts": ["Q: {{q}}"], "providers": ["openai:m"], "tests": tests}
    write(tmp_path / "promptfooconfig.yaml", yaml.safe_dump(config))
    suite = import_dataset("promptfoo", tmp_path / "promptfooconfig.yaml")
    assert suite["tests"][0]["assertions"][0]["value"] == ["Paris, France", "zebra"]
    assert "criteria" not in suite["tests"][4] and suite["tests"][4]["metadata"] == {"description": "no-assert"}
    fake_openai.reset(reply=lambda body: "The capital is Paris, France.")
    report = convoeval.run(write_suite(suite, tmp_path / "s.eval.yaml"), target="openai:m", store=False, cache=False)
    verdicts = {r.test_id: r.verdict for r in report.results}
    assert verdicts == {"quoted": "pass", "split": "pass", "ends": "pass", "not-ends": "fail", "no-assert": "pass"}
    assert len(fake_openai.requests) == 5  # the target's five replies; no judge asked


@pytest.mark.parametrize(
    ("value", "parts"),
    [
        ('"Paris, France", zebra', ["Paris, France", "zebra"]),
        ("  a ,, b ,", ["a", "b"]),
        ('"say \\"hi\\", ok", "two ""quotes""", "back\\\\slash"', ['say "hi", ok', 'two "quotes"', "back\\slash"]),
        ('x"y, z', ['x"y', "z"]),
        ('"", a', ["", "a"]),
    ],
)
@pytest.mark.parametrize("kind", ["contains-all", "icontains-all", "contains-any", "not-contains-all"])
def test_promptfoo_comma_separated_values_split_as_promptfoo(kind: str, value: str, parts: list[str], tmp_path) -> None:
    """Every `-any` / `-all` text value is split as promptfoo's `parseCommaSeparatedValues`
    (src/util/parseCommaSeparatedValues.ts) splits it, quotes and escapes included; before,
    `contains-all` split at every comma, so `"Paris, France"` became two parts with quotes."""
    config = {
        "prompts": ["{{q}}"],
        "providers": ["openai:m"],
        "tests": [{"vars": {"q": "x"}, "assert": [{"type": kind, "value": value}]}],
    }
    write(tmp_path / "promptfooconfig.yaml", yaml.safe_dump(config))
    [check] = import_dataset("promptfoo", tmp_path / "promptfooconfig.yaml")["tests"][0]["assertions"]
    if "" in parts and kind.endswith("-any"):  # promptfoo: every output contains it (test below)
        assert check["type"] == "regex"
        return
    assert check["value"] == [p for p in parts if p]


def test_promptfoo_lists_decided_whatever_the_output(fake_openai, tmp_path) -> None:
    """Verdicts of promptfoo 0.121.20's own `runAssertion` on the reply "nothing": an empty part
    passes `contains-any` and fails `not-contains-any`; `-all` checks ignore it, and one of empty
    parts only passes. convoeval's checks take no empty part: the import keeps the verdicts."""
    checks = {
        "any-empty": ("contains-any", '"", zebra', "pass"),
        "not-any-empty": ("not-contains-any", '"", zebra', "fail"),
        "iany-list": ("icontains-any", ["", "zebra"], "pass"),
        "all-empty": ("contains-all", '"", zebra', "fail"),
        "all-only-empty": ("contains-all", '""', "pass"),
        "not-all-only-empty": ("not-contains-all", ' , ""', "fail"),
    }
    tests = [
        {"description": n, "vars": {"q": n}, "assert": [{"type": t, "value": v}]} for n, (t, v, _) in checks.items()
    ]
    config = {"prompts": ["{{q}}"], "providers": ["openai:m"], "tests": tests}
    write(tmp_path / "promptfooconfig.yaml", yaml.safe_dump(config))
    suite = import_dataset("promptfoo", tmp_path / "promptfooconfig.yaml")
    fake_openai.reset(reply=lambda body: "nothing")
    report = convoeval.run(write_suite(suite, tmp_path / "s.eval.yaml"), target="openai:m", store=False, cache=False)
    verdicts = {r.metadata.get("description"): r.verdict for r in report.results}
    assert verdicts == {n: v for n, (_, _, v) in checks.items()}


@pytest.mark.parametrize(
    ("value", "why"), [('"Paris, France', "not closed"), ('"Paris" France, x', "more than a comma")]
)
def test_promptfoo_malformed_quoted_value_is_an_import_error(cli, value: str, why: str, tmp_path) -> None:
    """promptfoo fails a check whose quoted part is not closed or runs on past its quote; the
    import says so (exit 2) instead of checking for a part promptfoo never looks for."""
    config = {
        "prompts": ["{{q}}"],
        "providers": ["openai:m"],
        "tests": [{"vars": {"q": "x"}, "assert": [{"type": "contains-all", "value": value}]}],
    }
    write(tmp_path / "promptfooconfig.yaml", yaml.safe_dump(config))
    code, out, err = cli("import", "promptfoo", tmp_path / "promptfooconfig.yaml", "-o", tmp_path / "out.eval.yaml")
    assert code == 2 and "Traceback" not in err
    assert why in err and "promptfooconfig.yaml:1: tests[0]: assert: value:" in err
