"""Bad input is a one-line `file:line` error, exit 2 (issue 10, items 11, 12 and 13)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest

import convoeval
from convoeval.run._scheduler import _lazily
from convoeval.spec import MAX_TRIALS

from .conftest import read_jsonl, write


def _validate_lines(cli, path: Path) -> list[str]:
    code, out, err = cli("validate", path)
    assert code == 2 and "Traceback" not in out + err
    return err.strip().splitlines()


def test_an_invalid_timestamp_is_a_file_line_error(cli, tmp_path: Path) -> None:
    suite = write(
        tmp_path / "s.eval.yaml",
        "tests:\n  - id: t\n    input: hi\n    metadata:\n      when: !!timestamp 2024-13-45\n",
    )
    assert _validate_lines(cli, suite) == [
        f"{suite}:5: tests[0].metadata.when: invalid value '2024-13-45': month must be in 1..12 "
        "(quote it to keep it as text)"
    ]
    # Untagged, YAML 1.2 reads it as text.
    suite = write(tmp_path / "s.eval.yaml", "tests:\n  - id: t\n    input: hi\n    metadata:\n      when: 2024-13-45\n")
    assert cli("validate", suite)[0] == 0


@pytest.mark.parametrize("shape", ["block", "flow"])
def test_deep_nesting_is_a_file_line_error_before_the_parser_recurses(cli, tmp_path: Path, shape: str) -> None:
    if shape == "block":
        text = "tests:\n" + "".join("  " * i + f"k{i}:\n" for i in range(1, 400)) + "  " * 400 + "x\n"
        line = 65
    else:
        text = "tests: " + "[" * 330 + "]" * 330 + "\n"
        line = 1
    suite = write(tmp_path / "s.eval.yaml", text)
    assert _validate_lines(cli, suite) == [f"{suite}:{line}: (yaml): nested deeper than 64 levels"]


def test_nesting_that_crashes_the_c_parser_is_refused_in_a_real_process(tmp_path: Path) -> None:
    suite = write(tmp_path / "s.eval.yaml", "tests: " + "[" * 50_000 + "]" * 50_000 + "\n")
    proc = subprocess.run(
        [sys.executable, "-m", "convoeval", "validate", str(suite)], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 2, proc.stderr[-500:]
    assert proc.stderr == f"{suite}:1: (yaml): nested deeper than 64 levels\n"


def test_trials_past_the_maximum_is_a_file_line_error(cli, tmp_path: Path) -> None:
    suite = write(tmp_path / "s.eval.yaml", "execution:\n  trials: 100000000\ntests:\n  - id: t\n    input: hi\n")
    assert _validate_lines(cli, suite) == [f"{suite}:2: execution.trials: trials must be at most {MAX_TRIALS}"]
    suite = write(
        tmp_path / "t.eval.yaml", "tests:\n  - id: t\n    input: hi\n    execution:\n      trials: {count: 5000}\n"
    )
    [line] = _validate_lines(cli, suite)
    assert line.startswith(f"{suite}:5: tests[0].execution.trials.count: ") and str(MAX_TRIALS) in line
    code, _, err = cli("run", tmp_path / "x.eval.yaml", "--trials", "100000000")
    assert code == 2 and "1000" in err


def test_the_python_api_refuses_too_many_trials(tmp_path: Path) -> None:
    suite = write(tmp_path / "s.eval.yaml", "tests:\n  - id: t\n    input: hi\n")
    with pytest.raises(convoeval.errors.ConfigError, match="trials: Input should be less than or equal to 1000"):
        convoeval.run(suite, target="openai:m", trials=MAX_TRIALS + 1)


def test_trials_are_planned_lazily() -> None:
    """A trial's coroutine is created only when a worker is free, not all of them up front."""
    created, finished, alive = [0], [0], []

    async def trial(i: int) -> None:
        await asyncio.sleep(0)
        finished[0] += 1

    def one(i: int):
        created[0] += 1
        alive.append(created[0] - finished[0])
        return trial(i)

    outcomes = asyncio.run(_lazily(one, MAX_TRIALS, 4))
    assert len(outcomes) == MAX_TRIALS and finished[0] == MAX_TRIALS
    assert max(alive) <= 4


