"""SIGTERM (how CI systems cancel a job) and Ctrl-C in every long command: real processes, real
signals. A run stops as on Ctrl-C (exit 143, no traceback, every command's process group killed,
what finished kept, `--resume` finishes it); the arena keeps the battles it paid for; the viewer
stops; files are written whole or not at all."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from convoeval.cli._write import staged
from convoeval.results import EvaluationResult
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
from .conftest import command_lines, write


def left(mark: str) -> list[str]:
    return [line for line in command_lines() if mark in line]


def kill_marked(mark: str) -> None:
    """Kill the process groups of processes whose command line holds `mark`: what a failed test
    (its convoeval killed with SIGKILL, which nothing survives to clean up after) left behind."""
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and mark.encode() in (entry / "cmdline").read_bytes():
                os.killpg(os.getpgid(int(entry.name)), signal.SIGKILL)
        except (OSError, ProcessLookupError):
            continue


def wait_for(condition: Callable[[], object], seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail("timed out waiting")
        time.sleep(0.05)


def convoeval(*args: str, cwd: Path) -> subprocess.Popen[str]:
    """`convoeval ARGS` as a real process in its own session."""
    return subprocess.Popen(
        [sys.executable, "-m", "convoeval", *args],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=default_sigint,
    )


def default_sigint() -> None:
    """In the child: SIGINT as a terminal sends it, even under a harness that started the tests
    as a background job (which inherit SIGINT ignored, and Python keeps it ignored)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.fixture
def stopped() -> Iterator[list[subprocess.Popen[str]]]:
    """Processes a test started: killed (their whole group) if the test left one running."""
    started: list[subprocess.Popen[str]] = []
    yield started
    for proc in started:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def _hanging_suite(folder: Path, mark: str) -> Path:
    """Two quick tests and two whose commands wait on a grandchild (`sleep MARK...`) until the
    file `released` exists: one in an agent CLI target, one in a workspace hook."""
    released = folder / "released"
    write(
        folder / "bot.sh",
        f'case "$1" in *slow*) [ -e {released} ] || {{ sh -c "sleep {mark}1; echo late" & wait; }} ;; esac\n'
        'echo "ok $1"\n',
    )
    write(
        folder / "targets.yaml",
        f"targets:\n  - name: bot\n    provider: cli\n    command: sh {folder}/bot.sh {{PROMPT}}\n",
    )
    hook = f"[ -e {released} ] || {{ sh -c 'sleep {mark}2' & wait; }}"
    return write(
        folder / "s.eval.yaml",
        "execution: {target: bot}\n"
        "tests:\n"
        "  - {id: quick-1, input: quick one, assertions: [{type: contains, value: ok}]}\n"
        "  - {id: quick-2, input: quick two, assertions: [{type: contains, value: ok}]}\n"
        "  - {id: slow-agent, input: slow, assertions: [{type: contains, value: ok}]}\n"
        "  - id: slow-hook\n"
        "    input: quick three\n"
        f"    workspace: {{hooks: {{before_each: {{command: {json.dumps(hook)}}}}}}}\n"
        "    assertions: [{type: contains, value: ok}]\n",
    )


@pytest.mark.parametrize("second", [None, signal.SIGINT])
def test_sigterm_stops_a_run_kills_its_commands_keeps_its_results_and_resume_finishes_it(
    tmp_path: Path, stopped: list[subprocess.Popen[str]], second: signal.Signals | None
) -> None:
    """Before: SIGTERM killed `convoeval run` at once (exit by the signal); the agent CLI's and
    the hook's grandchildren ran on (sandbox `none`). Now: exit 143 with the resume hint, no
    process left, the two finished results in the file, and `--resume` runs only the other two.
    A second signal while it stops ends it at once."""
    mark = f"{900 + uuid.uuid4().int % 90}.{uuid.uuid4().int % 1000:03d}"
    suite = _hanging_suite(tmp_path, mark)
    common = ["--store", str(tmp_path / "state"), "--sandbox", "none"]
    proc = convoeval("run", str(suite), "-o", "r.jsonl", "--concurrency", "4", *common, cwd=tmp_path)
    stopped.append(proc)
    try:
        _stop_and_resume(proc, tmp_path, mark, common, second)
    finally:
        kill_marked(f"sleep {mark}")


