"""AgentV spellings and semantics in eval files (issue 14, items 1-4 and 6-10)."""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path

import pytest

import convoeval
from convoeval.spec import SpecError, load_suite, messages_text, validate_paths
from convoeval.testing import FakeOpenAIServer, tool_calls

from .conftest import read_jsonl, write
from .judge_fakes import prompt_of


def problems_of(path: Path) -> list[str]:
    return [str(p) for p in validate_paths([path])]


def run(cli, suite: Path, tmp_path: Path, *extra: str) -> list[dict]:
    out = tmp_path / "r.jsonl"
    code, stdout, stderr = cli(
        "run", suite, "--target", "openai:gpt-4o-mini", "--judge", "openai:fake-judge", "-o", out, *extra
    )
    assert code in (0, 1), stdout + stderr
    return read_jsonl(out)


# -- 1. metadata fields and legacy names ------------------------------------------------------


def test_metadata_fields_are_kept_under_the_result_metadata(cli, fake_openai: FakeOpenAIServer, tmp_path: Path) -> None:
    suite = write(
        tmp_path / "m.eval.yaml",
        """\
$schema: https://agentv.dev/schema.json
version: "1.0"
tags: [demo]
author: someone
license: MIT
requires: {agentv: ">=4"}
note: a note
governance: {owner: qa}
suite: smoke
tests:
  - id: a
    conversation_id: thread-1
    tags: [fast]
    input: hi
    assertions: [{type: contains, value: hi}]
""",
    )
    assert problems_of(suite) == []
    [result] = run(cli, suite, tmp_path)
    meta = result["metadata"]
    assert meta["conversation_id"] == "thread-1" and meta["tags"] == ["fast"]  # the test's own win
    assert meta["version"] == "1.0" and meta["author"] == "someone" and meta["governance"] == {"owner": "qa"}
    assert meta["$schema"] == "https://agentv.dev/schema.json" and meta["suite"] == "smoke"


def test_legacy_names_evaluators_eval_cases_and_v5_assert(tmp_path: Path) -> None:
    suite = write(
        tmp_path / "l.eval.yaml",
        """\
evaluators:
  - {type: contains, value: x}
eval_cases:
  - id: a
    input: hi
    evaluators: [{type: regex, value: "h."}]
  - id: b
    input: ho
    assert: [{type: equals, value: ho}]
  - id: c
    mode: conversation
    turns:
      - input: one
        assert: [{type: composite, assert: [{type: contains, value: o}]}]
""",
    )
    loaded = load_suite(suite)
    assert [a.type for a in loaded.assertions] == ["contains"]
    assert [t.assertions[0].type for t in loaded.tests[:2]] == ["regex", "equals"]
    composite = loaded.tests[2].turns[0].assertions[0]
    assert composite.type == "composite" and composite.assertions[0].type == "contains"


def test_error_lines_survive_renamed_keys(tmp_path: Path) -> None:
    suite = write(tmp_path / "e.eval.yaml", "eval_cases:\n  - id: a\n    input: hi\n    assert:\n      - type: nope\n")
    assert problems_of(suite) == [
        f"{suite}:5: eval_cases[0].assert[0].type: unknown assertion type 'nope'".replace(
            "eval_cases[0].assert[0]", "tests[0].assertions[0]"
        )
    ]


def test_v5_fields_are_named_in_the_error(tmp_path: Path) -> None:
    suite = write(
        tmp_path / "v5.eval.yaml", "prompts:\n  - command: [bash, gen.sh]\ntests:\n  - id: a\n    vars: {input: hi}\n"
    )
    assert problems_of(suite) == [
        f"{suite}:2: prompts[0]: this AgentV form is not supported: `command` (a program writing the prompt)"
    ]  # no "input is missing" on top
    # The v5 spellings convoeval reads: the identity prompt, `vars: {input}`, `metric`.
    write(
        suite,
        "prompts: ['{{ input }}']\ntests:\n  - id: a\n    vars: {input: hi}\n"
        "    assert: [{metric: says_hi, type: contains, value: hi}]\n",
    )
    test = load_suite(suite).tests[0]
    assert (test.input, test.assertions[0].name) == ("hi", "says_hi")


# -- 2. YAML 1.2 core schema ------------------------------------------------------------------


def test_yes_no_on_off_and_dates_are_strings(tmp_path: Path) -> None:
    suite = write(
        tmp_path / "y.eval.yaml",
        """\
tests:
  - id: a
    input: on
    expected_output: 2025-01-01
    assertions:
      - {type: equals, value: yes}
      - {type: contains, value: off}
      - {type: contains, value: 010}
""",
    )
    loaded = load_suite(suite)
    test = loaded.tests[0]
    assert (test.input, test.expected_output) == ("on", "2025-01-01")
    assert [a.value for a in test.assertions] == ["yes", "off", "10"]  # 010 is ten in YAML 1.2, not octal


def test_type_errors_say_which_yaml_type_was_seen(tmp_path: Path) -> None:
    suite = write(tmp_path / "t.eval.yaml", "tests:\n  - id: a\n    input: true\n    criteria: 12\n")
    problems = problems_of(suite)
    assert (
        f"{suite}:3: tests[0].input: Input should be a valid string (the YAML value is the boolean true; "
        "quote it to make it text)" in problems[0]
    )
    assert (
        problems[1]
        == f"{suite}:4: tests[0].criteria: Input should be a valid string (the YAML value is the integer 12)"
    )


