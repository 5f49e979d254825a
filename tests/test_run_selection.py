"""Picking tests (issue 18) through the CLI against the loopback fake: --test-id globs, --tag,
--limit, --shard (shards partition a suite, dependency groups stay whole), CONVOEVAL_* variables,
and the exit codes CI tells apart."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from convoeval.testing import FakeOpenAIServer, Fault

from .conftest import read_jsonl, write

SUITE = """\
tags: [smoke]
tests:
  - {id: book-flight, input: 'book a flight', tags: [booking]}
  - {id: book-hotel, input: 'book a hotel', tags: [booking, slow]}
  - {id: cancel, input: 'cancel it', depends_on: [book-hotel]}
  - {id: refund, input: 'refund me'}
  - {id: greet, input: 'hello'}
"""


def ran(path: Path) -> list[str]:
    return [r["test_id"] for r in read_jsonl(path)]


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    return write(tmp_path / "s.eval.yaml", SUITE)


def test_test_id_globs_tags_and_limit(cli, fake_openai: FakeOpenAIServer, suite: Path, tmp_path: Path) -> None:
    code, out, err = cli(
        "run", suite, "-t", "openai:m", "-o", "r.jsonl", "-q", "--test-id", "book-*", "--test-id", "greet"
    )
    assert code == 0, out + err
    assert ran(tmp_path / "r.jsonl") == ["book-flight", "book-hotel", "greet"]
    assert sorted(r["messages"][-1]["content"] for r in fake_openai.requests) == [
        "book a flight",
        "book a hotel",
        "hello",
    ]

    code, out, err = cli("run", suite, "-t", "openai:m", "-o", "r.jsonl", "-q", "--tag", "slow")
    assert code == 0, out + err
    assert ran(tmp_path / "r.jsonl") == ["book-hotel"]
    code, out, err = cli("run", suite, "-t", "openai:m", "-o", "r.jsonl", "-q", "--tag", "smoke")  # the suite's
    assert ran(tmp_path / "r.jsonl") == ["book-flight", "book-hotel", "cancel", "refund", "greet"]

    code, out, err = cli("run", suite, "-t", "openai:m", "-o", "r.jsonl", "--test-id", "cancel")
    assert code == 0, out + err
    assert ran(tmp_path / "r.jsonl") == ["book-hotel", "cancel"]  # what it depends on runs too
    assert "also running 1 test(s) that selected tests depend on" in " ".join(out.split())

    code, out, err = cli("run", suite, "-t", "openai:m", "-o", "r.jsonl", "-q", "--limit", "2")
    assert ran(tmp_path / "r.jsonl") == ["book-flight", "book-hotel"]

    code, out, err = cli("run", suite, "-t", "openai:m", "--test-id", "nope*", "--tag", "x")
    assert code == 2 and err.strip() == "error: no test selected by --test-id nope* and --tag x"


def test_an_id_with_glob_characters_selects_its_test(cli, fake_openai: FakeOpenAIServer, tmp_path: Path) -> None:
    """tau2's telecom task ids (imported as test ids) hold `[...]`: the id as printed selects its test."""
    write(
        tmp_path / "t.eval.yaml",
        "tests:\n  - {id: 'tau2-telecom-[service_issue]airplane_mode_on[PERSONA:None]', input: hi}\n",
    )
    test_id = "tau2-telecom-[service_issue]airplane_mode_on[PERSONA:None]"
    code, out, err = cli("run", tmp_path / "t.eval.yaml", "-t", "openai:m", "-o", "r.jsonl", "-q", "--test-id", test_id)
    assert code == 0, out + err
    assert ran(tmp_path / "r.jsonl") == [test_id]


def test_shards_partition_the_suite(cli, fake_openai: FakeOpenAIServer, suite: Path, tmp_path: Path) -> None:
    shards = []
    for i in (1, 2, 3):
        code, out, err = cli("run", suite, "-t", "openai:m", "-o", f"r{i}.jsonl", "-q", "--shard", f"{i}/3")
        assert code == 0, out + err
        shards.append(ran(tmp_path / f"r{i}.jsonl"))
    assert sorted(t for shard in shards for t in shard) == sorted(
        ["book-flight", "book-hotel", "cancel", "refund", "greet"]
    )  # each test in exactly one shard
    assert any({"book-hotel", "cancel"} <= set(shard) for shard in shards)  # a dependency group stays whole
    again = []
    for i in (1, 2, 3):
        cli("run", suite, "-t", "openai:m", "-o", f"again{i}.jsonl", "-q", "--shard", f"{i}/3")
        again.append(ran(tmp_path / f"again{i}.jsonl"))
    assert again == shards  # deterministic
    code, out, err = cli("run", suite, "-t", "openai:m", "--shard", "4/3")
    assert code == 2 and "shard '4/3': give i/n with 1 <= i <= n" in err


