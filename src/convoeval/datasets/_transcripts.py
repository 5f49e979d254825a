"""Recorded conversations as tests graded without calling a target (`transcript:` tests).

Input, one JSON object a line:
- OpenAI chat logs: `{"messages": [...], "id"?: ..., "metadata"?: {...}}` (tool calls in
  OpenAI's format, tool results as `tool` messages);
- convoeval results (`results.jsonl`): `{"test_id", "target", "output": [...]}`; each becomes
  one test named `<test_id>@<target>` (one per trial, `<test_id>@<target>#<trial>`, for a result
  of several), for re-judging a stored run with a new judge; its trial's `error` and
  `budget_hit` say how the conversation ended, and a conversation with no reply (an error before
  it, a skipped test) is left out and named in a warning;
- other tools' logs, told apart by their content (`_log_formats`): Inspect eval logs (`.eval`,
  `.json`), promptfoo results files, AgentV transcript JSONL, Langfuse exports, OpenTelemetry GenAI spans;
- a Claude Code session file or a Codex rollout file (or a folder of them): one test each
  (see `_agent_sessions`).

`grading_suite` adds the graders (a YAML file with suite keys such as `turn_assertions`,
`assertions`, `policy`, `execution`), or by default one judge check per turn
(`conversation-cohesion`) and one for the conversation (`self-coherence`).
"""

from __future__ import annotations

import warnings
from pathlib import Path

from pydantic import JsonValue

from ..errors import DatasetError
from ._agent_sessions import agent_sessions_suite
from ._chat_logs import ROLES, LoggedMessage, LoggedTest
from ._common import DatasetWarning, JsonObject, as_list, as_object, parse_yaml, read_json, read_jsonl, read_text
from ._log_formats import log_reader
from ._suite_types import GRADER_KEYS, Graders, GradingSuite, Message, Suite, SuiteTest, is_grader_key, with_call_fields

DEFAULT_GRADERS: Graders = {
    "turn_assertions": [{"type": "conversation-cohesion"}],
    "assertions": [{"type": "self-coherence"}],
}


def import_transcripts(source: Path, log_format: str | None = None) -> Suite:
    """One `transcript:` test per recorded conversation of `source`."""
    sessions = agent_sessions_suite(source) if log_format is None else None
    if sessions is not None:
        return sessions
    reader = log_reader(source, log_format)
    if reader is not None:
        return _suite(source, [_logged_test(t) for t in reader(source)])
    tests: list[SuiteTest] = []
    seen: set[str] = set()
    left_out: list[str] = []
    conversations = [
        (line, record, *conversation)
        for line, record in _records(source)
        for conversation in _conversations(source, line, record)
    ]
    for line, record, name, messages, ended in conversations:
        if not name:
            name = f"conversation-{len(tests) + 1}"
        transcript = [_message(m, source, line) for m in messages]
        roles = {m["role"] for m in transcript}
        if not {"user", "assistant"} <= roles:
            if "test_id" in record:  # a result whose conversation never got a reply
                left_out.append(f"{name} ({ended.get('error') or ended.get('execution_status')})")
                continue
            raise DatasetError(f"{source}:{line}: a conversation needs a user and an assistant message")
        test_id, n = name, 2
        while test_id in seen:
            test_id, n = f"{name}-{n}", n + 1
        seen.add(test_id)
        test: SuiteTest = {"id": test_id, "transcript": transcript}
        for key in ("error", "budget_hit"):  # how the recorded conversation ended
            if isinstance(ended.get(key), str) and ended[key]:
                test[key] = str(ended[key])
        metadata = as_object(record.get("metadata"))
        if metadata:
            test["metadata"] = metadata
        tests.append(test)
    if left_out:
        warnings.warn(
            f"{source}: {len(left_out)} result(s) without a user and an assistant message left out: "
            + "; ".join(left_out),
            DatasetWarning,
            stacklevel=2,
        )
    if not tests:
        raise DatasetError(f"{source}:1: no conversations in the file")
    return {
        "name": source.name.removesuffix(".jsonl"),
        "description": f"Recorded conversations from {source.name}, graded without calling a target",
        "tests": tests,
    }