def _stop_and_resume(
    proc: subprocess.Popen[str], tmp_path: Path, mark: str, common: list[str], second: signal.Signals | None
) -> None:
    results = tmp_path / "r.jsonl"
    wait_for(
        lambda: (
            left(f"sleep {mark}1")
            and left(f"sleep {mark}2")
            and results.exists()
            and len(results.read_text().splitlines()) == 2
        )
    )
    os.kill(proc.pid, signal.SIGTERM)
    if second is not None:
        time.sleep(0.01)
        os.kill(proc.pid, second)
    _, err = proc.communicate(timeout=30)
    # the first signal handled decides (Python handles signals pending together in number order)
    said = "interrupted" if second is not None and proc.returncode == 130 else "terminated (SIGTERM)"
    assert proc.returncode == (130 if said == "interrupted" else 143), err
    assert "Traceback" not in err
    assert f"{said}; finish the run with: convoeval run --resume " in err, err
    run_id = err.rsplit("--resume ", 1)[1].split()[0]
    wait_for(lambda: not left(f"sleep {mark}"), 5)  # killed at once; the kernel reaps a moment later
    done = [EvaluationResult.model_validate_json(line) for line in results.read_text().splitlines()]
    assert sorted(r.test_id for r in done) == ["quick-1", "quick-2"]

    assert _status(run_id, tmp_path, common) == "interrupted"  # before: `running`, with no process
    (tmp_path / "released").touch()
    resumed = subprocess.run(
        [sys.executable, "-m", "convoeval", "run", "--resume", run_id, *common],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert resumed.returncode == 0, resumed.stderr
    assert "2 of 4 result(s) already stored" in resumed.stdout + resumed.stderr
    assert "done slow-agent" in resumed.stdout and "done slow-hook" in resumed.stdout
    assert "done quick-1" not in resumed.stdout
    final = [EvaluationResult.model_validate_json(line) for line in results.read_text().splitlines()]
    assert sorted(r.test_id for r in final) == ["quick-1", "quick-2", "slow-agent", "slow-hook"]
    assert all(r.verdict == "pass" for r in final)
    assert _status(run_id, tmp_path, common) == "finished"


def _status(run_id: str, cwd: Path, common: list[str]) -> str:
    """The run's status as `convoeval runs --json` lists it."""
    listed = subprocess.run(
        [sys.executable, "-m", "convoeval", "runs", "--json", *common[:2]], cwd=cwd, capture_output=True, text=True
    )
    assert listed.returncode == 0, listed.stderr
    return next(r["status"] for r in json.loads(listed.stdout)["runs"] if r["id"] == run_id)


@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGINT])
def test_an_interrupted_arena_keeps_the_battles_it_paid_for(
    desk: Path, judge_server: FakeOpenAIServer, tmp_path: Path, stopped: list[subprocess.Popen[str]], how: int
) -> None:
    """Before: Ctrl-C printed `interrupted` and dropped every judged battle; SIGTERM killed the
    arena at once. Now the battles judged so far are written to -o, and the same command again
    asks the judge only for the pairs it had not answered (the rest come from the cache)."""
    release = threading.Event()

    def decide(body: dict[str, object]) -> str:
        if which_test(body) == "address":
            release.wait(60)
        return fair_winner(body)

    judge_server.judge = pairwise_judge(decide)
    args = ["arena", str(desk), "-t", "polite", "-t", "middle", "-t", "terse", "--judge", "judge"]
    args += ["--bootstrap", "0", "-o", "battles.jsonl"]
    proc = convoeval(*args, cwd=tmp_path)
    stopped.append(proc)
    try:
        pairwise = lambda: [r for r in judge_server.requests if is_pairwise(r)]  # noqa: E731
        wait_for(lambda: len(pairwise()) == 18)  # 9 pairs, both orders; the 6 about `address` held
        time.sleep(0.5)  # the 12 answered ones judged
        os.kill(proc.pid, how)
        _, err = proc.communicate(timeout=30)
    finally:
        release.set()
    assert proc.returncode == 128 + how, err
    assert "Traceback" not in err
    assert ("terminated (SIGTERM)" if how == signal.SIGTERM else "interrupted") in err
    assert "6 battle(s) judged before the interrupt written to battles.jsonl" in err, err
    battles = [json.loads(line) for line in (tmp_path / "battles.jsonl").read_text().splitlines()]
    assert len(battles) == 6 and {b["test_id"] for b in battles} == {"late-order", "refund"}
    assert all(b["judge"] == "judge" and b["winner"] in ("model_a", "model_b", "tie") for b in battles)

    judge_server.reset(judge=pairwise_judge())
    again = subprocess.run(
        [sys.executable, "-m", "convoeval", *args], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert again.returncode == 0, again.stderr
    asked = [r for r in judge_server.requests if is_pairwise(r)]
    assert len(asked) == 6 and {which_test(r) for r in asked} == {"address"}
    assert len((tmp_path / "battles.jsonl").read_text().splitlines()) == 9


@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGINT])
def test_the_viewer_stops_on_sigterm_and_ctrl_c(tmp_path: Path, stopped: list[subprocess.Popen[str]], how: int) -> None:
    """Before: SIGTERM killed it by the signal, Ctrl-C exited 0. Now 143 / 130, no traceback."""
    proc = convoeval("view", "--port", "0", "--store", str(tmp_path / "state"), cwd=tmp_path)
    stopped.append(proc)
    assert proc.stdout is not None
    assert "convoeval viewer on http://127.0.0.1:" in proc.stdout.readline()
    os.kill(proc.pid, how)
    _, err = proc.communicate(timeout=30)
    assert (proc.returncode, err) == (128 + how, "")


@pytest.mark.parametrize("stop", [KeyboardInterrupt, OSError])
def test_a_staged_file_appears_whole_or_not_at_all(tmp_path: Path, stop: type[BaseException]) -> None:
    """What `report`, `compare --html`, `import`, `arena -o/--plot` write: an interrupt (or a
    full disk) in the middle leaves the file as it was, and no temporary file behind."""
    target = tmp_path / "out" / "report.html"
    target.parent.mkdir()
    target.write_text("the old report")
    with pytest.raises(stop), staged(target) as partial:
        partial.write_text("half of the new")
        raise stop()
    assert target.read_text() == "the old report" and os.listdir(target.parent) == ["report.html"]
    with staged(target) as partial:
        partial.write_text("the new report")
        (partial.parent / "report-b.html").write_text("a sibling")  # a writer may add siblings
    assert target.read_text() == "the new report" and (target.parent / "report-b.html").read_text() == "a sibling"
    assert sorted(os.listdir(target.parent)) == ["report-b.html", "report.html"]