def test_many_trials_run_in_order(cli, fake_openai, tmp_path: Path) -> None:
    suite = write(tmp_path / "s.eval.yaml", "tests:\n  - id: t\n    input: hi\n")
    code, _, err = cli(
        "run",
        suite,
        "--target",
        "openai:m",
        "--trials",
        "200",
        "--concurrency",
        "4",
        "-o",
        tmp_path / "r.jsonl",
        "--no-cache",
        "-q",
    )
    assert code == 0, err
    [result] = read_jsonl(tmp_path / "r.jsonl")
    assert [t["trial"] for t in result["trials"]] == list(range(200))
    assert len({r["messages"][-1]["content"] for r in fake_openai.target_requests()}) == 1
    assert len(fake_openai.target_requests()) == 200


def test_unknown_field_suggestions_come_from_the_same_object(cli, tmp_path: Path) -> None:
    suite = write(
        tmp_path / "s.eval.yaml",
        "tests:\n  - id: t\n    input: hi\n    execution:\n      window_siz: 2\n"
        "      trials: {count: 2, strategi: mean}\n    inputt: x\n",
    )
    assert _validate_lines(cli, suite) == [
        f"{suite}:5: tests[0].execution.window_siz: unknown field 'window_siz'",
        f"{suite}:6: tests[0].execution.trials.strategi: unknown field 'strategi' (did you mean 'strategy'?)",
        f"{suite}:7: tests[0].inputt: unknown field 'inputt' (did you mean 'input'?)",
    ]


#: Found by mutating real suites (examples/, AgentV's files) and validating them: each crashed
#: with a traceback before (the exception named), each is now a `file:line: field` problem.
MUTATED = {
    "a-list-as-a-type": (  # TypeError: unhashable type: 'list' (AgentV's skipped and trimmed types)
        "tests:\n  - id: t\n    vars: {input: hi}\n    assert:\n      - {type: [], value: x}\n",
        "5: tests[0].assertions[0]: an assertion mapping needs a `type`",
    ),
    "a-number-as-a-setup-key": (  # TypeError: '<' not supported between 'str' and 'int'
        "environment:\n  type: host\n  workdir: ./w\n  setup: {command: [bash, x.sh], 7: x, z: y}\n"
        "tests:\n  - id: t\n    vars: {input: hi}\n    assert: [Says hi]\n",
        "4: environment.setup[7]: unknown field (known: command, cwd, timeout_ms): [7, 'z']",
    ),
    "a-number-as-a-tool-args-key": (  # the same, in trajectory:tool-args-match
        "tests:\n  - id: t\n    vars: {input: hi}\n    assert:\n"
        "      - {type: 'trajectory:tool-args-match', value: {name: a, args: {}, 3: x, z: y}}\n",
        "5: tests[0].assertions[0].value: unknown field 3 (args, arguments, defaults, ignore, mode, name, pattern, type)",
    ),
    "a-nul-in-a-tests-file-name": (  # ValueError: embedded null byte
        'tests: "cases\\0.jsonl"\n',
        "1: tests: holds a NUL character (\\0), refused in eval files",
    ),
    "a-file-name-too-long": (  # OSError: [Errno 36] File name too long
        f"tests: {'a' * 5000}\n",
        f"1: tests: {'a' * 200}: File name too long",
    ),
    "a-nul-in-a-workdir": (  # the same, in AgentV's environment
        'environment: {type: host, workdir: "w\\0"}\ntests:\n  - id: t\n    vars: {input: hi}\n    assert: [Says hi]\n',
        "1: environment.workdir: holds a NUL character",
    ),
    "a-map-as-a-repeat-strategy": (  # TypeError: unhashable type: 'dict'
        "evaluate_options: {repeat: {count: 2, strategy: {a: 1}}}\ntests:\n  - id: t\n    vars: {input: hi}\n"
        "    assert: [Says hi]\n",
        "1: evaluate_options.repeat.strategy: this AgentV form is not supported: strategy {'a': 1}",
    ),
    "a-number-as-a-repeat-key": (  # TypeError: '<' not supported between 'str' and 'int'
        "evaluate_options: {repeat: {count: 2, 5: x, z: y}}\ntests:\n  - id: t\n    vars: {input: hi}\n    assert: [Says hi]\n",
        "1: evaluate_options.repeat[5]: unknown field",
    ),
    "nan-as-a-hook-timeout": (  # ValueError: cannot convert float NaN to integer
        "workspace:\n  hooks:\n    before_each: {command: [bash, x.sh], timeout_ms: .nan}\n"
        "tests:\n  - id: t\n    input: hi\n",
        "3: workspace.hooks.before_each.timeout_ms:",
    ),
}


