"""How AgentV v4.42.4 reads a code-grader's program (`packages/core/src/evaluation/graders/
code-grader.ts`, lines 261-330), for code-graders of AgentV files (`agentv_protocol`).

- It exits 0 and prints a JSON object: `score` (clamped to 0..1), else the share of its
  `assertions` that passed, else 0; its `assertions` keep those with a `text`.
- It exits 0 and prints anything else (plain text, a JSON array): score 1, the text its check.
- It exits non-zero printing plain text and nothing on stderr: score 0, the text its check.
- It exits non-zero printing JSON, or anything on stderr: score 0, its check "Code evaluator
  failed: ..." (`FAILED`) with the command and its stderr.

A program that cannot start or runs over its time stays a grader error, as in every code-grader
(AgentV scores those 0 too; convoeval never turns an unfinished check into a verdict).

What the program reads (`agentv_payload`): AgentV up to v4.35 sent `output` as the list of
output messages; v4.38.0 sends the reply's text (`context.candidate`) with the messages in
`messages`, and `answer` (the text again); v4.42.4 (`code-grader.ts` lines 146 and 173-174) and
main (58f316c, lines 234 and 261-262) drop `answer`, and main's own contract check
(`examples/contract/scripts/check-script-grader-payload.ts`) requires it absent. None of AgentV's
examples reads `output` as a list any more (v4.15's read `output_text`, which stays). A grader
whose SDK (`sdk_version`) is older than 4.36 reads what AgentV of that era sent (`old_sdk_payload`).
"""

from __future__ import annotations

import functools
import json
import math
import os
import re
from pathlib import Path

from .._text import shorten
from ..results import AssertionOutcome, Message, ToolCall
from ._base import Grade, GradeContext

#: How the check of a program that failed begins (AgentV's words).
FAILED = "Code evaluator failed: "


def _json_object(text: str) -> dict[str, object] | None:
    try:
        found = json.loads(text)
    except json.JSONDecodeError:
        return None
    return found if isinstance(found, dict) else None


def _clamped(value: object) -> float:
    number = float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else math.nan
    return 0.0 if not math.isfinite(number) else min(1.0, max(0.0, number))


def agentv_grade(code: int, stdout: str, stderr: str, shown: str = "") -> Grade:
    """The Grade AgentV gives a program (`shown`, its command) that ended with exit status `code`."""
    text = stdout.strip()
    if code != 0 and (text.startswith(("{", "[")) or stderr.strip()):
        why = f"`{shown}` " if shown else ""
        why += f"exited with code {code}" + (f": {shorten(stderr.strip(), 300)}" if stderr.strip() else "")
        return Grade(score=0.0, assertions=[AssertionOutcome(text=FAILED + why, passed=False)])
    result = _json_object(text)
    if result is None:
        passed = code == 0
        label = text or ("exit 0" if passed else f"exit {code}")
        return Grade(score=1.0 if passed else 0.0, assertions=[AssertionOutcome(text=label, passed=passed)])
    raw = result.get("assertions")
    outcomes = [
        AssertionOutcome(
            text=item["text"],
            passed=bool(item.get("passed")),
            evidence=item["evidence"] if isinstance(item.get("evidence"), str) else "",
        )
        for item in (raw if isinstance(raw, list) else [])
        if isinstance(item, dict) and isinstance(item.get("text"), str)
    ]
    if "score" in result and isinstance(result["score"], (int, float)) and not isinstance(result["score"], bool):
        score = _clamped(result["score"])
    elif isinstance(result.get("pass"), bool):  # AgentV v5's `pass` (v4.42 ignores it: score 0)
        score = 1.0 if result["pass"] else 0.0
    else:
        score = sum(o.passed for o in outcomes) / len(outcomes) if outcomes else 0.0
    details = result.get("details")
    return Grade(score=score, assertions=outcomes, details=details if isinstance(details, dict) else None)


def agentv_payload(
    payload: dict[str, object], ctx: GradeContext, sdk: tuple[int, ...] | None = None
) -> dict[str, object]:
    """convoeval's stdin payload (`_code.grading_payload`) as the newest AgentV sends it
    (v5.3.1-next.1 `graders/script-grader.ts` lines 255-288; v4.42.4 `code-grader.ts` the same
    fields), in the shape its SDK's zod schema (`ScriptGraderInputSchema`) requires: `output`
    the graded text, `messages` the conversation (tool calls as `{tool, input, output, id}`),
    `expected_output` the expected messages (`[]` without; JSON-object content kept),
    `input_files` the attachments (absolute paths), `criteria` a string (`''` without, as
    AgentV's yaml-parser.ts sets it), `token_usage` as `{input, output}`, `duration_ms`, the
    test's `metadata`, `trace_summary` (`trace_summary`); no `answer`. convoeval's other keys stay (the SDK drops unknown keys).
    For a grader whose SDK is older than 4.36 (`sdk`), `old_sdk_payload`."""
    found = {k: v for k, v in payload.items() if k != "answer"}
    found["output"] = payload.get("output_text")
    found["messages"] = [_message(m) for m in ctx.transcript]
    found["expected_output"] = ctx.expected_messages or []
    found["input_files"] = list(ctx.input_files)
    found["criteria"] = ctx.criteria or ""
    usage = ctx.reply.usage if ctx.reply is not None else ctx.usage
    found["token_usage"] = {"input": usage.input_tokens, "output": usage.output_tokens} if usage else None
    found["duration_ms"] = ctx.reply.latency_ms if ctx.reply is not None else None
    found["metadata"] = ctx.metadata or None
    found["trace_summary"] = trace_summary(ctx)
    return old_sdk_payload(found, ctx) if sdk is not None and sdk < (4, 36) else found