def _records(source: Path) -> list[tuple[int, JsonObject]]:
    """The file's JSON Lines; a whole JSON document of no known format is named as such (its
    second line, no JSON of its own, says nothing useful)."""
    try:
        return read_jsonl(source)
    except DatasetError as exc:
        problem = exc
    try:
        read_json(source)
    except DatasetError:
        raise problem from None
    raise DatasetError(
        f"{source}:1: a JSON document in none of the formats read as recorded conversations: OpenAI chat "
        "logs or convoeval results (JSON Lines), an Inspect log, a promptfoo results file, AgentV transcripts, "
        "a Langfuse export, "
        "OpenTelemetry spans or GenAI event logs, Claude Code or Codex sessions (other tools' tests and "
        "datasets: `convoeval import KIND`)"
    )


def _conversations(source: Path, line: int, record: JsonObject) -> list[tuple[str, list[JsonValue], JsonObject]]:
    """The conversations of one line as (name, messages, how it ended: `error`, `budget_hit`,
    `execution_status`): a chat log's (named by its `id`, else "" for a number); a convoeval
    result's, `<test_id>@<target>`, or each trial's, `<test_id>@<target>#<trial>`, when it has
    several (its `output` is its first trial's)."""
    output, chat = record.get("output"), record.get("messages")
    if isinstance(output, list) and "test_id" in record:
        name = f"{record['test_id']}@{record.get('target', 'target')}"
        trials = [t for t in as_list(record.get("trials")) if isinstance(t, dict)]
        if len(trials) > 1 and all(isinstance(t.get("output"), list) for t in trials):
            return [(f"{name}#{t.get('trial', i)}", as_list(t["output"]), t) for i, t in enumerate(trials)]
        return [(name, output, trials[0] if trials else record)]
    if isinstance(chat, list):
        return [(str(record.get("id") or ""), chat, {})]
    raise DatasetError(
        f"{source}:{line}: expected `messages` (OpenAI chat format) or a convoeval result (`test_id`, `output`)"
    )


def _suite(source: Path, tests: list[SuiteTest]) -> Suite:
    name = source.name.rsplit(".", 1)[0]
    return {
        "name": name,
        "description": f"Recorded conversations from {source.name}, graded without calling a target",
        "tests": tests,
    }


def _message(raw: JsonValue, source: Path, line: int) -> Message:
    role = raw.get("role") if isinstance(raw, dict) else None
    if not isinstance(raw, dict) or role not in ROLES:
        raise DatasetError(f"{source}:{line}: every message needs a role (system, user, assistant or tool)")
    content = raw.get("content")
    if isinstance(content, list):  # content blocks: keep the text
        content = "\n".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
    return with_call_fields({"role": role, "content": content}, raw)


def _logged_test(test: LoggedTest) -> SuiteTest:
    """A log reader's test as a suite's test."""
    out: SuiteTest = {"id": test["id"], "transcript": [_logged(m) for m in test["transcript"]]}
    for key in ("error", "budget_hit", "metadata"):
        if key in test:
            out[key] = test[key]
    return out


def _logged(logged: LoggedMessage) -> Message:
    """A log reader's message (its empty optional fields left out)."""
    return with_call_fields({"role": logged["role"], "content": logged["content"]}, logged)


def grading_suite(source: Path, graders: Path | None = None) -> GradingSuite:
    """The suite `convoeval grade` runs: the imported transcripts plus the graders."""
    suite = import_transcripts(source)
    extra = DEFAULT_GRADERS if graders is None else _graders(graders)
    return {"name": suite["name"], "description": suite["description"], **extra, "tests": suite["tests"]}


def _graders(path: Path) -> Graders:
    """The graders of a `--graders` YAML file."""
    if not path.is_file():
        raise DatasetError(f"{path}:1: no such file")
    loaded: object = parse_yaml(read_text(path), path) or {}
    if not isinstance(loaded, dict):
        raise DatasetError(f"{path}:1: expected a mapping with {', '.join(GRADER_KEYS)}")
    graders: Graders = {}
    for key, value in loaded.items():
        if not is_grader_key(key):
            raise DatasetError(f"{path}:1: {key}: not a grader setting (use {', '.join(GRADER_KEYS)})")
        graders[key] = value
    return graders
