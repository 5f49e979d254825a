"""What keeps start-up short stays correct: commands load on demand, lazy package attributes
resolve, secrets set between runs are still redacted, and the summary of many results is lines."""

from __future__ import annotations

import importlib
import io
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import typer.main
from rich.console import Console

from convoeval import cli
from convoeval._secrets import REDACTED, redact, reread_environment
from convoeval.report import print_summary
from convoeval.report._summary import TABLE_ROWS_UP_TO
from convoeval.results import EvaluationResult
from convoeval.testing import FakeOpenAIServer

from .conftest import write


def convoeval_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "convoeval", *args], capture_output=True, text=True, timeout=60)


def test_help_lists_every_command_and_each_command_loads_alone() -> None:
    listed = convoeval_cli("--help")
    assert listed.returncode == 0
    for name in cli.COMMANDS:
        assert f" {name} " in listed.stdout, name
    run_help = convoeval_cli("run", "--help")
    assert run_help.returncode == 0 and "--max-connections" in run_help.stdout
    unknown = convoeval_cli("nosuch")
    assert unknown.returncode == 2 and "No such command" in unknown.stderr
    peer = convoeval_cli("eval", "suite.yaml")  # AgentV's, promptfoo's and Inspect's name for it
    said = " ".join(peer.stderr.replace("│", " ").split())  # as wrapped in its box
    assert peer.returncode == 2 and "Inspect's `eval` is `convoeval run`" in said, peer.stderr
    for args, hint in (
        (("run", "s.yaml", "--model", "openai:gpt-4o"), "No such option: --model; convoeval run takes --target"),
        (("run", "-c", "promptfooconfig.yaml"), "convoeval run takes the eval files as arguments"),
        (("validate", "--config=x.yaml"), "No such option: --config; convoeval validate takes the eval files"),
        (("run", "s.yaml", "--repeat", "3"), "No such option: --repeat; convoeval run takes --trials N"),
        (("run", "s.yaml", "--epochs=3"), "No such option: --epochs; convoeval run takes --trials N"),
        (("run", "s.yaml", "--max-concurrency", "4"), "convoeval run takes --concurrency N (promptfoo's"),
        (("validate", "s.yaml", "--epochs", "3"), "No such option: --epochs"),  # validate has no --trials
    ):
        told = convoeval_cli(*args)
        assert told.returncode == 2 and hint in " ".join(told.stderr.replace("│", " ").split()), told.stderr


def test_the_command_list_gives_each_command_one_paragraph() -> None:
    """Before: `convoeval --help` broke descriptions where their docstrings break lines (rich keeps
    them): "(kappas, AC1, alpha, rho), two" then "judges over stored runs" on a line of its own."""
    import typer.main

    cli.load_commands()
    group = typer.main.get_command(cli.app)
    shown = {name: command.short_help for name, command in group.commands.items()}  # type: ignore[attr-defined]
    assert shown["agreement"] == (
        "Agreement between raters: human labels vs an LLM judge (kappas, AC1, alpha, rho), two judges over "
        "stored runs (--runs), or one judge over repeated runs (--consistency)."
    )
    assert shown["run"] == "Run eval files live against one or more targets and grade every turn."
    assert all("\n" not in (text or "") for text in shown.values()), shown  # groups (runs, cache): their help


