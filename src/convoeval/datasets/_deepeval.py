"""DeepEval datasets (`EvaluationDataset.save_as("json" | "jsonl" | "csv")`) as convoeval suites.

Records, as DeepEval writes them:
- conversational goldens / test cases: `scenario`, `turns` ([{role, content, tools_called?,
  retrieval_context?, ...}]), `expected_outcome`, `user_description` (and, since DeepEval 4, a
  `persona` mapping: `characteristics` and named traits), `chatbot_role`, `context`, `name`, `additional_metadata`;
- single-turn goldens: `input`, `expected_output`, `actual_output`, `context`,
  `retrieval_context`, `tools_called`, `expected_tools`, `name`, `source_file`;
- both, since DeepEval 4: `expectations` (`must` / `must_not` behaviours) and
  `custom_column_key_values`.

What becomes what:
- the user `turns` -> a `mode: conversation` test, one scripted turn each; the recorded
  assistant replies stay in each turn's `metadata`, their `retrieval_context` becomes the
  turn's `context` (with `recorded=True` the whole
  conversation is a `transcript:` test, graded without calling a target);
- `scenario` + `user_description` -> a `simulated_user` (objective, persona) that continues
  after any scripted turns, and `expected_outcome` -> its `success` criterion;
- `chatbot_role` -> a `role-adherence` check on the conversation;
- `expectations`: each `must` -> a `success` criterion, each `must_not` -> a `failure`
  criterion (judged on the whole conversation, as DeepEval judges them);
- a turn's `user_id`, `metadata` and MCP calls -> that turn's metadata (`deepeval_turns` in
  the test's metadata for a recorded conversation); an empty user turn cannot be sent live:
  it and its reply are left out of the scripted turns, with a warning;
- a single-turn golden -> a test with `input` and `expected_output`, judged by `llm-grader`.
"""

from __future__ import annotations

import csv
import io
import json
import re
import warnings
from collections import Counter
from pathlib import Path
from typing import Required, TypedDict

from pydantic import JsonValue

from ..errors import DatasetError
from ._chat_logs import unique
from ._common import (
    DatasetWarning,
    JsonObject,
    as_list,
    as_object,
    decode_json,
    objects,
    read_json,
    read_jsonl,
    read_text,
)
from ._suite_types import Message, Skipped, Suite, SuiteTest, Turn

DEFAULT_MAX_TURNS = 10


class DeepEvalTurn(TypedDict, total=False):
    """A turn of a conversational golden or test case, as the importer reads it."""

    role: Required[str]
    content: Required[str]
    retrieval_context: JsonValue
    tools_called: JsonValue
    extra: JsonObject


#: The golden / test case fields the importer reads (others are named in a warning).
_READ = frozenset(
    "scenario turns expected_outcome user_description persona context name comments additional_metadata "
    "custom_column_key_values expectations chatbot_role tags input actual_output expected_output "
    "retrieval_context tools_called expected_tools source_file token_cost input_token_count "
    "output_token_count order".split()
)
_READ_TURN = frozenset(
    "role content user_id retrieval_context tools_called metadata mcp_tools_called mcp_resources_called "
    "mcp_prompts_called order".split()
)
#: What a test run (`.deepeval/.latest_test_run.json`) says of each test case: DeepEval's
#: verdict, each metric's result (`metrics_data`: name, score, threshold, success, reason, ...),
#: its duration and cost. Kept as the test's metadata.
_RUN_FIELDS = ("success", "metrics_data", "run_duration", "evaluation_cost", "completion_time", "flaky")

#: A turn's fields kept as its metadata (what convoeval has no field of its own for).
TURN_EXTRAS = ("user_id", "metadata", "mcp_tools_called", "mcp_resources_called", "mcp_prompts_called")


