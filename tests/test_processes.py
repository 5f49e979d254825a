"""`--processes N`: trials in worker processes of this machine, against loopback servers. The
same results and store contents as one process; requests in flight bounded across workers; the
budget; a killed worker; Ctrl-C/SIGTERM and --resume; what is refused."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import convoeval
from convoeval.engine import RunEvents
from convoeval.errors import ConfigError
from convoeval.run import GradedTurn
from convoeval.testing import FakeOpenAIServer

from .conftest import command_lines, read_jsonl, write
from .test_agentv_conversation_scores import SUITE as AGENTV_SUITE
from .test_agentv_conversation_scores import TARGETS as AGENTV_TARGETS
from .test_plugins import BOT, check_results, plugin_source, suite_source

#: Keys whose values are wall-clock measurements (they differ between any two runs).
TIMINGS = {"duration_ms", "latency_ms", "finished"}
WORKER = "convoeval.engine._process_worker"


def _without_timings(value: object) -> object:
    if isinstance(value, dict):
        return {k: _without_timings(v) for k, v in value.items() if k not in TIMINGS}
    if isinstance(value, list):
        return [_without_timings(v) for v in value]
    return value


def _workers_of(pid: int) -> list[int]:
    """The worker processes whose parent is `pid`."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes().decode(errors="replace")
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            if WORKER in cmdline and ppid == pid:
                found.append(int(entry.name))
    return found


@pytest.fixture
def server(tmp_path: Path) -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(latency_s=0.05) as fake:
        write(
            tmp_path / "targets.yaml",
            f"targets:\n  - {{name: bot, provider: openai, model: m, base_url: '{fake.base_url}'}}\n"
            f"  - {{name: grader, provider: openai, model: j, base_url: '{fake.base_url}'}}\n",
        )
        yield fake


def _suite(tmp_path: Path, tests: int = 8) -> Path:
    """Two-turn conversations: a rubric the judge grades, a check that passes and one that fails
    on odd tests, and a test that depends on another."""
    body = "".join(
        f"  - id: t{i}\n    mode: conversation\n" + ("    depends_on: [t0]\n" if i == 1 else "") + "    turns:\n"
        f"      - {{input: 'a{i}', assertions: [Says something useful]}}\n"
        f"      - {{input: 'b{i}', assertions: [{{type: contains, value: '{'b' if i % 2 == 0 else 'zzz'}'}}]}}\n"
        for i in range(tests)
    )
    return write(tmp_path / "s.eval.yaml", "tests:\n" + body)


def _stored(store: Path) -> tuple[list[tuple], list[tuple]]:
    """The turns and results a run store holds, without ids and timings, in a fixed order."""
    with sqlite3.connect(store) as db:
        turns = sorted(
            (*row[:7], json.dumps(_without_timings(json.loads(row[7])), sort_keys=True))
            for row in db.execute("SELECT suite, test_id, target, trial, turn, verdict, score, data FROM turns")
        )
        results = sorted(
            (*row[:3], json.dumps(_without_timings(json.loads(row[3])), sort_keys=True))
            for row in db.execute("SELECT suite, test_id, target, data FROM results")
        )
    return turns, results


def test_worker_processes_give_the_results_and_store_of_one_process(server, tmp_path: Path) -> None:
    path = _suite(tmp_path)
    common = {"target": "bot", "judge": "grader", "cache": False, "concurrency": 8}
    reports = {}
    for processes in (1, 2):
        reports[processes] = convoeval.run(
            path,
            processes=processes,
            store=tmp_path / f"runs-{processes}.sqlite",
            output=tmp_path / f"r{processes}.jsonl",
            **common,
        )
    one, two = (_without_timings(read_jsonl(tmp_path / f"r{n}.jsonl")) for n in (1, 2))
    assert sorted(two, key=lambda r: r["test_id"]) == sorted(one, key=lambda r: r["test_id"])  # type: ignore[arg-type, index]
    assert {r["verdict"] for r in one} == {"pass", "fail"}  # type: ignore[index, union-attr]
    assert _stored(tmp_path / "runs-2.sqlite") == _stored(tmp_path / "runs-1.sqlite")
    assert len(_stored(tmp_path / "runs-2.sqlite")[0]) == 16  # every graded turn was recorded
    for key in ("calls", "turns", "input_tokens", "output_tokens", "by_model", "verdicts"):
        assert reports[2].summary[key] == reports[1].summary[key], key
    assert reports[2].summary["calls"] == 24  # 16 turns and 8 rubric grades
    assert any(n.startswith("processes: 8 trial(s) in 2 worker process(es)") for n in reports[2].notes)


