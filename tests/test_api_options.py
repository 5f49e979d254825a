"""The public API's options model, folders of eval files, results-file suffixes, and the arena's
judge announcement, through `convoeval.run` and the CLI against the loopback fake server."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest

import convoeval
from convoeval import ConfigError, RunOptions
from convoeval.testing import FakeOpenAIServer, assertion, grade

from .arena_fakes import arena_server, desk, judge_server  # noqa: F401  (fixtures)
from .conftest import read_jsonl, write

SUITE = """\
tests:
  - id: greet
    input: say hello
    assertions: [{type: contains, value: hello}]
  - id: bye
    input: say bye
    assertions: [{type: contains, value: bye}]
"""


def test_keywords_and_options_model_run_the_same(fake_openai: FakeOpenAIServer, tmp_path: Path) -> None:
    suite = write(tmp_path / "s.eval.yaml", SUITE)
    by_keywords = convoeval.run(suite, target="openai:fake-model", store=False)
    options = RunOptions(paths=[suite], target="openai:fake-model", store=False)
    by_model = convoeval.run(options=options)
    assert [(r.test_id, r.verdict) for r in by_keywords.results] == [("greet", "pass"), ("bye", "pass")]
    assert [(r.test_id, r.verdict) for r in by_model.results] == [("greet", "pass"), ("bye", "pass")]
    # keywords change the given options; the options object itself is not changed
    changed = convoeval.run(options=options, trials=2, cache=False)
    assert [len(r.trials) for r in changed.results] == [2, 2]
    assert options.trials is None


def test_a_run_held_in_memory_is_not_rendered_at_its_end(
    fake_openai: FakeOpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`asyncio.run` renders its main task (and so the run's report) when it puts back the
    SIGINT handler it installed: no result is rendered for it, and the report's repr is short."""
    suite = write(tmp_path / "s.eval.yaml", SUITE)
    rendered: list[str] = []
    plain = convoeval.EvaluationResult.__repr__
    monkeypatch.setattr(
        convoeval.EvaluationResult, "__repr__", lambda self: rendered.append(self.test_id) or plain(self)
    )
    report = convoeval.run(suite, target="openai:fake-model", store=False, cache=False)
    assert [r.verdict for r in report.results] == ["pass", "pass"] and rendered == []
    assert repr(report) == "RunReport(run_id=None, results=2, notes=0, output=None)"


def test_bad_options_are_config_errors(tmp_path: Path) -> None:
    suite = write(tmp_path / "s.eval.yaml", SUITE)
    with pytest.raises(ConfigError, match="run option tagret: unknown option"):
        convoeval.run(suite, tagret="openai:m")
    with pytest.raises(ConfigError, match="run option threshold: .*less than or equal to 1"):
        convoeval.run(suite, threshold=3)

    # A Target object's chat must be async: said once, not as a TypeError of every test's first turn.
    class SyncBot:
        name = "sync-bot"

        def chat(self, request: object) -> convoeval.ChatReply:
            return convoeval.ChatReply(text="hello")

    with pytest.raises(
        ConfigError, match=r"run option target: 'sync-bot': a Target object's `chat\(request\)` is `async"
    ):
        convoeval.run(suite, target=SyncBot(), store=False)

    # A plain function is a target (issue 11: the python provider); a number is not.
    with pytest.raises(ConfigError, match=r"run option target: .*a Target object .* got a int"):
        convoeval.run(suite, target=42)


@pytest.mark.parametrize(
    ("peer", "said"),
    [
        ("epochs", "run option epochs: unknown option (convoeval's is 'trials'; Inspect's `epochs`)"),
        ("model", "run option model: unknown option (convoeval's is 'target'; Inspect's `model`; `judge` is"),
        ("sample_id", "run option sample_id: unknown option (convoeval's is 'test_ids'; Inspect's `sample_id`)"),
    ],
)
def test_another_tools_option_name_says_convoevals(peer: str, said: str) -> None:
    """As the CLI does for `--epochs`; before, `unknown option` with no hint."""
    with pytest.raises(ConfigError) as raised:
        convoeval.run("s.eval.yaml", **{peer: 3})
    assert str(raised.value).startswith(said)