def import_deepeval(source: Path, recorded: bool = False, max_turns: int = DEFAULT_MAX_TURNS) -> Suite:
    """One test per DeepEval golden or test case of `source` (.json list, .jsonl or .csv)."""
    records: list[tuple[int, JsonValue]]
    if source.suffix == ".jsonl":
        records = list(read_jsonl(source))
    else:
        records = _csv_records(source) if source.suffix == ".csv" else _records(source)
    tests: list[SuiteTest] = []
    skipped: list[Skipped] = []
    seen: set[str] = set()
    unknown: Counter[str] = Counter()
    for line, raw in records:
        if not isinstance(raw, dict):
            raise DatasetError(f"{source}:{line}: expected a JSON object (a golden or test case)")
        record = _by_name(raw)
        if "metadata" in record and "additional_metadata" not in record:  # a test run's name for it
            record["additional_metadata"] = record.pop("metadata")
        test = _test(record, source, line, recorded, max_turns)
        test["id"] = unique(test["id"], seen)
        unknown.update(
            k for k, v in record.items() if k not in _READ and k not in _RUN_FIELDS and v not in (None, "", [], {})
        )
        unknown.update(
            f"turns[].{k}"
            for turn in objects(record.get("turns"))
            for k, v in turn.items()
            if k not in _READ_TURN and v not in (None, "", [], {})
        )
        if recorded and "transcript" not in test and "input" not in test:
            skipped.append({"id": test["id"], "reason": f"line {line}: no assistant turns to grade (--recorded)"})
            continue
        tests.append(test)
    if not tests:
        reason = f" ({skipped[0]['reason']})" if skipped else ""
        raise DatasetError(f"{source}:1: no goldens or test cases in the file{reason}")
    if unknown:
        listed = ", ".join(f"{k} ({n})" if n > 1 else k for k, n in sorted(unknown.items()))
        warnings.warn(f"{source}: fields not imported (not DeepEval's): {listed}", DatasetWarning, stacklevel=2)
    suite: Suite = {"name": source.stem, "description": f"Imported from the DeepEval dataset {source.name}"}
    if skipped:
        suite["metadata"] = {"skipped": skipped}
    suite["tests"] = tests
    return suite


def _records(source: Path) -> list[tuple[int, JsonValue]]:
    """`(line, record)` of each element of a JSON list, or of the lists a mapping holds:
    `goldens` / `test_cases`, or a test run's `testCases` and `conversationalTestCases` (in
    `testRunData` in `.deepeval/.latest_test_run.json`)."""
    data = read_json(source)  # the error with file and line when it is not JSON
    if isinstance(data, dict):  # no per-record lines
        data = as_object(data.get("testRunData")) or data
        lists = [data.get(k) for k in ("goldens", "test_cases", "testCases", "conversationalTestCases")]
        if any(isinstance(found, list) for found in lists):
            return [(1, record) for found in lists for record in as_list(found)]
    if not isinstance(data, list):
        raise DatasetError(f"{source}:1: expected a JSON list of DeepEval goldens or test cases")
    text = read_text(source)
    decoder, at, lines = json.JSONDecoder(), text.index("[") + 1, []
    for _ in data:  # walk the list again only to know where each element starts
        while text[at] in " \t\r\n,":
            at += 1
        lines.append(text.count("\n", 0, at) + 1)
        _, at = decoder.raw_decode(text, at)
    return list(zip(lines, data, strict=True))


#: DeepEval's CSV cells that hold a list joined with `|` (its DELIMITER), and those holding JSON.
_JOINED = ("context", "retrieval_context")
_JSON_CELLS = (
    "turns tools_called expected_tools additional_metadata custom_column_key_values expectations "
    "token_cost input_token_count output_token_count".split()
)


def _csv_records(source: Path) -> list[tuple[int, JsonValue]]:
    """`(line, record)` of each row of a DeepEval CSV (what `save_as("csv")` writes and
    `add_goldens_from_csv_file` reads): empty cells left out, `context` and `retrieval_context`
    split at `|`, the JSON cells (turns, tools, metadata, expectations, numbers) decoded."""
    rows = csv.reader(io.StringIO(read_text(source, newline=""), newline=""))
    header = next(rows, [])
    records: list[tuple[int, JsonValue]] = []
    line = rows.line_num + 1
    for row in rows:
        record: JsonObject = {}
        for key, cell in zip(header, row, strict=False):
            if cell == "":
                continue
            if key in _JOINED:
                record[key] = [*cell.split("|")]
            elif key in _JSON_CELLS:
                try:
                    record[key] = decode_json(cell)
                except ValueError as exc:
                    raise DatasetError(f"{source}:{line}: {key}: not JSON ({exc})") from None
            else:
                record[key] = cell
        records.append((line, record))
        line = rows.line_num + 1
    return records


def _snake(key: str) -> str:
    """A field's name as DeepEval's model names it (`actualOutput` -> `actual_output`)."""
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", key).lower()


def _by_name(record: JsonObject) -> JsonObject:
    """A record with DeepEval's aliases (a test run writes `actualOutput`, `toolsCalled`,
    `metricsData`, ...) as field names, in its turns and metrics too; tool calls keep theirs."""
    out: JsonObject = {}
    for key, value in record.items():
        name = _snake(key)
        if name in ("turns", "metrics_data") and isinstance(value, list):
            value = [_by_name(item) if isinstance(item, dict) else item for item in value]
        out[name] = value
    return out


def _slug(text: str) -> str:
    return re.sub(r"[^\w.-]+", "-", text).strip("-")[:60]