def test_environment_variables_and_flag_precedence(
    cli, fake_openai: FakeOpenAIServer, suite: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CONVOEVAL_TARGET", "openai:from-env")
    monkeypatch.setenv("CONVOEVAL_TEST_ID", "greet")
    monkeypatch.setenv("CONVOEVAL_OUTPUT", "env.jsonl")
    code, out, err = cli("run", suite, "-q")
    assert code == 0, out + err
    assert ran(tmp_path / "env.jsonl") == ["greet"]
    assert [r["model"] for r in fake_openai.requests] == ["from-env"]
    code, out, err = cli("run", suite, "-q", "--target", "openai:from-flag", "--test-id", "refund")
    assert code == 0, out + err
    assert ran(tmp_path / "env.jsonl") == ["refund"] and fake_openai.requests[-1]["model"] == "from-flag"


def test_exit_codes(cli, fake_openai: FakeOpenAIServer, suite: Path, tmp_path: Path) -> None:
    assert cli("run", suite, "-t", "openai:m", "-q", "--test-id", "greet")[0] == 0
    failing = write(
        tmp_path / "f.eval.yaml", "tests:\n  - {id: f, input: hi, assertions: [{type: contains, value: zz}]}\n"
    )
    assert cli("run", failing, "-t", "openai:m", "-q")[0] == 1
    assert cli("run", tmp_path / "missing.eval.yaml", "-t", "openai:m", "-q")[0] == 2
    fake_openai.faults.append(Fault(status=400, times=10))
    code, out, err = cli(
        "run", suite, "-t", "openai:m", "-q", "--no-cache", "--test-id", "greet", "--test-id", "refund"
    )
    assert code == 3, out + err
    assert "3 every test had an execution error" in " ".join(cli("run", "--help")[1].split())


def test_rerun_failed_runs_exactly_the_failed_tests_as_a_new_run(
    cli, fake_openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    suite = write(
        tmp_path / "r.eval.yaml",
        """\
tests:
  - {id: ok, input: 'fine'}
  - {id: bad, input: 'flaky one', assertions: [{type: contains, value: GOOD}]}
  - {id: broken, input: 'broken one'}
  - {id: after, input: 'after bad', depends_on: [ok]}
""",
    )
    fake_openai.faults.append(Fault(status=400, match="broken one"))
    code, out, err = cli("run", suite, "-t", "openai:m", "-q", "--no-cache")
    assert code == 1, out + err
    first = out.split("run ")[1].split(":")[0]
    fake_openai.requests.clear()
    fake_openai.reply = lambda body: "GOOD " + body["messages"][-1]["content"]
    code, out, err = cli("run", "--rerun-failed", "last", "-o", "again.jsonl", "--no-cache")
    assert code == 0, out + err
    assert "running again the 2 test(s) that did not pass in run " + first in " ".join(out.split())
    assert sorted(r["messages"][-1]["content"] for r in fake_openai.requests) == ["broken one", "flaky one"]
    assert ran(tmp_path / "again.jsonl") == ["bad", "broken"]
    conn = sqlite3.connect(tmp_path / ".convoeval" / "runs.sqlite")
    rows = conn.execute("SELECT id, options FROM runs ORDER BY rowid").fetchall()
    conn.close()
    assert len(rows) == 2 and rows[0][0] == first and json.loads(rows[1][1])["rerun_of"] == first
    code, out, err = cli("run", "--rerun-failed", "last")  # a green run stays green: nothing to run, exit 0
    assert code == 0 and "has no test that did not pass: nothing to run again" in " ".join(out.split()), err


def test_dotenv_files_in_the_working_directory_and_next_to_the_suite(
    cli, fake_openai: FakeOpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = "sk-dotenv-SECRET-5678"
    names = ("CONVOEVAL_TARGET", "CONVOEVAL_TEST_ID", "OPENAI_API_KEY")
    for name in names:
        monkeypatch.setenv(name, "placeholder")  # registers a restore at teardown
        monkeypatch.delenv(name)
    write(tmp_path / ".env", "CONVOEVAL_TARGET=openai:from-dotenv\nCONVOEVAL_TEST_ID=greet\n")
    folder = tmp_path / "suites"
    write(folder / "s.eval.yaml", SUITE)
    write(folder / ".env", f"OPENAI_API_KEY={key}\nCONVOEVAL_TEST_ID=ignored-the-environment-wins\n")
    monkeypatch.setenv("CONVOEVAL_TEST_ID", "refund")  # set in the environment: wins over .env
    code, out, err = cli("run", folder / "s.eval.yaml", "-o", "r.jsonl")
    assert code == 0, out + err
    assert ran(tmp_path / "r.jsonl") == ["refund"]
    assert [r["model"] for r in fake_openai.requests] == ["from-dotenv"]
    assert fake_openai.headers[-1].get("Authorization") == f"Bearer {key}"
    assert key not in out + err and key not in (tmp_path / "r.jsonl").read_text()
