"""Files written by the newest releases of other tools (Inspect AI 0.3.285, DeepEval 4.3.1, ...),
full of edge cases (errors, non-ASCII text, empty and very long messages, tool errors, scores
with metadata, DeepEval 4's expectations and personas) come in with nothing dropped or changed.
The files are in tests/data/*/edges/ with the scripts that wrote them (see each SOURCE.txt)."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path

import pytest

from convoeval.datasets import import_dataset
from convoeval.spec import load_suite

from .conftest import DATA

INSPECT = DATA / "inspect" / "edges" / "edges-mockllm.eval"
DEEPEVAL = DATA / "deepeval" / "edges"


def _import(cli, kind: str, source: Path, out: Path, *options: str) -> tuple[str, str]:
    code, stdout, err = cli("import", kind, source, "-o", out, *options)
    assert code == 0, err + stdout
    return stdout, err


def test_inspect_edge_log_keeps_errors_scores_and_text(cli, tmp_path: Path) -> None:
    pytest.importorskip("inspect_ai", reason="the .eval log is zstd-compressed: the inspect extra reads it")
    from inspect_ai.log import read_eval_log

    log = read_eval_log(str(INSPECT))
    stdout, err = _import(cli, "inspect", INSPECT, tmp_path / "i.eval.yaml")
    tests = {t.id: t for t in load_suite(tmp_path / "i.eval.yaml").tests}
    # the two samples that failed before the model answered are named, not dropped in silence
    assert "2 sample(s) without a user and an assistant message left out" in err
    assert "boom-epoch-1 (RuntimeError('solver exploded on purpose'))" in err
    assert sorted(tests) == sorted(
        f"{sid}-epoch-{e}" for sid in ("7", "chat", "late-boom", "long", "reasoning") for e in (1, 2)
    )
    for sample in log.samples or []:
        name = f"{sample.id}-epoch-{sample.epoch}"
        if name not in tests:
            assert sample.error is not None and not any(m.role == "assistant" for m in sample.messages)
            continue
        test = tests[name]
        # every message, in order, with its role and its text, unchanged (non-ASCII, empty, long)
        assert [(m.role, m.content) for m in test.transcript or []] == [
            (m.role, m.text if m.text or m.role != "tool" or m.error is None else f"error: {m.error.message}")
            for m in sample.messages
        ]
        # each of Inspect's scores, with its metadata; the sample's error
        for scorer, score in (sample.scores or {}).items():
            kept = test.metadata["inspect_scores"][scorer]
            assert kept["value"] == score.value and kept.get("metadata") == score.metadata
        assert test.metadata.get("inspect_error") == (sample.error.message if sample.error else None)
    chat = tests["chat-epoch-1"].transcript or []
    assert [m.content for m in chat[3:5]] == ["", ""]  # the empty user message and the empty reply
    assert tests["chat-epoch-1"].metadata["inspect_target"] == "Zoë"
    assert len(tests["long-epoch-1"].transcript[1].content or "") == 6600
    calls = [c for m in tests["7-epoch-2"].transcript or [] for c in m.tool_calls]
    assert [(c["name"], c["arguments"]) for c in calls] == [
        ("lookup", {"city": "Paris"}),
        ("lookup", {"city": "Atlantis"}),
    ]
    assert tests["7-epoch-2"].transcript[5].content == "error: no such city: Atlantis"
    assert tests["reasoning-epoch-1"].metadata["inspect_scores"]["detail"]["metadata"] == {
        "checked_by": "detail",
        "tags": ["a", "b"],
    }
    assert (
        tests["late-boom-epoch-2"].metadata["inspect_error"] == "RuntimeError('solver exploded after the first reply')"
    )


def test_deepeval_4_conversational_golden_keeps_every_field(cli, tmp_path: Path) -> None:
    for source in (DEEPEVAL / "edge-conversational.json", DEEPEVAL / "edge-conversational.jsonl"):
        _, err = _import(cli, "deepeval", source, tmp_path / "d.eval.yaml")
        assert "turns 2: an empty user message cannot be sent to a live target" in err
        suite = load_suite(tmp_path / "d.eval.yaml")
        zoe, plain = suite.tests
        assert zoe.id == "réservation-zoë"  # DeepEval's name, accents kept
        assert [t.input for t in zoe.turns or []][0] == "Bonjour, une table pour 4 samedi ?"
        assert str(zoe.turns[1].input).startswith("Très long message — ") and len(str(zoe.turns[1].input)) == 4000
        first = zoe.turns[0].metadata
        assert first["user_id"] == "u-42" and first["metadata"] == {"canal": "web"}
        assert first["recorded_reply"] == "Bien sûr — à quelle heure ? 你好 👋"
        assert first["recorded_tool_calls"] == [
            {
                "name": "check_availability",
                "arguments": {"date": "samedi", "personnes": 4},
                "output": {"libre": ["19:00", "21:00"]},
            }
        ]
        assert first["recorded_reply_fields"] == {"metadata": {"latence_ms": 812}}
        assert zoe.turns[0].context == ["Samedi : 19:00 et 21:00 libres."]
        # DeepEval 4's expectations: must -> success, must_not -> failure, after expected_outcome
        assert zoe.success == [
            "La table est réservée et l'agent confirme l'heure et le nombre de personnes.",
            "confirmer l'heure",
        ]
        assert zoe.failure == ["demander la carte bancaire"]
        assert zoe.metadata["custom_column_key_values"] == {"équipe": "QA", "lot": "7"}
        persona = zoe.simulated_user.persona if zoe.simulated_user else None
        assert persona is not None and '"âge": 34' in str(persona) and "Zoë Tremblay" in str(persona)
        assert plain.simulated_user and plain.simulated_user.persona == "Plain description (deprecated field)."


def test_deepeval_recorded_keeps_empty_turns_and_leaves_out_scenarios(cli, tmp_path: Path) -> None:
    source = DEEPEVAL / "edge-conversational.json"
    stdout, _ = _import(cli, "deepeval", source, tmp_path / "r.eval.yaml", "--recorded")
    assert "left out: A-user-only-has-a-scenario.: line" in stdout
    (zoe,) = load_suite(tmp_path / "r.eval.yaml").tests
    raw = json.loads(source.read_text(encoding="utf-8"))[0]["turns"]
    assert [(m.role, m.content) for m in zoe.transcript or []] == [(t["role"], t["content"]) for t in raw]
    assert zoe.metadata["deepeval_turns"] == [
        {"turn": 0, "user_id": "u-42", "metadata": {"canal": "web"}},
        {"turn": 1, "metadata": {"latence_ms": 812}, "retrieval_context": ["Samedi : 19:00 et 21:00 libres."]},
    ]
    assert zoe.failure == ["demander la carte bancaire"]


def test_deepeval_4_single_golden_keeps_every_field(cli, tmp_path: Path) -> None:
    for source in (DEEPEVAL / "edge-goldens.json", DEEPEVAL / "edge-goldens.jsonl"):
        _import(cli, "deepeval", source, tmp_path / "g.eval.yaml")
        (golden,) = load_suite(tmp_path / "g.eval.yaml").tests
        assert golden.id == "météo-paris" and golden.expected_output == "Pluie légère, 14 °C."
        assert golden.success == ["mention rain"]
        assert golden.metadata["source_file"] == "docs/météo.md"
        assert golden.metadata["custom_column_key_values"] == {"col": "val"}
        assert golden.metadata["expected_tools"][0]["inputParameters"] == {"city": "Paris"}
        assert golden.metadata["tools_called"][0]["output"] == "rain"


@pytest.mark.filterwarnings("ignore::convoeval.datasets.DatasetWarning")
@pytest.mark.parametrize("recorded", [False, True])
@pytest.mark.parametrize("name", ["edge-conversational", "edge-goldens"])
def test_deepeval_csv_imports_as_its_json_does(name: str, recorded: bool) -> None:
    """DeepEval 4.3.1's `save_as(file_type="csv")` of the same goldens, whose CSV has no `persona`
    column (its `user_description` stays). Before: "not JSON", exit 2."""
    from_json = import_dataset("deepeval", DEEPEVAL / f"{name}.json", recorded=recorded)["tests"]
    from_csv = import_dataset("deepeval", DEEPEVAL / f"{name}.csv", recorded=recorded)["tests"]
    for test in from_json:
        if "simulated_user" in test:  # "<user_description>; name: ...; metadata: ..." from `persona`
            test["simulated_user"]["persona"] = str(test["simulated_user"]["persona"]).split("; name: ")[0]
    assert from_csv == from_json


PROMPTFOO = DATA / "promptfoo" / "edges"


def _echo(body: dict) -> str:
    """The loopback model promptfoo 0.123.1 ran against: `Reply to: <last user message>`."""
    users = [m["content"] for m in body["messages"] if m["role"] == "user"]
    return f"Reply to: {users[-1] if users else ''}"


def test_promptfoo_0_123_config_runs_as_promptfoo_ran_it(cli, fake_openai, tmp_path: Path) -> None:
    """The same model replies, the same messages sent, the same verdict for every assertion and
    every test as promptfoo's own run of this config (promptfoo-results.json)."""
    recorded = {r["description"]: r for r in json.loads((PROMPTFOO / "promptfoo-results.json").read_text())["results"]}
    _, err = _import(cli, "promptfoo", PROMPTFOO / "promptfooconfig.yaml", tmp_path / "p.eval.yaml")
    # the provider's settings are named, and kept without its key
    assert "openai:chat:loopback-model (label, apiBaseUrl, apiKey, max_tokens, temperature)" in err
    assert "threshold" not in err  # turn 5's own (0.5) decides turn 5, as in promptfoo
    suite = load_suite(tmp_path / "p.eval.yaml")
    settings = json.dumps(suite.metadata)
    assert '"max_tokens": 64' in settings and "sk-loopback" not in settings
    fake_openai.reset(reply=_echo)
    code, out, err = cli("run", tmp_path / "p.eval.yaml", "--judge", "openai:j", "-o", tmp_path / "r.jsonl")
    assert code == 1, err + out  # two of promptfoo's tests fail
    results = [json.loads(line) for line in (tmp_path / "r.jsonl").read_text().splitlines()]
    seen = 0
    for result, test in zip(results, suite.tests, strict=True):
        replies = [m["content"] for m in result["output"] if m["role"] == "assistant"]
        for n, turn in enumerate(test.turns or []):
            promptfoo = recorded[turn.metadata["description"]]
            entry = next(e for e in result["scores"] if e["name"] == f"turn-{n + 1}")
            assert replies[n] == promptfoo["output"]
            graders = [
                n for g in entry["graders"] for n in (g["details"]["scores"] if g["type"] == "composite" else [g])
            ]
            assert [g["verdict"] == "pass" for g in graders] == [a["pass"] for a in promptfoo["assertions"]]
            assert (entry["verdict"] == "pass") is promptfoo["success"], turn.metadata["description"]
            seen += 1
    assert seen == len(recorded) == 7
    # what the model was sent: system prompt, the conversation so far, the new question
    sent = [r["messages"] for r in fake_openai.target_requests()]
    for promptfoo in recorded.values():
        assert promptfoo["prompt"] in sent, promptfoo["description"]


