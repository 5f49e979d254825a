"""Results out to other tools: an Inspect eval log that Inspect's own `read_eval_log` reads back
(and convoeval re-imports), and OpenTelemetry GenAI spans sent with the SDK over OTLP/HTTP to a
loopback receiver (and re-imported as the same conversations)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import convoeval
from convoeval.datasets import import_dataset
from convoeval.testing import Fault

from .conftest import DATA, read_jsonl, write
from .report_data import SUITE, agent_result, reply, write_results


@pytest.fixture
def results_file(fake_openai, tmp_path: Path) -> Path:
    """A real run of the travel suite (3 tests) plus a hand-made agent result with tool calls."""
    fake_openai.reset(reply=reply)
    suite = write(tmp_path / "travel.eval.yaml", SUITE)
    report = convoeval.run(suite, target="openai:m", judge="openai:j", store=False, cache=False)
    return write_results(tmp_path / "results.jsonl", [*report.results, agent_result(target="openai:m")])


def _said(messages: list[dict]) -> list[tuple[str, str]]:
    return [(m["role"], m["content"]) for m in messages if m["role"] in ("system", "user") or m.get("content")]


def test_inspect_log_round_trip(cli, results_file: Path, tmp_path: Path) -> None:
    log_module = pytest.importorskip("inspect_ai.log")
    code, out, err = cli("report", results_file, "--inspect-log", tmp_path / "run.eval")
    assert code == 0, err
    assert f"wrote {tmp_path / 'run.eval'}" in out
    log = log_module.read_eval_log(str(tmp_path / "run.eval"))
    assert log.status == "success" and log.eval.model == "openai/m"
    samples = {(s.id, s.epoch): s for s in log.samples}
    assert sorted(samples) == [
        ("book-flight", 1),
        ("book-flight", 2),
        ("broken", 1),
        ("greeting", 1),
        ("japan-trip", 1),
    ]
    japan = samples["japan-trip", 1]
    assert [m.role for m in japan.messages] == ["system", "user", "assistant", "user", "assistant"]
    assert japan.messages[4].text.startswith("Kyoto <script>")
    score = japan.scores["convoeval"]
    assert score.value == 1.0 and score.answer == "pass"
    assert set(score.metadata["entries"]) == {"turn-1", "turn-2", "conversation"}
    broken = samples["broken", 1].scores["convoeval"]
    assert broken.value == 0.0 and broken.answer == "fail"
    flight = samples["book-flight", 1]
    calls = [c for m in flight.messages if m.role == "assistant" for c in (m.tool_calls or [])]
    assert [c.function for c in calls] == ["search_flights", "get_price"]
    tool_results = [m for m in flight.messages if m.role == "tool"]
    assert tool_results[0].tool_call_id == calls[0].id
    metrics = log.results.scores[0].metrics
    assert metrics["pass_rate"].value == pytest.approx(2 / 4) and metrics["mean"].value == pytest.approx(2.5 / 4)

    # and back: the exported log imports as the same conversations
    back = {t["id"]: t for t in import_dataset("inspect", tmp_path / "run.eval")["tests"]}
    original = {r["test_id"]: r for r in read_jsonl(results_file)}
    assert _said(back["japan-trip"]["transcript"]) == _said(original["japan-trip"]["output"])
    assert back["japan-trip"]["metadata"]["inspect_scores"]["convoeval"]["answer"] == "pass"


def test_inspect_log_written_by_inspect_itself_imports_and_grades(cli, fake_openai, tmp_path: Path) -> None:
    pytest.importorskip("inspect_ai")
    subprocess.run([sys.executable, str(DATA / "inspect" / "make_log.py"), str(tmp_path / "logs")], check=True)
    (log,) = (tmp_path / "logs").glob("*.eval")
    fake_openai.reset()
    code, out, err = cli("grade", log, "--judge", "openai:j", "-o", tmp_path / "graded.jsonl")
    assert code in (0, 1), err
    graded = {r["test_id"]: r for r in read_jsonl(tmp_path / "graded.jsonl")}
    assert set(graded) == {"capital", "colour", "sum"}
    assert all(r["execution_status"] == "ok" for r in graded.values())
    assert [e["name"] for e in graded["capital"]["scores"]] == ["turn-1", "turn-2", "conversation"]


def test_a_runs_inspect_log_from_python(fake_openai, tmp_path: Path) -> None:
    """The Python guide's way to a log `inspect view` opens: `convoeval.report.write_inspect_log`
    (before, only the CLI's private import reached it)."""
    log_module = pytest.importorskip("inspect_ai.log")
    from convoeval.report import write_inspect_log

    fake_openai.reset(reply=reply)
    report = convoeval.run(
        write(tmp_path / "travel.eval.yaml", SUITE), target="openai:m", judge="openai:j", store=False
    )
    assert write_inspect_log(report.results, tmp_path / "run.eval", name="travel") == [tmp_path / "run.eval"]
    log = log_module.read_eval_log(str(tmp_path / "run.eval"))
    assert (log.status, log.eval.task, len(log.samples)) == ("success", "travel", 3)


def test_inspect_log_bad_suffix_is_an_error(cli, results_file: Path, tmp_path: Path) -> None:
    code, _, err = cli("report", results_file, "--inspect-log", tmp_path / "run.txt")
    assert code == 2 and "an Inspect log is a .eval or .json file" in err


def test_otel_spans_over_otlp_http_round_trip(cli, results_file: Path, tmp_path: Path) -> None:
    pytest.importorskip("opentelemetry.exporter.otlp.proto.http")
    from .otlp_receiver import OtlpReceiver

    with OtlpReceiver() as receiver:
        code, out, err = cli("report", results_file, "--otel-endpoint", receiver.endpoint)
        assert code == 0, err
    spans = receiver.spans()
    assert f"sent {len(spans)} span(s) over OTLP" in out
    names = [s["name"] for s in spans]
    # a trace per trial: book-flight has two
    assert names.count("invoke_agent openai:m") == 5 and names.count("chat openai:m") == 8
    assert names.count("execute_tool search_flights") == 2 and names.count("execute_tool get_price") == 2

    def attributes(span: dict) -> dict:
        return {a["key"]: next(iter(a["value"].values())) for a in span.get("attributes", [])}

    roots = {attributes(s)["convoeval.test_id"]: s for s in spans if s["name"].startswith("invoke_agent")}
    japan = attributes(roots["japan-trip"])
    assert japan["gen_ai.conversation.id"] == "travel/japan-trip/openai:m"
    assert japan["convoeval.verdict"] == "pass" and japan["convoeval.score"] == 1.0
    assert japan["convoeval.conversation.verdict"] == "pass"
    turns = [s for s in spans if s.get("parentSpanId") == roots["japan-trip"]["spanId"]]
    assert [attributes(s)["convoeval.turn"] for s in turns] == ["1", "2"]  # OTLP JSON writes ints as text
    second = attributes(turns[1])
    # each turn's tokens on its model call, where the GenAI conventions put them
    entries = {e["name"]: e for e in {r["test_id"]: r for r in read_jsonl(results_file)}["japan-trip"]["scores"]}
    for n, turn in enumerate(turns, start=1):
        usage = entries[f"turn-{n}"]["token_usage"]
        assert usage["input_tokens"] > 0
        assert attributes(turn)["gen_ai.usage.input_tokens"] == str(usage["input_tokens"])
        assert attributes(turn)["gen_ai.usage.output_tokens"] == str(usage["output_tokens"])
        # the model and its provider, not convoeval's target spec `openai:m`
        assert (attributes(turn)["gen_ai.request.model"], attributes(turn)["gen_ai.provider.name"]) == ("m", "openai")
    flights = [attributes(s) for s in spans if s["name"] == "invoke_agent openai:m"]
    flights = [a for a in flights if a["convoeval.test_id"] == "book-flight"]
    assert sorted((a["convoeval.trial"], a["convoeval.verdict"]) for a in flights) == [("1", "fail"), ("2", "pass")]
    assert json.loads(second["gen_ai.output.messages"])[0]["parts"][0]["content"].startswith("Kyoto <script>")
    assert second["convoeval.turn.verdict"] == "pass"
    tool = next(s for s in spans if s["name"] == "execute_tool get_price")
    assert tool["status"]["code"] == "STATUS_CODE_ERROR" and attributes(tool)["gen_ai.tool.name"] == "get_price"

    receiver.write_jsonl(tmp_path / "spans.jsonl")
    back = {t["id"]: t for t in import_dataset("otel", tmp_path / "spans.jsonl")["tests"]}
    original = {r["test_id"]: r for r in read_jsonl(results_file)}
    assert _said(back["travel-japan-trip-openai:m"]["transcript"]) == _said(original["japan-trip"]["output"])
    flight = back["agents-book-flight-openai:m-2"]["transcript"]
    calls = [c["name"] for m in flight for c in m.get("tool_calls", [])]
    assert sorted(calls) == ["get_price", "search_flights"]


def test_otel_needs_something_to_do(cli, results_file: Path) -> None:
    code, _, err = cli("report", results_file)
    assert code == 2 and "--inspect-log run.eval and/or --otel" in err


def test_inspect_view_serves_the_exported_log(cli, results_file: Path, tmp_path: Path) -> None:
    """`inspect view` (Inspect's own log viewer server) lists the exported log and serves it
    with its samples, as its web page asks for them."""
    pytest.importorskip("inspect_ai")
    import socket
    import time
    import urllib.parse
    import urllib.request

    assert cli("report", results_file, "--inspect-log", tmp_path / "logs" / "run.eval")[0] == 0
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    inspect_cli = Path(sys.executable).with_name("inspect")
    view = subprocess.Popen(
        [
            str(inspect_cli),
            "view",
            "start",
            "--log-dir",
            str(tmp_path / "logs"),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}/api"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                files = json.loads(urllib.request.urlopen(f"{base}/log-files", timeout=5).read())
                break
            except OSError:
                assert time.monotonic() < deadline and view.poll() is None, "inspect view did not start"
                time.sleep(0.5)
        (entry,) = files["files"]
        assert entry["name"].endswith("/run.eval") and entry["task"]
        log = json.loads(
            urllib.request.urlopen(f"{base}/logs/{urllib.parse.quote(entry['name'], safe='')}", timeout=30).read()
        )
        assert log["status"] == "success"
        assert sorted({s["id"] for s in log["samples"]}) == ["book-flight", "broken", "greeting", "japan-trip"]
    finally:
        view.terminate()
        view.wait(timeout=30)


def test_inspect_log_per_target(cli, tmp_path: Path) -> None:
    log_module = pytest.importorskip("inspect_ai.log")
    from .report_data import result

    results = write_results(
        tmp_path / "r.jsonl", [result("t1", 1.0, target="openai:a"), result("t1", 0.0, "fail", target="b")]
    )
    code, out, err = cli("report", results, "--inspect-log", tmp_path / "run.eval")
    assert code == 0, err
    assert sorted(p.name for p in tmp_path.glob("run-*.eval")) == ["run-b.eval", "run-openai-a.eval"]
    log = log_module.read_eval_log(str(tmp_path / "run-b.eval"))
    assert log.eval.model == "b" and log.samples[0].scores["convoeval"].answer == "fail"
    assert log.eval.task == "s"  # the suite, which `inspect view` lists the log by (it was "r.jsonl")


def test_inspect_log_metrics_are_the_runs(cli, tmp_path: Path) -> None:
    """The mean score leaves out tests without a score (skipped, errored), as the run's summary
    does; the pass rate counts them. Before: a skipped test counted as a 0 in the mean."""
    log_module = pytest.importorskip("inspect_ai.log")
    from .report_data import result

    skipped = result("s", None, "skip", status="skipped")
    results = write_results(tmp_path / "r.jsonl", [result("a", 1.0), result("b", 0.5, "fail"), skipped])
    code, _, err = cli("report", results, "--inspect-log", tmp_path / "run.json")
    assert code == 0, err
    metrics = log_module.read_eval_log(str(tmp_path / "run.json")).results.scores[0].metrics
    assert (metrics["mean"].value, round(metrics["pass_rate"].value, 3)) == (0.75, 0.333)


def test_otel_endpoint_down_is_a_clear_error(cli, results_file: Path, monkeypatch) -> None:
    pytest.importorskip("opentelemetry.exporter.otlp.proto.http")
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "1")
    code, _, err = cli("report", results_file, "--otel", "--otel-endpoint", f"http://127.0.0.1:{port}/v1/traces")
    assert code == 2 and "could not send spans 1-17 of 17 (is the OTLP endpoint up?)" in err


TRIALS = """\
name: trials
tests:
  - id: flaky
    input: "explode once"
    assertions: [{type: contains, value: explode}]
  - id: greedy
    budget: {turn: {tokens: 1}}
    input: "Say hello"
    assertions: [{type: contains, value: hello}]
"""


def test_inspect_log_epochs_keep_their_own_error_budget_and_tokens(cli, fake_openai, tmp_path: Path) -> None:
    """Each trial is an epoch with its own error, limit, tokens and time (read back by Inspect
    itself); before, every epoch carried the test's error, a budget was not written, tokens were
    not either, and `convoeval grade` of the log made the passing epochs errors."""
    log_module = pytest.importorskip("inspect_ai.log")
    fake_openai.faults.append(Fault(status=400, match="explode", purpose="target", times=1))
    suite = write(tmp_path / "trials.eval.yaml", TRIALS)
    cli("run", suite, "--target", "openai:m", "--trials", "3", "--concurrency", "1", "-o", tmp_path / "run.jsonl")
    results = {r["test_id"]: r for r in read_jsonl(tmp_path / "run.jsonl")}
    assert [t["execution_status"] for t in results["flaky"]["trials"]] == ["execution_error", "ok", "ok"]
    code, _, err = cli("report", tmp_path / "run.jsonl", "--inspect-log", tmp_path / "run.eval")
    assert code == 0, err
    log = log_module.read_eval_log(str(tmp_path / "run.eval"))
    samples = {(s.id, s.epoch): s for s in log.samples or []}
    assert "HTTP 400" in samples["flaky", 1].error.message
    assert samples["flaky", 2].error is None and samples["flaky", 3].error is None
    for epoch, trial in enumerate(results["greedy"]["trials"], start=1):
        sample = samples["greedy", epoch]
        assert sample.limit is not None and sample.limit.type == "token" and sample.limit.limit == 1
        assert sample.limit.reason == trial["budget_hit"] == "tokens=1 at turn 1"
        usage = sample.model_usage["openai/m"]
        counted = trial["token_usage"]
        assert (usage.input_tokens, usage.output_tokens) == (counted["input_tokens"], counted["output_tokens"])
        assert sample.total_time == pytest.approx(trial["duration_ms"] / 1000, abs=0.001)
    assert log.stats.model_usage["openai/m"].input_tokens == sum(
        r["token_usage"]["input_tokens"] for r in results.values()
    )

    # and back: the errored epoch is left out, the others keep how they ended
    code, _, err = cli("grade", tmp_path / "run.eval", "--graders", write(tmp_path / "g.yaml", "assertions: []\n"))
    assert "flaky-epoch-1 (turn 1: HTTP 400" in err
    graded = {r["test_id"]: r for r in read_jsonl(next((tmp_path / ".convoeval" / "results").glob("*.jsonl")))}
    assert {t: r["execution_status"] for t, r in graded.items()} == {
        "flaky-epoch-2": "ok",
        "flaky-epoch-3": "ok",
        **{f"greedy-epoch-{n}": "budget_exhausted" for n in (1, 2, 3)},
    }
    assert graded["greedy-epoch-1"]["budget_hit"] == "token_limit=1 (tokens=1 at turn 1)"


BROKEN = """\
name: broken
tests:
  - id: late
    mode: conversation
    turns:
      - input: "Say hello"
      - input: "now explode"
  - id: dead
    input: "explode at once"
"""


def test_otel_round_trip_keeps_how_a_conversation_ended(cli, fake_openai, tmp_path: Path) -> None:
    """A conversation whose agent run failed (`invoke_agent` status ERROR) comes back from
    `--otel` as an execution error; one that got no reply is named, not dropped in silence."""
    pytest.importorskip("opentelemetry.exporter.otlp.proto.http")
    from .otlp_receiver import OtlpReceiver

    fake_openai.faults.append(Fault(status=400, match="explode", purpose="target", times=2))
    cli("run", write(tmp_path / "broken.eval.yaml", BROKEN), "--target", "openai:m", "-o", tmp_path / "run.jsonl")
    assert {r["test_id"]: r["execution_status"] for r in read_jsonl(tmp_path / "run.jsonl")} == {
        "late": "execution_error",
        "dead": "execution_error",
    }
    with OtlpReceiver() as receiver:
        code, _, err = cli("report", tmp_path / "run.jsonl", "--otel-endpoint", receiver.endpoint)
        assert code == 0, err
        receiver.write_jsonl(tmp_path / "spans.jsonl")
    code, _, err = cli("grade", tmp_path / "spans.jsonl", "--graders", write(tmp_path / "g.yaml", "assertions: []\n"))
    assert "1 conversation(s) without a user and an assistant message left out: broken/dead/openai:m (" in err
    (graded,) = read_jsonl(next((tmp_path / ".convoeval" / "results").glob("*.jsonl")))
    assert graded["test_id"] == "broken-late-openai:m" and graded["execution_status"] == "execution_error"
    assert "the agent run failed" in graded["error"] and "HTTP 400" in graded["error"]
