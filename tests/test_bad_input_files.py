"""Bad files where convoeval reads state or data, found by a sweep of every command (helper r4):
a run store or cache that is damaged or another program's, a number too long for Python's int,
nesting and alias bombs in the side files an AgentV suite names, out-of-range arena options.
Each is one `error:` line (or one `file:line: field:` problem) and exit 2: never a traceback or
a hang."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from .conftest import write

SUITE = "tests:\n  - id: t\n    input: hello\n    assertions: [{type: contains, value: hi}]\n"
TARGETS = "targets:\n  - {name: bot, provider: scripted, rules: [{match: hello, reply: hi}]}\n"

#: Nine levels of nine aliases: 9^9 values once expanded, from 500 bytes.
LAUGHS = "\n".join(
    ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    + [f"a{n}: &a{n} [{', '.join([f'*a{n - 1}'] * 9)}]" for n in range(1, 9)]
)
DEEP = "x: " + "[" * 3000 + "]" * 3000
#: An integer longer than Python converts from text (`sys.get_int_max_str_digits`).
BIG = "9" * 5000


def _random(path: Path) -> None:
    path.write_bytes(bytes(range(256)) * 32)


def _foreign(path: Path) -> None:
    """A SQLite file of another program, with a table of the same name as convoeval's."""
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE runs (x INTEGER)")
        conn.execute("CREATE TABLE responses (x INTEGER)")


@pytest.mark.parametrize("make", [_random, _foreign], ids=["damaged", "foreign"])
@pytest.mark.parametrize(
    "file, args",
    [
        ("runs.sqlite", ("runs", "delete", "--older-than", "1d")),
        ("runs.sqlite", ("run", "s.eval.yaml", "-t", "bot", "-q", "--resume", "last")),
        ("runs.sqlite", ("run", "s.eval.yaml", "-t", "bot", "-q", "--rerun-failed", "last")),
        ("cache.sqlite", ("cache", "stats")),
        ("cache.sqlite", ("cache", "clear")),
    ],
)
def test_a_store_or_cache_that_is_not_convoevals_is_one_line(cli, tmp_path: Path, make, file: str, args) -> None:
    """Before: a traceback (`sqlite3.DatabaseError: file is not a database`, or `no such column:
    id` for a file whose `runs` table is another program's: the store's open check passed)."""
    write(tmp_path / "s.eval.yaml", SUITE)
    write(tmp_path / "targets.yaml", TARGETS)
    (tmp_path / "state").mkdir()
    make(tmp_path / "state" / file)
    code, _, err = cli(*args, "--store", "state")
    assert code == 2
    assert err.startswith("error: cannot "), err
    assert "not convoeval's; move it away or use another --store" in err
    assert err.count("\n") == 1


@pytest.mark.parametrize(
    "args, name, text",
    [
        (("report", "r.jsonl", "--html", "o.html"), "r.jsonl", f'{{"test_id": "t", "score": {BIG}}}\n'),
        (("report", "r.json", "--html", "o.html"), "r.json", f"[\n{BIG}]"),
        (("report", "r.json", "--html", "o.html"), "r.json", "[" * 100_000 + "]" * 100_000),
        (("agreement", "--votes", "v.json"), "v.json", f"[\n{BIG}]"),
        (("agreement", "--votes", "v.json"), "v.json", "[" * 100_000 + "]" * 100_000),
        (("arena", "--battles", "b.jsonl"), "b.jsonl", f'{{"model_a": {BIG}}}\n'),
    ],
)
def test_a_number_too_long_or_nesting_too_deep_in_a_json_file(cli, tmp_path: Path, args, name: str, text: str) -> None:
    """Before: `ValueError: Exceeds the limit (4300 digits) for integer string conversion` or a
    RecursionError traceback (the `.json` readers called `json.loads` without the JSONL reader's
    guards); now `file:line: invalid JSON: ...`."""
    write(tmp_path / name, text)
    code, _, err = cli(*args)
    assert code == 2
    line = 2 if text.startswith("[\n") else 1
    assert err.startswith(f"error: {name}:{line}: invalid JSON: "), err
    assert "integer of more than 4300 digits" in err or "nested more than 100 levels deep" in err
    assert err.count("\n") == 1


