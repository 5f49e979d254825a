"""Every validation rule, each checked for its `file:line: field: message` line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from convoeval import SpecError, load_suite, validate_paths

from .conftest import REPO, write

VALID_HEAD = "tests:\n"

# (name, eval-file text, expected line, expected field, message fragment)
CASES = [
    (
        "turns without mode",
        """\
tests:
  - id: t
    turns:
      - input: hi
""",
        3,
        "tests[0].turns",
        "needs `mode: conversation`",
    ),
    (
        "mode without turns",
        """\
tests:
  - id: t
    mode: conversation
""",
        3,
        "tests[0].turns",
        "non-empty `turns`",
    ),
    (
        "mode with empty turns",
        """\
tests:
  - id: t
    mode: conversation
    turns: []
""",
        4,
        "tests[0].turns",
        "non-empty `turns`",
    ),
    (
        "blank turn input",
        """\
tests:
  - id: t
    mode: conversation
    turns:
      - input: hello
      - input: "   "
""",
        6,
        "tests[0].turns[1].input",
        "must not be blank",
    ),
    (
        "missing turn input",
        """\
tests:
  - id: t
    mode: conversation
    turns:
      - expected_output: hi
""",
        5,
        "tests[0].turns[0].input",
        "required field is missing",
    ),
    (
        "top-level expected_output in conversation",
        """\
tests:
  - id: t
    mode: conversation
    expected_output: nope
    turns:
      - input: hi
""",
        4,
        "tests[0].expected_output",
        "not allowed at test level in conversation mode",
    ),
    (
        "aggregation without conversation",
        """\
tests:
  - id: t
    input: hi
    aggregation: min
""",
        4,
        "tests[0].aggregation",
        "needs `mode: conversation`",
    ),
    (
        "on_turn_failure without conversation",
        """\
tests:
  - id: t
    input: hi
    on_turn_failure: stop
""",
        4,
        "tests[0].on_turn_failure",
        "needs `mode: conversation`",
    ),
    (
        "hints without verify (never sent)",
        """\
tests:
  - id: t
    mode: conversation
    hints: [Try again]
    turns: [{input: one}, {input: two}]
""",
        4,
        "tests[0].hints",
        "hints are sent after a failed `verify`",
    ),
    (
        "window_size without conversation",
        """\
tests:
  - id: t
    input: hi
    window_size: 2
""",
        4,
        "tests[0].window_size",
        "needs `mode: conversation`",
    ),
    (
        "non-positive window_size",
        """\
tests:
  - id: t
    mode: conversation
    window_size: 0
    turns:
      - input: hi
""",
        4,
        "tests[0].window_size",
        "greater than 0",
    ),
    (
        "bad aggregation enum",
        """\
tests:
  - id: t
    mode: conversation
    aggregation: median
    turns:
      - input: hi
""",
        4,
        "tests[0].aggregation",
        "'mean', 'min' or 'max'",
    ),
    (
        "bad on_turn_failure enum",
        """\
tests:
  - id: t
    mode: conversation
    on_turn_failure: halt
    turns:
      - input: hi
""",
        4,
        "tests[0].on_turn_failure",
        "'continue' or 'stop'",
    ),
    (
        "bad mode",
        """\
tests:
  - id: t
    mode: chat
    input: hi
""",
        3,
        "tests[0].mode",
        "'conversation'",
    ),
    (
        "unknown test key",
        """\
tests:
  - id: t
    input: hi
    turn: 3
""",
        4,
        "tests[0].turn",
        "unknown field 'turn' (did you mean 'turns'?)",
    ),
    (
        "unknown suite key",
        """\
descriptoin: x
tests:
  - id: t
    input: hi
""",
        1,
        "descriptoin",
        "unknown field 'descriptoin' (did you mean 'description'?)",
    ),
    (
        "unknown turn key",
        """\
tests:
  - id: t
    mode: conversation
    turns:
      - input: hi
        asserts: [x]
""",
        6,
        "tests[0].turns[0].asserts",
        "unknown field 'asserts'",
    ),
    (
        "unknown assertion type",
        """\