def test_a_judge_panel_is_rebuilt_in_the_workers(tmp_path: Path) -> None:
    with FakeOpenAIServer(latency_s=0.05) as fake:
        write(
            tmp_path / "targets.yaml",
            "targets:\n"
            + "".join(
                f"  - {{name: {name}, provider: openai, model: {model}, base_url: '{fake.base_url}'}}\n"
                for name, model in (("bot", "m"), ("grader", "j"), ("second-grader", "j2"))
            ),
        )
        path = _suite(tmp_path, tests=4)
        options = {"target": "bot", "judge": ["grader", "second-grader"], "panel_rule": "min", "cache": False}
        one = convoeval.run(path, store=False, **options)
        two = convoeval.run(path, processes=2, store=False, **options)
        assert [(r.test_id, r.verdict, r.score) for r in two.results] == [
            (r.test_id, r.verdict, r.score) for r in one.results
        ]
        rubric = two.results[0].scores[0].graders[0]
        assert [a.judge for a in rubric.panel or []] == ["grader", "second-grader"] and rubric.panel_rule == "min"
        assert {b["model"] for b in fake.judge_requests()} == {"j", "j2"}


def test_the_response_cache_is_shared_by_the_workers(server, tmp_path: Path) -> None:
    path = _suite(tmp_path)
    options = {"target": "bot", "judge": "grader", "processes": 2, "cache_dir": tmp_path / "c", "store": False}
    first = convoeval.run(path, **options)
    again = convoeval.run(path, **options)
    assert first.summary["calls"] == 24 and first.summary["cache_hits"] == 0
    assert again.summary["calls"] == 0 and again.summary["cache_hits"] == 24
    assert [r.verdict for r in again.results] == [r.verdict for r in first.results]


@pytest.mark.parametrize(("limit", "workers"), [(3, 2), (1, 1)])
def test_requests_in_flight_never_exceed_the_limit_summed_over_workers(
    server, tmp_path: Path, limit: int, workers: int
) -> None:
    path = _suite(tmp_path, tests=12)
    server.latency_s = (
        0.2 if workers > 1 else 0.02
    )  # long enough for every worker to call at once, even on a loaded machine
    report = convoeval.run(
        path, target="bot", judge="grader", processes=2, max_connections=limit, concurrency=12, cache=False, store=False
    )
    assert len(report.results) == 12 and server.max_in_flight == limit  # each worker used its whole share
    assert any(n.startswith(f"processes: 12 trial(s) in {workers} worker process(es)") for n in report.notes)
    if workers == 1:
        assert any("allows 1 request(s) at once; 1 worker process(es) used" in n for n in report.notes)


def test_a_targets_file_concurrency_is_split_too(tmp_path: Path) -> None:
    with FakeOpenAIServer(latency_s=0.3) as fake:
        write(
            tmp_path / "targets.yaml",
            f"targets:\n  - {{name: bot, provider: openai, model: m, base_url: '{fake.base_url}', concurrency: 2}}\n",
        )
        path = write(
            tmp_path / "s.eval.yaml",
            "tests:\n" + "".join(f"  - {{id: t{i}, input: 'q{i}'}}\n" for i in range(10)),
        )
        report = convoeval.run(path, target="bot", processes=3, concurrency=10, cache=False, store=False)
        assert len(report.results) == 10 and fake.max_in_flight == 2


PRICEY = "targets:\n  - {name: pricey, provider: openai, model: m, price_input_per_mtok: 1000000, price_output_per_mtok: 1000000}\n"


