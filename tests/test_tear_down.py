"""What keeps a run's end short stays correct: the summary lines built at once print what rich's
own appending prints, what the summary's statistics load is loaded ahead, and the command
freezes what its run leaves instead of walking it."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

from rich.console import Console
from rich.text import Text

from convoeval.report._summary import _COLUMNS, _RIGHT, _lines, _row
from convoeval.results import EvaluationResult, ScoreEntry, Usage
from convoeval.testing import FakeOpenAIServer


def _main_in_a_process(argv: list[str], before: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """`convoeval.cli.main()` in a new Python process, after running `before`."""
    code = f"import sys\n{before}\nsys.argv = {['convoeval', *argv]!r}\nfrom convoeval.cli import main\nmain()\n"
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=cwd)


def _result(i: int) -> EvaluationResult:
    verdict = ("pass", "fail", "skip", "error")[i % 4]
    scores = [
        ScoreEntry(name=f"turn {t}", type="turn", score=None if t == 2 else t / 3, verdict=verdict)
        for t in range(1, 1 + i % 4)
    ]
    return EvaluationResult(
        test_id="id\x1b[31m-長い" if i == 3 else f"t-[{i}]",
        suite="s",
        target="openai:m",
        score=None if i % 5 == 0 else i / 40,
        verdict=verdict,
        execution_status="undecided" if i == 6 else "ok",
        outcome="conflict" if i == 7 else None,
        grader_errors=i % 3,
        threshold=0.5,
        scores=scores,
        token_usage=Usage(prompt_tokens=i, completion_tokens=2 * i),
        duration_ms=123 * i,
    )


def _appended(rows: list[list[Text]], columns: tuple[str, ...]) -> Text:
    """The aligned lines made the plain way: rich's own Text appending, cell by cell."""
    widths = [max(len(name), *(row[i].cell_len for row in rows)) for i, name in enumerate(columns)]
    text = Text("convoeval results")
    for cells in ([Text(name, style="bold") for name in columns], *rows):
        text.append("\n")
        for i, (name, cell) in enumerate(zip(columns, cells, strict=True)):
            pad = " " * (widths[i] - cell.cell_len)
            text.append("  " if i else "")
            text.append_text(Text(pad) + cell if name in _RIGHT else cell + pad)
    return text


def _on_a_terminal(text: Text) -> str:
    console = Console(file=io.StringIO(), force_terminal=True, color_system="truecolor", width=80)
    console.print(text, soft_wrap=True)
    return console.file.getvalue()  # type: ignore[attr-defined]


def test_the_summary_lines_print_what_appending_cell_by_cell_prints() -> None:
    rows = [_row(_result(i)) for i in range(40)]
    fast, plain = _lines(rows, _COLUMNS), _appended(rows, _COLUMNS)
    assert fast.plain == plain.plain
    assert _on_a_terminal(fast) == _on_a_terminal(plain)  # colours, and padding styled as before
    assert "\x1b[31mFAIL" in _on_a_terminal(fast) and "\\x1b[31m-長い" in fast.plain


def test_the_summary_statistics_are_loaded_ahead_and_load_nothing_more() -> None:
    code = (
        "import sys\n"
        "from convoeval.report._summary import prepare_rate_lines, rate_lines\n"
        "from convoeval.results import EvaluationResult\n"
        "assert 'numpy' not in sys.modules\n"
        "prepare_rate_lines()\n"
        "before = set(sys.modules)\n"
        "results = [EvaluationResult(test_id=f't{i}', suite='s', target='m', score=i % 3 / 2, "
        "verdict='pass' if i % 3 else 'fail', execution_status='ok', threshold=0.5) for i in range(60)]\n"
        "print(rate_lines(results)[0])\n"
        "print(sorted(set(sys.modules) - before))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    line, loaded = done.stdout.splitlines()
    assert line.startswith("all: pass rate 67% [") and "mean score 0.50 [" in line
    assert loaded == "[]"


def test_the_command_freezes_what_its_run_leaves_and_a_library_caller_keeps_its_collector() -> None:
    """After a run's calls the collector is enabled again; in the command (objects frozen for
    good) what the run left is frozen, so no collection walks it; a library caller's objects are
    left to the collector as before."""
    code = (
        "import asyncio, gc, sys\n"
        "from convoeval import _lazy\n"
        "from convoeval.engine._runner import _run_heap\n"
        "if sys.argv[1] == 'command':\n    _lazy.freeze_for_good()\n"
        "async def main():\n"
        "    with _run_heap():\n"
        "        assert not gc.isenabled()\n"
        "        return [[i] for i in range(20000)]\n"
        "frozen = gc.get_freeze_count()\n"
        "left = asyncio.run(main())\n"
        "print(gc.isenabled(), gc.get_freeze_count() - frozen >= 20000)\n"
    )
    for who, frozen in (("command", "True"), ("library", "False")):
        done = subprocess.run([sys.executable, "-c", code, who], capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        assert done.stdout.split() == ["True", frozen], who


def test_the_command_runs_no_collection_before_the_calls_and_collects_again_after(
    fake_openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    """`convoeval run` pauses the collector while it loads its HTTP client and suites (what it
    makes then lasts the run) and enables it once the run is planned, and after a failed start.
    (Between that and the calls the run prints its header: young objects only, a collection or
    two, so the count is taken when the collector is enabled again.)"""
    suite = tmp_path / "two.eval.yaml"
    suite.write_text("tests:\n  - id: a\n    input: hello\n  - id: b\n    input: hi\n")
    (tmp_path / "bad.eval.yaml").write_text("tests:\n  - id: one\n")
    before = (
        "import atexit, gc\n"
        "seen = []\n"
        "gc.callbacks.append(lambda phase, info: seen.append(phase) if phase == 'start' else None)\n"
        "atexit.register(lambda: print('ENABLED AT EXIT', gc.isenabled(), flush=True))\n"
        "import convoeval.cli\n"
        "plain = convoeval.cli.resume_collector\n"
        "def counted():\n"
        "    if not gc.isenabled():\n"
        "        print('COLLECTIONS WHILE PAUSED', len(seen), flush=True)\n"
        "    plain()\n"
        "convoeval.cli.resume_collector = counted\n"
        "seen.clear()\n"  # from the command's start
    )
    common = ["--target", "openai:m", "--no-cache", "--store", str(tmp_path / "state")]
    done = _main_in_a_process(["run", str(suite), *common], before, tmp_path)
    assert done.returncode == 0, done.stderr
    assert "COLLECTIONS WHILE PAUSED 0" in done.stdout and "ENABLED AT EXIT True" in done.stdout
    assert "2 result(s)" in done.stdout
    bad = _main_in_a_process(["run", "bad.eval.yaml", *common], before, tmp_path)
    assert bad.returncode == 2 and "bad.eval.yaml:2" in bad.stderr
    assert "ENABLED AT EXIT True" in bad.stdout
