"""Big eval files are read one test at a time: the same suites and `file:line` problems, with
memory bounded by the file's text (not by its parsed tests), anchors and merge keys intact."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tracemalloc
from pathlib import Path

import pytest
import yaml

from convoeval.spec import SpecError, load_suite, validate_paths
from convoeval.spec._lines import LineMap
from convoeval.spec._yaml_events import YamlFailure, YamlReader, _Core12Loader

from .conftest import write


def problems_of(path: Path) -> list[str]:
    return [str(p) for p in validate_paths([path])]


def _test_yaml(i: int, turns: int = 3, extra: str = "") -> str:
    lines = [f"  - id: c{i:04d}\n    mode: conversation\n    turns:"]
    for t in range(turns):
        lines.append(f"      - input: 'q{t} of c{i:04d}'\n        assertions: [{{type: contains, value: Reply}}]")
    return "\n".join(lines) + extra


def _test_json(i: int, turns: int = 3, **extra: object) -> str:
    turn_list = [
        {"input": f"q{t} of c{i:04d}", "assertions": [{"type": "contains", "value": "Reply"}]} for t in range(turns)
    ]
    return json.dumps({"id": f"c{i:04d}", "mode": "conversation", "turns": turn_list, **extra})


# -- the same suite and problems --------------------------------------------------------------


def test_a_generated_file_gives_the_same_suite_as_yaml_and_as_jsonl(tmp_path: Path) -> None:
    count = 400
    as_yaml = write(tmp_path / "y.eval.yaml", "tests:\n" + "\n".join(_test_yaml(i) for i in range(count)) + "\n")
    write(tmp_path / "cases.jsonl", "\n".join(_test_json(i) for i in range(count)) + "\n")
    as_jsonl = write(tmp_path / "j.eval.yaml", "tests: cases.jsonl\n")
    from_yaml, from_jsonl = load_suite(as_yaml), load_suite(as_jsonl)
    assert len(from_yaml.tests) == count
    assert [t.model_dump() for t in from_yaml.tests] == [t.model_dump() for t in from_jsonl.tests]
    assert from_yaml.tests[count - 1].turns[2].input == f"q2 of c{count - 1:04d}"  # type: ignore[index]


def test_equal_built_in_assertions_share_one_object(tmp_path: Path) -> None:
    suite = load_suite(write(tmp_path / "s.eval.yaml", "tests:\n" + "\n".join(_test_yaml(i) for i in range(3)) + "\n"))
    first = suite.tests[0].turns[0].assertions[0]  # type: ignore[index]
    assert all(turn.assertions[0] is first for test in suite.tests for turn in test.turns or [])


@pytest.mark.parametrize(
    "check", ["'The reply answers'", "{type: llm-grader, prompt: 'Is {{ output }} polite?'}"], ids=["rubric", "llm"]
)
def test_equal_judged_assertions_share_one_object_too(tmp_path: Path, check: str) -> None:
    """A rubric or an llm-grader written alike in many tests is validated once (the fields these
    types refuse from AgentV v5 must not change what the equal ones are remembered by)."""
    tests = "".join(f"  - id: t{i}\n    input: hi\n    assertions: [{check}]\n" for i in range(3))
    suite = load_suite(write(tmp_path / "s.eval.yaml", "tests:\n" + tests))
    first = suite.tests[0].assertions[0]
    assert all(test.assertions[0] is first for test in suite.tests)


def test_an_error_deep_in_test_n_names_its_line(tmp_path: Path) -> None:
    count, bad = 1500, 1234
    parts = [_test_yaml(i, extra="\n    colour: blue" if i == bad else "") for i in range(count)]
    suite = write(tmp_path / "s.eval.yaml", "name: big\ntests:\n" + "\n".join(parts) + "\n")
    line = 3 + bad * 9 + 9  # 2 lines of header, 9 lines a test; `colour` is the 10th line of test `bad`
    assert suite.read_text().splitlines()[line - 1] == "    colour: blue"
    assert problems_of(suite) == [f"{suite}:{line}: tests[{bad}].colour: unknown field 'colour'"]
    write(
        tmp_path / "cases.jsonl",
        "\n".join(_test_json(i, colour="blue") if i == bad else _test_json(i) for i in range(count)),
    )
    suite = write(tmp_path / "j.eval.yaml", "tests: cases.jsonl\n")
    assert problems_of(suite) == [f"{tmp_path / 'cases.jsonl'}:{bad + 1}: tests[{bad}].colour: unknown field 'colour'"]


def test_checks_across_tests_still_see_every_test(tmp_path: Path) -> None:
    parts = [_test_yaml(i) for i in range(300)]
    parts[5] += "\n    depends_on: [c0299, nope]"
    parts[299] += "\n    depends_on: c0005"
    parts[150] = parts[150].replace("id: c0150", "id: c0010")
    suite = write(tmp_path / "s.eval.yaml", "tests:\n" + "\n".join(parts) + "\n")
    text = suite.read_text().splitlines()
    deps, first = text.index("    depends_on: [c0299, nope]") + 1, text.index("  - id: c0010") + 1
    second = text.index("  - id: c0010", first) + 1
    assert problems_of(suite) == [
        f"{suite}:{deps}: tests[5].depends_on: dependency cycle: c0005 -> c0299 -> c0005",
        f"{suite}:{deps}: tests[5].depends_on[1]: unknown test id 'nope'",
        f"{suite}:{second}: tests[150].id: duplicate test id 'c0010' (first at line {first})",
    ]


def test_a_long_dependency_chain_loads(tmp_path: Path) -> None:
    parts = [f"  - id: t{i}\n    input: hi\n    depends_on: t{i + 1}" for i in range(2999)] + [
        "  - id: t2999\n    input: hi"
    ]
    suite = load_suite(write(tmp_path / "s.eval.yaml", "tests:\n" + "\n".join(parts) + "\n"))
    assert suite.tests[0].depends_on == ["t1"]


def test_tests_included_from_files_keep_their_own_lines_and_the_list_order(tmp_path: Path) -> None:
    write(tmp_path / "a.yaml", "- id: a1\n  input: hi\n- id: a2\n  input: hi\n  oops: 1\n")
    write(tmp_path / "b.jsonl", '{"id": "b1", "input": "hi"}\n{"id": "b2", "oops": 1, "input": "hi"}\n')
    suite = write(
        tmp_path / "s.eval.yaml",
        "tests:\n  - id: first\n    input: hi\n  - file://a.yaml\n  - file://b.jsonl\n  - id: last\n    oops: 1\n    input: hi\n",
    )
    assert problems_of(suite) == [
        f"{tmp_path / 'a.yaml'}:5: tests[2].oops: unknown field 'oops'",
        f"{tmp_path / 'b.jsonl'}:2: tests[4].oops: unknown field 'oops'",
        f"{suite}:7: tests[5].oops: unknown field 'oops'",
    ]


def test_an_include_that_fails_half_way_adds_no_tests(tmp_path: Path) -> None:
    write(tmp_path / "a.yaml", "- id: a1\n  input: hi\n  oops: 1\n- id: a2\n  input: [unclosed\n")
    suite = write(
        tmp_path / "s.eval.yaml", "tests:\n  - id: first\n    input: hi\n  - file://a.yaml\n  - id: a1\n    input: hi\n"
    )
    # a1 of the broken file is not counted: no `oops` problem, and no duplicate id with the a1 after it
    [problem] = problems_of(suite)
    assert problem.startswith(f"{tmp_path / 'a.yaml'}:6: (yaml): YAML syntax error")


def test_a_syntax_error_after_many_tests_is_the_only_problem(tmp_path: Path) -> None:
    parts = [_test_yaml(i, extra="\n    oops: 1") for i in range(200)] + ["  - id: broken\n    input: [unclosed"]
    suite = write(tmp_path / "s.eval.yaml", "tests:\n" + "\n".join(parts) + "\n")
    [problem] = problems_of(suite)
    assert problem.startswith(f"{suite}:") and "(yaml): YAML syntax error" in problem


# -- anchors, aliases and merge keys across tests ---------------------------------------------


def test_anchors_and_merge_keys_across_tests(tmp_path: Path) -> None:
    suite = write(
        tmp_path / "s.eval.yaml",
        """\