@pytest.mark.parametrize("body", [LAUGHS, DEEP], ids=["alias-bomb", "deep"])
@pytest.mark.parametrize(
    "suite, field",
    [
        (
            "environment: file://side.yaml\ntests:\n  - id: t\n    vars: {input: hi}\n    assert: [Says hi]\n",
            "environment",
        ),
        ("workspace: ./side.yaml\ntests:\n  - id: t\n    input: hi\n    assertions: [Says hi]\n", "workspace"),
        (
            "default_test: file://side.yaml\ntests:\n  - id: t\n    vars: {input: hi}\n    assert: [Says hi]\n",
            "default_test",
        ),
        (
            "tests:\n  - id: t\n    vars: {input: hi}\n    assert:\n      - include: ./side.yaml\n",
            "tests[0].assertions[0]",
        ),
    ],
    ids=["environment", "workspace", "default_test", "template"],
)
def test_a_side_file_an_agentv_suite_names_is_read_within_limits(
    cli, tmp_path: Path, suite: str, field: str, body: str
) -> None:
    """Before: an alias bomb in an environment recipe hung `validate` (its variables were
    substituted over 387 million values), and deep nesting in any of these files was a
    RecursionError traceback (they were read with `yaml.safe_load` alone)."""
    write(tmp_path / "s.eval.yaml", suite)
    write(tmp_path / "side.yaml", body)
    code, _, err = cli("validate", "s.eval.yaml")
    assert code == 2
    problem = "levels deep" if body is DEEP else "once its YAML aliases are expanded"
    lines = err.splitlines()
    assert any(
        line.startswith("s.eval.yaml:") and f": {field}: cannot read" in line and problem in line for line in lines
    ), err


def test_a_graders_file_nested_too_deep_is_one_line(cli, tmp_path: Path) -> None:
    """Before: `grade --graders` read its YAML with `yaml.safe_load` alone: a RecursionError traceback."""
    write(
        tmp_path / "t.jsonl",
        '{"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hi"}]}\n',
    )
    write(tmp_path / "g.yaml", "turn_assertions: " + "[" * 3000 + "]" * 3000 + "\n")
    code, _, err = cli("grade", "t.jsonl", "--graders", "g.yaml", "-q", "--store", "state")
    assert (code, err) == (2, "error: g.yaml: nested more than 100 levels deep\n")


@pytest.mark.parametrize("option", [("--k", "nan"), ("--k", "-5"), ("--k", "inf"), ("--bootstrap", "99999999999")])
def test_arena_options_out_of_range_are_refused(cli, tmp_path: Path, option: tuple[str, str]) -> None:
    """Before: `--k nan` printed Elo `nan`, `--k -5` ranked the loser first, and a huge
    `--bootstrap` was a numpy MemoryError traceback."""
    write(tmp_path / "b.jsonl", '{"model_a": "x", "model_b": "y", "winner": "model_a"}\n')
    code, _, err = cli("arena", "--battles", "b.jsonl", *option)
    assert code == 2
    assert f"Invalid value for '{option[0]}'" in err


@pytest.mark.parametrize("how", ["option", "suite"])
def test_a_plugin_that_calls_sys_exit_is_a_failed_import(cli, tmp_path: Path, how: str, clean_registry) -> None:
    """Before: `validate --plugin p.py` (or a suite's `plugins: [p.py]`) whose import calls
    `sys.exit(0)` exited 0 having validated nothing, silently: a CI gate passed."""
    write(tmp_path / "exits.py", "import sys\nsys.exit(0)\n")
    plugins = "plugins: [exits.py]\n" if how == "suite" else ""
    write(tmp_path / "s.eval.yaml", plugins + SUITE)
    code, _, err = cli("validate", "s.eval.yaml", *(["--plugin", "exits.py"] if how == "option" else []))
    assert code == 2
    assert "exits.py' failed to import: it called sys.exit(0)" in err