@pytest.mark.parametrize("name", sorted(MUTATED))
def test_mutated_suites_are_file_line_errors(cli, tmp_path: Path, name: str) -> None:
    text, expected = MUTATED[name]
    (tmp_path / ".git").mkdir()  # AgentV's forms are read in files found as AgentV's (a .agentv/ folder)
    (tmp_path / ".agentv").mkdir()
    suite = write(tmp_path / "evals" / "s.eval.yaml", text)
    lines = _validate_lines(cli, suite)
    assert any(line.startswith(f"{suite}:{expected}") for line in lines), lines


def test_a_graders_file_validated_as_a_suite_says_only_that_it_has_no_tests(cli, tmp_path: Path) -> None:
    """Its checks are read as what they are (before: `unknown field 'value'` on valid checks, and a
    TypeError, Assertion being abstract, once one of them was broken)."""
    graders = write(tmp_path / "graders.yaml", "turn_assertions:\n  - {type: not-contains, value: password}\n")
    assert _validate_lines(cli, graders) == [
        f"{graders}:1: tests: required field is missing: an eval file needs a `tests` list"
    ]
    broken = write(tmp_path / "broken.yaml", "assertions:\n  - type: contains\n")
    lines = _validate_lines(cli, broken)
    assert lines[0].startswith(f"{broken}:1: tests: required field is missing") and len(lines) == 2
    assert lines[1].startswith(f"{broken}:2: assertions[0]")


LONG = "a" * 5000
#: A name too long for the file system where a suite names a file (each raised OSError: File name too long).
LONG_NAMES = {
    "an-agentv-assertion-type": f"tests:\n  - id: t\n    vars: {{input: hi}}\n    assert:\n      - type: {LONG}\n",
    "an-llm-grader-prompt": f"tests:\n  - id: t\n    input: hi\n    assertions:\n      - {{type: llm-grader, prompt: {LONG}}}\n",
    "an-agentv-workdir": f"environment: {{type: host, workdir: {LONG}}}\ntests:\n  - id: t\n    vars: {{input: hi}}\n    assert: [x]\n",
    "an-agentv-input-file": "tests:\n  - id: t\n    vars:\n      input:\n        - role: user\n          content:\n"
    f"            - {{type: file, value: {LONG}}}\n    assert: [x]\n",
    "a-prompt-command": "tests:\n  - id: t\n    input: hi\n    assertions:\n"
    f"      - {{type: llm-grader, prompt: {{command: [bun, run, {LONG}]}}}}\n",
    "a-tools-module": f"tools: {LONG}\nbackend: {{}}\ntests:\n  - id: t\n    input: hi\n",
    "a-plugin": f"plugins: [{LONG}]\ntests:\n  - id: t\n    input: hi\n",
}


@pytest.mark.parametrize("name", sorted(LONG_NAMES))
def test_a_file_name_too_long_is_a_problem_not_a_crash(cli, tmp_path: Path, name: str) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / ".agentv").mkdir()
    suite = write(tmp_path / "evals" / "s.eval.yaml", LONG_NAMES[name])
    code, out, err = cli("validate", suite)
    assert code in (0, 2) and "Traceback" not in out + err and "File name too long" not in out + err, out + err


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ('tests:\n  - id: a\n    input: "hi\\0there"\n', "3: tests[0].input"),  # then: `input` missing
        ('tests:\n  - id: "a\\0"\n    input: hi\n', "2: tests[0].id"),  # then: not a string
        ('tests: "cases\\0.jsonl"\n', "1: tests"),  # then: not found, and no test
    ],
)
def test_a_refused_value_is_one_problem_not_also_what_follows_from_it(
    cli, tmp_path: Path, text: str, where: str
) -> None:
    suite = write(tmp_path / "s.eval.yaml", text)
    assert _validate_lines(cli, suite) == [
        f"{suite}:{where}: holds a NUL character (\\0), refused in eval files (no file name or command argument can hold one)"
    ]