tests:
  - id: t
    input: hi
    assertions:
      - type: containz
        value: x
""",
        5,
        "tests[0].assertions[0].type",
        "unknown assertion type 'containz' (did you mean 'contains'?)",
    ),
    (
        "unknown assertion field",
        """\
tests:
  - id: t
    input: hi
    assertions:
      - type: contains
        value: x
        valeu: y
""",
        7,
        "tests[0].assertions[0].valeu",
        "unknown field 'valeu'",
    ),
    (
        "assertion missing type",
        """\
tests:
  - id: t
    input: hi
    assertions:
      - value: x
""",
        5,
        "tests[0].assertions[0]",
        "needs a `type`",
    ),
    (
        "assertion missing required field",
        """\
tests:
  - id: t
    input: hi
    assertions:
      - type: contains
""",
        5,
        "tests[0].assertions[0].value",
        "required field is missing",
    ),
    (
        "bad assertion weight",
        """\
tests:
  - id: t
    input: hi
    assertions:
      - type: contains
        value: x
        weight: -1
""",
        7,
        "tests[0].assertions[0].weight",
        "greater than or equal to 0",
    ),
    (
        "duplicate test ids",
        """\
tests:
  - id: same
    input: hi
  - id: same
    input: ho
""",
        4,
        "tests[1].id",
        "duplicate test id 'same' (first at line 2)",
    ),
    (
        "unknown depends_on",
        """\
tests:
  - id: a
    input: hi
  - id: b
    input: ho
    depends_on: [aa]
""",
        6,
        "tests[1].depends_on[0]",
        "unknown test id 'aa'",
    ),
    (
        "self dependency",
        """\
tests:
  - id: a
    input: hi
    depends_on: a
""",
        4,
        "tests[0].depends_on",
        "cannot depend on itself",
    ),
    (
        "dependency cycle",
        """\
tests:
  - id: a
    input: hi
    depends_on: [b]
  - id: b
    input: ho
    depends_on: [a]
""",
        4,
        "tests[0].depends_on",
        "dependency cycle: a -> b -> a",
    ),
    (
        "bad on_dependency_failure",
        """\
tests:
  - id: a
    input: hi
  - id: b
    input: ho
    depends_on: [a]
    on_dependency_failure: ignore
""",
        7,
        "tests[1].on_dependency_failure",
        "'skip', 'fail' or 'run'",
    ),
    (
        "single-turn test without input",
        """\
tests:
  - id: a
    criteria: something
""",
        2,
        "tests[0].input",
        "needs `input`",
    ),
    (
        "missing id",
        """\
tests:
  - input: hi
""",
        2,
        "tests[0].id",
        "required field is missing",
    ),
    (
        "tests missing",
        """\
name: x
""",
        1,
        "tests",
        "needs a `tests` list",
    ),
    (
        "bad threshold",
        """\
execution:
  threshold: 1.5
tests:
  - id: a
    input: hi
""",
        2,
        "execution.threshold",
        "less than or equal to 1",
    ),
    (
        "bad trials",
        """\
execution:
  trials: 0
tests:
  - id: a
    input: hi
""",
        2,
        "execution.trials",
        "at least 1",
    ),
    (
        "suite-level setting on a test",
        """\
tests:
  - id: a
    input: hi
    execution:
      judge: other
""",
        5,
        "tests[0].execution.judge",
        "suite-level setting",
    ),
    (
        "bad message role",
        """\
tests:
  - id: a
    input:
      - role: robot
        content: hi
""",
        4,
        "tests[0].input[0].role",
        "'system', 'user', 'assistant' or 'tool'",
    ),
    (
        "duplicate key",
        """\
tests:
  - id: a
    input: hi
    input: ho
""",
        4,
        "tests[0].input",
        "duplicate key 'input'",
    ),
    (
        "yaml syntax error",
        """\
