"""`script`: AgentV v5's script grader (its `graders/script-grader.ts`, v5.3.1), a code-grader
with v5's stdin and stdout.

On stdin, what AgentV v5 sends (`_agentv_code.agentv_payload`): `output` the graded reply's
text (v5's `candidate`), `messages` the conversation, `expected_output` the expected messages,
`input_files`, `criteria`, `token_usage`. On stdout,
v5's protocol: `{"pass"?, "score"?, "reason"?, "checks"?: [{"text", "pass", "reason",
"score"?, "evidence"?}], "details"?}`; without `score`, the mean of the checks' scores (a check
without one counts 1 when it passed), else `pass`. Older `assertions` still count as in
`code-grader`. A non-zero exit or output without `pass`, `score`, `checks` or `assertions` is a
grader error (AgentV scores it 0; convoeval never turns a grader that could not decide into a
verdict).

Example:
    - type: script
      metric: keyword_check
      command: [uv, run, check_python_keywords.py]
"""

from __future__ import annotations

import math
from typing import Any, Literal

from .._text import shorten
from ._agentv_code import _json_object
from ._base import Grade, GraderError, assertion_type
from ._code import CodeGrader, ProgramFailed, grade_from_json


@assertion_type
class ScriptGrader(CodeGrader):
    """AgentV v5's `script` grader: a code-grader whose program reads the reply's text as
    `output` and prints `{pass?, score?, reason?, checks?}`."""

    type: Literal["script"]  # type: ignore[assignment]

    @property
    def speaks_agentv(self) -> bool:
        """AgentV's stdin (`agentv_payload`), whatever the file: `script` is AgentV's grader."""
        return True

    def grade_result(self, result: dict[str, object], shown: str) -> Grade:
        return grade_from_json(v5_result(result, shown), shown)

    async def _run(self, *args: Any, **kwargs: Any) -> Grade:
        """As a code-grader's; a failed program's error ends with the `reason` it printed
        (AgentV's SDK prints why it failed, e.g. its schema's complaint, and exits 1)."""
        try:
            return await super()._run(*args, **kwargs)
        except ProgramFailed as failed:
            printed = _json_object(failed.stdout.strip())
            reason = printed.get("reason") if printed is not None else None
            if not isinstance(reason, str) or not reason:
                raise
            raise GraderError(f"{failed}: {shorten(' '.join(reason.split()), 400)}") from None


def v5_result(result: dict[str, object], shown: str) -> dict[str, object]:
    """v5's `checks` as `assertions`, and its score rule (`normalizeScriptProtocol`)."""
    checks = result.get("checks")
    if checks is None:
        return result
    if not isinstance(checks, list) or not all(isinstance(c, dict) for c in checks):
        raise GraderError(f"script `{shown}`: `checks` must be a list of {{text, pass, reason}}")
    assertions = []
    scores = []
    for check in checks:
        passed = check.get("pass")
        if not isinstance(check.get("text"), str) or not isinstance(passed, bool):
            raise GraderError(f"script `{shown}`: each check needs `text` and `pass` (true or false): {check!r}")
        score = check.get("score")
        valid = isinstance(score, (int, float)) and not isinstance(score, bool) and math.isfinite(score)
        scores.append(min(1.0, max(0.0, float(score))) if valid else (1.0 if passed else 0.0))
        evidence = check.get("evidence", check.get("reason"))
        assertions.append(
            {"text": check["text"], "passed": passed, **({"evidence": evidence} if isinstance(evidence, str) else {})}
        )
    found = {**result, "assertions": [*assertions, *(result.get("assertions") or [])]}  # type: ignore[misc]
    del found["checks"]
    if "score" not in found and scores:
        found["score"] = sum(scores) / len(scores)
    return found
