"""promptfoo `assert` entries as convoeval assertions.

Mapped: the text checks (`equals`, `contains`, `icontains`, their `-any`/`-all` and `not-`
forms, `starts-with`, `regex`), `is-json` (a `value` is its JSON Schema), `contains-json`,
`javascript` and `python` (run by `code-grader` through `node` / `python3`, with promptfoo's
`output` and `context.vars`), `llm-rubric`, `g-eval`, `model-graded-closedqa`, `factuality`
(judged by `llm-grader`), `latency` and `cost`. `threshold`, `weight` and `metric` carry over.
Anything else is reported back (`Unmapped`) so the importer can list it in one warning.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path

from pydantic import JsonValue

from ._common import JsonObject

#: Fills promptfoo's `{{ var }}` in a text with a test's vars.
Render = Callable[[str, JsonObject], str]

_TEXT = {
    "equals",
    "contains",
    "icontains",
    "contains-any",
    "contains-all",
    "icontains-any",
    "icontains-all",
    "starts-with",
    "regex",
}
_NOT_TEXT = {"not-equals", "not-contains", "not-icontains", "not-starts-with", "not-regex"}
_NOT_TEXT |= {f"not-{t}" for t in ("contains-any", "contains-all", "icontains-any", "icontains-all")}
_JUDGED = {"llm-rubric", "g-eval", "model-graded-closedqa", "factuality"}
_OTHER = {"is-json", "contains-json", "python", "javascript", "latency", "cost", "similar", "levenshtein", "rouge-n"}
#: promptfoo type names a CSV `__expected` cell may start with (mapped or not).
KNOWN_TYPES = _TEXT | _NOT_TEXT | _JUDGED | _OTHER | {f"not-{t}" for t in _OTHER}

#: Runs promptfoo's `python` assertion: an expression, a function body, or `file://x.py[:fn]`.
PYTHON_RUNNER = """\
import json, runpy, sys
p = json.load(sys.stdin)
output = p.get("output_text") or ""
context = {"vars": (p.get("config") or {}).get("vars") or {}, "prompt": p.get("question") or ""}
src = sys.argv[1]
if src.startswith("file://"):
    path, _, fn = src[7:].partition(":")
    r = runpy.run_path(path)[fn or "get_assert"](output, context)
elif "\\n" in src.strip() or "return " in src:
    ns = {}
    exec("def _f(output, context):\\n" + "\\n".join("    " + s for s in src.splitlines()), ns)
    r = ns["_f"](output, context)
else:
    r = eval(src, {"output": output, "context": context, "json": json})
if isinstance(r, bool):
    out = {"pass": r, "score": 1.0 if r else 0.0}
elif isinstance(r, (int, float)):
    out = {"score": float(r)}
elif isinstance(r, dict):
    ok = bool(r.get("pass", r.get("pass_", False)))
    out = {"pass": ok, "score": float(r.get("score", 1.0 if ok else 0.0))}
    if r.get("reason"):
        out["assertions"] = [{"text": "python", "passed": ok, "evidence": str(r["reason"])}]
else:
    sys.exit("the python assertion returned %r, not a bool, number or {pass, score, reason}" % (r,))
