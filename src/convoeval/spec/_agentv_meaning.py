"""AgentV's assertions with the meaning the real AgentV CLI (v4.42.4) gives them, read into convoeval's.

AgentV v4.42.4 (`packages/core/src/evaluation/graders/assertions.ts`) compares `equals`,
`starts-with` and `ends-with` on the trimmed reply and the trimmed value, and runs `regex` as
`new RegExp(value, flags).test(reply)`: JavaScript's meaning, where `\\d`, `\\w` and `\\b` are
ASCII-only, `$` (without the `m` flag) is only the end of the text, and `.` stops at `\\r`, U+2028
and U+2029 as well as at `\\n`. convoeval's own assertions compare exactly and use Python's
meaning, so an AgentV file's assertions get `trim: true` and a pattern rewritten into the Python
one that matches the same texts. A `rubrics` whose required criterion fails fails itself but not
the test (`llm-grader.ts` `calculateRubricScore`: the verdict is fail, the score stays the
satisfied weight; `orchestrator.ts` gates the test only on an assertion's own `required`). A
`tool-trajectory` compares arguments exactly unless it says otherwise and passes when its score
reaches the pass mark, not only when every expected call matched (`tool-trajectory.ts`), and
a `code-grader`'s program is read as AgentV reads it (`graders/_agentv_code.py`). A `cost` (or an
`execution-metrics` `max_cost_usd`) with no cost known fails (`cost.ts`: "No cost data available in
trace"), where convoeval's own is an error. A numeric `required: 0.7` (deprecated in AgentV) is
`required: true` with `min_score: 0.7`; an `llm-grader` (or the deprecated `rubric`) with
`rubrics` is a `rubrics` check of those criteria.
"""

from __future__ import annotations

import re

from ._agentv_v5 import AgentvFormError

_WORD = "A-Za-z0-9_"
#: JavaScript escapes outside a character class, as Python patterns (the `regex` module's syntax).
_OUTSIDE = {
    "d": "[0-9]",
    "D": "[^0-9]",
    "w": f"[{_WORD}]",
    "W": f"[^{_WORD}]",
    "b": f"(?:(?<=[{_WORD}])(?![{_WORD}])|(?<![{_WORD}])(?=[{_WORD}]))",
    "B": f"(?:(?<=[{_WORD}])(?=[{_WORD}])|(?<![{_WORD}])(?![{_WORD}]))",
}
#: The same inside a character class (only the positive ones can be spelled there).
_INSIDE = {"d": "0-9", "w": _WORD}
#: Letters a JavaScript pattern gives a meaning after a backslash; without the `u` flag any other
#: escaped letter is the letter itself (`\\A`, `\\Z`, `\\p`, `\\e` match "A", "Z", "p", "e", where
#: Python's are anchors, a property class and an escape character).
_JS_LETTERS = frozenset("dDwWsSbBfnrtvcxuk")
#: A named backreference, `\\k<name>` (Python's `(?P=name)`).
_BACKREF = re.compile(r"\\k<([A-Za-z_$][\w$]*)>")
#: The start of a group JavaScript (Node 20) reads: `(?:`, `(?=`, `(?!`, `(?<=`, `(?<!`, `(?<name>`.
_JS_GROUP = re.compile(r"\(\?(?::|=|!|<=|<!|<[A-Za-z_$][\w$]*>)")
#: The types AgentV skips, with a warning, when `value` is not a non-empty string (`grader-parser.ts`).
_NEED_TEXT = frozenset({"contains", "icontains", "starts-with", "ends-with", "regex", "equals"})
_TRIMMED = frozenset({"equals", "starts-with", "ends-with", "not-equals", "not-starts-with", "not-ends-with"})


def js_pattern(source: str, flags: str) -> str:
    """The Python pattern matching what JavaScript's `new RegExp(source, flags)` matches."""
    multiline, dotall, unicode = "m" in flags, "s" in flags, "u" in flags or "v" in flags
    out: list[str] = []
    in_class = False
    i = 0
    while i < len(source):
        char = source[i]
        if char == "\\" and i + 1 < len(source):
            escaped = source[i + 1]
            table = _INSIDE if in_class else _OUTSIDE
            if escaped == "c" and source[i + 2 : i + 3].isascii() and source[i + 2 : i + 3].isalpha():
                out.append(f"\\x{ord(source[i + 2]) % 32:02x}")  # `\\cJ`: a control character
                i += 3
                continue
            if escaped == "k" and (named := _BACKREF.match(source, i)):  # `\\k<name>`: a named backreference
                out.append(f"(?P={named[1]})")
                i = named.end()
                continue
            if escaped.isascii() and escaped.isalpha() and escaped not in _JS_LETTERS:
                if not (unicode and escaped in "pP"):  # `\\p{L}` is a property only with the u flag
                    out.append(escaped)
                    i += 2
                    continue
            out.append(table.get(escaped, char + escaped))
            i += 2
            continue
        if in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
            if source.startswith("]", i + 1) or source.startswith("^]", i + 1):  # `[]` / `[^]` in JavaScript
                out.append("(?!)" if source[i + 1] == "]" else "[\\s\\S]")
                i += 2 if source[i + 1] == "]" else 3
                in_class = False
                continue
        elif char == "$" and not multiline:
            char = "\\Z"
        elif char == "." and not dotall:
            char = "[^\\n\\r\\u2028\\u2029]"
        out.append(char)
        i += 1
    return "".join(out)


def js_rejects(source: str) -> bool:
    """Whether JavaScript (Node 20) refuses `source` where Python takes it: a group opened as only
    Python opens one (`(?i)`, `(?i:...)`, `(?P<name>...)`, `(?#...)`)."""
    i = source.find("(?")
    while i >= 0:
        if not _escaped_at(source, i) and not _JS_GROUP.match(source, i):
            return True
        i = source.find("(?", i + 2)
    return False