def _test(record: JsonObject, source: Path, line: int, recorded: bool, max_turns: int) -> SuiteTest:
    name = record.get("name") or record.get("scenario") or record.get("input") or f"golden-line-{line}"
    test: SuiteTest = {"id": _slug(str(name)) or f"golden-line-{line}"}
    metadata: JsonObject = {
        k: record[k]
        for k in (
            "comments",
            "additional_metadata",
            "context",
            "tags",
            "custom_column_key_values",
            "source_file",
            "token_cost",
            "input_token_count",
            "output_token_count",
            *_RUN_FIELDS,
        )
        if record.get(k) not in (None, "", [], {})
    }
    single = record.get("input")
    if "turns" in record or "scenario" in record:
        _conversational(test, record, source, line, recorded, max_turns)
    elif isinstance(single, str) and recorded and isinstance(record.get("actual_output"), str):
        _recorded_single(test, single, record)
    elif isinstance(single, str):
        _single(test, single, record)
    else:
        raise DatasetError(
            f"{source}:{line}: not a DeepEval golden: expected `turns` or `scenario` (conversational) or `input`"
        )
    _expectations(test, record)
    if metadata:
        test["metadata"] = {**test.get("metadata", {}), **metadata}
    return test


def _expectations(test: SuiteTest, record: JsonObject) -> None:
    """DeepEval's `expectations`: `must` behaviours as `success` criteria, `must_not` as `failure`."""
    expectations = record.get("expectations")
    if not isinstance(expectations, dict):
        return
    must = [str(c) for c in as_list(expectations.get("must")) if str(c).strip()]
    must_not = [str(c) for c in as_list(expectations.get("must_not", expectations.get("mustNot"))) if str(c).strip()]
    if must:
        test["success"] = [*test.get("success", []), *must]
    if must_not:
        test["failure"] = [*test.get("failure", []), *must_not]


def _single(test: SuiteTest, text: str, record: JsonObject) -> None:
    test["input"] = text
    if record.get("expected_output"):
        test["expected_output"] = record["expected_output"]
        test["assertions"] = [{"type": "llm-grader"}]
    if record.get("expected_tools"):
        names = [t.get("name") for t in objects(record["expected_tools"]) if t.get("name")]
        test.setdefault("assertions", []).append(
            {"type": "tool-trajectory", "mode": "any_order", "expected": [{"tool": n} for n in names]}
        )
    metadata: JsonObject = {
        k: record[k] for k in ("actual_output", "retrieval_context", "tools_called", "expected_tools") if record.get(k)
    }
    if metadata:
        test["metadata"] = metadata


def _recorded_single(test: SuiteTest, text: str, record: JsonObject) -> None:
    """A single-turn test case's recorded answer (`actual_output`, `tools_called`) as a
    transcript, judged against its `expected_output` by `llm-grader`."""
    reply: DeepEvalTurn = {"role": "assistant", "content": str(record["actual_output"])}
    reply["tools_called"] = record.get("tools_called")
    test["transcript"] = [{"role": "user", "content": text}, _transcript_message(reply)]
    if record.get("expected_output"):
        test["assertions"] = [{"type": "llm-grader", "expected_output": record["expected_output"]}]
    metadata: JsonObject = {k: record[k] for k in ("retrieval_context", "expected_tools") if record.get(k)}
    if metadata:
        test["metadata"] = metadata


def _turns(record: JsonObject, source: Path, line: int) -> list[DeepEvalTurn]:
    raw: JsonValue = record.get("turns") or []
    if isinstance(raw, str):  # CSV-style cells hold the turns as JSON text
        try:
            raw = decode_json(raw)
        except ValueError:
            raise DatasetError(f"{source}:{line}: turns: not JSON") from None
    if not isinstance(raw, list):
        raise DatasetError(f"{source}:{line}: turns: expected a list of {{role, content}}")
    turns: list[DeepEvalTurn] = []
    for n, turn in enumerate(raw):
        role = turn.get("role") if isinstance(turn, dict) else None
        if not isinstance(turn, dict) or (role != "user" and role != "assistant"):
            raise DatasetError(f"{source}:{line}: turns[{n}]: expected {{role: user|assistant, content}}")
        content = turn.get("content")
        if not isinstance(content, str):
            raise DatasetError(f"{source}:{line}: turns[{n}]: content: expected text")
        turns.append(
            {
                "role": role,
                "content": content,
                "retrieval_context": turn.get("retrieval_context"),
                "tools_called": turn.get("tools_called"),
                "extra": {k: turn[k] for k in TURN_EXTRAS if turn.get(k) not in (None, "", [], {})},
            }
        )
    return turns