def trace_summary(ctx: GradeContext) -> dict[str, object]:
    """AgentV's `trace_summary` of what is graded (v4.42.4 `trace.ts` `computeTraceSummary`
    over the target's output messages, `code-grader.ts` lines 183-191): `event_count` the tool
    calls, `tool_calls` their count per tool, `error_count` 0 (AgentV counts none there),
    `llm_call_count` the target's assistant messages (the reply; at conversation level every
    reply), `tool_durations` per tool when a call's duration is known."""
    if ctx.reply is not None:
        calls, llm_calls = list(ctx.reply.tool_calls), 1
    else:
        replies = [m for m in ctx.transcript if m.source == "target" and m.role == "assistant"]
        calls, llm_calls = [c for m in replies for c in m.tool_calls], len(replies)
    counts: dict[str, int] = {}
    durations: dict[str, list[float]] = {}
    for call in calls:
        counts[call.name] = counts.get(call.name, 0) + 1
        if call.duration_ms is not None:
            ms = call.duration_ms  # JSON `900` as AgentV's, not `900.0`
            durations.setdefault(call.name, []).append(int(ms) if float(ms).is_integer() else ms)
    summary: dict[str, object] = {
        "event_count": len(calls),
        "tool_calls": counts,
        "error_count": 0,
        "llm_call_count": llm_calls,
    }
    if durations:
        summary["tool_durations"] = durations
    return summary


def old_sdk_payload(payload: dict[str, object], ctx: GradeContext) -> dict[str, object]:
    """The payload as AgentV up to v4.35 sent it, for an SDK whose schema wants it so (v4.15.0
    `evaluators/code-evaluator.ts` lines 157-179, `packages/eval/src/schemas.ts`
    `CodeGraderInputSchema`): `output` the graded messages (the reply, or the target's messages
    of the conversation) with their tool calls; an expected message's JSON-object content as
    text, as v4.15 renders it (`JSON.stringify(content, null, 2)`, `yaml-parser.ts` line 464):
    v4.15 sent the object (`loaders/message-processor.ts` line 455), which its SDK's `Message`
    (text or content blocks, schemas.ts line 98) refuses."""
    if ctx.reply is not None:
        graded = [{"role": "assistant", "content": ctx.output, **_calls(ctx.reply.tool_calls)}]
    else:
        graded = [_message(m) for m in ctx.transcript if m.source == "target"]
    expected = payload.get("expected_output")
    return {
        **payload,
        "output": graded,
        "expected_output": [_text_content(m) for m in expected] if isinstance(expected, list) else expected,
    }


def _text_content(message: object) -> object:
    if isinstance(message, dict) and isinstance(message.get("content"), dict):
        return {**message, "content": json.dumps(message["content"], indent=2, ensure_ascii=False)}
    return message


#: The packages of AgentV's grader SDK, by era (`@agentv/eval` to v4.42, `@agentv/sdk`, `agentv`).
_SDKS = ("@agentv/eval", "@agentv/sdk", "agentv")


def grader_sdk(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[int, ...] | None:
    """The version of AgentV's SDK that the program's script (its first argument naming a file,
    else `cwd`) would import, as `sdk_version` finds it with the program's NODE_PATH."""
    script = next((cwd / a for a in argv[1:] if os.path.isfile(cwd / a)), None)  # an inline program may be long
    folder = script.resolve().parent if script is not None else cwd.resolve()
    return sdk_version(str(folder), env.get("NODE_PATH", ""))


@functools.lru_cache(maxsize=256)
def sdk_version(folder: str, node_path: str = "") -> tuple[int, ...] | None:
    """The `version` of the first SDK package Node/bun resolution finds from `folder`: its
    `node_modules/<package>/package.json` walking up, then NODE_PATH's folders; None if none."""
    start = Path(folder)
    places = [p / "node_modules" for p in (start, *start.parents)]
    places += [Path(p) for p in node_path.split(os.pathsep) if p]
    for place in places:
        for name in _SDKS:
            try:
                found = json.loads((place / name / "package.json").read_text())
            except (OSError, ValueError):
                continue
            version = re.match(r"(\d+)\.(\d+)\.(\d+)", str(found.get("version"))) if isinstance(found, dict) else None
            return tuple(int(n) for n in version.groups()) if version else None
    return None


def _message(message: Message) -> dict[str, object]:
    """A message as AgentV's `Message` (`{role, content, tool_calls?}`, its ToolCall's names)."""
    return {"role": message.role, "content": message.content, **_calls(message.tool_calls)}


def _calls(calls: list[ToolCall]) -> dict[str, object]:
    """`tool_calls` as AgentV's ToolCall (`{tool, input, output, id?}`), when there are any."""
    if not calls:
        return {}
    return {
        "tool_calls": [
            {"tool": c.name, "input": c.arguments, "output": c.output, **({"id": c.id} if c.id else {})} for c in calls
        ]
    }