def test_version_is_printed_without_loading_a_command() -> None:
    from convoeval._version import __version__

    shown = convoeval_cli("--version")
    assert (shown.returncode, shown.stdout, shown.stderr) == (0, f"convoeval {__version__}\n", "")
    code = (
        "import sys\n"
        "from convoeval import cli\n"
        "def exit_now(code):\n"
        "    print(sorted(m for m in sys.modules if m.startswith('convoeval.cli.')), flush=True)\n"
        "cli.exit_now = exit_now\n"
        "sys.argv = ['convoeval', '--version']\n"
        "cli.main()\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    # no command loaded; the SIGTERM handling is (a command unwinds from SIGTERM as from Ctrl-C),
    # and the standard output that outlives a closed pipe (`_pipe`)
    assert done.stdout.splitlines() == [
        f"convoeval {__version__}",
        "['convoeval.cli._app', 'convoeval.cli._pipe', 'convoeval.cli._stop']",
    ]


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_while_a_command_loads_exits_without_a_traceback(tmp_path: Path, stop: signal.Signals) -> None:
    """Ctrl-C exits 130 and SIGTERM 143, printing nothing. Before: a traceback from wherever the
    signal landed, and death by the signal. The command is held while it loads by a stand-in for
    python-dotenv (imported for the `.env` beside the suite, before the command's module), which
    says when it is reached and then waits: whatever the loader calls in it."""
    reached = tmp_path / "reached"
    write(
        tmp_path / "stand-in" / "dotenv.py",
        f"import pathlib, time\npathlib.Path({str(reached)!r}).touch()\ntime.sleep(60)\n",
    )
    write(tmp_path / ".env", "X=1\n")
    suite = write(tmp_path / "s.eval.yaml", "tests:\n  - {id: t, input: hi}\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path / "stand-in"), *sys.path])}
    process = subprocess.Popen(
        [sys.executable, "-m", "convoeval", "validate", str(suite)],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        # SIGINT as a terminal sends it, also when the tests run as a background job (SIGINT ignored)
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.monotonic() + 30
    while not reached.exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    process.send_signal(stop)
    out, err = process.communicate(timeout=30)
    assert (process.returncode, out, err) == (128 + stop, b"", b"")


def test_the_command_table_names_the_module_of_every_command() -> None:
    commands = typer.main.get_command(cli.app).commands  # type: ignore[attr-defined]
    assert sorted(commands) == sorted(cli.COMMANDS)
    for name, command in commands.items():
        module = command.callback.__module__ if command.callback else None
        if module is not None:  # `cache` is a group whose callback typer builds
            assert module == f"convoeval.cli.{cli.COMMANDS[name]}", name


@pytest.mark.parametrize(
    "package",
    [
        "convoeval.graders",
        "convoeval.judging",
        "convoeval.rank",
        "convoeval.report",
        "convoeval.spec",
        "convoeval.stats",
        "convoeval.targets.agents",
        "convoeval",
    ],
)
def test_every_exported_name_of_a_package_resolves(package: str) -> None:
    module = importlib.import_module(package)
    for name in module.__all__:
        assert getattr(module, name) is not None, f"{package}.{name}"


def test_importing_convoeval_loads_none_of_it_until_a_name_is_used() -> None:
    """`import convoeval` is cheap (the `convoeval` command starts loading its HTTP client
    before convoeval itself); each name loads its module when first used, and `dir` lists them."""
    code = (
        "import sys, convoeval\n"
        "print(sorted(m for m in sys.modules if m.startswith('convoeval')))\n"
        "assert {'run', 'Suite', 'graders', 'arena'} <= set(dir(convoeval))\n"
        "assert 'convoeval.api' not in sys.modules\n"
        "assert callable(convoeval.run) and 'convoeval.api' in sys.modules\n"
        "assert convoeval.graders.Assertion is convoeval.Assertion\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['convoeval', 'convoeval._lazy', 'convoeval._version']"


def test_run_stays_the_function_when_the_run_package_is_loaded() -> None:
    import convoeval.run  # noqa: F401  (the subpackage)

    assert callable(convoeval.run) and callable(convoeval.arena)


def test_arena_stays_the_function_when_its_package_is_imported_first() -> None:
    """`convoeval.arena` loads on first use; importing the `convoeval.arena` package before
    that (as `convoeval arena` does) still leaves the function there."""
    code = (
        "import sys, convoeval\n"
        "assert 'convoeval.arena' not in sys.modules\n"
        "from convoeval.arena import ArenaReport\n"
        "from convoeval.arena._api import arena\n"
        "assert convoeval.arena is arena and convoeval.ArenaReport is ArenaReport\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


def test_a_key_set_between_runs_is_a_secret_of_the_next(monkeypatch: pytest.MonkeyPatch) -> None:
    assert redact("late-token-value-123") == "late-token-value-123"  # known secrets now computed
    monkeypatch.setenv("LATE_API_TOKEN", "late-token-value-123")
    reread_environment()  # what every run does first
    assert redact("it said late-token-value-123") == f"it said {REDACTED}"
    monkeypatch.delenv("LATE_API_TOKEN")
    reread_environment()
    assert redact("late-token-value-123") == "late-token-value-123"


def _result(i: int, verdict: str = "pass") -> EvaluationResult:
    return EvaluationResult(
        test_id=f"t-[{i}]",
        target="openai:m",
        suite="s",
        score=1.0 if verdict == "pass" else 0.0,
        verdict=verdict,
        execution_status="ok" if verdict == "pass" else "quality_failure",
        threshold=0.8,
    )


def _printed(results: list[EvaluationResult]) -> str:
    console = Console(file=io.StringIO(), width=100, highlight=False, emoji=False)
    print_summary(results, console, turns=False)
    return console.file.getvalue()  # type: ignore[attr-defined]


def test_a_few_results_are_a_table_many_are_aligned_lines() -> None:
    few = _printed([_result(i) for i in range(3)])
    assert "┃ test" in few and "t-[0]" in few
    many = _printed([_result(i, "fail" if i == 7 else "pass") for i in range(TABLE_ROWS_UP_TO + 1)])
    lines = many.splitlines()
    assert lines[0] == "convoeval results" and lines[1].split()[:4] == ["test", "target", "score", "verdict"]
    rows = lines[2 : 2 + TABLE_ROWS_UP_TO + 1]
    assert [row.split()[0] for row in rows] == [f"t-[{i}]" for i in range(TABLE_ROWS_UP_TO + 1)]  # ids as written
    assert rows[7].split()[2:4] == ["0.00", "FAIL"]
    assert len({row.index("openai:m") for row in rows}) == 1  # the columns line up
    assert f"{TABLE_ROWS_UP_TO + 1} result(s):" in many


#: What a whole one-test run (suite loaded, one model call, graded, summary printed, results
#: and store written) does without.
NOT_IN_A_ONE_TEST_RUN = (
    "numpy",
    "convoeval.arena",
    "convoeval.rank._leaderboard",
    "convoeval.stats._gate",
    "convoeval.graders._tau_backend",
    "convoeval.report._panel",
    "convoeval.report._failures",
    "convoeval.rank._battle",
    "html.entities",
)


def test_a_one_test_run_loads_no_statistics_library_or_arena(fake_openai: FakeOpenAIServer, tmp_path: Path) -> None:
    suite = tmp_path / "one.eval.yaml"
    suite.write_text(
        "tests:\n  - id: one\n    input: hello\n    assertions:\n      - type: contains\n        value: a\n"
    )
    code = (
        "import atexit, sys\n"
        f"atexit.register(lambda: print('LOADED', *[m for m in {NOT_IN_A_ONE_TEST_RUN!r} if m in sys.modules]))\n"
        f"sys.argv = ['convoeval', 'run', {str(suite)!r}, '--target', 'openai:m', '--no-cache', "
        f"'--store', {str(tmp_path / 'state')!r}]\n"
        "from convoeval.cli import main\n"
        "main()\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert done.returncode in (0, 1), done.stderr
    assert "1 result(s)" in done.stdout and "all: pass rate" in done.stdout  # the summary was printed
    assert done.stdout.splitlines()[-1].split() == ["LOADED"]


def _main_in_a_process(argv: list[str], before: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """`convoeval.cli.main()` in a new Python process, after running `before`."""
    code = f"import sys\n{before}\nsys.argv = {['convoeval', *argv]!r}\nfrom convoeval.cli import main\nmain()\n"
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=cwd)


def test_the_command_ends_with_its_exit_code_its_atexit_handlers_run_and_its_output_written(tmp_path: Path) -> None:
    """The CLI leaves without tearing the interpreter down: the atexit handlers still run (after
    the command), the output is all there even through a pipe, and the exit code is the command's."""
    (tmp_path / "ok.eval.yaml").write_text("tests:\n  - id: one\n    input: hello\n")
    (tmp_path / "bad.eval.yaml").write_text("tests:\n  - id: one\n")
    marker = "import atexit; atexit.register(lambda: print('ATEXIT', flush=True))"
    valid = _main_in_a_process(["validate", "ok.eval.yaml"], marker, tmp_path)
    assert valid.returncode == 0, valid.stderr
    assert valid.stdout.splitlines() == ["1 file(s) valid", "ATEXIT"]
    invalid = _main_in_a_process(["validate", "bad.eval.yaml"], marker, tmp_path)
    assert invalid.returncode == 2 and "bad.eval.yaml:2" in invalid.stderr and invalid.stdout == "ATEXIT\n"
    usage = _main_in_a_process(["run", "ok.eval.yaml", "--threshold", "2"], "", tmp_path)
    assert usage.returncode == 2 and "--threshold" in usage.stderr


def test_the_command_waits_for_a_thread_that_is_not_a_daemon(tmp_path: Path) -> None:
    """A plugin's thread that is still working when the command is done finishes its work."""
    (tmp_path / "ok.eval.yaml").write_text("tests:\n  - id: one\n    input: hello\n")
    late = tmp_path / "late.txt"
    before = (
        "import threading, time\n"
        f"threading.Thread(target=lambda: (time.sleep(0.5), open({str(late)!r}, 'w').write('done'))).start()"
    )
    done = _main_in_a_process(["validate", "ok.eval.yaml"], before, tmp_path)
    assert done.returncode == 0, done.stderr
    assert late.read_text() == "done"


def test_a_small_run_hands_back_the_results_it_saved_equal_to_the_stored_ones(
    fake_openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    """Up to KEPT_UP_TO results, `report.results` serves the objects the run saved (the summary
    does not parse them again); they equal what the store holds, in run order."""
    import convoeval
    from convoeval.engine._recorder import KEPT_UP_TO

    suite = tmp_path / "three.eval.yaml"
    suite.write_text("tests:\n" + "".join(f"  - id: t{i}\n    input: hello {i}\n" for i in range(3)))
    report = convoeval.run(suite, target="openai:m", cache=False, store=tmp_path / "runs.sqlite")
    assert KEPT_UP_TO >= 3
    results = list(report.results)
    assert [r.test_id for r in results] == ["t0", "t1", "t2"]
    assert results[1] is report.results[1]  # kept, not read again
    stored = [EvaluationResult.model_validate_json(data) for data in report.results.iter_json()]  # type: ignore[attr-defined]
    assert results == stored


def test_builtin_default_factories_still_make_a_new_empty_container_per_model() -> None:
    """`Model` swaps `default_factory=list/dict/set` for Python functions (pydantic reads
    their signature cheaply); every instance still gets its own empty container."""
    from pydantic import Field

    from convoeval._base_model import Model

    class Holder(Model):
        items: list[int] = Field(default_factory=list)
        names: dict[str, int] = Field(default_factory=dict)
        tags: set[str] = Field(default_factory=set)

    class Child(Holder):
        more: list[str] = Field(default_factory=list)

    first, second = Child(), Child()
    assert (first.items, first.names, first.tags, first.more) == ([], {}, set(), [])
    first.items.append(1)
    first.tags.add("a")
    assert second.items == [] and second.tags == set() and first.items is not second.items
    assert Child.model_fields["items"].default_factory not in (list, dict, set)
    assert Child.model_json_schema()["properties"]["items"] == {
        "items": {"type": "integer"},
        "title": "Items",
        "type": "array",
    }


def test_importing_pauses_the_collector_and_leaves_it_as_it_was() -> None:
    """`collector_paused` (around convoeval's imports): no collection runs inside; afterwards
    the collector is enabled again, what was made is in the oldest generation (young counts
    start over), and objects someone froze before stay frozen, and only those."""
    import gc

    from convoeval._lazy import collector_paused

    assert gc.isenabled()
    collections_before = sum(s["collections"] for s in gc.get_stats())
    with collector_paused():
        assert not gc.isenabled()
        made = [[i] for i in range(5000)]
        assert sum(s["collections"] for s in gc.get_stats()) == collections_before
    assert gc.isenabled() and gc.get_count()[0] < 700 and gc.get_freeze_count() == 0
    assert made[-1] == [4999]
    code = (
        "import gc\nkept = [[1]]\ngc.freeze()\nfrozen = gc.get_freeze_count()\n"
        "from convoeval._lazy import collector_paused\n"
        "with collector_paused():\n    more = [[i] for i in range(1000)]\n"
        "assert 0 < gc.get_freeze_count() <= frozen and gc.isenabled()\n"  # none unfrozen, none added
        "gc.disable()\nwith collector_paused():\n    pass\nassert not gc.isenabled()\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


def test_validate_does_not_load_the_http_client(tmp_path: Path) -> None:
    """`convoeval run` loads aiohttp on another thread while it reads its suites; `validate`
    (an editor's or a pre-commit hook's command) does not load it at all."""
    (tmp_path / "ok.eval.yaml").write_text("tests:\n  - id: one\n    input: hello\n")
    report = "import atexit, sys; atexit.register(lambda: print('AIOHTTP', 'aiohttp' in sys.modules))"
    valid = _main_in_a_process(["validate", "ok.eval.yaml"], report, tmp_path)
    assert valid.returncode == 0 and valid.stdout.splitlines()[-1] == "AIOHTTP False", valid.stderr


def test_pydantic_plugins_are_looked_for_only_when_a_package_declares_one(tmp_path: Path) -> None:
    """Without a distribution declaring the `pydantic` entry-point group, pydantic is told there
    are no plugins (no search); with one, pydantic finds and uses it for convoeval's models."""
    site = tmp_path / "site"
    (site / "fake_plugin-1.0.dist-info").mkdir(parents=True)
    (site / "fake_plugin-1.0.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: fake-plugin\nVersion: 1.0\n"
    )
    (site / "fake_plugin-1.0.dist-info" / "entry_points.txt").write_text("[pydantic]\nseen = fake_plugin:plugin\n")
    (site / "fake_plugin.py").write_text(
        "SEEN = []\n"
        "class _Plugin:\n"
        "    def new_schema_validator(self, schema, schema_type, schema_type_path, schema_kind, config, plugin_settings):\n"
        "        SEEN.append(schema_type_path.name)\n"
        "        return None, None, None\n"
        "plugin = _Plugin()\n"
    )
    code = (
        "import sys\n"
        "from pydantic.plugin import _loader\n"
        "import convoeval\n"
        "from convoeval.spec import Test\n"
        "Test(id='x', input='hello')\n"
        "print('PLUGINS', sorted(_loader._plugins or {}))\n"
        "if 'fake_plugin' in sys.modules:\n"
        "    print('SEEN', 'Test' in sys.modules['fake_plugin'].SEEN)\n"
    )
    plain = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert plain.returncode == 0 and plain.stdout.split() == ["PLUGINS", "[]"], plain.stderr
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}
    declared = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env)
    assert declared.returncode == 0, declared.stderr
    assert "PLUGINS ['fake_plugin:plugin']" in declared.stdout and "SEEN True" in declared.stdout