def test_the_budget_stops_new_trials_and_resume_finishes_them(cli, fake_openai, tmp_path: Path) -> None:
    write(tmp_path / "targets.yaml", PRICEY)
    suite = write(
        tmp_path / "s.eval.yaml",
        "tests:\n  - {id: t1, input: one}\n  - {id: t2, input: two}\n"
        "  - {id: t3, input: three, depends_on: t2}\n  - {id: t4, input: four}\n",
    )
    common = ("--target", "pricey", "--processes", "2", "-o", tmp_path / "r.jsonl")
    code, out, _ = cli("run", suite, *common, "--concurrency", "1", "--max-cost", "0.5")
    results = {r["test_id"]: r for r in read_jsonl(tmp_path / "r.jsonl")}
    assert results["t1"]["verdict"] == "pass" and code == 1  # the calls of t1 were absorbed when it returned
    for test_id in ("t2", "t3", "t4"):
        assert (results[test_id]["verdict"], results[test_id]["execution_status"]) == ("skip", "budget_exhausted")
    assert len(fake_openai.requests) == 1 and "budget reached" in out and "3 test(s) not started" in out

    code, out, _ = cli("run", "--resume", "last", "--processes", "2", "--max-cost", "1000")
    results = {r["test_id"]: r for r in read_jsonl(tmp_path / "r.jsonl")}
    assert {r["verdict"] for r in results.values()} == {"pass"} and len(results) == 4
    assert len(fake_openai.requests) == 4 and code == 0


def test_a_killed_worker_fails_its_trials_and_the_run_goes_on(tmp_path: Path) -> None:
    with FakeOpenAIServer(latency_s=0.4) as fake:
        write(
            tmp_path / "targets.yaml",
            f"targets:\n  - {{name: bot, provider: openai, model: m, base_url: '{fake.base_url}'}}\n",
        )
        path = write(
            tmp_path / "s.eval.yaml",
            "tests:\n" + "".join(f"  - {{id: t{i}, input: 'q{i}'}}\n" for i in range(12)),
        )
        killed: list[int] = []

        def kill_one() -> None:
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline and len(fake.requests) < 4:
                time.sleep(0.01)
            pids = _workers_of(os.getpid())
            if pids:
                os.kill(pids[0], signal.SIGKILL)
                killed.append(pids[0])

        killer = threading.Thread(target=kill_one)
        killer.start()
        notes: list[str] = []
        report = convoeval.run(
            path, target="bot", processes=2, concurrency=4, cache=False, store=False, on_note=notes.append
        )
        killer.join()
    assert killed, "no worker process was found to kill"
    errors = [r for r in report.results if r.execution_status == "execution_error"]
    passed = [r for r in report.results if r.verdict == "pass"]
    assert errors and passed and len(errors) + len(passed) == 12
    assert all(f"worker process {killed[0]} was killed by SIGKILL" in (r.error or "") for r in errors)
    assert any(f"worker process {killed[0]} was killed by SIGKILL" in n and "a new worker" in n for n in notes)
    assert report.exit_code == 1
    assert not _workers_of(os.getpid())  # every worker ended with the run


class _Echo:
    name = "echo"

    async def chat(self, request):  # pragma: no cover - refused before any call
        raise AssertionError

    async def aclose(self) -> None:
        pass


def test_a_python_object_target_is_refused(server, tmp_path: Path) -> None:
    path = _suite(tmp_path, tests=1)
    with pytest.raises(ConfigError, match=r"--processes 2: 'echo' is a Python object; give it as provider:model"):
        convoeval.run(path, target=_Echo(), judge="grader", processes=2, cache=False, store=False)
    assert not _workers_of(os.getpid()) and not server.requests


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("--processes", "0"), "error: --processes 0: give a number of worker processes from 1"),
        (("--processes", "two"), "error: --processes two: give a number of worker processes from 1"),
        (
            ("--processes", "2", "--backend", "ray"),
            "error: --processes 2 and the ray backend exclude each other (worker processes of this machine, "
            "or Ray tasks): choose one",
        ),
    ],
)
def test_bad_processes_options_are_one_line_errors(tmp_path: Path, args: tuple[str, ...], said: str) -> None:
    path = write(tmp_path / "s.eval.yaml", "tests:\n  - {id: t, input: hi}\n")
    done = subprocess.run(
        [sys.executable, "-m", "convoeval", "run", str(path), "--target", "scripted", *args],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
    )
    assert done.returncode == 2 and done.stderr.strip() == said, done.stderr


