"""What a newcomer meets in a first run: where the results go, what the terminal shows, and the
errors of the usual first mistakes (each case failed on the code before it)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import convoeval
from convoeval.arena import ArenaOptions
from convoeval.errors import ConfigError
from convoeval.report import list_runs

from .conftest import write

SUITE = """\
tests:
  - id: where-is-my-order-with-a-long-test-id
    input: Where is my order?
    assertions:
      - {type: icontains-any, name: acknowledges the order, value: [order, delivery]}
      - {type: contains, value: "4512"}
"""


def test_two_runs_in_the_same_second_write_two_results_files(cli, fake_openai, tmp_path: Path) -> None:
    """The default results file was named to the second: a second run overwrote the first's."""
    fake_openai.reset(reply=lambda body: "Your order ships today.")
    first = write(tmp_path / "a.eval.yaml", "tests:\n  - {id: a, input: one}\n")
    second = write(tmp_path / "b.eval.yaml", "tests:\n  - {id: b, input: two}\n")
    for suite in (first, second):
        code, _, _ = cli("run", suite, "--target", "openai:gpt-4o-mini", "--no-cache")
        assert code == 0
    files = sorted((tmp_path / ".convoeval" / "results").glob("results-*.jsonl"))
    assert len(files) == 2 and all(re.fullmatch(r"results-\d{8}-\d{6}-[0-9a-f]{6}\.jsonl", f.name) for f in files)
    assert sorted(json.loads(f.read_text())["test_id"] for f in files) == ["a", "b"]


def test_the_turn_table_names_each_check_once_and_says_why_it_failed(
    cli, fake_openai, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each assertion of a check was a line of its own (three crosses for one failed check), with
    no check name and no evidence; and at 80 columns the test id was cut."""
    fake_openai.reset(reply=lambda body: "Your order ships today.")
    monkeypatch.setenv("COLUMNS", "80")
    code, out, _ = cli("run", write(tmp_path / "s.eval.yaml", SUITE), "--target", "openai:gpt-4o-mini", "--no-cache")
    assert code == 1
    assert "│ ✓ acknowledges the order 1.00" in out and "│    ✗ contains 'delivery' (ignoring case)" in out
    assert "│ ✗ contains '4512' (not found in 23-char reply)" in out
    assert "where-is-my-order-with-a-long-test-id" in out


def test_the_runs_table_shows_whole_cells_at_80_columns(
    cli, fake_openai, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: the run id was whole, but the date, suite, target, cost and status were `2026…`,
    `a.ev…`, `open…`, `$0.0…`, `fin…`."""
    cli("run", write(tmp_path / "a.eval.yaml", "tests:\n  - {id: a, input: one}\n"), "--target", "openai:gpt-4o-mini")
    monkeypatch.setenv("COLUMNS", "80")
    code, out, _ = cli("runs")
    run = list_runs(tmp_path / ".convoeval" / "runs.sqlite")[0]
    assert code == 0 and "…" not in out
    for cell in (
        run.id,
        run.started[:19].replace("T", " "),
        "a.eval.yaml",
        "openai:gpt-4o-mini",
        "$0.0000",
        "finished",
    ):
        assert cell in out


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b"tests:\n\t- id: a\n    input: hi\n", "(a tab on that line: YAML indents with spaces only)"),
        (
            "tests:\n  - {id: a, input: hi}\n".encode("utf-16"),
            "the file is UTF-16 (what PowerShell's `>` writes); save it as UTF-8",
        ),
    ],
)
def test_a_tab_or_a_utf16_file_is_named(cli, tmp_path: Path, raw: bytes, message: str) -> None:
    (tmp_path / "s.eval.yaml").write_bytes(raw)
    code, out, err = cli("validate", tmp_path / "s.eval.yaml")
    assert code == 2 and message in out + err


def test_option_models_raise_config_errors_as_documented() -> None:
    """They raised pydantic's ValidationError, which is no ConvoevalError."""
    with pytest.raises(ConfigError, match="run option targt: unknown option"):
        convoeval.RunOptions(targt="local")
    with pytest.raises(ConfigError, match="run option trials: Input should be greater than or equal to 1"):
        convoeval.RunOptions(trials=0)
    with pytest.raises(ConfigError, match="arena option bogus: unknown option"):
        ArenaOptions(bogus=1)


def test_promptfoos_filter_says_what_convoeval_takes(cli, tmp_path: Path) -> None:
    code, out, err = cli("run", write(tmp_path / "a.eval.yaml", "tests:\n  - {id: a, input: one}\n"), "--filter", "a")
    assert code == 2 and "--test-id" in out + err


def test_a_run_note_is_one_line_at_any_width(cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: at 80 columns (a CI log) `target: local (...); choose another with --target` was cut
    mid-sentence onto two lines, a space left at the end of the first."""
    judges = ["a-judge-whose-name-is-rather-long-number-one", "a-judge-whose-name-is-rather-long-number-two"]
    entries = "".join(f"  - {{name: {name}, provider: scripted}}\n" for name in ["bot", *judges])
    write(tmp_path / "targets.yaml", f"targets:\n{entries}judges: [{', '.join(judges)}]\n")
    suite = write(tmp_path / "s.eval.yaml", "tests:\n  - {id: a, input: hi, assertions: [Greets]}\n")
    monkeypatch.setenv("COLUMNS", "60")
    _, out, _ = cli("run", suite, "--target", "bot", "--no-cache")
    assert f"judges: {', '.join(judges)} (the targets file's judges); choose others with --judge\n" in out, out