metadata:
  defaults: &defaults
    mode: conversation
    aggregation: min
tests:
  - &first
    <<: *defaults
    id: a
    turns: &turns
      - input: hi
        assertions: [{type: contains, value: x}]
      - input: ho
  - <<: *first
    id: b
    aggregation: max
  - <<: [*defaults, *first]
    id: c
    turns: *turns
  - <<: *defaults
    id: d
    turns:
      - input: hey
        assertions: &bad [{type: contains, valu: y}]
  - <<: *defaults
    id: e
    turns: [{input: hey, assertions: *bad}]
""",
    )
    # the line of an aliased assertion is its anchor's, for every test that uses it
    assert problems_of(suite) == [
        f"{suite}:23: tests[{i}].turns[0].assertions[0].{field}"
        for i in (3, 4)
        for field in ("valu: unknown field 'valu' (did you mean 'value'?)", "value: required field is missing")
    ]
    text = suite.read_text().replace("valu: y", "value: y")
    loaded = load_suite(write(suite, text))
    a, b, c, d, e = loaded.tests
    assert (a.aggregation, b.aggregation, c.aggregation, d.aggregation) == ("min", "max", "min", "min")
    assert [t.input for t in b.turns or []] == ["hi", "ho"] and b.id == "b"
    assert [t.input for t in c.turns or []] == ["hi", "ho"]
    assert e.turns[0].assertions[0].value == "y"  # type: ignore[index, union-attr]


def test_suite_keys_after_the_tests_are_applied_to_them(tmp_path: Path) -> None:
    write(
        tmp_path / "plug.py",
        "from typing import Literal\nfrom convoeval import Assertion, Grade, assertion_type\n\n"
        "@assertion_type\nclass LateType(Assertion):\n    type: Literal['late-type']\n\n"
        "    async def grade(self, ctx):\n        return Grade(score=1.0)\n",
    )
    suite = write(
        tmp_path / "s.eval.yaml",
        "tests:\n  - id: a\n    assertions: [{type: late-type}]\n  - id: b\ninput: shared\nplugins: [plug.py]\n",
    )
    loaded = load_suite(suite)  # `input` after the tests: the tests may leave theirs out
    assert [t.id for t in loaded.tests] == ["a", "b"] and loaded.tests[0].assertions[0].type == "late-type"


def test_a_top_level_merge_key_and_a_repeated_tests_key_still_load(tmp_path: Path) -> None:
    suite = write(tmp_path / "s.eval.yaml", "x: &x {name: merged}\n<<: *x\ntests:\n  - id: a\n    input: hi\n")
    problems = problems_of(suite)
    assert problems == [f"{suite}:1: x: unknown field 'x'"]
    suite = write(tmp_path / "t.eval.yaml", "tests:\n  - id: a\n    input: hi\ntests:\n  - id: b\n    input: hi\n")
    assert problems_of(suite) == [f"{suite}:4: tests: duplicate key 'tests'"]


def test_recursive_undefined_and_exploding_aliases(tmp_path: Path) -> None:
    suite = write(tmp_path / "r.eval.yaml", "tests:\n  - id: a\n    input: hi\n    metadata: &m\n      self: *m\n")
    assert problems_of(suite) == [f"{suite}:4: tests[0].metadata.self: recursive YAML alias"]
    suite = write(tmp_path / "u.eval.yaml", "tests:\n  - id: a\n    input: *nope\n")
    assert problems_of(suite) == [f"{suite}:3: (yaml): YAML syntax error: found undefined alias"]
    bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{n}: &{n} [{', '.join([f'*{p}'] * 10)}]\n" for p, n in zip("abcdef", "bcdefg", strict=True)
    )
    suite = write(tmp_path / "b.eval.yaml", bomb + "tests: [{id: a, input: hi}]\n")
    assert problems_of(suite) == [f"{suite}:1: (yaml): YAML error: more than 1000000 values (an alias bomb?)"]


# -- the reader against PyYAML ----------------------------------------------------------------

RICH = """\
base: &base {a: 1, b: [x, y], c: {d: e}}
other: &other {b: 2, z: 3}
scalars: &scalars [1, 2.5, true, null, "q", 0o10, 0x1f, .inf, yes, 2024-01-01, ~, '', -7]
m1: {<<: *base, a: 9}
m2:
  own: v
  <<: [*base, *other]