tests:
  - id: a
    input: [hi
""",
        4,
        "(yaml)",
        "YAML syntax error",
    ),
    (
        "not a mapping",
        """\
- id: a
""",
        1,
        "(file)",
        "mapping with a `tests` list",
    ),
    (
        "assertion neither string nor mapping",
        """\
tests:
  - id: a
    input: hi
    assertions:
      - 42
""",
        5,
        "tests[0].assertions[0]",
        "a string (a rubric criterion) or a mapping",
    ),
    (
        "conversation-only type on a turn",
        """\
tests:
  - id: a
    mode: conversation
    turns:
      - input: hi
        assertions:
          - type: knowledge-retention
""",
        7,
        "tests[0].turns[0].assertions[0].type",
        "not at turn level",
    ),
    (
        "unknown llm-grader template variable",
        """\
tests:
  - id: a
    input: hi
    assertions:
      - type: llm-grader
        prompt: "Grade {{ outptu }}"
""",
        6,
        "tests[0].assertions[0].prompt",
        "outptu",
    ),
]


@pytest.mark.parametrize("name,text,line,field,fragment", CASES, ids=[c[0] for c in CASES])
def test_rule_reports_file_line_field(
    tmp_path: Path, name: str, text: str, line: int, field: str, fragment: str
) -> None:
    path = write(tmp_path / "suite.eval.yaml", text)
    problems = validate_paths([path])
    rendered = [str(p) for p in problems]
    wanted = f"{path}:{line}: {field}: "
    assert any(r.startswith(wanted) and fragment in r for r in rendered), rendered


def test_invalid_utf8_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.eval.yaml"
    path.write_bytes(b"tests:\n  - id: a\n    input: caf\xe9\n")
    [problem] = validate_paths([path])
    assert (problem.line, problem.field) == (3, "(file)")
    assert "invalid UTF-8" in problem.message


def test_all_problems_of_a_file_at_once(tmp_path: Path) -> None:
    path = write(
        tmp_path / "many.eval.yaml",
        """\
tests:
  - id: a
    turns:
      - input: hi
  - id: a
    input: x
    aggregation: max
    bogus: 1
""",
    )
    lines = [str(p) for p in validate_paths([path])]
    assert len(lines) == 4, lines
    assert [int(line.split(":")[1]) for line in lines] == sorted(int(line.split(":")[1]) for line in lines)


def test_external_tests_file_errors_point_into_that_file(tmp_path: Path) -> None:
    write(tmp_path / "cases.jsonl", '{"id": "a", "input": "hi"}\n\n{"id": "b", "inptu": "x"}\n')
    suite = write(tmp_path / "s.eval.yaml", "tests: cases.jsonl\n")
    problems = validate_paths([suite])
    assert any(
        p.file.endswith("cases.jsonl") and p.line == 3 and "unknown field 'inptu'" in p.message for p in problems
    ), problems


def test_external_tests_yaml_loads(tmp_path: Path) -> None:
    write(tmp_path / "cases.yaml", "- id: a\n  input: hi\n- id: b\n  input: ho\n")
    suite = load_suite(write(tmp_path / "s.eval.yaml", "tests: cases.yaml\n"))
    assert [t.id for t in suite.tests] == ["a", "b"]


def test_load_suite_raises_spec_error_with_problems(tmp_path: Path) -> None:
    path = write(tmp_path / "s.eval.yaml", "tests:\n  - id: a\n    mode: conversation\n")
    with pytest.raises(SpecError) as info:
        load_suite(path)
    assert info.value.problems and str(info.value.problems[0]).startswith(f"{path}:3:")


@pytest.mark.parametrize("suite", sorted((REPO / "examples").rglob("*.eval.yaml")), ids=lambda p: p.name)
def test_examples_and_agentv_suites_validate(suite: Path) -> None:
    assert validate_paths([suite]) == []


def test_agentv_suites_are_unchanged_copies() -> None:
    shared = REPO.parent / "shared" / "peers" / "agentv"
    if not shared.is_dir():
        pytest.skip("shared/ is not beside the checkout")
    for original in shared.glob("*.eval.yaml"):
        assert (REPO / "examples" / "agentv" / original.name).read_bytes() == original.read_bytes()


def test_validate_cli_exit_codes(cli, tmp_path: Path) -> None:
    good = write(tmp_path / "good.eval.yaml", "tests:\n  - id: a\n    input: hi\n")
    bad = write(tmp_path / "bad.eval.yaml", "tests:\n  - id: a\n    inptu: hi\n")
    code, out, err = cli("validate", good)
    assert code == 0 and "valid" in out
    code, out, err = cli("validate", good, bad)
    assert code == 2
    lines = err.strip().splitlines()
    assert f"{bad}:3: tests[0].inptu: unknown field 'inptu' (did you mean 'input'?)" in lines, err
    assert all(line.startswith(f"{bad}:") for line in lines), err
    assert "Traceback" not in out + err


def test_run_refuses_invalid_suite(cli, tmp_path: Path) -> None:
    bad = write(tmp_path / "bad.eval.yaml", "tests:\n  - id: a\n    mode: conversation\n")
    code, out, err = cli("run", bad, "--target", "scripted")
    assert code == 2 and f"{bad}:3:" in err


def test_no_traceback_on_garbage_inputs(tmp_path: Path) -> None:
    """Whatever the bytes, `convoeval validate` answers with problems, never a traceback."""
    samples = [
        b"",
        b"\x00\x01\x02",
        b"tests: !!python/object:os.system {}\n",
        b"[",
        b"tests: 5",
        b"tests:\n  - 5\n  - [1]\n",
        b"tests:\n  - id: [1, 2]\n    input: {a: b}\n",
        b"&a [*a]",
        b"a: &a [x, x, x, x, x, x, x, x, x, x]\n"
        + b"".join(
            b"%s: &%s [%s]\n" % (bytes([98 + i]), bytes([98 + i]), b", ".join([b"*" + bytes([97 + i])] * 10))
            for i in range(8)
        ),
        b"tests:\n  - id: a\n    input: hi\n    turns: 7\n    mode: conversation\n",
    ]
    for i, raw in enumerate(samples):
        path = tmp_path / f"g{i}.eval.yaml"
        path.write_bytes(raw)
        proc = subprocess.run(
            [sys.executable, "-m", "convoeval", "validate", str(path)], capture_output=True, text=True, timeout=60
        )
        assert proc.returncode == 2, (raw, proc.stdout, proc.stderr)
        assert "Traceback" not in proc.stderr, (raw, proc.stderr)
        assert proc.stderr.startswith(f"{path}:"), (raw, proc.stderr)


def test_schema_command_prints_json_schema(cli) -> None:
    code, out, _ = cli("schema")
    assert code == 0
    schema = json.loads(out)
    assert "tests" in schema["properties"]
    text = json.dumps(schema)
    for type_name in ("contains", "regex", "code-grader", "rubrics", "llm-grader"):
        assert f'"{type_name}"' in text


def test_underscore_type_names_read_as_dashes(tmp_path: Path) -> None:
    path = write(
        tmp_path / "s.eval.yaml",
        """\
tests:
  - id: a
    input: hi
    assertions:
      - {type: llm_grader, prompt: "Is {{ output }} polite?"}
      - {type: code_grader, command: ["true"]}
""",
    )
    suite = load_suite(path)
    assert [a.type for a in suite.tests[0].assertions] == ["llm-grader", "code-grader"]


@pytest.mark.parametrize("suite", sorted((REPO / "examples").rglob("*.eval.yaml")), ids=lambda p: p.name)
def test_exported_schema_accepts_the_examples(suite: Path) -> None:
    """Editors validate with the exported schema: it must accept what the loader accepts."""
    import jsonschema
    import yaml

    from convoeval import suite_json_schema

    load_suite(suite)  # registers the suite's `plugins:`, as `convoeval schema --plugin` would
    data = json.loads(json.dumps(yaml.safe_load(suite.read_text())))  # YAML int keys -> JSON strings
    validator = jsonschema.Draft202012Validator(suite_json_schema())
    assert [e.message for e in validator.iter_errors(data)] == []
    assert list(validator.iter_errors({"tests": [{"id": "a", "input": "x", "assertions": [{"type": "nope"}]}]}))
