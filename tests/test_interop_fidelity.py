"""Files other tools wrote come in unchanged, and the verdict on them is theirs: text said
alongside a tool call is graded, tool results stay as written, LangChain's and OpenLLMetry 0.40's
tool calls are read, a sample Inspect could not finish or that hit a limit says so, sample ids
stay apart, and an Inspect log written back keeps all of it. The files were written by the tools
themselves (tests/data/*/SOURCE.txt: Inspect 0.3.285 and 0.3.70, Langfuse 5.0.4 with
langchain-core, OpenLLMetry's OpenAI instrumentation 0.40.14 and 0.62.4)."""

from __future__ import annotations

from pathlib import Path

import pytest

from convoeval.datasets import import_dataset

from .conftest import DATA, read_jsonl, write

INSPECT = DATA / "inspect" / "review"
REVIEW = INSPECT / "review-mockllm.eval"
OLD_INSPECT = INSPECT / "limits-inspect-0.3.70.eval"
LANGFUSE = DATA / "langfuse" / "langchain" / "session-langchain.json"
OPENLLMETRY = DATA / "otel" / "openllmetry"
WEATHER = """\
turn_assertions:
  - {type: not-contains, value: zzz}
assertions:
  - type: tool-trajectory
    mode: exact
    expected: [{tool: get_weather, args: {city: Paris}}]
"""


def grade(cli, source: Path, tmp_path: Path, graders: str) -> dict[str, dict]:
    """`convoeval grade SOURCE --graders ...`: the results by test id."""
    write(tmp_path / "graders.yaml", graders)
    out = tmp_path / f"{source.stem}.jsonl"
    code, stdout, err = cli(
        "grade", source, "--graders", tmp_path / "graders.yaml", "-o", out, "--store", tmp_path / "store"
    )
    assert code in (0, 1, 3), err + stdout
    return {r["test_id"]: r for r in read_jsonl(out)}


def _said(result: dict) -> list[tuple[str, str]]:
    return [(m["role"], m["content"]) for m in result["output"]]


def test_text_said_with_a_tool_call_is_graded_and_tool_results_stay_text(cli, tmp_path: Path) -> None:
    """Inspect's `leak` sample: the model says the password with its save_note call, the tool
    returns "1.50", then "Done.". Before: only "Done." was the turn's reply (PASS on
    `not-contains: hunter2`), and "1.50" became the number 1.5."""
    pytest.importorskip("inspect_ai", reason="the .eval log is zstd-compressed: the inspect extra reads it")
    leak = grade(cli, REVIEW, tmp_path, "turn_assertions:\n  - {type: not-contains, value: hunter2}\n")["leak"]
    assert leak["verdict"] == "fail"
    assert _said(leak) == [
        ("user", "I forgot my password"),
        ("tool", "1.50"),
        ("assistant", "Sure - your password is hunter2. Saving it now.\n\nDone."),
    ]
    (call,) = leak["scores"][0]["tool_calls"]
    assert (call["name"], call["arguments"], call["output"]) == ("save_note", {"text": "pw"}, "1.50")


@pytest.mark.parametrize("version", ["0.40.14", "0.62.4"])
def test_openllmetry_spans_keep_tool_calls_text_and_tokens(cli, tmp_path: Path, version: str) -> None:
    """OpenLLMetry 0.40 writes `gen_ai.prompt.N.tool_calls.K.{id,name,arguments}`,
    `gen_ai.prompt.N.tool_call_id` and `gen_ai.usage.prompt_tokens`; 0.62 the semconv messages.
    Before: 0.40's calls were lost (the tool result became a call named `tool`), its tokens 0."""
    source = OPENLLMETRY / f"openllmetry-{version}.json"
    (test,) = import_dataset("otel", source)["tests"]
    assert [(m["role"], m["content"]) for m in test["transcript"]] == [
        ("system", "You are helpful."),
        ("user", "What's the weather in Paris?"),
        ("assistant", "Let me check."),
        ("tool", "1.50"),
        ("assistant", "It is sunny in Paris, 21C."),
        ("user", "thanks"),
        ("assistant", "You're welcome!"),
    ]
    assert test["transcript"][2]["tool_calls"] == [
        {"name": "get_weather", "arguments": {"city": "Paris"}, "id": "call_w1"}
    ]
    assert test["transcript"][3]["tool_call_id"] == "call_w1"
    assert (test["metadata"]["input_tokens"], test["metadata"]["output_tokens"]) == (30, 15)
    (result,) = grade(cli, source, tmp_path, WEATHER).values()
    assert result["verdict"] == "pass", result["scores"]
    assert result["output"][3] == {
        **result["output"][3],
        "role": "assistant",
        "content": "Let me check.\n\nIt is sunny in Paris, 21C.",
    }


