"""Real files with one field of the wrong type: `convoeval import` names the file, the line
and the field, exits 2, and never shows a traceback (the importers narrow what they read
from other tools' JSON and YAML instead of trusting its shape)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from .conftest import DATA

Edit = Callable[[Any], None]


def _first_span(doc: dict) -> dict:
    return doc["resourceSpans"][0]["scopeSpans"][0]["spans"][0]


def _otel_count_as_words(doc: dict) -> None:
    for attribute in _first_span(doc)["attributes"]:
        if attribute["key"] == "gen_ai.usage.input_tokens":
            attribute["value"] = {"intValue": "many"}


def _otel_attribute_without_key(doc: dict) -> None:
    del _first_span(doc)["attributes"][0]["key"]


def _langfuse_observations_as_text(session: dict) -> None:
    session["traces"][0]["observations"] = "none recorded"


def _langfuse_trace_as_text(session: dict) -> None:
    session["traces"][1] = "trace-2"


def _inspect_sample_as_text(log: dict) -> None:
    log["samples"][0] = "sample 1"


def _tau_action_without_name(results: list) -> None:
    del results[0]["info"]["task"]["actions"][0]["name"]


def _tau2_basis_as_text(tasks: list) -> None:
    tasks[0]["evaluation_criteria"]["reward_basis"] = "DB"


def _tau2_outputs_as_number(tasks: list) -> None:
    tasks[2]["evaluation_criteria"]["communicate_info"] = 4  # tau2 wants a list: it was dropped, easing the reward


def _tau2_arguments_as_text(tasks: list) -> None:
    tasks[3]["evaluation_criteria"]["actions"][1]["arguments"] = "reservation_id=XEHM4B"


def _tau2_task_without_id(tasks: list) -> None:
    del tasks[1]["id"]


def _multiwoz_frames_missing(row: dict) -> None:
    row["turns"]["frames"] = row["turns"]["frames"][:2]


def _langfuse_trace_without_id(session: dict) -> None:
    del session["traces"][0]["id"]


def _mt_bench_reference_as_text(question: dict) -> None:
    if question["category"] == "reasoning":
        question["reference"] = "3rd"


CASES = [
    # kind, real file, JSON Lines?, edit, line of the error, what the error says
    ("otel", "otel/otlp-spans.jsonl", True, _otel_count_as_words, 1, "intValue: expected a whole number, got 'many'"),
    ("otel", "otel/otlp-spans.jsonl", True, _otel_attribute_without_key, 1, "attributes: each attribute needs a key"),
    ("langfuse", "langfuse/session-support-42.json", False, _langfuse_observations_as_text, 1, "observations: expected a list of JSON objects"),
    ("langfuse", "langfuse/session-support-42.json", False, _langfuse_trace_as_text, 1, "traces: expected a list of Langfuse traces"),
    ("langfuse", "langfuse/session-support-42.json", False, _langfuse_trace_without_id, 1, "traces[0]: a Langfuse trace has an id"),
    ("inspect", "inspect/two-turn-mockllm.json", False, _inspect_sample_as_text, 1, "samples: expected JSON objects (Inspect's EvalSample), got 'sample 1'"),
    ("tau-bench", "tau-bench/gpt-4o-airline-sample-trajectories.json", False, _tau_action_without_name, 2, "item 0: actions: each action needs a name"),
    ("tau-bench", "tau2-bench/airline/tasks.json", False, _tau2_basis_as_text, 2, "task 0 (id '0'): evaluation_criteria.reward_basis: expected a list of names"),
    ("tau2", "tau2-bench/airline/tasks.json", False, _tau2_outputs_as_number, 81, "task 2 (id '3'): evaluation_criteria.communicate_info: expected a list, got 4"),
    ("tau2", "tau2-bench/airline/tasks.json", False, _tau2_arguments_as_text, 132, "task 3 (id '7'): evaluation_criteria.actions[1].arguments: expected an object, got 'reservation_id=XEHM4B'"),
    ("tau2", "tau2-bench/airline/tasks.json", False, _tau2_task_without_id, 33, "task 1 (id None): id: expected the task's id (text), got None"),
    ("multiwoz", "multiwoz/multiwoz22_sample5.jsonl", True, _multiwoz_frames_missing, 1, "turns.frames: 2 item(s), none for turn 2 (one item a turn)"),
    ("mt-bench", "mt-bench/question.jsonl", True, _mt_bench_reference_as_text, 21, "reference: expected a list of reference answers"),
]  # fmt: skip


def _broken_copy(source: Path, jsonl: bool, edit: Edit, folder: Path) -> Path:
    """`source` copied into `folder` with `edit` applied (to the first line that it changes, in JSON Lines)."""
    copy = folder / source.name
    if not jsonl:
        data = json.loads(source.read_text(encoding="utf-8"))
        edit(data)
        copy.write_text(json.dumps(data, indent=1), encoding="utf-8")
        return copy
    lines = source.read_text(encoding="utf-8").splitlines()
    for number, text in enumerate(lines):
        record = json.loads(text)
        edit(record)
        if json.dumps(record) != json.dumps(json.loads(text)):
            lines[number] = json.dumps(record)
            break
    copy.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return copy


@pytest.mark.parametrize(("kind", "name", "jsonl", "edit", "line", "says"), CASES, ids=[c[3].__name__ for c in CASES])
def test_a_field_of_the_wrong_type_is_a_file_line_error(cli, tmp_path, kind, name, jsonl, edit, line, says) -> None:
    broken = _broken_copy(DATA / name, jsonl, edit, tmp_path)
    code, out, err = cli("import", kind, broken, "-o", tmp_path / "suite.eval.yaml")
    assert code == 2, out + err
    assert f"{broken}:{line}: " in err and says in err, err
    assert "Traceback" not in err and not (tmp_path / "suite.eval.yaml").exists()


def test_promptfoo_settings_of_the_wrong_type_are_file_errors(cli, tmp_path) -> None:
    real = (DATA / "promptfoo" / "tau-simulated-user" / "promptfooconfig.yaml").read_text(encoding="utf-8")
    config = tmp_path / "promptfooconfig.yaml"
    config.write_text(real.replace("maxTurns: 10", "maxTurns: ten"), encoding="utf-8")
    code, _, err = cli("import", "promptfoo", config, "-o", tmp_path / "suite.eval.yaml")
    assert code == 2 and f"{config}:1: " in err and "maxTurns: expected a whole number, got 'ten'" in err, err
    config.write_text(real.replace("    vars:", "    vars: [instructions]\n    unused:", 1), encoding="utf-8")
    code, _, err = cli("import", "promptfoo", config, "-o", tmp_path / "suite.eval.yaml")
    assert code == 2 and f"{config}:1: tests[0]: vars: expected a mapping" in err, err


#: Real files with the value of one key nested deeper than 100 levels.
DEEP = [
    ("mt-bench", "mt-bench/question.jsonl", "turns"),
    ("multiwoz", "multiwoz/multiwoz22_sample5.jsonl", "turns"),
    ("tau-bench", "tau-bench/gpt-4o-airline-sample-trajectories.json", "traj"),
    ("tau2", "tau2-bench/results/airline-gpt-4.1.json", "tasks"),
    ("transcripts", "agents/real/codex-0.169.0-rollout.jsonl", "payload"),
    ("agentv-transcript", "agentv-transcripts/copilot-transcript.jsonl", "content"),
    ("otel", "otel/otlp-spans.jsonl", "resourceSpans"),
    ("langfuse", "langfuse/session-support-42.json", "traces"),
    ("inspect", "inspect/two-turn-mockllm.json", "samples"),
    ("deepeval", "deepeval/conversational-goldens.json", "turns"),
]


def _deep_copy_of(source: Path, key: str, depth: int, folder: Path) -> tuple[Path, int]:
    """`source` in `folder` with the value of the first `key` nested `depth` levels deep, and its line."""
    text = source.read_text(encoding="utf-8")
    colon = text.index(":", text.index(f'"{key}"')) + 1
    start = colon + len(text[colon:]) - len(text[colon:].lstrip())
    _, end = json.JSONDecoder().raw_decode(text, start)
    copy = folder / source.name
    copy.write_text(text[:start] + "[" * depth + '"leaf"' + "]" * depth + text[end:], encoding="utf-8")
    return copy, text.count("\n", 0, start) + 1


@pytest.mark.parametrize("depth", [150, 100_000])
@pytest.mark.parametrize(("kind", "name", "key"), DEEP, ids=[c[0] for c in DEEP])
def test_data_nested_too_deep_is_a_file_line_error(cli, tmp_path, kind, name, key, depth) -> None:
    """Before: 100 000 levels ended in `RecursionError` in the JSON decoder, 150 in the YAML
    writer, in `is_json` or nowhere; the JSON readers now refuse more than 100 (tracebacks
    found by fuzzing the importers)."""
    deep, line = _deep_copy_of(DATA / name, key, depth, tmp_path)
    code, out, err = cli("import", kind, deep, "-o", tmp_path / "suite.eval.yaml")
    assert code == 2, out + err
    assert f"{deep}:{line}: " in err and "nested more than 100 levels deep" in err, err
    assert "Traceback" not in err and not (tmp_path / "suite.eval.yaml").exists()


def test_promptfoo_yaml_too_deep_or_too_big_once_expanded_is_a_file_error(cli, tmp_path) -> None:
    """Before: a YAML file nested 1 000 levels deep ended in `RecursionError`, and nine aliases
    of nine ("billion laughs", 600 bytes) ran for hours."""
    deep = tmp_path / "deep.yaml"
    deep.write_text("prompts: [hi]\ntests: [{vars: {x: " + "[" * 1000 + "]" * 1000 + "}}]\n", encoding="utf-8")
    code, _, err = cli("import", "promptfoo", deep, "-o", tmp_path / "suite.eval.yaml")
    assert (code, err) == (2, f"error: {deep}: nested more than 100 levels deep\n")
    laughs = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    laughs += [f"a{n}: &a{n} [{', '.join([f'*a{n - 1}'] * 9)}]" for n in range(1, 9)]
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text("\n".join([*laughs, "prompts: ['{{ x }}']", "tests: [{vars: {x: *a8}}]"]) + "\n", encoding="utf-8")
    code, _, err = cli("import", "promptfoo", bomb, "-o", tmp_path / "suite.eval.yaml")
    assert (code, err) == (2, f"error: {bomb}: more than 100000 values once its YAML aliases are expanded\n")
    assert not (tmp_path / "suite.eval.yaml").exists()


def test_a_recorded_tau_bench_item_error_names_the_items_line(cli, tmp_path) -> None:
    """--recorded reads each task's reward from its first record: an error there names that
    record's line, as a live import does (it said line 1 and the test's id)."""
    broken = _broken_copy(
        DATA / "tau-bench" / "gpt-4o-airline-sample-trajectories.json",
        False,
        lambda results: results[2]["info"]["task"]["actions"][0].pop("name"),
        tmp_path,
    )
    starts = [n for n, text in enumerate(broken.read_text(encoding="utf-8").splitlines(), 1) if text == " {"]
    code, _, err = cli("import", "tau-bench", broken, "--recorded", "-o", tmp_path / "suite.eval.yaml")
    assert code == 2 and f"{broken}:{starts[2]}: item 2: actions: each action needs a name" in err, err