def _persona(record: JsonObject) -> JsonValue:
    persona = record.get("persona")
    if isinstance(persona, dict):  # DeepEval's Persona: `characteristics` and optional named traits
        traits = [f"{k.replace('_', ' ')}: {_text(v)}" for k, v in persona.items() if v and k != "characteristics"]
        about = [str(persona["characteristics"])] if persona.get("characteristics") else []
        return "; ".join(about + traits) or None
    return record.get("user_description") or None


def _text(value: JsonValue) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _conversational(
    test: SuiteTest, record: JsonObject, source: Path, line: int, recorded: bool, max_turns: int
) -> None:
    turns = _turns(record, source, line)
    system: list[Message] = []
    if record.get("chatbot_role"):
        system = [{"role": "system", "content": record["chatbot_role"]}]
        test["input"] = system
        test["assertions"] = [{"type": "role-adherence", "role": record["chatbot_role"]}]
    if recorded:
        if not any(t["role"] == "assistant" for t in turns):
            test.pop("input", None)
            return  # nothing recorded to grade: the caller leaves it out
        test["transcript"] = [*system, *(_transcript_message(t) for t in turns)]
        test.pop("input", None)
        extras = _turn_extras(turns)
        if extras:
            test["metadata"] = {"deepeval_turns": extras}
        if record.get("expected_outcome"):
            test.setdefault("assertions", []).append({"type": "goal-completion"})
            test["criteria"] = record["expected_outcome"]
        return
    scripted = _scripted(turns, f"{source}:{line}")
    if scripted:
        test["mode"] = "conversation"
        test["turns"] = scripted
    if record.get("scenario"):
        user: JsonObject = {"objective": record["scenario"], "max_turns": max_turns}
        if _persona(record):
            user["persona"] = _persona(record)
        test["simulated_user"] = user
        if record.get("expected_outcome"):
            test["success"] = [record["expected_outcome"]]
    elif not scripted:
        raise DatasetError(f"{source}:{line}: a conversational golden needs user turns or a scenario")
    elif record.get("expected_outcome"):
        test["criteria"] = record["expected_outcome"]
        test.setdefault("assertions", []).append({"type": "goal-completion"})


def _turn_extras(turns: list[DeepEvalTurn]) -> list[JsonValue]:
    """Each turn's fields that a transcript message has no place for, with the turn's index."""
    extras: list[JsonValue] = []
    for n, turn in enumerate(turns):
        extra: JsonObject = dict(turn.get("extra") or {})
        if turn.get("retrieval_context"):
            extra["retrieval_context"] = turn["retrieval_context"]
        if extra:
            extras.append({"turn": n, **extra})
    return extras


def _scripted(turns: list[DeepEvalTurn], where: str) -> list[Turn]:
    """User turns as scripted turns; the assistant reply that followed each (its text, tool
    calls and fields) kept as metadata, its `retrieval_context` as the turn's `context` (what
    the judges see as the turn's backend data). An empty user turn, which cannot be sent, is
    left out with its reply."""
    scripted: list[Turn] = []
    blank: list[int] = []
    skipping = False
    for n, turn in enumerate(turns):
        if turn["role"] == "user":
            skipping = not turn["content"].strip()
            if skipping:
                blank.append(n)
                continue
            scripted.append({"input": turn["content"]})
            if turn.get("extra"):
                scripted[-1]["metadata"] = dict(turn["extra"])
        elif scripted and not skipping:
            metadata = scripted[-1].setdefault("metadata", {})
            metadata["recorded_reply"] = turn["content"]
            calls: list[JsonValue] = [_call(c) for c in objects(turn.get("tools_called")) if c.get("name")]
            if calls:
                metadata["recorded_tool_calls"] = calls
            if turn.get("extra"):
                metadata["recorded_reply_fields"] = dict(turn["extra"])
            if turn.get("retrieval_context"):
                scripted[-1]["context"] = turn.get("retrieval_context")
    if blank:
        warnings.warn(
            f"{where}: turns {', '.join(map(str, blank))}: an empty user message cannot be sent to a live "
            "target; left out with its reply (--recorded keeps it)",
            DatasetWarning,
            stacklevel=2,
        )
    return scripted


def _call(call: JsonObject) -> JsonObject:
    """A DeepEval ToolCall (dumped by alias or by field name) as convoeval's recorded call."""
    arguments = call.get("inputParameters") or call.get("input_parameters") or {}
    out: JsonObject = {
        "name": call["name"],
        "arguments": arguments if isinstance(arguments, dict) else {"value": arguments},
    }
    if call.get("output") is not None:
        out["output"] = call["output"]
    return out


def _transcript_message(turn: DeepEvalTurn) -> Message:
    message: Message = {"role": turn["role"], "content": turn["content"]}
    calls: list[JsonValue] = [_call(c) for c in objects(turn.get("tools_called")) if c.get("name")]
    if calls:
        message["tool_calls"] = calls
    return message