def test_an_unquoted_template_value_is_an_error_that_says_to_quote_it(tmp_path: Path) -> None:
    """`input: {{ name }}` is YAML's mapping `{{name: null}: null}`: it was valid, and the model
    was sent `{"{'name': None}": null}`; `prompt: {{ output }} ...` and `input: Note: hi` were
    bare YAML syntax errors."""
    suite = write(tmp_path / "a.eval.yaml", "tests:\n  - id: a\n    input: {{ name }}\n")
    assert problems_of(suite) == [
        f"{suite}:3: tests[0].input: a mapping or list as a key: a value written {{{{ name }}}} must be quoted "
        '("{{ name }}") to be a template'
    ]
    text = "tests:\n  - id: a\n    input: hi\n    assertions:\n      - type: llm-grader\n        prompt: {{ output }} ok?\n"
    [problem] = problems_of(write(tmp_path / "b.eval.yaml", text))
    assert problem.endswith('(a value that starts with `{{` must be quoted: "{{ output }} ...")')
    [problem] = problems_of(write(tmp_path / "c.eval.yaml", "tests:\n  - id: a\n    input: Note: hi\n"))
    assert problem.endswith(
        'mapping values are not allowed in this context (a value holding ": " must be quoted: key: "Note: ...")'
    )
    quoted = 'tests:\n  - id: a\n    input: "{{ name }}: hi"\n    assertions: [{type: contains, value: "a: b"}]\n'
    assert problems_of(write(tmp_path / "d.eval.yaml", quoted)) == []


def test_an_assertion_written_as_type_colon_value_says_how_to_write_it(tmp_path: Path) -> None:
    """Before: `- contains: hello` was "an assertion mapping needs a `type`" alone."""
    suite = write(
        tmp_path / "a.eval.yaml", "tests:\n  - id: a\n    input: hi\n    assertions:\n      - contains: hello\n"
    )
    assert problems_of(suite) == [
        f"{suite}:5: tests[0].assertions[0]: an assertion mapping needs a `type`: write `{{type: contains, value: ...}}`"
    ]


def test_a_turn_or_message_written_as_a_string_says_what_it_must_be(tmp_path: Path) -> None:
    """Not pydantic's "a valid dictionary or instance of Turn": the fields the mapping needs."""
    text = "tests:\n  - id: a\n    mode: conversation\n    input: [You are terse]\n    turns:\n      - hello\n"
    suite = write(tmp_path / "t.eval.yaml", text)
    assert problems_of(suite) == [
        f"{suite}:4: tests[0].input[0]: must be a mapping with `role: ...` (the YAML value is a string)",
        f"{suite}:6: tests[0].turns[0]: must be a mapping with `input: ...` (the YAML value is a string)",
    ]


# -- 3. merge keys ----------------------------------------------------------------------------


def test_merge_key_override_is_legal_and_duplicates_are_not(tmp_path: Path) -> None:
    suite = write(
        tmp_path / "m.eval.yaml",
        """\
base: &base
  input: attack
  criteria: refuses
tests:
  - <<: *base
    id: a
    input: override
  - <<: *base
    id: b
    id: c
""",
    )
    problems = problems_of(suite)
    assert problems == [
        f"{suite}:10: tests[1].id: duplicate key 'id'",
        f"{suite}:1: base: unknown field 'base'",
    ] or problems == [f"{suite}:1: base: unknown field 'base'", f"{suite}:10: tests[1].id: duplicate key 'id'"]
    good = write(
        tmp_path / "g.eval.yaml",
        "x: &b {input: attack, criteria: refuses}\ntests:\n  - <<: *b\n    id: a\n    input: override\n".replace(
            "x:", "metadata:"
        ),
    )
    assert load_suite(good).tests[0].input == "override"


# -- 4. ${{ VAR }} across the eval file -------------------------------------------------------


def test_env_references_are_substituted_and_unset_ones_are_empty_with_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # Issue 28 changed this: AgentV's interpolateEnv makes an unset variable an empty string.
    monkeypatch.setenv("PERSONA", "You are terse.")
    monkeypatch.delenv("NOT_SET_ANYWHERE", raising=False)
    suite = write(
        tmp_path / "e.eval.yaml",
        """\
tests:
  - id: a
    input:
      - {role: system, content: "${{ PERSONA }} Always."}
      - {role: user, content: hi}
""",
    )
    assert load_suite(suite).tests[0].input[0].content == "You are terse. Always."
    write(
        suite,
        "description: x${{NOT_SET_ANYWHERE}}y\ntests:\n  - id: a\n    input: hi\n    criteria: ${{NOT_SET_ANYWHERE}}\n",
    )
    with caplog.at_level(logging.WARNING, logger="convoeval.spec"):
        loaded = load_suite(suite)
    assert (loaded.tests[0].criteria, loaded.description) == ("", "xy")
    assert f"{suite}:5: tests[0].criteria: environment variable NOT_SET_ANYWHERE is not set" in caplog.text
    assert "sent as an empty string, as AgentV does" in caplog.text


# -- 6. content blocks ------------------------------------------------------------------------


def test_file_blocks_and_json_content_reach_the_target(cli, fake_openai: FakeOpenAIServer, tmp_path: Path) -> None:
    write(tmp_path / "docs" / "guide.md", "Always cite the guide.\n")
    write(tmp_path / "data.csv", "a,b\n1,2\n")
    suite = write(
        tmp_path / "f.eval.yaml",
        """\
tests:
  - id: blocks
    input:
      - role: user
        content:
          - {type: file, value: docs/guide.md}
          - {type: text, value: Summarise.}
    assertions: [{type: contains, value: x}]
  - id: shorthand
    input_files: [data.csv]
    input: Read it.
    assertions: [{type: contains, value: x}]
  - id: json
    input:
      - {role: user, content: {task: classify, id: 7}}
    expected_output: {riskLevel: Low}
    assertions: [{type: contains, value: x}]
""",
    )
    run(cli, suite, tmp_path)
    sent = {r["messages"][-1]["content"] for r in fake_openai.target_requests()}
    # As AgentV's formatSegment: the file's text trimmed between the tags.
    assert '<file path="docs/guide.md">\nAlways cite the guide.\n</file>\nSummarise.' in sent
    assert '<file path="data.csv">\na,b\n1,2\n</file>\nRead it.' in sent
    assert json.dumps({"task": "classify", "id": 7}, indent=2) in sent
    assert json.loads(
        load_suite(suite).tests[2].expected_output and json.dumps(load_suite(suite).tests[2].expected_output)
    ) == {"riskLevel": "Low"}