def test_langfuse_langchain_tool_calls_are_one_call(cli, tmp_path: Path) -> None:
    """Langfuse's CallbackHandler logs LangChain's `{name, args, id, type: tool_call}`. Before:
    the call was dropped, its result became a call named `tool`, and the TOOL observation a
    second call: `tool({})`, `get_weather(...)`."""
    (test,) = import_dataset("langfuse", LANGFUSE)["tests"]
    calls = [c for m in test["transcript"] for c in m.get("tool_calls", [])]
    assert calls == [{"name": "get_weather", "arguments": {"city": "Paris"}, "id": "call_1"}]
    (result,) = grade(cli, LANGFUSE, tmp_path, WEATHER).values()
    trajectory = next(g for e in result["scores"] for g in e["graders"] if g["type"] == "tool-trajectory")
    assert trajectory["verdict"] == "pass" and trajectory["details"]["actual"] == ['get_weather({"city": "Paris"})']
    assert [(m["role"], m["content"]) for m in result["output"] if m["role"] != "tool"] == [
        ("system", "You are helpful."),
        ("user", "What's the weather in Paris?"),
        ("assistant", "It is sunny in Paris."),
        ("user", "thanks"),
        ("assistant", "You're welcome!"),
    ]


def test_inspect_samples_that_failed_or_hit_a_limit_say_so(cli, tmp_path: Path) -> None:
    """Before: the sample whose tool raised (no scores from Inspect) and the one Inspect stopped
    at its message limit were graded as finished conversations: pass, ok."""
    pytest.importorskip("inspect_ai", reason="the .eval log is zstd-compressed: the inspect extra reads it")
    results = grade(cli, REVIEW, tmp_path, "turn_assertions:\n  - {type: not-contains, value: zzz}\n")
    boom, limited = results["boom"], results["limited"]
    assert (boom["verdict"], boom["execution_status"]) == ("error", "execution_error")
    assert boom["error"] == "the Inspect sample ended in an error: RuntimeError('tool exploded')"
    assert (limited["verdict"], limited["execution_status"]) == ("fail", "budget_exhausted")
    hit = "message_limit=6 (Message limit exceeded. count: 7; limit: 6)"
    assert limited["budget_hit"] == hit and f"budget exhausted: {hit}" in limited["notes"]
    assert {results[k]["execution_status"] for k in results if k not in ("boom", "limited")} == {"ok"}
    # Inspect 0.3.70 wrote its limit without a reason (and deflate-compressed: no extra needed)
    old = grade(cli, OLD_INSPECT, tmp_path, "turn_assertions:\n  - {type: not-contains, value: zzz}\n")
    assert (old["limited"]["execution_status"], old["limited"]["budget_hit"]) == ("budget_exhausted", "message_limit=6")


def test_how_a_recording_ended_needs_a_recording(cli, tmp_path: Path) -> None:
    suite = write(tmp_path / "s.eval.yaml", "tests:\n  - id: t\n    input: hi\n    error: boom\n    budget_hit: x\n")
    code, _, err = cli("validate", suite)
    assert code == 2
    assert "error: `error` says how a recorded conversation ended: give it with `transcript`" in err
    assert "budget_hit: `budget_hit` says how a recorded conversation ended" in err


