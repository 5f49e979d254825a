"""Other tools' logs as recorded conversations: an Inspect eval log written by Inspect, AgentV's
transcript JSONL, Langfuse exports and OpenTelemetry GenAI spans written by the OpenTelemetry
SDK are imported (told apart by content) and graded by `convoeval grade` without a target."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from convoeval.datasets import import_dataset
from convoeval.spec import load_suite

from .conftest import DATA, read_jsonl, write

GRADERS = """\
turn_assertions:
  - type: not-contains
    value: As an AI
assertions:
  - type: self-coherence
"""


def grade(cli, source: Path, tmp_path: Path, graders: str = GRADERS) -> list[dict]:
    """`convoeval grade SOURCE` with a fake judge; returns the results."""
    write(tmp_path / "graders.yaml", graders)
    out = tmp_path / f"{source.stem}.results.jsonl"
    code, stdout, err = cli("grade", source, "--graders", tmp_path / "graders.yaml", "--judge", "openai:j", "-o", out)
    assert code in (0, 1), err + stdout
    return read_jsonl(out)


def test_inspect_log_written_by_inspect_imports_and_grades(cli, fake_openai, tmp_path) -> None:
    code, out, err = cli(
        "import", "inspect", DATA / "inspect" / "two-turn-mockllm.json", "-o", tmp_path / "i.eval.yaml"
    )
    assert code == 0, err
    suite = load_suite(tmp_path / "i.eval.yaml")
    assert [t.id for t in suite.tests] == ["capital", "colour", "sum"]
    capital = suite.tests[0]
    assert [(m.role, m.content) for m in capital.transcript or []] == [
        ("system", "You are terse."),
        ("user", "What is the capital of France?"),
        ("assistant", "The capital of France is **Paris**."),
        ("user", "And in one word?"),
        ("assistant", "Paris."),
    ]
    assert capital.metadata["sample"] == {"topic": "geo", "follow_up": "And in one word?"}
    assert capital.metadata["inspect_scores"] == {
        "includes": {"value": "C", "answer": "paris.", "explanation": "Paris."}
    }
    tool_call = suite.tests[2].transcript[2].tool_calls[0]
    assert tool_call["name"] == "add" and tool_call["arguments"] == {"x": 2, "y": 3}

    fake_openai.reset()
    results = grade(
        cli, DATA / "inspect" / "two-turn-mockllm.json", tmp_path, GRADERS + "  - type: tool-called\n    tool: add\n"
    )
    assert not fake_openai.target_requests()
    by_id = {r["test_id"]: r for r in results}
    assert [e["name"] for e in by_id["capital"]["scores"]] == ["turn-1", "turn-2", "conversation"]
    sum_tools = next(e for e in by_id["sum"]["scores"] if e["name"] == "conversation")["graders"][1]
    assert sum_tools["type"] == "tool-called" and sum_tools["verdict"] == "pass"
    capital_tools = next(e for e in by_id["capital"]["scores"] if e["name"] == "conversation")["graders"][1]
    assert capital_tools["verdict"] == "fail"  # no tool was called there: the check really looks


def test_inspect_eval_zip_reads_with_the_extra_or_says_what_to_do(cli, tmp_path) -> None:
    source = DATA / "inspect" / "two-turn-mockllm.eval"
    code, out, err = cli("import", "inspect", source, "-o", tmp_path / "i.eval.yaml")
    try:
        import inspect_ai  # noqa: F401
    except ImportError:
        assert code == 2 and "zstd-compressed: install the inspect extra" in err
        return
    assert code == 0, err
    assert [t.id for t in load_suite(tmp_path / "i.eval.yaml").tests] == ["capital", "colour", "sum"]


def test_inspect_eval_zip_that_is_broken_is_a_file_error(cli, tmp_path) -> None:
    """Before: a central directory said to start past the end of the file (entries at negative
    offsets) ended in `OSError: [Errno 22] Invalid argument`, broken deflate data in
    `zlib.error`: tracebacks (found by fuzzing)."""
    data = (DATA / "inspect" / "two-turn-mockllm.eval").read_bytes()
    end = data.rindex(b"PK\x05\x06")  # the end of central directory record; its offset field at +16
    start = int.from_bytes(data[end + 16 : end + 20], "little")
    shifted = write(tmp_path / "shifted.eval", "")
    shifted.write_bytes(data[: end + 16] + (start + 100_000).to_bytes(4, "little") + data[end + 20 :])
    code, _, err = cli("import", "inspect", shifted, "-o", tmp_path / "i.eval.yaml")
    assert (code, err) == (2, f"error: {shifted}:1: not a readable Inspect .eval log ([Errno 22] Invalid argument)\n")
    deflated = tmp_path / "deflated.eval"
    with zipfile.ZipFile(deflated, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("header.json", json.dumps({"eval": {"task": "t"}}))
        archive.writestr("samples/1_epoch_1.json", json.dumps({"id": 1, "messages": ["x" * 1000]}))
    raw = bytearray(deflated.read_bytes())
    name = raw.index(b"samples/1_epoch_1.json") + len("samples/1_epoch_1.json")  # its local header's name
    raw[name : name + 8] = bytes(b ^ 0xFF for b in raw[name : name + 8])  # the start of its deflate data
    deflated.write_bytes(bytes(raw))
    code, _, err = cli("import", "inspect", deflated, "-o", tmp_path / "i.eval.yaml")
    assert code == 2 and err.startswith(f"error: {deflated}:1: not a readable Inspect .eval log ("), err
    assert "Traceback" not in err and not (tmp_path / "i.eval.yaml").exists()


def test_agentv_transcripts_import_with_tool_calls_and_grade(cli, fake_openai, tmp_path) -> None:
    source = DATA / "agentv-transcripts" / "imported-codex-transcript.jsonl"
    suite = import_dataset("transcripts", source)  # told apart from OpenAI messages by its rows
    (test,) = suite["tests"]
    assert test["id"] == "imported-codex-config-fix@codex"
    assert test["metadata"]["source"]["provider"] == "codex"
    calls = [c for m in test["transcript"] for c in m.get("tool_calls", [])]
    assert calls[0] == {
        "name": "Read",
        "arguments": {"path": "package.json"},
        "id": "call-read-package",
        "output": {"name": "agentv-example-service", "scripts": ["test", "lint"]},
    }
    fake_openai.reset()
    (result,) = grade(cli, source, tmp_path, GRADERS + "  - type: tool-called\n    tool: Read\n")
    conversation = next(e for e in result["scores"] if e["name"] == "conversation")
    assert [g["verdict"] for g in conversation["graders"]][1] == "pass"
    assert result["execution_status"] == "ok"

    copilot = import_dataset("agentv-transcript", DATA / "agentv-transcripts" / "copilot-transcript.jsonl")
    assert copilot["tests"][0]["id"] == "should-not-trigger-csv-analyzer@copilot-cli"


def test_langfuse_session_and_trace_exports_import_and_grade(cli, fake_openai, tmp_path) -> None:
    session = import_dataset("transcripts", DATA / "langfuse" / "session-support-42.json")
    (test,) = session["tests"]
    assert test["id"] == "support-42"
    assert [m["role"] for m in test["transcript"]] == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
        "user",
        "assistant",
    ]
    assert test["transcript"][2]["tool_calls"] == [
        {"name": "lookup_order", "arguments": {"order_id": "1183"}, "id": "call_order_1183"}
    ]
    assert test["metadata"]["langfuse_scores"] == [{"name": "user-feedback", "value": 1, "comment": "thumbs up"}]
    traces = import_dataset("langfuse", DATA / "langfuse" / "traces-export.jsonl")
    assert [t["transcript"][0]["content"] for t in traces["tests"]] == [
        "Do you ship to Canada?",
        "What is your return window?",
    ]
    fake_openai.reset()
    (result,) = grade(cli, DATA / "langfuse" / "session-support-42.json", tmp_path)
    assert [e["name"] for e in result["scores"]] == ["turn-1", "turn-2", "conversation"]
    turn_1 = result["output"]
    assert any(m["source"] == "tool" for m in turn_1)  # the recorded tool call is kept in the result


def test_otel_spans_from_the_sdk_import_and_grade(cli, fake_openai, tmp_path) -> None:
    for name in ("console-spans.json", "otlp-spans.jsonl"):
        suite = import_dataset("transcripts", DATA / "otel" / name)
        (test,) = suite["tests"]
        assert test["id"] == "conv-paris-weather"
        assert [m["role"] for m in test["transcript"]] == [
            "system",
            "user",
            "assistant",
            "tool",
            "assistant",
            "user",
            "assistant",
        ]
        assert test["transcript"][2]["tool_calls"][0]["output"] == {"summary": "light rain", "temp_c": 14}
        assert test["metadata"] == {
            "model": "gpt-4o-mini-2024-07-18",
            "provider": "openai",
            "input_tokens": 170,
            "output_tokens": 33,
        }
    fake_openai.reset()
    (result,) = grade(cli, DATA / "otel" / "otlp-spans.jsonl", tmp_path)
    assert result["test_id"] == "conv-paris-weather" and len([e for e in result["scores"] if e["type"] == "turn"]) == 2


def test_otel_spans_fresh_from_the_sdk_over_otlp_http(fake_openai, tmp_path) -> None:
    pytest.importorskip("opentelemetry.exporter.otlp.proto.http")
    from .otlp_receiver import OtlpReceiver

    with OtlpReceiver() as receiver:
        subprocess.run([sys.executable, str(DATA / "otel" / "make_spans.py"), "otlp", receiver.endpoint], check=True)
    receiver.write_jsonl(tmp_path / "spans.jsonl")
    assert len(receiver.spans()) == 6 and receiver.paths[0] == "/v1/traces"
    fresh = import_dataset("otel", tmp_path / "spans.jsonl")
    shipped = import_dataset("otel", DATA / "otel" / "otlp-spans.jsonl")
    assert fresh["tests"] == shipped["tests"]


def test_log_format_errors_name_the_file(cli, tmp_path) -> None:
    bad = write(
        tmp_path / "rows.jsonl",
        '{"test_id": "t", "target": "x", "message_index": 0, "role": "user"}\n{"test_id": "t"}\n',
    )
    code, _, err = cli("import", "agentv-transcript", bad, "-o", tmp_path / "x.eval.yaml")
    assert code == 2 and f"{bad}:2: target: missing" in err
    spans = write(tmp_path / "spans.json", json.dumps({"resourceSpans": []}))
    code, _, err = cli("import", "otel", spans, "-o", tmp_path / "x.eval.yaml")
    assert code == 2 and f"{spans}:1: no spans" in err
    log = write(tmp_path / "log.json", json.dumps({"eval": {"task": "t"}, "samples": []}))
    code, _, err = cli("grade", log)
    assert code == 2 and "the Inspect log has no samples" in err


def test_langfuse_observations_listing_and_openai_logs_are_told_apart(tmp_path) -> None:
    session = json.loads((DATA / "langfuse" / "session-support-42.json").read_text())
    listing = {"data": [o for t in session["traces"] for o in t["observations"]], "meta": {"page": 1}}
    path = write(tmp_path / "observations.json", json.dumps(listing))
    first, second = import_dataset("transcripts", path)["tests"]  # no sessions in a listing: one per trace
    assert first["id"] == "7f3c1a52-0a1e-4d2b-9f2e-1b6f0c9a0001"
    assert first["transcript"][-1]["content"].startswith("Your order 1183")
    assert second["transcript"][-1]["content"].startswith("I can't change the address")
    # an OpenAI messages log whose metadata names a Langfuse session is still an OpenAI log
    openai_log = write(
        tmp_path / "chats.jsonl",
        json.dumps(
            {
                "id": "c1",
                "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}],
                "metadata": {"sessionId": "s-1", "traceId": "t-1"},
            }
        )
        + "\n",
    )
    (chat,) = import_dataset("transcripts", openai_log)["tests"]
    assert chat["id"] == "c1" and chat["metadata"] == {"sessionId": "s-1", "traceId": "t-1"}


def test_otel_messages_on_span_events_are_read(tmp_path) -> None:
    docs = [json.loads(line) for line in (DATA / "otel" / "otlp-spans.jsonl").read_text().splitlines()]
    for doc in docs:  # move the messages from the spans' attributes to an event, as some exporters do
        for resource in doc["resourceSpans"]:
            for scope in resource["scopeSpans"]:
                for span in scope["spans"]:
                    moved = [a for a in span.get("attributes", []) if a["key"].endswith("messages")]
                    span["attributes"] = [a for a in span.get("attributes", []) if a not in moved]
                    if moved:
                        span["events"] = [{"name": "gen_ai.client.inference.operation.details", "attributes": moved}]
    path = write(tmp_path / "events.jsonl", "".join(json.dumps(d) + "\n" for d in docs))
    assert import_dataset("otel", path)["tests"] == import_dataset("otel", DATA / "otel" / "otlp-spans.jsonl")["tests"]


@pytest.mark.parametrize("name", ["console-logs.json", "otlp-logs.jsonl"])
def test_otel_genai_message_events_import(name: str) -> None:
    """The official OpenAI instrumentation (openai-v2 2.3b0) writes the messages as GenAI events
    (log records), not span attributes: each model call (span) is its events in order, the
    `gen_ai.choice` its reply. Before: "no GenAI model-call span holds a user message"."""
    tests = import_dataset("otel", DATA / "otel" / "events" / name)["tests"]
    assert len(tests) == 3  # one trace per call: the app had no enclosing span
    last = tests[-1]["transcript"]
    assert [(m["role"], m["content"]) for m in last] == [
        ("system", "Sois bref."),
        ("user", "What's the weather in Zoë-ville?"),
        ("assistant", ""),
        ("tool", "1.50"),
        ("assistant", "Réponse 4 👋"),
        ("user", "Merci ! Et demain ?"),
        ("assistant", "Réponse 6 👋"),
    ]
    assert last[2]["tool_calls"] == [{"name": "get_weather", "arguments": {"city": "Zoë-ville"}, "id": "call_1"}]
    assert last[3]["tool_call_id"] == "call_1"
    assert [(m["role"], m["content"]) for m in tests[0]["transcript"]][-1] == ("assistant", "Let me check.")