def test_sigterm_ends_the_workers_and_resume_finishes_the_run(tmp_path: Path) -> None:
    with FakeOpenAIServer(latency_s=0.3) as fake:
        write(
            tmp_path / "targets.yaml",
            f"targets:\n  - {{name: bot, provider: openai, model: m, base_url: '{fake.base_url}'}}\n",
        )
        path = write(
            tmp_path / "s.eval.yaml",
            "tests:\n" + "".join(f"  - {{id: t{i:02d}, input: 'q{i:02d}'}}\n" for i in range(40)),
        )
        common = [
            "--target",
            "bot",
            "--processes",
            "2",
            "--concurrency",
            "4",
            "--no-cache",
            "-o",
            str(tmp_path / "r.jsonl"),
        ]
        proc = subprocess.Popen(
            [sys.executable, "-m", "convoeval", "run", str(path), *common],
            cwd=tmp_path,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        try:
            deadline = time.monotonic() + 30  # stop once a test is stored: not by a count of requests,
            out = tmp_path / "r.jsonl"  # which on a slow machine can all be in flight with none answered
            while time.monotonic() < deadline and not (out.exists() and out.read_text().strip()):
                time.sleep(0.02)
            workers = _workers_of(proc.pid)
            assert len(workers) == 2
            proc.send_signal(signal.SIGTERM)
            _, err = proc.communicate(timeout=30)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
        assert proc.returncode == 143 and "Traceback" not in err, err
        assert not [w for w in workers if Path(f"/proc/{w}").exists()], "a worker outlived the run"
        run_id = err.rsplit("--resume ", 1)[1].split()[0]
        done_before = {r["test_id"] for r in read_jsonl(tmp_path / "r.jsonl")}
        asked_before = len(fake.requests)
        assert 0 < len(done_before) < 40
        resumed = subprocess.run(
            [sys.executable, "-m", "convoeval", "run", "--resume", run_id, "--processes", "2"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert resumed.returncode == 0, resumed.stdout + resumed.stderr
        asked_after = [json.dumps(r["messages"]) for r in fake.requests[asked_before:]]
    assert len(read_jsonl(tmp_path / "r.jsonl")) == 40
    assert not [t for t in done_before if any(f"q{t[1:]}" in m for m in asked_after)]  # never sent again
    assert not [c for c in command_lines() if WORKER in c and str(tmp_path) in c]


GRADER = """\
import json, os
pid, seen = os.getppid(), []
while pid > 1:
    seen.append(open(f"/proc/{{pid}}/cmdline", "rb").read().replace(b"\\0", b" ").decode())
    pid = int(open(f"/proc/{{pid}}/stat").read().rsplit(")", 1)[1].split()[1])
with open("{log}", "a") as log:
    log.write(json.dumps(seen) + "\\n")  # a command line may hold newlines
print(json.dumps({{"score": 1}}))
"""


def test_trials_run_in_the_worker_processes_python_callables_and_commands_too(tmp_path: Path) -> None:
    """A targets-file Python callable is loaded in each worker; a code grader's command runs there."""
    write(tmp_path / "agent.py", "import os\n\ndef reply(messages):\n    return f'pid {os.getpid()}'\n")
    write(tmp_path / "targets.yaml", "targets:\n  - {name: agent, provider: python, callable: agent.py:reply}\n")
    write(tmp_path / "grade.py", GRADER.format(log=tmp_path / "graders.log"))
    grader = f"{{type: code-grader, command: ['{sys.executable}', grade.py]}}"
    path = write(
        tmp_path / "s.eval.yaml",
        "tests:\n" + "".join(f"  - {{id: t{i}, input: 'q{i}', assertions: [{grader}]}}\n" for i in range(8)),
    )
    report = convoeval.run(path, target="agent", processes=2, concurrency=8, cache=False, store=False)
    pids = {r.output[-1].content for r in report.results}
    assert {r.verdict for r in report.results} == {"pass"}, [r.error or r.scores for r in report.results][:1]
    assert len(pids) == 2 and f"pid {os.getpid()}" not in pids
    ancestors = [json.loads(line) for line in (tmp_path / "graders.log").read_text().splitlines()]
    assert len(ancestors) == 8 and all(
        any(WORKER in c for c in line) for line in ancestors
    )  # each grader's command ran in a worker


@pytest.mark.usefixtures("clean_registry")
def test_plugins_the_driver_loaded_are_loaded_in_the_workers(cli, tmp_path: Path) -> None:
    """A suite's `plugins:` file (assertion types and graders) and a `--plugin` module found in
    the working directory, as in one process."""
    write(tmp_path / "suite" / "graders" / "mine.py", plugin_source("pk"))
    write(tmp_path / "cwd_graders.py", plugin_source("pm"))
    suite = write(tmp_path / "suite" / "s.eval.yaml", suite_source("pk", "plugins: [graders/mine.py]\n"))
    other = write(tmp_path / "other" / "m.eval.yaml", suite_source("pm"))
    targets = write(tmp_path / "targets.yaml", BOT)
    args = ("--targets", targets, "--target", "bot", "--processes", "2", "--plugin", "cwd_graders")
    code, out, err = cli("run", suite, *args, "-o", tmp_path / "r.jsonl")
    assert code == 1, out + err  # `short` fails a test
    check_results(tmp_path / "r.jsonl", "pk")
    code, out, err = cli("run", other, *args, "-o", tmp_path / "m.jsonl")
    results = read_jsonl(tmp_path / "m.jsonl")
    assert code == 1 and len(results) == 2, out + err
    check_results(tmp_path / "m.jsonl", "pm")


TOOLS_AGENT = """\
def reply(messages):
    users = sum(m["role"] == "user" for m in messages)
    return {"text": "a reply", "tool_calls": [{"name": "bash", "arguments": {"n": users}, "output": {"ok": True}}]}
"""


def test_agentv_turn_scores_and_tool_calls_are_stored_as_in_one_process(tmp_path: Path) -> None:
    """An AgentV file scores a bare turn 1.0 after it was graded (the store keeps the turn as
    graded); a target's tool calls travel with the turns."""
    (tmp_path / ".git").mkdir()
    (tmp_path / ".agentv").mkdir()
    write(tmp_path / "evals" / "agent.py", TOOLS_AGENT)
    write(
        tmp_path / "evals" / "targets.yaml",
        AGENTV_TARGETS + "  - {name: tools, provider: python, callable: agent.py:reply}\n",
    )
    path = write(tmp_path / "evals" / "s.eval.yaml", AGENTV_SUITE)
    turns: dict[int, list[object]] = {1: [], 2: []}
    for processes in (1, 2):
        convoeval.run(
            path,
            target=["bot", "tools"],
            judge="judge",
            processes=processes,
            cache=False,
            store=tmp_path / f"runs-{processes}.sqlite",
            output=tmp_path / f"r{processes}.jsonl",
            events=_TurnsSeen(turns[processes]),
        )
    one, two = (_without_timings(read_jsonl(tmp_path / f"r{n}.jsonl")) for n in (1, 2))
    key = lambda r: (r["test_id"], r["target"])  # noqa: E731
    assert sorted(two, key=key) == sorted(one, key=key)  # type: ignore[arg-type]
    assert _stored(tmp_path / "runs-2.sqlite") == _stored(tmp_path / "runs-1.sqlite")
    assert sorted(map(repr, turns[2])) == sorted(map(repr, turns[1])) and turns[1]
    bare = next(r for r in one if r["test_id"] == "bare-turn" and r["target"] == "bot")  # type: ignore[index]
    assert [e["verdict"] for e in bare["scores"] if e["type"] == "turn"] == ["pass", "fail"]  # type: ignore[index]
    stored = {(t[1], t[2], t[4]): t[5] for t in _stored(tmp_path / "runs-2.sqlite")[0]}
    assert stored[("bare-turn", "bot", 1)] == "skip"  # as graded, before AgentV scored it 1.0
    assert any(seen[5] == [("bash", {"n": 1}, {"ok": True})] for seen in turns[2])  # type: ignore[index]


class _TurnsSeen(RunEvents):
    """Each graded turn a run tells, as plain values."""

    def __init__(self, seen: list[object]):
        self.seen = seen

    def turn(self, turn: GradedTurn) -> None:
        reply = turn.reply
        calls = [(c.name, c.arguments, c.output) for c in reply.tool_calls]
        entry = _without_timings(json.loads(turn.entry.model_dump_json()))
        self.seen.append((turn.position, turn.trial, turn.number, entry, reply.text, calls, reply.usage))


def test_a_requests_per_minute_limit_is_split_too(tmp_path: Path) -> None:
    """rpm 120 (2 a second, bursts of 2) over 2 workers: 1 a second each, never 2 each."""
    with FakeOpenAIServer() as fake:
        write(
            tmp_path / "targets.yaml",
            f"targets:\n  - {{name: bot, provider: openai, model: m, base_url: '{fake.base_url}', rpm: 120}}\n",
        )
        path = write(
            tmp_path / "s.eval.yaml", "tests:\n" + "".join(f"  - {{id: t{i}, input: 'q{i}'}}\n" for i in range(6))
        )
        started = time.monotonic()
        report = convoeval.run(path, target="bot", processes=2, concurrency=6, cache=False, store=False)
        took = time.monotonic() - started
    assert len(report.results) == 6 and {r.verdict for r in report.results} == {"pass"}
    assert took >= 1.9, took  # 2 at once, then 4 more at 2 a second (a full rpm per worker: 0.5 s)


def _alive(pid: int) -> bool:
    """`pid` runs (a zombie, waiting to be reaped by whoever adopted it, does not)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_ending_a_worker_kills_the_commands_no_list_holds_yet() -> None:
    """`kill_children`, which a worker runs when its driver dies: a command whose start has not
    returned yet is in no list of commands to kill (one outlived its worker under load); every
    child is killed, with the process group it leads (the command's own children)."""
    mark = f"{8000 + os.getpid() % 1000}.{time.time_ns() % 1000}"
    code = (
        "import pathlib, subprocess, time\n"
        "from convoeval import _sandbox\n"
        f"child = subprocess.Popen(['sh', '-c', 'sleep {mark} & wait'], start_new_session=True)\n"
        "def started():\n"
        "    for cmdline in pathlib.Path('/proc').glob('[0-9]*/cmdline'):\n"
        "        try:\n"
        f"            if cmdline.read_bytes().startswith(b'sleep\\0{mark}'):\n"
        "                return True\n"
        "        except OSError:\n"
        "            pass\n"
        "    return False\n"
        "deadline = time.monotonic() + 20\n"
        "while time.monotonic() < deadline and not started():\n"
        "    time.sleep(0.02)\n"
        "_sandbox.kill_children()\n"
        "child.wait()\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    time.sleep(0.1)
    assert not [c for c in command_lines() if f"sleep {mark}" in c], "the command's own child outlived it"


def test_when_the_command_dies_its_workers_and_their_commands_end(tmp_path: Path) -> None:
    """SIGKILL of `convoeval run` (nothing of it can react): each worker gets SIGTERM from the
    kernel, kills its agents' commands (unsandboxed here, in their own process groups), removes
    their scratch folders (each holds a prompt) and exits."""
    mark = f"{7000 + os.getpid() % 1000}.{time.time_ns() % 1000}"
    temp = tmp_path / "temp"
    temp.mkdir()
    write(tmp_path / "bot.sh", f'sleep {mark}\necho "ok $1"\n')
    write(
        tmp_path / "targets.yaml",
        f"targets:\n  - name: bot\n    provider: cli\n    command: sh {tmp_path}/bot.sh {{PROMPT}}\n",
    )
    path = write(tmp_path / "s.eval.yaml", "tests:\n" + "".join(f"  - {{id: t{i}, input: q{i}}}\n" for i in range(4)))
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "convoeval",
            "run",
            str(path),
            "--target",
            "bot",
            "--processes",
            "2",
            "--sandbox",
            "none",
        ],
        cwd=tmp_path,
        env={**os.environ, "TMPDIR": str(temp)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and sum(f"sleep {mark}" in c for c in command_lines()) < 2:
            time.sleep(0.05)
        workers = _workers_of(proc.pid)
        assert len(workers) == 2 and sum(f"sleep {mark}" in c for c in command_lines()) >= 2
        proc.kill()
        proc.wait()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and (
            any(_alive(w) for w in workers) or any(f"sleep {mark}" in c for c in command_lines())
        ):
            time.sleep(0.05)
        assert not [w for w in workers if _alive(w)], "a worker outlived the command"
        assert not [c for c in command_lines() if f"sleep {mark}" in c], "an agent's command outlived the command"
        assert not list(temp.glob("convoeval-cli-*")), "a turn's scratch folder outlived its worker"
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