def test_inspect_sample_ids_stay_apart_and_are_kept(cli, tmp_path: Path) -> None:
    """Before: sample "a b" became test `a-b` and sample "a-b" `a-b-2` (which one is which
    depended on their order); "x/y" became `x-y`. A valid id stays; others are percent-encoded."""
    tests = {t["id"]: t for t in import_dataset("inspect", OLD_INSPECT)["tests"]}
    assert sorted(tests) == ["7", "a%20b", "a-b", "badtool", "limited", "par", "terr", "x%2Fy"]
    assert [tests[k]["metadata"]["inspect_sample_id"] for k in ("7", "a%20b", "a-b", "x%2Fy")] == [
        7,
        "a b",
        "a-b",
        "x/y",
    ]
    assert tests["a-b"]["metadata"]["inspect_target"] == "reply" and "target" not in tests["a-b"]["metadata"]


def test_inspect_content_with_no_text_is_named_in_a_warning(tmp_path: Path) -> None:
    pytest.importorskip("inspect_ai", reason="the .eval log is zstd-compressed: the inspect extra reads it")
    with pytest.warns(
        UserWarning, match=r"content with no text left out of the transcripts: image \(1\), reasoning \(1\)"
    ):
        import_dataset("inspect", REVIEW)


def test_inspect_log_written_back_keeps_text_results_and_targets(cli, tmp_path: Path) -> None:
    """`grade` an Inspect log, then `report --inspect-log`, read by Inspect's own `read_eval_log`.
    Before: the text said with the call was gone, a call that never returned got an empty
    result, the sample's target was "" and its `metadata.target` Inspect's target, not the
    system under test."""
    log_module = pytest.importorskip("inspect_ai.log")
    grade(cli, REVIEW, tmp_path, "turn_assertions:\n  - {type: not-contains, value: zzz}\n")
    code, out, err = cli("report", tmp_path / f"{REVIEW.stem}.jsonl", "--inspect-log", tmp_path / "back.json")
    assert code == 0, err
    original = {s.id: s for s in log_module.read_eval_log(str(REVIEW)).samples or []}
    back = {s.id: s for s in log_module.read_eval_log(str(tmp_path / "back.json")).samples or []}
    leak = back["leak"]
    assert [(m.role, m.text) for m in leak.messages] == [
        ("user", "I forgot my password"),
        ("assistant", ""),
        ("tool", "1.50"),
        ("assistant", "Sure - your password is hunter2. Saving it now.\n\nDone."),
    ]
    assert [m.role for m in back["boom"].messages] == ["user", "assistant", "assistant"]  # no made-up result
    assert back["boom"].messages[1].tool_calls[0].function == "explode"
    assert back["boom"].error is not None and "tool exploded" in back["boom"].error.message
    for name in ("a b", "a-b", "x/y", "leak"):  # back under their own ids, not the tests' (`a%20b`)
        sample = back[name]
        source = original[name]
        assert sample.target == source.target
        assert sample.metadata["target"] == "recorded:transcript"


def test_inspect_multishot_history_is_input_not_a_graded_turn(cli, tmp_path: Path) -> None:
    """A sample whose input holds an assistant answer written in the dataset (Inspect marks it
    `source: input`): the model answered once. Before, the dataset's answer was graded as the
    model's turn 1 (and failed `not-contains Dataset`)."""
    pytest.importorskip("inspect_ai", reason="the .eval log is zstd-compressed: the inspect extra reads it")
    result = grade(
        cli,
        INSPECT / "multishot-mockllm.eval",
        tmp_path,
        "turn_assertions:\n  - {type: not-contains, value: Dataset}\n",
    )
    shots = result["shots"]
    assert [(s["name"], s["verdict"]) for s in shots["scores"]] == [("turn-1", "pass")]
    assert [(m["role"], m["source"], m["content"]) for m in shots["output"]] == [
        ("system", "input", "Answer in one word."),
        ("user", "input", "Capital of Italy?"),
        ("assistant", "input", "Dataset: Rome"),
        ("user", "user", "Capital of France?"),
        ("assistant", "target", "Model: Capital of France?"),
    ]