OTEL = DATA / "otel" / "edges"


@pytest.mark.parametrize("name", ["console-spans.json", "otlp-spans.jsonl"])
def test_otel_sdk_edge_spans_keep_messages_and_failures(cli, tmp_path: Path, name: str) -> None:
    _import(cli, "otel", OTEL / name, tmp_path / "o.eval.yaml")
    zoe, other = load_suite(tmp_path / "o.eval.yaml").tests
    assert zoe.id == "conv-zoë"
    assert [(m.role, m.content) for m in zoe.transcript or []] == [
        ("system", "Tu es un assistant de réservation. Réponds en français."),
        ("user", "Bonjour ! Une table pour 4 à Montréal ? 你好 👋"),
        ("assistant", "Bien sûr, à quelle heure ?"),
        ("user", ""),
        ("assistant", ""),
        ("user", "Très long message — " * 150),
        ("assistant", ""),
        ("tool", "error: service indisponible"),
        ("assistant", "Désolé, la réservation a échoué."),
    ]
    (call,) = zoe.transcript[6].tool_calls
    # the failed tool span has no result: none is made up (the tool message says what happened)
    assert call == {"name": "réserver", "arguments": {"personnes": 4, "ville": "Montréal"}, "id": "call_é1"}
    # the model call that failed before its retry, and the tool that failed, are not lost
    assert zoe.metadata["errors"] == [
        "chat gpt-4o-mini: openai.RateLimitError: 429 Too Many Requests",
        "execute_tool réserver: TimeoutError: service indisponible",
    ]
    assert re.fullmatch(r"[0-9a-f]{32}", other.id), other.id  # its trace id, as hex
    assert "errors" not in other.metadata