def _escaped_at(source: str, i: int) -> bool:
    """Whether the character at `i` is escaped (an odd run of backslashes before it)."""
    return (i - len(source[:i].rstrip("\\"))) % 2 == 1


def skipped_by_agentv(item: dict) -> bool:
    """Whether AgentV v4.42.4 drops this assertion (`Skipping equals evaluator ...: missing value`):
    a text assertion whose `value` is missing, empty, or not a string (a number, a list)."""
    kind = item.get("type")
    value = item.get("value")
    return isinstance(kind, str) and kind in _NEED_TEXT and not (isinstance(value, str) and value)


#: What a metric check of AgentV v4.42.4 needs, else AgentV skips it (`grader-parser.ts` lines
#: 1093-1181, "Skipping latency evaluator ...: threshold must be a non-negative number"): its limit
#: fields (AgentV's names, camelCase too for token-usage), and what to say.
_METRIC_LIMITS = {
    "latency": (("threshold",), "a `latency` needs a non-negative number `threshold`"),
    "cost": (("budget",), "a `cost` needs a non-negative number `budget`"),
    "token-usage": (
        ("max_total", "maxTotal", "max_input", "maxInput", "max_output", "maxOutput"),
        "a `token-usage` needs a non-negative number `max_total`, `max_input` or `max_output`",
    ),
}


def skipped_metric(item: dict) -> str | None:
    """Why AgentV v4.42.4 skips this metric check as written (before convoeval's renames): a
    `latency`, `cost` or `token-usage` without a usable limit of AgentV's (convoeval's own names,
    `max_ms`, `max_usd`, `max_tokens`, which AgentV's docs show, are not read there); else None."""
    kind = item.get("type")
    if not isinstance(kind, str) or kind not in _METRIC_LIMITS:
        return None
    fields, why = _METRIC_LIMITS[kind]
    usable = any(_limit(item.get(f)) for f in fields)
    return None if usable else f"{why} (given: {', '.join(k for k in item if k not in ('type', 'name')) or 'none'})"


def skipped_composite(item: dict) -> str | None:
    """Why AgentV skips this check as deprecated: its type is `llm_judge` / `code_judge` (either
    spelling), or it is a composite whose aggregator's is (v4.15.0 `evaluator-parser.ts` lines 312
    and 521, v4.42.4 `grader-parser.ts` lines 457 and 677: "Skipping evaluator ...: 'code_judge' is
    deprecated. Use 'code-grader' instead"); else None. (convoeval's own files read those names.)"""
    aggregator = item.get("aggregator")
    kinds = [
        ("type", item.get("type")),
        (
            "aggregator type",
            aggregator.get("type") if item.get("type") == "composite" and isinstance(aggregator, dict) else None,
        ),
    ]
    for what, kind in kinds:
        if isinstance(kind, str) and kind.replace("_", "-") in ("llm-judge", "code-judge"):
            return f"its {what} {kind!r} is deprecated there (use {kind.replace('_', '-')[:-5] + 'grader'!r})"
    return None


def _limit(value: object) -> bool:
    """A JavaScript non-negative finite number (`typeof x === 'number' && x >= 0`)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value < float("inf")


def agentv_assertion(item: dict) -> dict:
    """An AgentV file's assertion mapping with the meaning AgentV gives it (the module docstring)."""
    required = item.get("required")
    if isinstance(required, (int, float)) and not isinstance(required, bool):
        # AgentV's deprecated `required: 0.7` (`grader-parser.ts` parseRequiredAndMinScore): required
        # with that `min_score` unless one is given; a number outside (0, 1] is not required.
        item = {**item, "required": 0 < required <= 1}
        if item["required"] and "min_score" not in item:
            item["min_score"] = required
    kind = item.get("type")
    if not isinstance(kind, str):  # the checker says what a type is
        return item
    kind = kind.replace("_", "-")
    if kind in ("rubric", "llm-grader") and "rubrics" in item:  # `llm-grader.ts` evaluateWithRubrics
        if "prompt" in item:
            raise AgentvFormError(
                "prompt",
                "this AgentV form is not supported: an llm-grader's own prompt for its `rubrics` "
                "(without `prompt` they are judged as a `rubrics` check)",
            )
        criteria = item["rubrics"]
        return agentv_assertion(
            {**{k: v for k, v in item.items() if k != "rubrics"}, "type": "rubrics", "criteria": criteria}
        )
    if kind in _TRIMMED and "trim" not in item:
        return {**item, "trim": True}
    if kind == "tool-trajectory":  # AgentV's default args_match (`tool-trajectory.ts` `resolveArgsMatchMode`;
        # convoeval's own is superset) and verdict (`scoreToVerdict(score)`: a partial match can pass)
        return {"args_match": "exact", "strict": False, **item}
    if kind == "code-grader" and "agentv_protocol" not in item:  # AgentV's reading of the program
        return {**item, "agentv_protocol": True}
    if kind == "cost" and "missing" not in item:  # AgentV: no cost data is a failed check (`cost.ts`)
        return {**item, "missing": "fail"}
    if kind == "execution-metrics" and "missing_cost" not in item:  # the same (`execution-metrics.ts`)
        return {**item, "missing_cost": "fail"}
    if kind == "rubrics" and "required_fails_test" not in item:  # AgentV: a failed required criterion
        return {**item, "required_fails_test": False}  # fails the rubric, the test's score stands
    if kind in ("regex", "not-regex") and isinstance(item.get("value"), str):
        flags = item.get("flags")
        return {**item, "value": js_pattern(item["value"], flags if isinstance(flags, str) else "")}
    return item