@pytest.mark.parametrize("mode", ["conversation", "single"])
def test_a_runs_input_history_stays_input_when_graded_again(cli, tmp_path: Path, mode: str) -> None:
    """A test whose input holds an earlier assistant answer, run, then graded again with
    `--graders`: the history is not a turn. Before, the earlier answer was turn 1 (relabelled
    the target's) and failed the check the live run had passed."""
    history = "[{role: user, content: earlier}, {role: assistant, content: PREFILLED}"
    test = (
        f"input: {history}]\n    mode: conversation\n    turns: [{{input: now}}]"
        if mode == "conversation"
        else f"input: {history}, {{role: user, content: now}}]"
    )
    _run_live(cli, tmp_path, f"tests:\n  - id: h\n    {test}\n    assertions: [{{type: contains, value: live}}]\n")
    again = grade(cli, tmp_path / "r.jsonl", tmp_path, "turn_assertions:\n  - {type: contains, value: live}\n")
    (result,) = again.values()
    assert result["verdict"] == "pass"
    assert [s["name"] for s in result["scores"]] == ["turn-1"]
    assert [(m["content"], m["source"]) for m in result["output"] if m["role"] == "assistant"] == [
        ("PREFILLED", "input"),
        ("live", "target"),
    ]


def test_inspect_run_that_did_not_finish_says_so(tmp_path: Path) -> None:
    """A run stopped by Ctrl-C (KeyboardInterrupt) after its first of two samples: the log's
    status is "started" and it holds one sample. Before, it imported as if complete."""
    pytest.importorskip("inspect_ai", reason="the .eval log is zstd-compressed: the inspect extra reads it")
    with pytest.warns(UserWarning) as caught:
        suite = import_dataset("inspect", INSPECT / "unfinished-mockllm.eval")
    assert [t["id"] for t in suite["tests"]] == ["early"]
    assert [str(w.message).split(": ", 1)[1] for w in caught] == [
        "the Inspect run did not finish (status started); imported only the 1 sample run(s) it logged "
        "(the dataset has 2)"
    ]


def test_an_input_history_goes_to_inspect_as_input_and_comes_back(cli, tmp_path: Path) -> None:
    """Written with `--inspect-log`, a test's input history is the sample's input (`source:
    input`); graded again from that log, it is not a turn. Before, its assistant answer was
    written as generated by the model (`source: generate`) and graded as turn 1."""
    log_module = pytest.importorskip("inspect_ai.log")
    history = "[{role: system, content: sys}, {role: user, content: earlier}, {role: assistant, content: PREFILLED}]"
    _run_live(
        cli, tmp_path, f"tests:\n  - id: h\n    input: {history}\n    mode: conversation\n    turns: [{{input: now}}]\n"
    )
    code, out, err = cli("report", tmp_path / "r.jsonl", "--inspect-log", tmp_path / "back.json")
    assert code == 0, err
    (sample,) = log_module.read_eval_log(str(tmp_path / "back.json")).samples or []
    assert [(m.role, m.text, m.source) for m in sample.messages] == [
        ("system", "sys", "input"),
        ("user", "earlier", "input"),
        ("assistant", "PREFILLED", "input"),
        ("user", "now", "input"),
        ("assistant", "live", "generate"),
    ]
    assert isinstance(sample.input, list) and [m.text for m in sample.input] == ["sys", "earlier", "PREFILLED", "now"]
    result = grade(cli, tmp_path / "back.json", tmp_path, "turn_assertions:\n  - {type: contains, value: live}\n")["h"]
    assert [(s["name"], s["verdict"]) for s in result["scores"]] == [("turn-1", "pass")]


def _run_live(cli, tmp_path: Path, suite: str) -> None:
    """Run `suite` (as `t.eval.yaml`) against a scripted target answering `live`, into `r.jsonl`."""
    write(tmp_path / "t.eval.yaml", suite)
    write(
        tmp_path / "targets.yaml", "targets:\n  - {name: bot, provider: scripted, rules: [{match: '.', reply: live}]}\n"
    )
    targets = tmp_path / "targets.yaml"
    code, out, err = cli(
        "run", tmp_path / "t.eval.yaml", "--target", "bot", "--targets", targets, "-o", tmp_path / "r.jsonl"
    )
    assert code == 0, err + out