def test_unknown_output_suffix_is_refused_before_any_call(cli, fake_openai: FakeOpenAIServer, tmp_path: Path) -> None:
    suite = write(tmp_path / "s.eval.yaml", SUITE)
    code, out, err = cli("run", suite, "--target", "openai:fake-model", "-o", "out.txt")
    assert code == 2
    assert "out.txt: unknown results format '.txt'; name a file ending in .jsonl, .json, .html, .xml, .md" in err
    assert fake_openai.target_requests() == []
    assert not (tmp_path / "out.txt").exists()
    code, out, err = cli("run", suite, "--target", "openai:fake-model", "-o", "out.json")
    assert code == 0, err
    assert (tmp_path / "out.json").read_text().startswith("[")


def test_validate_and_run_take_the_eval_files_of_a_folder(cli, fake_openai: FakeOpenAIServer, tmp_path: Path) -> None:
    folder = tmp_path / "suites"
    write(folder / "a.eval.yaml", SUITE)
    write(folder / "nested" / "b.eval.yaml", SUITE.replace("greet", "greet-b").replace("id: bye", "id: bye-b"))
    write(folder / "targets.yaml", "targets: []\n")
    write(folder / "cases.yaml", "- not an eval file, as a.eval.yaml is there\n")
    code, out, err = cli("validate", folder)
    assert code == 0, err
    assert "2 file(s) valid" in out
    code, out, err = cli("run", folder, "--target", "openai:fake-model", "-o", "r.jsonl", "-q")
    assert code == 0, out + err
    assert [r["test_id"] for r in read_jsonl(tmp_path / "r.jsonl")] == ["greet", "bye", "greet-b", "bye-b"]

    plain = tmp_path / "plain"
    write(plain / "one.yaml", SUITE)
    write(plain / "targets.yaml", "targets: []\n")
    code, out, err = cli("validate", plain)
    assert (code, out.strip()) == (0, "1 file(s) valid"), err

    empty = tmp_path / "empty"
    empty.mkdir()
    code, out, err = cli("validate", empty)
    assert code == 2
    assert err.strip() == f"{empty}:1: (folder): no eval files (*.eval.yaml or *.yaml) in this folder"


def test_arena_without_judge_names_the_suites_judge_first(cli, desk: Path, judge_server: FakeOpenAIServer) -> None:
    desk.write_text(desk.read_text().replace("tests:\n", "execution: {judge: judge}\ntests:\n", 1))
    code, out, err = cli("arena", desk, "-t", "polite", "-t", "terse", "--bootstrap", "0", "--format", "json")
    assert code == 0, err
    assert err.splitlines()[0] == "judge: judge (the suite's execution.judge); choose another with --judge"
    assert judge_server.judge_requests()  # the pairwise judge was that server


def test_arena_options_model(desk: Path, judge_server: FakeOpenAIServer) -> None:
    options = convoeval.ArenaOptions(paths=[desk], targets=["polite", "terse"], judge="judge", bootstrap=0)
    report = asyncio.run(convoeval.aarena(options=options, store=False))
    assert [row["target"] for row in report.rows()] == ["polite", "terse"]
    with pytest.raises(ConfigError, match="arena option bootstrap: bootstrap rounds cannot be negative"):
        convoeval.arena(desk, targets=["polite", "terse"], judge="judge", bootstrap=-1)


def test_the_testing_module_is_reached_from_import_convoeval() -> None:
    """The guides write `convoeval.testing.assert_conversation(...)`; before, after `import
    convoeval` it was `AttributeError: module 'convoeval' has no attribute 'testing'`."""
    code = "import convoeval; print(convoeval.testing.grade({'type': 'contains', 'value': 'hi'}, output='hi').verdict)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout, done.stderr) == (0, "pass\n", "")


@pytest.mark.parametrize(
    ("check", "said"),
    [
        ({"type": "contains"}, "contains: value: Field required"),
        ({"type": "contains", "value": "x", "weight": "heavy"}, "contains: weight: Input should be a valid number"),
        ({"type": "contians", "value": "x"}, "unknown assertion type 'contians' (did you mean 'contains'?)"),
        (5, "an assertion is a string (a rubric criterion) or a mapping with a `type`"),
    ],
)
def test_grading_a_malformed_check_is_a_config_error(check: object, said: str) -> None:
    """Before: pydantic's ValidationError (no ConvoevalError), or an AttributeError for a non-mapping."""
    with pytest.raises(ConfigError) as raised:
        grade(check, output="x")  # type: ignore[arg-type]
    assert str(raised.value).startswith(said)


def test_a_plain_string_is_graded_as_a_rubric_criterion() -> None:
    """As in YAML; before: `AttributeError: 'str' object has no attribute 'get'`."""
    assert assertion("Is polite") == assertion({"type": "rubrics", "criteria": ["Is polite"]})