print(json.dumps(out))
"""

#: Runs promptfoo's `javascript` assertion with Node.js, the same three forms.
JAVASCRIPT_RUNNER = """\
const p = JSON.parse(require('fs').readFileSync(0, 'utf8'));
const output = p.output_text || '';
const context = {vars: (p.config || {}).vars || {}, prompt: p.question || ''};
const src = process.argv[1];
let r;
if (src.startsWith('file://')) {
  const [file, fn] = src.slice(7).split(':');
  const m = require(file);
  r = (fn ? m[fn] : (m.default || m))(output, context);
} else if (src.trim().includes('\\n') || /\\breturn\\b/.test(src)) {
  r = new Function('output', 'context', src)(output, context);
} else {
  r = new Function('output', 'context', 'return (' + src + ');')(output, context);
}
Promise.resolve(r).then((r) => {
  let o;
  if (typeof r === 'boolean') o = {pass: r, score: r ? 1 : 0};
  else if (typeof r === 'number') o = {score: r};
  else if (r && typeof r === 'object') {
    o = {pass: !!r.pass, score: r.score ?? (r.pass ? 1 : 0)};
    if (r.reason) o.assertions = [{text: 'javascript', passed: !!r.pass, evidence: String(r.reason)}];
  } else { console.error('the javascript assertion returned ' + r); process.exit(1); }
  console.log(JSON.stringify(o));
});
"""


class Unmapped(Counter[str]):
    """promptfoo assertion types convoeval has no equivalent for, with how often each was met."""

    def warning(self) -> str | None:
        if not self:
            return None
        listed = ", ".join(f"{name} ({n})" for name, n in sorted(self.items()))
        return f"{sum(self.values())} promptfoo assertion(s) not imported (no convoeval equivalent): {listed}"


def map_asserts(
    raw: JsonValue, render: Render, variables: JsonObject, base: Path, unmapped: Unmapped
) -> list[JsonObject]:
    """The convoeval assertions for a promptfoo `assert` list (`render(text, vars)` fills `{{ var }}`)."""
    if raw is None:
        return []
    out = []
    for item in raw if isinstance(raw, list) else [raw]:
        kind = item.get("type") if isinstance(item, dict) else None
        if not isinstance(item, dict) or not isinstance(kind, str):
            unmapped["(not a mapping with a type)"] += 1
            continue
        mapped = _map_one(item, kind, render, variables, base)
        if mapped is None:
            unmapped[kind] += 1
            continue
        for key, target in (("weight", "weight"), ("metric", "name")):
            if item.get(key) is not None:
                mapped[target] = item[key]
        out.append(mapped)
    return out


def _value(item: JsonObject, render: Render, variables: JsonObject) -> JsonValue:
    value = item.get("value")
    if isinstance(value, str):
        return render(value, variables)
    if isinstance(value, list):
        return [render(v, variables) if isinstance(v, str) else v for v in value]
    return value


def _map_one(item: JsonObject, kind: str, render: Render, variables: JsonObject, base: Path) -> JsonObject | None:
    value = _value(item, render, variables)
    threshold = item.get("threshold")
    if kind in _TEXT or kind in _NOT_TEXT:
        if value is None or value == "" or value == []:
            return None
        return {"type": kind, "value": value}
    positive = kind.removeprefix("not-")
    negate = {"negate": True} if kind != positive else {}
    if positive == "is-json":
        return {"type": "is-json", **({"schema": value} if isinstance(value, dict) else {}), **negate}
    if positive == "contains-json":
        if isinstance(value, dict):
            return {"type": "is-json", "allow_fenced": True, "schema": value, **negate}
        return {"type": "jsonpath", "path": "$", **negate}
    if positive in ("python", "javascript") and isinstance(value, str):
        return _code_grader(positive, value, variables, base, threshold) | negate
    if kind in _JUDGED:
        return _judged(kind, value, threshold)
    if kind == "latency" and isinstance(threshold, (int, float)):
        return {"type": "latency", "threshold_ms": threshold}
    if kind == "cost" and isinstance(threshold, (int, float)):
        return {"type": "cost", "max_usd": threshold}
    return None


def _code_grader(language: str, value: str, variables: JsonObject, base: Path, threshold: JsonValue) -> JsonObject:
    source = value
    if source.startswith("file://"):  # resolved now: the eval file may be written elsewhere
        path, sep, fn = source[len("file://") :].partition(":")
        source = f"file://{(base / path).resolve()}{sep}{fn}"
    command = ["python3", "-c", PYTHON_RUNNER] if language == "python" else ["node", "-e", JAVASCRIPT_RUNNER]
    grader: JsonObject = {
        "type": "code-grader",
        "name": language,
        "command": [*command, source],
        "config": {"vars": variables},
    }
    if isinstance(threshold, (int, float)):
        grader["min_score"] = threshold
    return grader


def _judged(kind: str, value: JsonValue, threshold: JsonValue) -> JsonObject | None:
    if isinstance(value, list):
        value = "\n".join(f"- {v}" for v in value)
    if not isinstance(value, str) or not value.strip():
        return None
    grader: JsonObject = {"type": "llm-grader", "name": kind}
    if kind == "factuality":
        grader["expected_output"] = value
        grader["criteria"] = (
            "The reply is factually consistent with the expected output: it may add "
            "detail, but it must not contradict it."
        )
    elif kind == "model-graded-closedqa":
        grader["criteria"] = f"The reply meets this criterion: {value}"
    else:  # llm-rubric, g-eval
        grader["criteria"] = value
    if isinstance(threshold, (int, float)):
        grader["min_score"] = threshold
    return grader
