"""promptfoo's results file (`promptfoo eval -o results.json` or `.jsonl`) as recorded conversations.

Each result (one test case of one prompt and provider) is a conversation: the messages
promptfoo sent (`prompt.raw`: a chat JSON list, else one user message) and the reply
(`response.output`). It is named by the test's description (else `test-N`), with `@prompt-N`
when the file has several prompts and `@provider` when it has several providers. promptfoo's
own verdict is kept as metadata (`promptfoo_success`, `promptfoo_score`, `promptfoo_assertions`:
each assertion's type, pass, score and reason; `promptfoo_named_scores`, `promptfoo_vars`,
`promptfoo_provider`). A result that failed with an error (`failureReason` 2) is an
execution error with promptfoo's message; one without a reply (its provider failed) is left
out and named in a warning.
"""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path

from pydantic import JsonValue

from ..errors import DatasetError
from ._chat_logs import ROLES, LoggedMessage, LoggedTest, slug, text_of, unique
from ._common import DatasetWarning, JsonObject, as_object, decode_json, objects, read_json, read_jsonl

#: promptfoo's `ResultFailureReason.ERROR`: the provider or an assertion raised.
_ERROR = 2


def is_promptfoo_results(path: Path, head: str) -> bool:
    """promptfoo's output file: `evalId`, then `results` with its `version`; or its JSON Lines
    (`-o results.jsonl`), one result a line (`{"cost":..., "gradingResult":...`)."""
    if '"evalId"' in head and '"results"' in head and '"version"' in head:
        return True
    return path.suffix == ".jsonl" and re.match(r'\s*\{"cost":', head) is not None and '"gradingResult"' in head


def read_promptfoo_results(path: Path) -> list[LoggedTest]:
    """One recorded conversation per promptfoo result (see the module docstring)."""
    if path.suffix == ".jsonl":
        run: JsonObject = {}
        results = objects([record for _, record in read_jsonl(path)])
    else:
        run = as_object((as_object(read_json(path)) or {}).get("results")) or {}
        results = objects(run.get("results"))
    if not results:
        raise DatasetError(f"{path}:1: a promptfoo results file with no results")
    # `promptIdx` numbers a prompt per provider; `promptId` is the prompt's own
    prompts = [
        *dict.fromkeys([*(p.get("id") for p in objects(run.get("prompts"))), *(r.get("promptId") for r in results)])
    ]
    providers = {_provider(r) for r in results}
    tests: list[LoggedTest] = []
    left_out: list[str] = []
    seen: set[str] = set()
    for result in results:
        case = as_object(result.get("testCase")) or {}
        name = slug(str(case.get("description") or f"test-{_index(result.get('testIdx')) + 1}"))
        if len(prompts) > 1:
            name += f"@prompt-{prompts.index(result.get('promptId')) + 1}"
        if len(providers) > 1:
            name += f"@{slug(_provider(result))}"
        response = as_object(result.get("response")) or {}
        output = response.get("output")
        error = str(result.get("error") or response.get("error") or "promptfoo: error")
        if output is None:  # the provider failed: nothing to grade
            left_out.append(f"{name} ({error[:200]})")
            continue
        reply = output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)
        transcript = [*_sent(result), LoggedMessage(role="assistant", content=reply)]
        test: LoggedTest = {"id": unique(name, seen), "transcript": transcript, "metadata": _verdict(result)}
        if result.get("failureReason") == _ERROR:
            test["error"] = error
        tests.append(test)
    if not tests:
        raise DatasetError(f"{path}:1: no result of the promptfoo results file has a reply: {'; '.join(left_out)}")
    if left_out:
        warnings.warn(
            f"{path}: {len(left_out)} result(s) without a reply left out: {'; '.join(left_out)}",
            DatasetWarning,
            stacklevel=2,
        )
    return tests


def _index(value: JsonValue) -> int:
    return value if isinstance(value, int) else 0


def _provider(result: JsonObject) -> str:
    provider = as_object(result.get("provider")) or {}
    return str(provider.get("label") or provider.get("id") or "provider")


def _sent(result: JsonObject) -> list[LoggedMessage]:
    """The messages promptfoo sent: its rendered prompt, a chat list or one user message. Those
    before the last user message (a conversation's earlier turns, which earlier results hold)
    are this result's input (`source: input`): only its reply is graded."""
    raw = (as_object(result.get("prompt")) or {}).get("raw")
    text = raw if isinstance(raw, str) else ""
    try:
        chat = decode_json(text) if text.lstrip().startswith("[") else None
    except ValueError:
        chat = None
    listed = chat if isinstance(chat, list) else []
    messages = objects(listed)
    if not (messages and len(messages) == len(listed) and all(m.get("role") in ROLES for m in messages)):
        return [{"role": "user", "content": text}]
    sent: list[LoggedMessage] = [{"role": str(m["role"]), "content": text_of(m.get("content"))} for m in messages]
    last_user = max((i for i, m in enumerate(sent) if m["role"] == "user"), default=0)
    for message in sent[:last_user]:
        message["source"] = "input"
    return sent


def _verdict(result: JsonObject) -> JsonObject:
    """promptfoo's verdict on the result, as metadata."""
    grading = as_object(result.get("gradingResult")) or {}
    assertions: list[JsonValue] = []
    for component in objects(grading.get("componentResults")):
        assertion = as_object(component.get("assertion")) or {}
        assertions.append(
            {
                "type": assertion.get("type"),
                "pass": component.get("pass"),
                "score": component.get("score"),
                "reason": component.get("reason"),
            }
        )
    metadata: JsonObject = {
        "promptfoo_success": result.get("success"),
        "promptfoo_score": result.get("score"),
        "promptfoo_assertions": assertions,
        "promptfoo_provider": _provider(result),
    }
    for key, name in (("namedScores", "promptfoo_named_scores"), ("vars", "promptfoo_vars")):
        if result.get(key):
            metadata[name] = result[key]
    return metadata