def test_otlp_ids_in_protobuf_json_base64_give_the_same_tests(cli, tmp_path: Path) -> None:
    """protobuf's JSON mapping writes ids in base64 (OTLP/JSON in hex): the same conversations."""
    text = (OTEL / "otlp-spans.jsonl").read_text(encoding="utf-8")
    b64 = re.sub(
        r'"(traceId|spanId|parentSpanId)": "([0-9a-f]+)"',
        lambda m: f'"{m.group(1)}": "{base64.b64encode(bytes.fromhex(m.group(2))).decode()}"',
        text,
    )
    assert b64 != text
    (tmp_path / "b64.jsonl").write_text(b64, encoding="utf-8")
    _import(cli, "otel", OTEL / "otlp-spans.jsonl", tmp_path / "hex.eval.yaml")
    _import(cli, "otel", tmp_path / "b64.jsonl", tmp_path / "b64.eval.yaml")
    hexed, based = (load_suite(tmp_path / f"{n}.eval.yaml").tests for n in ("hex", "b64"))
    assert [t.id for t in hexed] == [t.id for t in based]
    assert [t.transcript for t in hexed] == [t.transcript for t in based]


def test_otlp_structured_attribute_values_are_read(cli, tmp_path: Path) -> None:
    """OTLP `kvlistValue` attributes (messages as structured values, not JSON text)."""

    def kv(mapping: dict) -> dict:
        return {"kvlistValue": {"values": [{"key": k, "value": _any(v)} for k, v in mapping.items()]}}

    def _any(value: object) -> dict:
        if isinstance(value, dict):
            return kv(value)
        if isinstance(value, list):
            return {"arrayValue": {"values": [_any(v) for v in value]}}
        return {"stringValue": value}

    messages = [{"role": "user", "parts": [{"type": "text", "content": "Salut"}]}]
    replies = [{"role": "assistant", "parts": [{"type": "text", "content": "Bonjour !"}]}]
    span = {
        "traceId": "5b8efff798038103d269b633813fc60c",
        "spanId": "eee19b7ec3c1b174",
        "name": "chat",
        "startTimeUnixNano": "1",
        "attributes": [
            {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
            {"key": "gen_ai.input.messages", "value": _any(messages)},
            {"key": "gen_ai.output.messages", "value": _any(replies)},
        ],
    }
    doc = {"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}
    (tmp_path / "kv.jsonl").write_text(json.dumps(doc) + "\n", encoding="utf-8")
    _import(cli, "otel", tmp_path / "kv.jsonl", tmp_path / "kv.eval.yaml")
    (test,) = load_suite(tmp_path / "kv.eval.yaml").tests
    assert [(m.role, m.content) for m in test.transcript or []] == [("user", "Salut"), ("assistant", "Bonjour !")]


def test_langfuse_5_observations_listing_is_one_session_with_its_failures(cli, tmp_path: Path) -> None:
    source = DATA / "langfuse" / "edges" / "observations-v2.json"
    _import(cli, "langfuse", source, tmp_path / "l.eval.yaml")
    (session,) = load_suite(tmp_path / "l.eval.yaml").tests  # two traces of one session: one conversation
    assert session.id == "session-zoë"
    last = json.loads(source.read_text(encoding="utf-8"))["data"][-1]
    expected = [(m["role"], m["content"] or "") for m in last["input"]] + [("assistant", "")]
    assert [(m.role, m.content) for m in session.transcript or []] == expected
    assert session.transcript[2].tool_calls == [{"name": "order_status", "arguments": {"order": 42}, "id": "call_1"}]
    assert session.metadata["langfuse_traces"] == ["trace-a", "trace-b"]
    assert session.metadata["user_id"] == "client-7"
    assert session.metadata["errors"] == ["OpenAI-generation: RateLimitError: 429 Too Many Requests"]


def test_inspect_edge_log_round_trip_through_convoeval_back_to_inspect_and_otel(
    cli, fake_openai, tmp_path: Path
) -> None:
    """Inspect 0.3.285's log -> `convoeval grade` -> `report --inspect-log` read back by Inspect
    itself, and -> `report --otel` to a receiver -> `import otel`: the same conversations."""
    log_module = pytest.importorskip("inspect_ai.log")
    pytest.importorskip("opentelemetry.sdk")
    from .otlp_receiver import OtlpReceiver

    fake_openai.reset()
    code, out, err = cli("grade", INSPECT, "--judge", "openai:j", "-o", tmp_path / "g.jsonl")
    assert code in (0, 1), err + out
    code, out, err = cli("report", tmp_path / "g.jsonl", "--inspect-log", tmp_path / "back.eval")
    assert code == 0, err
    original = {(s.id, s.epoch): s for s in log_module.read_eval_log(str(INSPECT)).samples or []}
    back = {(s.id, s.epoch): s for s in log_module.read_eval_log(str(tmp_path / "back.eval")).samples or []}
    # each sample back under its own id and epoch (the two that never got a reply were left out)
    assert len(back) == 10 and set(back) <= set(original)
    for key in (("long", 1), ("reasoning", 2), ("late-boom", 1)):
        assert [(m.role, m.text) for m in back[key].messages] == [(m.role, m.text) for m in original[key].messages]
    for key, sample in back.items():
        scores = sample.scores or {}
        # Inspect's own scores as they were, next to convoeval's
        assert {k: (v.value, v.explanation, v.metadata) for k, v in scores.items() if k != "convoeval"} == {
            k: (v.value, v.explanation, v.metadata) for k, v in (original[key].scores or {}).items()
        }
        assert (sample.error and sample.error.message) == (original[key].error and original[key].error.message)
        assert scores["convoeval"].answer == ("error" if original[key].error else "pass")
        assert sample.target == original[key].target
        assert sample.metadata == {**(original[key].metadata or {}), **(sample.metadata or {})}
        # the tokens and time Inspect counted for the recorded conversation
        assert sample.model_usage == original[key].model_usage and sample.model_usage["mockllm/model"].input_tokens
        assert sample.total_time == original[key].total_time

    with OtlpReceiver() as receiver:
        code, out, err = cli("report", tmp_path / "g.jsonl", "--otel", "--otel-endpoint", receiver.endpoint)
        assert code == 0, err
        receiver.write_jsonl(tmp_path / "spans.jsonl")
    _import(cli, "otel", tmp_path / "spans.jsonl", tmp_path / "o.eval.yaml")
    spans = {t.id: t for t in load_suite(tmp_path / "o.eval.yaml").tests}
    results = [json.loads(line) for line in (tmp_path / "g.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(spans) == len(results) == 10
    for result in results:
        (test,) = [t for t in spans.values() if t.id.endswith(f"-{result['test_id']}-recorded:transcript")]
        said = [
            (m.role, m.content)
            for m in test.transcript or []
            if m.role != "tool" and (m.content or not m.tool_calls)  # results keep calls in `tool` messages
        ]
        kept = [(m["role"], m["content"]) for m in result["output"] if m["role"] != "tool"]
        assert said == kept


def test_deepeval_fields_it_does_not_know_are_named(cli, tmp_path: Path) -> None:
    records = [
        {"input": "Hi", "expected": "Hello", "token_cost": 0.002},
        {"scenario": "S", "turns": [{"role": "user", "content": "Hi", "audio": "a.wav"}], "expected": "x"},
    ]
    (tmp_path / "d.json").write_text(json.dumps(records), encoding="utf-8")
    _, err = _import(cli, "deepeval", tmp_path / "d.json", tmp_path / "d.eval.yaml")
    assert "fields not imported (not DeepEval's): expected (2), turns[].audio" in err
    assert load_suite(tmp_path / "d.eval.yaml").tests[0].metadata["token_cost"] == 0.002


def test_grade_says_the_importers_warnings_as_lines_of_its_own(cli, tmp_path: Path) -> None:
    """`convoeval grade LOG` says what the log's reader left out as `warning: ...`, as `import`
    does. Before: Python's `.../_inspect_log.py:NN: DatasetWarning: ...` with a source line."""
    graders = tmp_path / "graders.yaml"
    graders.write_text("turn_assertions:\n  - {type: not-contains, value: zzz}\n")
    log = DATA / "inspect" / "edges" / "edges-mockllm.eval"
    code, _, err = cli("grade", log, "--graders", graders, "-o", tmp_path / "g.jsonl", "--store", tmp_path / "s")
    assert "warning: " in err and "2 sample(s) without a user and an assistant message left out" in err, err
    assert "DatasetWarning" not in err and code in (0, 1), err


def test_deepeval_test_run_imports_with_its_verdicts_and_metrics(cli, tmp_path: Path) -> None:
    """What `deepeval test run` / `evaluate()` write (`.deepeval/.latest_test_run.json`, by
    alias) imports: every recorded turn and tool call, and DeepEval's verdict and each metric's
    score and reason; before, "expected a JSON list of DeepEval goldens or test cases"."""
    source = DEEPEVAL / ".." / "test-run" / "latest_test_run.json"
    run = json.loads(source.read_text(encoding="utf-8"))["testRunData"]
    _, err = _import(cli, "deepeval", source, tmp_path / "r.eval.yaml", "--recorded")
    assert "not imported" not in err
    tests = {t.id: t for t in load_suite(tmp_path / "r.eval.yaml").tests}
    assert sorted(tests) == ["booking-é", "capital", "maths"]
    for case in [*run["testCases"], *run["conversationalTestCases"]]:
        test = tests[case["name"]]
        assert test.metadata["success"] is case["success"]
        assert [(m["name"], m["score"], m["reason"]) for m in test.metadata["metrics_data"]] == [
            (m["name"], m["score"], m["reason"]) for m in case["metricsData"]
        ]
        turns = case.get("turns") or [
            {"role": "user", "content": case["input"]},
            {"role": "assistant", "content": case["actualOutput"], "toolsCalled": case.get("toolsCalled")},
        ]
        assert [(m.role, m.content) for m in test.transcript or []] == [(t["role"], t["content"]) for t in turns]
        assert [[(c["name"], c["arguments"], c["output"]) for c in m.tool_calls] for m in test.transcript or []] == [
            [(c["name"], c["inputParameters"], c["output"]) for c in t.get("toolsCalled") or []] for t in turns
        ]
    assert tests["maths"].assertions[0].expected_output == "4"  # judged against DeepEval's expected output
    assert tests["booking-é"].metadata["additional_metadata"] == {"src": "test"}

    # without --recorded: the user turns are sent live; the recorded replies stay as metadata
    _import(cli, "deepeval", source, tmp_path / "l.eval.yaml")
    live = {t.id: t for t in load_suite(tmp_path / "l.eval.yaml").tests}
    assert [t.input for t in live["booking-é"].turns] == ["Une table pour deux ?", "20h"]
    assert live["capital"].input == "Capital of France?" and live["capital"].metadata["metrics_data"]
