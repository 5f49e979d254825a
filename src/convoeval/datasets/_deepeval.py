"""DeepEval datasets (`EvaluationDataset.save_as("json" | "jsonl")`) as convoeval suites.

Records, as DeepEval writes them:
- conversational goldens / test cases: `scenario`, `turns` ([{role, content, tools_called?,
  retrieval_context?, ...}]), `expected_outcome`, `user_description` (and, since DeepEval 4, a
  `persona` mapping: `characteristics` and named traits), `chatbot_role`, `context`, `name`, `additional_metadata`;
- single-turn goldens: `input`, `expected_output`, `actual_output`, `context`,
  `retrieval_context`, `tools_called`, `expected_tools`, `name`.

What becomes what:
- the user `turns` -> a `mode: conversation` test, one scripted turn each; the recorded
  assistant replies stay in each turn's `metadata`, their `retrieval_context` becomes the
  turn's `context` (with `recorded=True` the whole
  conversation is a `transcript:` test, graded without calling a target);
- `scenario` + `user_description` -> a `simulated_user` (objective, persona) that continues
  after any scripted turns, and `expected_outcome` -> its `success` criterion;
- `chatbot_role` -> a `role-adherence` check on the conversation;
- a single-turn golden -> a test with `input` and `expected_output`, judged by `llm-grader`.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Required, TypedDict

from pydantic import JsonValue

from ..errors import DatasetError
from ._chat_logs import unique
from ._common import JsonObject, decode_json, objects, read_json, read_jsonl, read_text
from ._suite_types import Message, Suite, SuiteTest, Turn

DEFAULT_MAX_TURNS = 10


class DeepEvalTurn(TypedDict, total=False):
    """A turn of a conversational golden or test case, as the importer reads it."""

    role: Required[str]
    content: Required[str]
    retrieval_context: JsonValue
    tools_called: JsonValue


def import_deepeval(source: Path, recorded: bool = False, max_turns: int = DEFAULT_MAX_TURNS) -> Suite:
    """One test per DeepEval golden or test case of `source` (.json list or .jsonl)."""
    records: list[tuple[int, JsonValue]] = list(read_jsonl(source)) if source.suffix == ".jsonl" else _records(source)
    tests: list[SuiteTest] = []
    seen: set[str] = set()
    for line, record in records:
        if not isinstance(record, dict):
            raise DatasetError(f"{source}:{line}: expected a JSON object (a golden or test case)")
        test = _test(record, source, line, recorded, max_turns)
        test["id"] = unique(test["id"], seen)
        tests.append(test)
    if not tests:
        raise DatasetError(f"{source}:1: no goldens or test cases in the file")
    return {
        "name": source.stem,
        "description": f"Imported from the DeepEval dataset {source.name}",
        "tests": tests,
    }


def _records(source: Path) -> list[tuple[int, JsonValue]]:
    """`(line, record)` of each element of a JSON list (or of `goldens`/`test_cases` in a mapping)."""
    data = read_json(source)  # the error with file and line when it is not JSON
    if isinstance(data, dict):  # {"goldens": [...]} / {"test_cases": [...]}: no per-record lines
        data = data.get("goldens") or data.get("test_cases") or data.get("testCases")
        if isinstance(data, list):
            return [(1, record) for record in data]
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


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-")[:60]


def _test(record: JsonObject, source: Path, line: int, recorded: bool, max_turns: int) -> SuiteTest:
    name = record.get("name") or record.get("scenario") or record.get("input") or f"golden-line-{line}"
    test: SuiteTest = {"id": _slug(str(name)) or f"golden-line-{line}"}
    metadata: JsonObject = {
        k: record[k] for k in ("comments", "additional_metadata", "context", "tags") if record.get(k)
    }
    single = record.get("input")
    if "turns" in record or "scenario" in record:
        _conversational(test, record, source, line, recorded, max_turns)
    elif isinstance(single, str):
        _single(test, single, record)
    else:
        raise DatasetError(
            f"{source}:{line}: not a DeepEval golden: expected `turns` or `scenario` (conversational) or `input`"
        )
    if metadata:
        test["metadata"] = {**test.get("metadata", {}), **metadata}
    return test


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
        k: record[k] for k in ("actual_output", "retrieval_context", "tools_called") if record.get(k)
    }
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
            }
        )
    return turns


def _persona(record: JsonObject) -> JsonValue:
    persona = record.get("persona")
    if isinstance(persona, dict):  # DeepEval's Persona: `characteristics` and optional named traits
        traits = [f"{k.replace('_', ' ')}: {v}" for k, v in persona.items() if v and k != "characteristics"]
        return "; ".join([str(persona["characteristics"])] * bool(persona.get("characteristics")) + traits) or None
    return record.get("user_description") or None


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
            raise DatasetError(f"{source}:{line}: turns: --recorded needs the assistant's turns")
        test["transcript"] = [*system, *(_transcript_message(t) for t in turns)]
        test.pop("input", None)
        if record.get("expected_outcome"):
            test.setdefault("assertions", []).append({"type": "goal-completion"})
            test["criteria"] = record["expected_outcome"]
        return
    scripted = _scripted(turns)
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


def _scripted(turns: list[DeepEvalTurn]) -> list[Turn]:
    """User turns as scripted turns; the assistant reply that followed each kept as metadata,
    its `retrieval_context` as the turn's `context` (what the judges see as the turn's backend data)."""
    scripted: list[Turn] = []
    for turn in turns:
        if turn["role"] == "user":
            scripted.append({"input": turn["content"]})
        elif scripted:
            scripted[-1].setdefault("metadata", {})["recorded_reply"] = turn["content"]
            if turn.get("retrieval_context"):
                scripted[-1]["context"] = turn.get("retrieval_context")
    return scripted


def _transcript_message(turn: DeepEvalTurn) -> Message:
    message: Message = {"role": turn["role"], "content": turn["content"]}
    calls: list[JsonValue] = []
    for call in objects(turn.get("tools_called")):
        if call.get("name"):
            arguments = call.get("inputParameters") or call.get("input_parameters") or {}
            calls.append(
                {
                    "name": call["name"],
                    "arguments": arguments if isinstance(arguments, dict) else {"value": arguments},
                    "output": call.get("output"),
                }
            )
    if calls:
        message["tool_calls"] = calls
    return message
