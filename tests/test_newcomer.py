"""What a newcomer trips on (issue 31): each item as it is used, through the real CLI."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from convoeval.cli import with_optional_values
from convoeval.engine._owner import Owner, process_start
from convoeval.results import TrialResult
from convoeval.run._scheduler import combined_outcome
from convoeval.run._simulator import role_break
from convoeval.spec import load_suite
from convoeval.testing import FakeOpenAIServer

from .conftest import REPO, read_jsonl, write


def _convoeval(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "convoeval", *args],
        cwd=cwd,
        env={**os.environ, "COLUMNS": "200", **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )


def test_rerun_failed_and_resume_take_last_when_written_bare(tmp_path: Path) -> None:
    airline = REPO / "examples" / "airline"
    first = _convoeval(
        "run",
        str(airline / "live.eval.yaml"),
        "--target",
        "careful-agent",
        "--target",
        "careless-agent",
        "-o",
        "first.jsonl",
        cwd=tmp_path,
    )
    assert first.returncode == 1, first.stderr  # the careless agent fails
    failed = {r["target"] for r in read_jsonl(tmp_path / "first.jsonl") if r["verdict"] != "pass"}
    assert failed == {"careless-agent"}
    again = _convoeval("run", "--rerun-failed", "--target", "careless-agent", "-o", "again.jsonl", cwd=tmp_path)
    assert "no run" not in again.stderr and again.returncode == 1, again.stderr
    assert {r["target"] for r in read_jsonl(tmp_path / "again.jsonl")} == {"careless-agent"}
    assert with_optional_values(["run", "--rerun-failed"]) == ["run", "--rerun-failed", "last"]
    assert with_optional_values(["run", "--rerun-failed", "abc", "-q"]) == ["run", "--rerun-failed", "abc", "-q"]
    assert with_optional_values(["run", "--resume", "-q"]) == ["run", "--resume", "last", "-q"]


def test_verify_is_a_command_written_as_a_string(tmp_path: Path) -> None:
    suite = write(
        tmp_path / "s.eval.yaml",
        "tests:\n  - id: t\n    mode: conversation\n    workspace: {}\n    verify: python3 test_calc.py\n"
        "    turns:\n      - input: fix it\n",
    )
    done = _convoeval("validate", str(suite), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    [test] = load_suite(suite).tests
    assert test.verify is not None and test.verify.command == "python3 test_calc.py"


def test_a_killed_owner_is_gone_before_its_parent_reaps_it() -> None:
    child = subprocess.Popen(["sleep", "30"])
    owner = Owner(child.pid, os.uname().nodename, process_start(child.pid))
    assert owner.state() == "alive"
    os.kill(child.pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while owner.state() != "gone" and time.monotonic() < deadline:
        time.sleep(0.01)
    try:
        assert owner.state() == "gone"  # a zombie: killed, not yet waited for
        assert Path(f"/proc/{child.pid}").exists()
    finally:
        child.wait()


def test_a_short_hidden_fact_is_checked_for_leaks_as_a_whole_token() -> None:
    knowledge = {"seat": "42", "booking_code": "B7"}
    assert (
        role_break("My booking code is B7.", [], knowledge) == "revealed 'booking_code' before the agent asked for it"
    )
    assert role_break("Seat 42, please.", [], knowledge) == "revealed 'seat' before the agent asked for it"
    assert role_break("I flew in 1420 and row B70.", [], knowledge) is None


def test_an_unparseable_simulator_answer_is_not_cached(tmp_path: Path) -> None:
    suite = write(
        tmp_path / "s.eval.yaml",
        "tests:\n  - id: t\n    simulated_user:\n      persona: a customer\n      objective: get a refund\n"
        "      max_turns: 2\n    success: [the refund is given]\n",
    )

    def judge(body: dict) -> str:
        return "not json at all" if body["response_format"]["json_schema"]["name"] == "user_step" else "{}"

    with FakeOpenAIServer(judge=judge) as server:
        env = {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "sk-test"}
        args = ("run", str(suite), "--target", "openai:m", "--judge", "openai:j", "-o", "r.jsonl")
        first = _convoeval(*args, cwd=tmp_path, env=env)
        asked = len(server.judge_requests())
        second = _convoeval(*args, cwd=tmp_path, env=env)
    assert first.returncode == second.returncode == 3, first.stdout + first.stderr
    assert asked == 2  # the answer and one re-ask
    assert len(server.judge_requests()) == 2 * asked  # asked again: nothing unusable came from the cache


def test_a_dotenv_beside_the_suite_sets_convoeval_settings(tmp_path: Path) -> None:
    folder = tmp_path / "suite"
    for name in ("live.eval.yaml", "targets.yaml", "agent.py", "tools.py", "backend.json"):
        write(folder / name, (REPO / "examples" / "airline" / name).read_text())
    write(folder / ".env", "CONVOEVAL_THRESHOLD=0.05\n")
    done = _convoeval(
        "run", str(folder / "live.eval.yaml"), "--target", "careless-agent", "-o", "r.jsonl", cwd=tmp_path
    )
    [result] = read_jsonl(tmp_path / "r.jsonl")
    assert result["threshold"] == 0.05, done.stdout + done.stderr
    # The careless agent fails tau-reward, a required check: no threshold passes it (issue 24).
    assert done.returncode == 1 and result["failed_required"] == ["conversation: tau-reward"]


def test_run_help_names_every_results_suffix(tmp_path: Path) -> None:
    done = _convoeval("run", "--help", cwd=tmp_path)
    assert all(suffix in done.stdout for suffix in (".jsonl", ".json", ".html", ".xml", ".md")), done.stdout


def test_the_scenario_outcome_of_a_test_comes_from_all_its_trials() -> None:
    def trials(*outcomes: str) -> list[TrialResult]:
        return [
            TrialResult(
                trial=i,
                score=1.0 if o == "passed" else 0.0,
                verdict="pass" if o == "passed" else "fail",
                execution_status="ok" if o == "passed" else "quality_failure",
                outcome=o,
            )  # type: ignore[arg-type]
            for i, o in enumerate(outcomes)
        ]

    assert combined_outcome(trials("failed", "passed", "passed")) == "passed"
    assert combined_outcome(trials("passed", "failed", "failed")) == "failed"  # trial 0 alone said passed
    assert combined_outcome(trials("passed", "failed")) == "failed"  # a split is never a pass
    assert combined_outcome(trials()) is None


def test_init_writes_a_first_eval_file_that_validates_and_runs(
    cli, fake_openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    code, out, err = cli("init", "evals")
    first = tmp_path / "evals" / "first.eval.yaml"
    assert code == 0 and out.startswith(f"wrote evals{os.sep}first.eval.yaml\n"), err
    assert cli("validate", first)[0] == 0
    assert [t.id for t in load_suite(first).tests] == ["order-status", "capital-of-france"]
    code, out, err = cli("run", first, "--target", "openai:m", "--judge", "openai:judge", "-o", "r.jsonl", "-q")
    results = read_jsonl(tmp_path / "r.jsonl")
    assert [(r["test_id"], len(r["scores"])) for r in results] == [("order-status", 2), ("capital-of-france", 1)], err
    assert {r["verdict"] for r in results} <= {"pass", "fail"}  # graded, none an error
    code, out, err = cli("init", "evals")  # never over an existing file
    assert (code, err) == (
        2,
        f"error: {first.relative_to(tmp_path)} exists; edit it, or give another folder: convoeval init FOLDER\n",
    )
    assert cli("init", first)[1:] == ("", f"error: {first} is a file, not a folder\n")