m3: {<<: {k: v, <<: *other}, k: w}
aliases: [*scalars, *base, *scalars]
nested: {x: {y: {z: [*base, {<<: *other}]}}}
tagged: {s: !!str 12, i: !!int "7", f: !!float 3, bin: !!binary aGk=}
keys: {1: one, 2.5: two, false: f, "quoted": q, '<<': not a merge}
block: |
  line1
  line2
folded: >
  a
  b
empty:
anchored: &s hello
used: *s
"""


def test_the_reader_builds_what_pyyaml_constructs() -> None:
    reader = YamlReader(RICH, "rich.yaml")
    assert reader.begin() == "mapping"
    value = reader.value((), LineMap("rich.yaml"))
    reader.end()
    assert value == yaml.load(RICH, Loader=_Core12Loader)
    assert not reader.problems
    reader = YamlReader("[010, 0o10]\n", "f.yaml")
    reader.begin()
    assert reader.value((), LineMap("f.yaml")) == [10, 8]  # YAML 1.2: no leading-zero octal


def test_the_reader_records_lines_of_merged_and_aliased_values() -> None:
    lines = LineMap("rich.yaml")
    reader = YamlReader(RICH, "rich.yaml")
    reader.begin()
    reader.value((), lines)
    assert lines.locate(("m1", "a")) == ("rich.yaml", 4)  # its own key
    assert lines.locate(("m1", "c", "d")) == ("rich.yaml", 1)  # merged from the anchor
    assert lines.locate(("m2", "z")) == ("rich.yaml", 2)
    assert lines.locate(("aliases", 1, "b", 0)) == ("rich.yaml", 1)


@pytest.mark.parametrize(
    "text,message",
    [
        ("a: 1\n---\nb: 2\n", "YAML syntax error: expected a single document in the stream but found another document"),
        ("a: &x 1\nb: &x 2\n", "YAML syntax error: found duplicate anchor; first occurrence second occurrence"),
        ("a: {<<: 3}\n", "YAML error: while constructing a mapping"),
        ("a: !foo 1\n", "YAML error: could not determine a constructor for the tag '!foo'"),
    ],
)
def test_the_reader_fails_as_composing_did(text: str, message: str) -> None:
    reader = YamlReader(text, "f.yaml")
    with pytest.raises(YamlFailure) as failure:
        reader.begin()
        reader.value((), LineMap("f.yaml"))
        reader.end()
    assert failure.value.problem.message.startswith(message)
    with pytest.raises(yaml.YAMLError):  # PyYAML refuses it too
        yaml.load(text, Loader=_Core12Loader)


# -- memory -----------------------------------------------------------------------------------


def test_validating_holds_about_the_text_not_the_tests(tmp_path: Path) -> None:
    """Composing held ~40 bytes of node tree per byte of YAML; streaming holds about the text."""
    suite = write(tmp_path / "s.eval.yaml", "tests:\n" + "\n".join(_test_yaml(i, turns=5) for i in range(600)) + "\n")
    validate_paths([suite])  # the types' models are built once
    size = suite.stat().st_size
    tracemalloc.start()
    try:
        assert validate_paths([suite]) == []
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 4 * size + 500_000, (peak, size)


def test_load_suite_still_raises_every_problem(tmp_path: Path) -> None:
    parts = [_test_yaml(i, extra="\n    oops: 1" if i % 100 == 0 else "") for i in range(300)]
    suite = write(tmp_path / "s.eval.yaml", "tests:\n" + "\n".join(parts) + "\n")
    with pytest.raises(SpecError) as error:
        load_suite(suite)
    assert [p.field for p in error.value.problems] == ["tests[0].oops", "tests[100].oops", "tests[200].oops"]


def test_metadata_keys_keep_the_file_order_in_every_process(tmp_path: Path) -> None:
    """A resumed run compares suite fingerprints made in another process: same file, same JSON."""
    suite = write(
        tmp_path / "s.eval.yaml",
        "version: '1'\ntags: [a]\nauthor: me\nlicense: MIT\nnote: n\ntests:\n  - id: t\n    input: hi\n",
    )
    code = f"from convoeval.spec import load_suite; print(load_suite({str(suite)!r}).model_dump_json())"
    runs = {
        subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, env={**os.environ, "PYTHONHASHSEED": seed}
        ).stdout
        for seed in ("1", "2", "3")
    }
    assert len(runs) == 1
    assert list(load_suite(suite).metadata) == ["version", "tags", "author", "license", "note"]


@pytest.mark.parametrize(
    "item,problem",
    [
        ("metadata: {b: !!bool maybe}", "4: tests[0].metadata.b: invalid value 'maybe': not a valid bool"),
        ("depends_on: [{x: 1}]", "4: tests[0].depends_on[0]: Input should be a valid string"),
    ],
)
def test_odd_values_are_file_line_problems(tmp_path: Path, item: str, problem: str) -> None:
    suite = write(tmp_path / "s.eval.yaml", f"tests:\n  - id: a\n    input: hi\n    {item}\n")
    [found] = problems_of(suite)
    assert found.startswith(f"{suite}:{problem}")
