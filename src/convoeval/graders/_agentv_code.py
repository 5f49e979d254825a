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
examples reads `output` as a list any more (v4.15's read `output_text`, which stays).
"""

from __future__ import annotations

import json
import math

from .._text import shorten
from ..results import AssertionOutcome, Message
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


def agentv_payload(payload: dict[str, object], ctx: GradeContext) -> dict[str, object]:
    """convoeval's stdin payload (`_code.grading_payload`) as the newest AgentV sends it
    (v5.3.1-next.1 `graders/script-grader.ts` lines 255-288; v4.42.4 `code-grader.ts` the same
    fields), in the shape its SDK's zod schema (`ScriptGraderInputSchema`) requires: `output`
    the graded text, `messages` the conversation (tool calls as `{tool, input, output, id}`),
    `expected_output` the expected messages (`[]` without; JSON-object content kept),
    `input_files` the attachments (absolute paths), `criteria` a string (`''` without, as
    AgentV's yaml-parser.ts sets it), `token_usage` as `{input, output}`, `duration_ms`, the
    test's `metadata`; no `answer`. convoeval's other keys stay (the SDK drops unknown keys)."""
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
    return found


def _message(message: Message) -> dict[str, object]:
    """A message as AgentV's `Message` (`{role, content, tool_calls?}`, its ToolCall's names)."""
    found: dict[str, object] = {"role": message.role, "content": message.content}
    if message.tool_calls:
        found["tool_calls"] = [
            {"tool": c.name, "input": c.arguments, "output": c.output, **({"id": c.id} if c.id else {})}
            for c in message.tool_calls
        ]
    return found