def test_a_missing_attachment_is_a_warning_and_left_out_images_are_errors(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # Issue 28 changed this: AgentV warns about a missing attachment and drops the block.
    write(tmp_path / "pic.png", "not really")
    suite = write(
        tmp_path / "f.eval.yaml",
        """\
tests:
  - id: a
    input:
      - role: user
        content:
          - {type: file, value: nowhere.md}
          - {type: text, value: Go on.}
""",
    )
    with caplog.at_level(logging.WARNING, logger="convoeval.spec"):
        loaded = load_suite(suite)
    assert [p.type for p in loaded.tests[0].input[0].content] == ["text"]
    assert f"{suite}:6: tests[0].input[0].content[0]: file not found: nowhere.md" in caplog.text
    assert "the block is left out, as AgentV does" in caplog.text
    write(suite, "tests:\n  - id: a\n    input:\n      - role: user\n        content: [{type: file, value: pic.png}]\n")
    assert problems_of(suite) == [
        f"{suite}:5: tests[0].input[0].content[0].value: pic.png: image attachments are not supported yet "
        "(text files only)",
    ]


def test_attachments_are_looked_up_in_each_folder_up_to_the_repository_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    monkeypatch.chdir(repo)  # the working folder is the last place AgentV looks
    write(repo / "AGENTS.md", "root rules")
    write(repo / "examples" / "shared.md", "shared notes")
    write(tmp_path / "outside.md", "not in the repository")
    suite = write(
        repo / "examples" / "one" / "evals" / "e.eval.yaml",
        """\
tests:
  - id: a
    input:
      - role: user
        content:
          - {type: file, value: /AGENTS.md}
          - {type: file, value: shared.md}
          - {type: file, value: outside.md}
          - {type: text, value: Go.}
""",
    )
    parts = load_suite(suite).tests[0].input[0].content
    assert [(p.type, p.value, p.text) for p in parts] == [
        ("file", "AGENTS.md", "root rules"),  # leading / stripped, found at the repository root
        ("file", "shared.md", "shared notes"),  # found two folders up
        ("text", "Go.", None),  # outside.md is above the repository root: left out
    ]


# -- 7. code-grader stdin ---------------------------------------------------------------------


def test_code_grader_gets_config_extra_keys_and_output_messages(
    cli, fake_openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    write(
        tmp_path / "grade.py",
        "import json, sys\ndata = json.load(sys.stdin)\n"
        "open('seen.json', 'w').write(json.dumps(data))\nprint(json.dumps({'score': 1}))\n",
    )
    suite = write(
        tmp_path / "c.eval.yaml",
        f"""\
tests:
  - id: a
    input: hi
    assertions:
      - type: code-grader
        command: ["{sys.executable}", grade.py]
        config: {{max_words: 50}}
        threshold: 0.7
""",
    )
    run(cli, suite, tmp_path)
    seen = json.loads((tmp_path / "seen.json").read_text())
    assert seen["config"] == {"max_words": 50, "threshold": 0.7}
    assert seen["output"] == [{"role": "assistant", "content": "Reply to: hi", "tool_calls": []}]
    assert seen["output_text"] == "Reply to: hi" and seen["question"] == "hi"
    assert seen["input"] == [{"role": "user", "content": "hi"}]  # the current fields stay


# -- 8. llm-grader prompt semantics -----------------------------------------------------------


def test_inline_prompt_without_variables_is_criteria_in_the_default_prompt(
    cli, fake_openai: FakeOpenAIServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    write(tmp_path / "rubric.md", "Is it polite? {{ output }}")
    suite = write(
        tmp_path / "p.eval.yaml",
        """\
tests:
  - id: a
    input: Say hello
    assertions:
      - {type: llm-grader, prompt: Did the response greet the user?}
      - {type: llm-grader, prompt: rubric.md}
""",
    )
    with caplog.at_level(logging.WARNING, logger="convoeval.spec"):
        assert problems_of(suite) == []
    assert f"{suite}:6: tests[0].assertions[1].prompt: 'rubric.md' names a file but is sent as inline" in caplog.text
    run(cli, suite, tmp_path)
    prompts = [prompt_of(r) for r in fake_openai.judge_requests()]
    greet = next(p for p in prompts if "Did the response greet the user?" in p)
    assert "Reply to: Say hello" in greet and "Say hello" in greet
    path = next(p for p in prompts if "rubric.md" in p)
    assert "Is it polite?" not in path


# -- 9. file:// test includes -----------------------------------------------------------------


def test_file_includes_inside_tests(tmp_path: Path) -> None:
    write(tmp_path / "cases" / "more.yaml", "- id: b\n  input: two\n- id: c\n  input: three\n")
    write(tmp_path / "cases" / "more.jsonl", '{"id": "d", "input": "four"}\n{"id": "e", "inptu": "x"}\n')
    suite = write(
        tmp_path / "i.eval.yaml",
        """\
tests:
  - id: a
    input: one
  - file://cases/more.yaml
  - file://cases/more.jsonl
  - id: f
    input: six
    criteria: 7
""",
    )
    problems = problems_of(suite)
    jsonl = (tmp_path / "cases" / "more.jsonl").resolve()
    assert f"{jsonl}:2: tests[4].inptu: unknown field 'inptu' (did you mean 'input'?)" in problems
    assert any(p.startswith(f"{suite}:8: tests[5].criteria: Input should be a valid string") for p in problems)
    write(tmp_path / "cases" / "more.jsonl", '{"id": "d", "input": "four"}\n')
    write(suite, "tests:\n  - id: a\n    input: one\n  - file://cases/more.yaml\n  - file://cases/more.jsonl\n")
    assert [t.id for t in load_suite(suite).tests] == ["a", "b", "c", "d"]
    write(suite, "tests:\n  - cases/more.yaml\n  - file://cases/gone.yaml\n  - a plain string\n")
    with pytest.raises(SpecError) as info:
        load_suite(suite)
    assert [str(p) for p in info.value.problems] == [
        f"{suite}:3: tests[1]: tests file not found: cases/gone.yaml (paths are relative to the eval file's folder)",
        f"{suite}:4: tests[2]: tests file not found: a plain string (paths are relative to the eval file's folder)"
        " (a test is a mapping; a string names a file of tests)",
    ]


# -- older AgentV names -----------------------------------------------------------------------


def test_legacy_judge_types_reference_answer_and_skip_defaults(
    cli, fake_openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    write(tmp_path / "ok.py", "import json, sys\njson.load(sys.stdin)\nprint(json.dumps({'score': 1}))\n")
    suite = write(
        tmp_path / "o.eval.yaml",
        f"""\
assertions:
  - {{name: suite_check, type: contains, value: Reply}}
tests:
  - id: a
    input: hi
    reference_answer: Reply to hi
    assert:
      - {{name: script_check, type: code_judge, script: ["{sys.executable}", ok.py]}}
      - {{name: judged, type: llm_judge, prompt: "Grade {{{{ output }}}}"}}
  - id: b
    input: ho
    execution: {{skip_defaults: true}}
    assertions: [{{name: own, type: equals, value: Reply to ho}}]
""",
    )
    loaded = load_suite(suite)
    assert loaded.tests[0].expected_output == "Reply to hi"
    assert [a.type for a in loaded.tests[0].assertions] == ["code-grader", "llm-grader"]
    results = {r["test_id"]: r for r in run(cli, suite, tmp_path)}
    graders = {t: [g["name"] for g in r["scores"][0]["graders"]] for t, r in results.items()}
    assert graders == {"a": ["script_check", "judged", "suite_check"], "b": ["own"]}
    assert results["a"]["grader_errors"] == 0 and results["a"]["verdict"] == "pass"


def test_expected_tool_calls_and_messages_without_content(tmp_path: Path) -> None:
    suite = write(
        tmp_path / "t.eval.yaml",
        """\
tests:
  - id: a
    input: What is the capital of France?
    expected_output:
      - role: assistant
        tool_calls: [{tool: search, input: {q: capital}, output: {results: [Paris]}}]
      - {role: assistant, content: Paris.}
  - id: b
    input:
      - {role: user}
""",
    )
    assert problems_of(suite) == [
        f"{suite}:10: tests[1].input[0]: a message needs `content` (an assistant message may give `tool_calls` instead)"
    ]
    write(suite, suite.read_text().split("  - id: b")[0])
    expected = load_suite(suite).tests[0].expected_output
    assert '"tool": "search"' in messages_text(expected) and messages_text(expected).endswith("Paris.")


# -- issue 28: AgentV's workspace forms and v4.42 fields --------------------------------------

HOOK = """\
import json, pathlib, sys
context = json.load(sys.stdin)
root = pathlib.Path(context["workspace_path"])
(root / "marker.txt").write_text(sys.argv[1] + " " + sys.argv[2] + " " + pathlib.Path.cwd().name)
"""

CHECK = """\
import json, pathlib, sys
data = json.load(sys.stdin)
marker = pathlib.Path(data["workspace"]) / "marker.txt"
text = marker.read_text() if marker.exists() else ""
print(json.dumps({"score": 1.0 if text else 0.0, "assertions": [{"text": text or "no marker", "passed": bool(text)}]}))
"""


def _agentv_tree(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / ".agentv").mkdir()
    return repo


def test_hook_commands_as_lists_get_agentv_stdin_and_run_in_the_eval_folder(
    cli, fake_openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    repo = _agentv_tree(tmp_path)
    evals = repo / "ex" / "evals"
    write(evals / "hook.py", HOOK)
    write(evals / "check.py", CHECK)
    write(repo / "ex" / "template" / "README.md", "template")
    suite = write(
        evals / "dataset.eval.yaml",
        f"""\
workspace:
  template: ../template
  mode: pooled
  hooks:
    before_all:
      command: ["{sys.executable}", hook.py, "{{{{workspace_path}}}}/x", two words]
    after_each:
      reset: fast
tests:
  - id: a
    input: hi
    assertions:
      - {{type: code-grader, command: ["{sys.executable}", "{evals / "check.py"}"]}}
""",
    )
    results = run(cli, suite, tmp_path)
    [grader] = results[0]["scores"][-1]["graders"]
    # argv kept whole ("two words"), {{workspace_path}} filled, run from the eval file's folder.
    assert grader["verdict"] == "pass", grader
    assert grader["assertions"][0]["text"].endswith("/x two words evals")


def test_a_shared_workspace_file_named_by_a_string(tmp_path: Path) -> None:
    repo = _agentv_tree(tmp_path)
    write(repo / "shared" / "workspace.yaml", "template: ./tpl\nmode: pooled\nhooks:\n  after_each: {reset: fast}\n")
    (repo / "shared" / "tpl").mkdir()
    suite = write(
        repo / "shared" / "evals" / "a" / "e.eval.yaml",
        "workspace: ../../workspace.yaml\ntests:\n  - {id: a, input: hi}\n",
    )
    workspace = load_suite(suite).workspace
    assert workspace is not None and workspace.template == str((repo / "shared" / "tpl").resolve())
    assert workspace.hooks.after_each is None  # only `reset:`: every trial's workspace is fresh


def test_static_workspaces_are_refused_saying_why(tmp_path: Path) -> None:
    suite = write(
        tmp_path / "e.eval.yaml", "workspace:\n  mode: static\n  path: /srv/ws\ntests:\n  - {id: a, input: hi}\n"
    )
    [problem] = problems_of(suite)
    assert problem.startswith(f"{suite}:3: workspace.path: this AgentV workspace form is not supported: `mode: static`")


def test_v4_42_repos_repo_and_commit(tmp_path: Path) -> None:
    suite = write(
        tmp_path / "e.eval.yaml",
        "workspace:\n  repos:\n    - {path: ./r, repo: EntityProcess/agentv, commit: abc123, sparse: [src]}\n"
        "tests:\n  - {id: a, input: hi}\n",
    )
    [repo] = load_suite(suite).workspace.repos
    assert (repo.path, repo.source.url, repo.checkout.ref, repo.clone.sparse) == (
        "./r",
        "https://github.com/EntityProcess/agentv.git",
        "abc123",
        ["src"],
    )


def test_skill_trigger_reads_the_tool_calls(cli, fake_openai: FakeOpenAIServer, tmp_path: Path) -> None:
    fake_openai.reply = lambda body: tool_calls(("Skill", {"skill": "csv-analyzer"}))
    suite = write(
        tmp_path / "e.eval.yaml",
        """\
tests:
  - id: a
    input: analyse
    assertions:
      - {type: skill-trigger, skill: csv-analyzer}
      - {type: skill-trigger, skill: other, should_trigger: false}
      - {type: skill-trigger, skill: other}
""",
    )
    results = run(cli, suite, tmp_path)
    graders = results[0]["scores"][0]["graders"]
    assert [(g["verdict"], g["assertions"][0]["text"]) for g in graders] == [
        ("pass", 'Skill tool invoked with skill="csv-analyzer"'),
        ("pass", 'Skill "other" correctly did not trigger'),
        ("fail", 'Skill "other" not found in 1 tool call(s)'),
    ]


def test_tests_naming_a_folder_of_cases(tmp_path: Path) -> None:
    write(tmp_path / "cases" / "b-second" / "case.yaml", "input: two\ncriteria: c\n")
    write(tmp_path / "cases" / "a-first" / "case.yaml", "id: first\ninput: one\ncriteria: c\n")
    (tmp_path / "cases" / "a-first" / "workspace").mkdir()
    (tmp_path / "cases" / "no-case").mkdir()
    suite = write(tmp_path / "e.eval.yaml", "tests: ./cases/\n")
    tests = load_suite(suite).tests
    assert [t.id for t in tests] == ["first", "b-second"]
    assert tests[0].workspace is not None and tests[0].workspace.template.endswith("a-first/workspace")
    write(tmp_path / "cases" / "b-second" / "case.yaml", "input: two\ncriteria: c\nbogus: 1\n")
    assert problems_of(suite) == [
        f"{tmp_path / 'cases' / 'b-second' / 'case.yaml'}:3: tests[1].bogus: unknown field 'bogus'"
    ]


def test_agentv_only_fields_custom_assertions_and_labels(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    repo = _agentv_tree(tmp_path)
    write(repo / ".agentv" / "assertions" / "word-count.ts", "// a grader\n")
    suite = write(
        repo / "ex" / "e.eval.yaml",
        """\
defaults:
  system: &sys Be brief.
env:
  OPENAI_API_KEY: "{{ env.SECRET_KEY }}"
evaluator: llm_grader
preprocessors: [{type: xlsx, command: [bun, x.ts]}]
tests:
  - id: a
    description: a test
    input: [{role: system, content: *sys}, {role: user, content: hi, name: Ann}]
    assertions:
      - {type: word-count, min: 3}
      - {type: contains, value: hi, id: SAYS_HI}
      - type: tool-trajectory
        expected: [{tool: search, input: {q: x}, output: {hits: 1}, name: step}]
""",
    )
    with caplog.at_level(logging.WARNING, logger="convoeval.spec"):
        loaded = load_suite(suite)
    assert "defaults: ignored, as AgentV ignores it" in caplog.text
    assert "env: ignored, as AgentV ignores it" in caplog.text and "SECRET_KEY" not in caplog.text
    assert "env" not in loaded.metadata
    assert loaded.metadata["evaluator"] == "llm_grader" and "preprocessors" in loaded.metadata
    custom, contains, trajectory = loaded.tests[0].assertions
    assert custom.type == "code-grader" and custom.name == "word-count"
    assert custom.command == ["bun", "run", str(repo / ".agentv" / "assertions" / "word-count.ts")]
    assert contains.name == "SAYS_HI"
    # AgentV reads only `args` on an expected call (grader-parser.ts, v4.15 to v4.42.4): `input`
    # checks nothing there, as the real agentv CLI shows (tests/test_agentv_real_cli.py).
    assert trajectory.expected[0].args is None
    assert "expected[0].input: ignored, as AgentV ignores it" in caplog.text


def test_one_message_of_several_blocks_is_sent_as_agentv_flat_text(tmp_path: Path) -> None:
    repo = _agentv_tree(tmp_path)
    write(repo / "ex" / "notes.md", "  Notes.  \n")
    suite = write(
        repo / "ex" / "e.eval.yaml",
        "tests:\n  - id: a\n    input:\n      - role: user\n        content:\n"
        "          - {type: file, value: notes.md}\n          - {type: text, value: '  Go.  '}\n",
    )
    [message] = load_suite(suite).tests[0].input
    assert message.content == '<file path="notes.md">\nNotes.\n</file>\n\nGo.'


def test_per_test_vars_fill_the_test_and_the_suite_input(fake_openai: FakeOpenAIServer, tmp_path: Path) -> None:
    suite = write(
        tmp_path / "e.eval.yaml",
        """\
input:
  - {role: system, content: "You answer {{category}} questions."}
tests:
  - id: a
    vars: {category: geography, q: Capital of France?, expected: {answer: Paris, n: 1}}
    criteria: "Answers {{q}}"
    input: "Q: {{q}} {{missing}}"
    expected_output: "{{expected.answer}}"
    assertions: [{type: contains, value: x}]
""",
    )
    [test] = load_suite(suite).tests
    assert (test.criteria, test.input, test.expected_output) == (
        "Answers Capital of France?",
        "Q: Capital of France? {{missing}}",
        "Paris",
    )
    convoeval.run(suite, target="openai:m", judge="openai:j", cache=False, store=False)
    [request] = fake_openai.target_requests()
    assert request["messages"][0] == {"role": "system", "content": "You answer geography questions."}


def test_agentv_forms_convoeval_does_not_support_say_so_and_why(tmp_path: Path) -> None:
    write(tmp_path / "targets.yaml", "targets:\n  - {name: other_judge, provider: openai, model: j}\n")
    suite = write(
        tmp_path / "e.eval.yaml",
        """\
execution:
  targets:
    - {name: variant, use_target: x, hooks: {before_each: {command: [bash, x.sh]}}}
tests:
  - id: a
    input: hi
    assertions:
      - {type: llm-grader, target: other_judge, temperature: 0}
      - {type: llm-grader, max_steps: 3}
""",
    )
    problems = problems_of(suite)
    assert [p.split(": ")[1] for p in problems] == ["execution.targets[0]"]
    assert all("this AgentV form is not supported: " in p for p in problems)


def test_an_llm_graders_max_steps_is_ignored_as_agentv_ignores_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """AgentV reads `max_steps` only for its own `agentv` grader provider (llm-grader.ts
    evaluateBuiltIn, a judge with file tools); with any other judge it is never read: a warning."""
    suite = write(
        tmp_path / "e.eval.yaml", "tests:\n  - {id: a, input: hi, assertions: [{type: llm-grader, max_steps: 3}]}\n"
    )
    with caplog.at_level(logging.WARNING, logger="convoeval.spec"):
        assert load_suite(suite).tests[0].assertions[0].type == "llm-grader"
    assert "max_steps: ignored, as AgentV ignores it" in caplog.text


def test_an_agentv_graders_target_is_its_judge(tmp_path: Path) -> None:
    """AgentV's llm-grader `target` (v4, v5.3) and `provider` (v5 after 5.3) name its own judge."""
    suite = load_suite(
        write(
            tmp_path / "e.eval.yaml",
            """tests:
  - id: a
    input: hi
    assertions:
      - {type: llm-grader, target: other_judge, temperature: 0}
      - {type: llm-grader, provider: " third_judge "}
      - {type: rubrics, criteria: [Polite], provider: other_judge}
      - {type: llm-grader}
""",
        )
    )
    assert [a.judge for a in suite.tests[0].assertions] == ["other_judge", "third_judge", "other_judge", None]  # type: ignore[attr-defined]


def test_code_grader_assertions_without_score_and_agentv_names(
    cli, fake_openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    script = write(
        tmp_path / "g.py",
        "import json, sys\n"
        "d = json.load(sys.stdin)\n"
        "ok = [m['role'] for m in d['messages']] == ['user', 'assistant'] and d['workspace_path'] is None\n"
        "print(json.dumps({'assertions': [{'text': 'names', 'passed': ok}, {'text': 'no', 'passed': False},"
        " {'text': 'yes', 'passed': True}, {'text': 'yes2', 'passed': True}]}))\n",
    )
    suite = write(
        tmp_path / "e.eval.yaml",
        f"tests:\n  - id: a\n    input: hi\n    assertions:\n      - {{type: code-grader, command: ['{sys.executable}', '{script}']}}\n",
    )
    [result] = run(cli, suite, tmp_path)
    [grader] = result["scores"][0]["graders"]
    # AgentV v4.42: without `score`, the share of the assertions that passed.
    assert grader["score"] == 0.75 and grader["assertions"][0]["passed"] is True


def test_a_folder_of_cases_outside_the_suite_folder_is_refused(tmp_path: Path) -> None:
    write(tmp_path / "outside" / "one" / "case.yaml", "input: x\ncriteria: c\n")
    suite = write(tmp_path / "suite" / "e.eval.yaml", "tests: ../outside/\n")
    assert problems_of(suite)[0].startswith(f"{suite}:1: tests: ../outside/ is outside the suite's folder")


def test_agentv_v5_takes_a_tests_task_prompt_from_prompt_md(tmp_path: Path) -> None:
    """AgentV v5's `prompt-md-fallback.ts` (v5.0.0-next.1 to main; its input-files-shorthand
    example at v5.0.0 relies on it): a test without `input` takes the `PROMPT.md` its
    `input_files` list (the others stay attachments), else the suite's, else one beside the file."""
    (tmp_path / ".git").mkdir()  # a checkout whose root holds .agentv/
    (tmp_path / ".agentv").mkdir()
    write(tmp_path / "fixtures" / "sales.csv", "month,revenue\nJan,1\n")
    write(tmp_path / "evals" / "PROMPT.md", "Summarize the revenue.\r\nBe brief.\n")
    write(tmp_path / "evals" / "task" / "PROMPT.md", "Compare the files.\n")
    suite = load_suite(
        write(
            tmp_path / "evals" / "suite.eval.yaml",
            """\
input_files: [./task/PROMPT.md, ../fixtures/sales.csv]
tests:
  - id: listed
    criteria: Uses the CSV
    input_files: [./PROMPT.md, ../fixtures/sales.csv]
  - id: from-the-suite
    criteria: Compares
  - id: beside
    criteria: Summarizes
    execution: {skip_defaults: true}
  - id: own-input
    criteria: Answers
    input: What is 2 + 2?
""",
        )
    )
    texts = {t.id: messages_text(t.input) for t in suite.tests}
    assert texts["listed"].endswith("\n\nSummarize the revenue.\nBe brief.") and "month,revenue" in texts["listed"]
    assert texts["from-the-suite"].endswith("\n\nCompare the files.") and "month,revenue" in texts["from-the-suite"]
    assert texts["beside"].strip() == "Summarize the revenue.\nBe brief."
    # With its own input, the suite's PROMPT.md is an attachment like any file (as in AgentV).
    assert '<file path="./task/PROMPT.md">' in texts["own-input"] and texts["own-input"].endswith("What is 2 + 2?")
    assert [len(t.attachments) for t in suite.tests] == [1, 1, 0, 2]


def test_agentv_v4_30_checkout_base_commit_is_the_ref(tmp_path: Path) -> None:
    """AgentV v4.30-v4.35's `checkout.base_commit` (its bug-fix-benchmark showcase): the commit
    checked out, winning over `ref` as in its `repo-checkout.ts`."""
    (tmp_path / ".agentv").mkdir()
    suite = load_suite(
        write(
            tmp_path / "s.eval.yaml",
            """\
workspace:
  repos:
    - path: ./repo
      source: {type: git, url: https://github.com/EntityProcess/agentv}
      checkout: {base_commit: 6e446b722627e9df017b22e391fa63320362d8c7, ref: main, resolve: local}
tests:
  - {id: a, input: hi, criteria: fixes it}
""",
        )
    )
    assert suite.workspace is not None
    [repo] = suite.workspace.repos
    assert (repo.checkout.ref, repo.checkout.resolve) == ("6e446b722627e9df017b22e391fa63320362d8c7", "local")


def test_agentv_v5_1_workspace_scope_and_template_beside_extensions(tmp_path: Path) -> None:
    """AgentV v5.1.0-next.1's `workspace: {scope, template}`: the lifetime is nothing to do (every
    trial gets a fresh workspace), the template is the workdir its `extensions` run in."""
    (tmp_path / ".git").mkdir()
    (tmp_path / ".agentv").mkdir()
    write(tmp_path / "workspace" / "AGENTS.md", "Be careful.\n")
    suite = load_suite(
        write(
            tmp_path / "evals" / "s.EVAL.yaml",
            """\
extensions: [agentv:agent-rules]
workspace: {scope: suite, template: ../workspace/}
tests:
  - {id: a, vars: {input: hi}, assert: [Says hi]}
""",
        )
    )
    assert suite.workspace is not None and suite.workspace.template == str(tmp_path / "workspace")
    plain = write(
        tmp_path / "evals" / "p.eval.yaml",
        "workspace: {scope: attempt, template: ../workspace/}\ntests:\n  - {id: a, vars: {input: hi}, assert: [x]}\n",
    )
    assert load_suite(plain).workspace.template is not None  # type: ignore[union-attr]
    bad = write(
        tmp_path / "evals" / "b.eval.yaml",
        "workspace: {scope: forever}\ntests:\n  - {id: a, vars: {input: hi}, assert: [x]}\n",
    )
    assert [p.split(": ", 1)[1] for p in problems_of(bad)] == [
        "workspace.scope: must be suite or attempt (AgentV's workspace lifetimes), got 'forever'"
    ]


def test_v5_scenarios_and_typescript_eval_files_say_what_is_not_supported(tmp_path: Path) -> None:
    """`scenarios` names what convoeval reads of v5 (it read only `assert`, `metric`, `vars: {input}`
    before, said the message); an `*.eval.ts` is not a YAML syntax error."""
    suite = write(tmp_path / "s.eval.yaml", "scenarios:\n  - config: []\ntests:\n  - id: a\n    input: hi\n")
    (problem,) = [p for p in problems_of(suite) if ": scenarios:" in p]
    assert "`default_test`, `providers`" in problem and "only `assert`" not in problem
    script = write(tmp_path / "greeting.eval.ts", "export default defineEval({ tests: [] });\n")
    assert problems_of(script) == [
        f"{script}:1: (file): this AgentV form is not supported: an eval file written in TypeScript or "
        "JavaScript (AgentV's `*.eval.ts`, built with its SDK); convoeval reads eval files in YAML (or JSONL tests)"
    ]


#: AgentV v4.42.4's `preprocessors` (eval-cases.mdx lines 341 and 379, llm-graders.mdx line 192):
#: the suite's, an llm-grader's and a code-grader's (`grader-parser.ts` reads it on both, only
#: `llm-grader.ts` uses it, on a reply's file blocks).
PREPROCESSORS = """\
preprocessors:
  - type: xlsx
    command: ["bun", "run", "scripts/preprocessors/xlsx-to-csv.ts"]
tests:
  - id: mixed-eval
    criteria: Response is helpful and mentions the fix
    input: "Debug this function..."
    assertions:
      - type: llm-grader
        preprocessors:
          - type: xlsx
            command: ["bun", "run", "scripts/preprocessors/xlsx-to-json.ts"]
      - type: code-grader
        command: [python3, g.py]
        preprocessors:
          - type: xlsx
            command: ["bun", "run", "scripts/preprocessors/xlsx-to-json.ts"]
      - type: contains
        value: "fix"
"""


def test_agentv_preprocessors_load_and_say_they_are_not_applied(tmp_path: Path, caplog) -> None:
    suite = write(_agentv_tree(tmp_path) / "evals" / "e.eval.yaml", PREPROCESSORS)
    with caplog.at_level(logging.WARNING, logger="convoeval.spec"):
        loaded = load_suite(suite)
    for line, field in [
        (1, "preprocessors"),
        (10, "tests[0].assertions[0].preprocessors"),
        (15, "tests[0].assertions[1].preprocessors"),
    ]:
        assert f"{suite}:{line}: {field}: ignored: this AgentV form is not supported" in caplog.text, caplog.text
    llm, code, _ = loaded.tests[0].assertions
    assert "preprocessors" not in (code.config or {})  # AgentV keeps it from the program's config


#: execution-metrics.mdx (v4.42.4 lines 81, 91, 101) writes `max_ms`, `max_usd`, `max_total_tokens`;
#: AgentV 4.42.4 reads `threshold`, `budget`, `max_total`/`max_input`/`max_output` and skips the
#: check without them (`grader-parser.ts` lines 1093-1181: "Skipping latency evaluator 'speed' ...:
#: threshold must be a non-negative number"), so the real CLI passed these tests with no check.
METRIC_LIMITS = """\
tests:
  - id: t
    criteria: Answers
    input: What is 2+2?
    assertions:
      - {name: speed, type: latency, max_ms: 5000}
      - {name: budget, type: cost, max_usd: 0.10}
      - {name: tokens, type: token-usage, max_total_tokens: 4000}
      - {name: ok-speed, type: latency, threshold: 5000}
      - {name: ok-budget, type: cost, budget: 0.10}
      - {name: ok-tokens, type: token-usage, max_output: 100}
"""


def test_metric_checks_without_agentvs_limit_are_skipped_as_agentv_skips_them(tmp_path: Path, caplog) -> None:
    suite = write(_agentv_tree(tmp_path) / "evals" / "e.eval.yaml", METRIC_LIMITS)
    with caplog.at_level(logging.WARNING, logger="convoeval.spec"):
        [test] = load_suite(suite).tests
    assert [a.name for a in test.assertions] == ["ok-speed", "ok-budget", "ok-tokens"]
    for line, needs in [(6, "`threshold`"), (7, "`budget`"), (8, "`max_total`, `max_input` or `max_output`")]:
        said = f"{suite}:{line}: tests[0].assertions[{line - 6}]: skipped, as AgentV skips it"
        assert said in caplog.text and needs in caplog.text, caplog.text


def test_an_llm_graders_file_prompt_is_found_as_agentv_finds_it(tmp_path: Path) -> None:
    """`prompt: file://prompts/strict.md` with prompts/ at the repository root, not beside the
    eval file: AgentV looks in the eval file's folder and each one above it up to the repository
    (`grader-parser.ts` `resolveFileReference` over its search roots); the real agentv 4.42.4 sent
    that file to its judge. It was "prompts/strict.md: no such file" here."""
    repo = _agentv_tree(tmp_path)
    write(repo / "prompts" / "strict.md", "Grade {{ output }} strictly.\n")
    suite = write(
        repo / "ex" / "evals" / "e.eval.yaml",
        "tests:\n  - id: t\n    criteria: ok\n    input: hi\n    assertions:\n"
        "      - {name: strict, type: llm-grader, prompt: 'file://prompts/strict.md'}\n",
    )
    [grader] = load_suite(suite).tests[0].assertions
    assert grader.prompt == f"file://{(repo / 'prompts' / 'strict.md').resolve()}"  # type: ignore[attr-defined]


def test_a_composite_with_agentvs_deprecated_aggregator_is_skipped_as_agentv_skips_it(tmp_path: Path, caplog) -> None:
    """AgentV v4.15.0 (`evaluator-parser.ts` line 524) to v4.42.4 (`grader-parser.ts` line 677) skip a
    composite whose aggregator is `llm_judge` / `code_judge` ("is deprecated. Use 'llm-grader'
    instead"); the real agentv 4.42.4 said so and graded the test without it."""
    composite = (
        "      - name: gate\n        type: composite\n        assertions:\n"
        "          - {name: a, type: contains, value: hi}\n        aggregator: {type: AGG, prompt: Combine}\n"
    )
    text = "tests:\n  - id: t\n    criteria: ok\n    input: hi\n    assertions:\n"
    text += composite.replace("AGG", "llm_judge") + composite.replace("AGG", "llm-grader").replace("gate", "kept")
    text += "      - {name: old, type: code_judge, command: [python3, g.py]}\n"  # lines 312 / 457: the same
    suite = write(_agentv_tree(tmp_path) / "evals" / "e.eval.yaml", text)
    with caplog.at_level(logging.WARNING, logger="convoeval.spec"):
        [test] = load_suite(suite).tests
    assert [a.name for a in test.assertions] == ["kept"]
    assert f"{suite}:6: tests[0].assertions[0]: skipped, as AgentV skips it: its aggregator type" in caplog.text
    assert f"{suite}:16: tests[0].assertions[2]: skipped, as AgentV skips it: its type 'code_judge'" in caplog.text