@pytest.mark.parametrize(
    "make, said",
    [
        (lambda p: p.mkdir(), "a folder, not a targets file; give the file (its targets.yaml)"),
        (lambda p: p.symlink_to(p.name), "a symbolic link loop, or one to nothing"),
        (lambda p: os.mkfifo(p), "not a regular file (a device, a pipe or a socket)"),
    ],
    ids=["folder", "loop", "fifo"],
)
@pytest.mark.parametrize("command", ["validate", "run"])
def test_a_targets_file_next_to_the_suite_that_is_no_file_is_said(
    cli, tmp_path: Path, make, said: str, command
) -> None:
    """Before: it was left out silently: `run -t bot` said "bot is neither provider:model nor a
    name from a targets file (names defined: none); define it in targets.yaml", `validate` passed."""
    write(tmp_path / "s.eval.yaml", "execution: {target: bot}\n" + SUITE)
    make(tmp_path / "targets.yaml")
    code, _, err = cli(command, "s.eval.yaml", *(["-t", "bot", "-q"] if command == "run" else []))
    assert (code, err) == (2, f"{tmp_path / 'targets.yaml'}:1: (file): {said}\n")
    if command == "run":  # given with --targets
        code, _, err = cli("run", "s.eval.yaml", "-t", "bot", "-q", "--targets", "targets.yaml")
        assert code == 2 and err.startswith("error: targets file targets.yaml"), err


def test_a_python_file_given_as_an_eval_file_says_what_it_is(cli, tmp_path: Path) -> None:
    """Before: it was parsed as YAML: "an eval file is a mapping with a `tests` list", or a YAML
    syntax error in the middle of the Python."""
    write(tmp_path / "my_eval.py", "import convoeval\n\nTESTS = [1]\n")
    code, _, err = cli("validate", "my_eval.py")
    assert code == 2
    assert err.startswith("my_eval.py:1: (file): a Python file, not an eval file"), err


def test_a_lone_surrogate_in_a_reply_or_a_results_file_is_written_as_u_fffd(cli, fake_openai, tmp_path: Path) -> None:
    """A server may answer a JSON `\\ud800` escape (valid JSON, a lone surrogate once decoded),
    and a results file may hold one. Before: the run ended in a PydanticSerializationError
    traceback with an empty results file; `report` of such a file was a UnicodeEncodeError traceback."""
    fake_openai.reset(reply=lambda body: "hi \ud800 there")
    write(tmp_path / "s.eval.yaml", SUITE)
    code, _, err = cli("run", "s.eval.yaml", "-t", "openai:m", "-q", "-o", "o.jsonl", "--store", "state")
    assert code == 0, err
    line = (tmp_path / "o.jsonl").read_text(encoding="utf-8")
    assert "hi \ufffd there" in line
    write(tmp_path / "r.jsonl", line.replace("hi \ufffd there", "hi \\ud800 there"))
    code, _, err = cli("report", "r.jsonl", "--html", "r.html", "--junit", "r.xml", "--markdown", "r.md")
    assert code == 0, err
    assert "hi \ufffd there" in (tmp_path / "r.html").read_text(encoding="utf-8")


def test_a_value_too_long_to_read_is_named_shortly(cli, tmp_path: Path) -> None:
    """Before: the problem line quoted the whole value (here 5000 digits) and Python's advice to
    call `sys.set_int_max_str_digits()`, all of it."""
    write(tmp_path / "s.eval.yaml", f"tests:\n  - id: a\n    input: hi\n    metadata: {{n: {BIG}}}\n")
    code, out, err = cli("validate", "s.eval.yaml")
    assert code == 2
    (line,) = (out + err).splitlines()
    assert line.startswith("s.eval.yaml:4: tests[0].metadata.n: invalid value '999") and len(line) < 300, line
