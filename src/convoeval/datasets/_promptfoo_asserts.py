"""promptfoo `assert` entries as convoeval assertions.

Mapped: the text checks (`equals`, `contains`, `icontains`, their `-any`/`-all` and `not-`
forms, `starts-with`, `ends-with`, `regex`; a `-any`/`-all` value given as one text is split
as promptfoo's `contains.ts` splits it), `is-json` and `contains-json` (a `value` is their JSON Schema:
a mapping, YAML or JSON text, or `file://` a .json/.yaml file, as promptfoo's `handleIsJson`
reads it), `javascript` and `python` (run by `code-grader` through `node` / `python3`, with
promptfoo's `output` and `context.vars`; a number passes above 0, or at the `threshold` when
there is one, as promptfoo's `normalizeScriptAssertionResult` decides), `llm-rubric`,
`g-eval`, `model-graded-closedqa`, `factuality` (judged by `llm-grader`), `latency`,
`cost`, and `assert-set` (a `composite`). `threshold`, `weight` and `metric` carry over.
Anything else is kept as written, so that validating the eval file names it with its line (a
check convoeval cannot make is an error, never dropped), and counted (`Unmapped`) for one
warning.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path

from pydantic import JsonValue

from .._paths import confined_folder
from ..errors import DatasetError
from ..spec import DEFAULT_THRESHOLD, js_pattern, js_rejects
from ._common import JsonObject, load_yaml, parse_yaml, read_text

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
    "ends-with",
    "regex",
}
_NOT_TEXT = {"not-equals", "not-contains", "not-icontains", "not-starts-with", "not-ends-with", "not-regex"}
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
config = p.get("config") or {}
context = {"vars": config.get("vars") or {}, "prompt": p.get("question") or ""}
threshold = config.get("threshold")
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
if isinstance(r, str):  # promptfoo reads "true", "false", a JSON object or a number from text
    low = r.strip().lower()
    r = low == "true" if low in ("true", "false") else json.loads(r) if r.startswith("{") else float(r)
def clamp(x):
    return min(1.0, max(0.0, float(x)))
if isinstance(r, bool):
    out = {"pass": r, "score": 1.0 if r else 0.0}
elif isinstance(r, (int, float)):
    out = {"pass": r > 0 if threshold is None else r >= threshold, "score": clamp(r)}
elif isinstance(r, dict):
    ok = bool(r.get("pass", r.get("pass_", False)))
    score = float(r.get("score", 1.0 if ok else 0.0))
    ok = ok and (threshold is None or score >= threshold)
    out = {"pass": ok, "score": clamp(score)}
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
const config = p.config || {};
const context = {vars: config.vars || {}, prompt: p.question || ''};
const threshold = config.threshold;
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
  else if (typeof r === 'number') {
    o = {pass: threshold == null ? r > 0 : r >= threshold, score: Math.min(1, Math.max(0, r))};
  } else if (r && typeof r === 'object') {
    o = {pass: !!r.pass, score: Math.min(1, Math.max(0, r.score ?? (r.pass ? 1 : 0)))};
    if (r.reason) o.assertions = [{text: 'javascript', passed: !!r.pass, evidence: String(r.reason)}];
  } else { console.error('the javascript assertion returned ' + r); process.exit(1); }
  console.log(JSON.stringify(o));
});
"""


#: Runs promptfoo transforms (`argv[1:]`, in order) on the output with Node.js, as promptfoo's
#: `transform()` does: inline JavaScript (`return` added to one line) with `output`, `context`
#: and `process`; `file://x.js[:fn]` (the named export, else the module or its default);
#: `file://x.py[:fn]` (`get_transform` by default). Prints the result (an object as JSON).
TRANSFORM_RUNNER = """\
const p = JSON.parse(require('fs').readFileSync(0, 'utf8'));
const context = {vars: (p.config || {}).vars || {}, prompt: {label: p.question || ''}};
const PY = 'import json, runpy, sys\\nv, c = json.load(sys.stdin)\\nprint(json.dumps(runpy.run_path(sys.argv[1])[sys.argv[2]](v, c)))';
async function load(src) {
  if (!src.startsWith('file://')) {
    return new Function('output', 'context', 'process', src.includes('\\n') ? src : 'return ' + src);
  }
  const ref = src.slice(7), i = ref.lastIndexOf(':');
  const split = i > 1 && /\\.(py|[cm]?[jt]s)$/.test(ref.slice(0, i));
  const [file, fn] = split ? [ref.slice(0, i), ref.slice(i + 1)] : [ref, ''];
  if (file.endsWith('.py')) {
    return (v, c) => {
      const r = require('child_process').spawnSync('python3', ['-c', PY, file, fn || 'get_transform'],
        {input: JSON.stringify([v, c]), encoding: 'utf8'});
      if (r.status !== 0) throw new Error((r.stderr || String(r.error)).trim());
      return JSON.parse(r.stdout);
    };
  }
  const ns = await import(require('url').pathToFileURL(file).href);
  const m = ns.default ?? ns;  // promptfoo's importModule: the default export, else the module
  const f = fn && typeof m[fn] === 'function' ? m[fn] : typeof m === 'function' ? m : m.default;
  if (typeof f !== 'function') throw new Error(file + ' exports no function ' + (fn || '(default)'));
  return f;
}
(async () => {
  let value = p.output_text ?? '';
  for (const src of process.argv.slice(1)) {
    value = await (await load(src))(value, context, process);
    if (value === null || value === undefined) throw new Error('the transform returned no value: ' + src);
  }
  process.stdout.write(typeof value === 'string' ? value : JSON.stringify(value));
})().catch((e) => { console.error('promptfoo transform failed: ' + (e && e.message || e)); process.exit(1); });
"""


def transformed(assertion: JsonObject, chain: list[str], variables: JsonObject, base: Path) -> JsonObject:
    """`assertion` grading what promptfoo's transforms (`chain`, in order; none: as is) make of
    the output: a `composite` holding it, with its weight and, when it is `required`, deciding
    through the nested check's own pass mark."""
    if not chain:
        return assertion
    sources = [_absolute(source, base) for source in chain]
    wrapper: JsonObject = {
        "type": "composite",
        "name": str(assertion.get("name") or assertion["type"]),
        "transform": {"command": ["node", "-e", TRANSFORM_RUNNER, *sources], "config": {"vars": variables}},
        "assertions": [{k: v for k, v in assertion.items() if k != "weight"}],
    }
    if "weight" in assertion:
        wrapper["weight"] = assertion["weight"]
    if assertion.get("required"):
        wrapper.update(required=True, min_score=0)
    elif "min_score" in assertion:
        wrapper["min_score"] = assertion["min_score"]
    return wrapper


def _absolute(source: str, base: Path) -> str:
    """A `file://` reference resolved against the config's folder now (the eval file may be
    written elsewhere); inline code as is."""
    if not source.startswith("file://"):
        return source
    path, sep, fn = source[len("file://") :].partition(":")
    return f"file://{(base / path).resolve()}{sep}{fn}"


#: The keys of a promptfoo assertion that carry over; any other (`transform`, `provider`, ...)
#: is counted in `Unmapped.settings`.
_READ_ASSERT = {"type", "value", "threshold", "weight", "metric", "transform", "assert"}


class Unmapped(Counter[str]):
    """promptfoo assertion types convoeval has no equivalent for, with how often each was met;
    `settings`: the keys of mapped assertions left out (`assert[].transform`)."""

    def __init__(self) -> None:
        super().__init__()
        self.settings: Counter[str] = Counter()

    def warning(self) -> str | None:
        if not self:
            return None
        listed = ", ".join(f"{name} ({n})" for name, n in sorted(self.items()))
        return (
            f"{sum(self.values())} promptfoo assertion(s) with no convoeval equivalent, kept as written for "
            f"you to replace or remove: {listed}"
        )


def map_asserts(
    raw: JsonValue, render: Render, variables: JsonObject, base: Path, unmapped: Unmapped, grader: str | None = None
) -> list[tuple[JsonObject, str | None]]:
    """The convoeval assertions for a promptfoo `assert` list (`render(text, vars)` fills `{{ var }}`),
    each with its own `transform` (None: none); judged checks are graded by their own `provider`,
    else `grader` (the test's `options.provider`), when convoeval reads its id (else the run's judge)."""
    if raw is None:
        return []
    out: list[tuple[JsonObject, str | None]] = []
    for item in raw if isinstance(raw, list) else [raw]:
        kind = item.get("type") if isinstance(item, dict) else None
        if not isinstance(item, dict) or not isinstance(kind, str):
            unmapped["(not a mapping with a type)"] += 1
            out.append((item if isinstance(item, dict) else {"type": item}, None))
            continue
        if kind == "assert-set":
            mapped = _assert_set(item, render, variables, base, unmapped, grader)
        else:
            mapped = _map_one(item, kind, render, variables, base)
        if mapped is None:
            unmapped[kind] += 1
            out.append((item, None))
            continue
        judge = provider_spec(item.get("provider")) or grader
        if judge and mapped["type"] == "llm-grader":
            mapped["judge"] = judge
        unmapped.settings.update(
            f"assert[].{k}" for k in item if k not in _READ_ASSERT and not (k == "provider" and "judge" in mapped)
        )
        for key, target in (("weight", "weight"), ("metric", "name")):
            if item.get(key) is not None:
                mapped[target] = item[key]
        transform = item.get("transform")
        out.append((mapped, transform if isinstance(transform, str) and transform.strip() else None))
    return out


#: promptfoo provider ids whose model convoeval can call (`openai:chat:gpt-4o` -> `openai:gpt-4o`).
_PROVIDER_PREFIXES = ("openai:", "anthropic:", "litellm:", "local")


def provider_spec(provider: JsonValue) -> str | None:
    """A promptfoo provider (an id, or a mapping with one) as a convoeval target spec, or None
    when convoeval has no such provider."""
    if isinstance(provider, dict):
        provider = provider.get("id")
    if not isinstance(provider, str) or not provider.startswith(_PROVIDER_PREFIXES):
        return None
    for kind in ("openai:chat:", "anthropic:messages:"):
        if provider.startswith(kind):
            return provider.split(":", 1)[0] + ":" + provider[len(kind) :]
    return provider


def _assert_set(
    item: JsonObject, render: Render, variables: JsonObject, base: Path, unmapped: Unmapped, grader: str | None
) -> JsonObject | None:
    """promptfoo's `assert-set`: a `composite` of its assertions scored by their weighted mean;
    it passes at its `threshold`, else when every one passes (the weighted share that passed,
    which is the mean for pass/fail checks, must be 1)."""
    nested: list[JsonValue] = [  # each at its own pass mark (the test's may be 0)
        transformed({**a, "min_score": a.get("min_score", DEFAULT_THRESHOLD)}, [own] if own else [], variables, base)
        for a, own in map_asserts(item.get("assert"), render, variables, base, unmapped, grader)
    ]
    if not nested:
        return None
    threshold = item.get("threshold")
    if isinstance(threshold, (int, float)):
        return {"type": "composite", "assertions": nested, "min_score": threshold}
    return {"type": "composite", "assertions": nested, "aggregator": {"type": "threshold", "threshold": 1.0}}


def _value(item: JsonObject, render: Render, variables: JsonObject) -> JsonValue:
    value = item.get("value")
    if isinstance(value, str):
        return render(value, variables)
    if isinstance(value, list):
        return [render(v, variables) if isinstance(v, str) else v for v in value]
    return value


def _map_one(item: JsonObject, kind: str, render: Render, variables: JsonObject, base: Path) -> JsonObject | None:
    value = _value(item, render, variables)
    if isinstance(value, str) and value.startswith("file://") and kind.removeprefix("not-") not in _OWN_FILES:
        value = _file_value(value, base)
    threshold = item.get("threshold")
    if kind in _TEXT or kind in _NOT_TEXT:
        if value is None or value == "" or value == []:
            return None
        if isinstance(value, str) and kind.endswith(("-any", "-all")):
            value = _text_list(value)
        if isinstance(value, list) and kind.endswith(("-any", "-all")) and (decided := _decided(kind, value)):
            return decided
        if isinstance(value, list):
            value = [_js_string(v) for v in value if v != ""]
        if kind.removeprefix("not-") == "regex" and isinstance(value, str):
            if js_rejects(value):  # promptfoo's `new RegExp` throws: the check fails, negated or not
                return {
                    "type": "regex",
                    "value": "^",
                    "negate": True,
                    "name": f"{kind} /{value}/ (not a JavaScript pattern)",
                }
            value = js_pattern(value, "")
        return {"type": kind, "value": _js_string(value)}
    positive = kind.removeprefix("not-")
    negate = {"negate": True} if kind != positive else {}
    if positive in ("is-json", "contains-json"):
        schema = _schema(value, base)
        if schema is None:
            return None  # a schema convoeval cannot read (a script's): named in the warning
        given = {"schema": schema} if schema else {}
        if positive == "is-json":
            return {"type": "is-json", **given, **negate}
        if schema:
            return {"type": "is-json", "allow_embedded": True, **given, **negate}
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


#: The types whose `file://` value is not data: a script to run, or a schema (`_schema`).
_OWN_FILES = {"python", "javascript", "is-json", "contains-json"}


def inside(base: Path, path: Path, where: str) -> Path:
    """`path` (the config's folder `base` joined with a reference), resolved, if it lies in that
    folder, its repository or `--root` (`_paths`): what it holds goes into the eval file, and to
    the model (`file:///root/.ssh/id_rsa` is an error, as in any suite)."""
    try:
        return confined_folder(str(path.absolute()), base, "file")
    except ValueError as exc:
        raise DatasetError(f"{where}: {exc}") from None


def _file_value(value: str, base: Path) -> JsonValue:
    """A `file://` assertion value as promptfoo's `processFileReference` loads it: a .txt file's
    text trimmed, a .json/.yaml file's data; any other file is an error, as it is in promptfoo (a
    script computing the value cannot be imported)."""
    path = base / value.removeprefix("file://")
    if path.suffix not in (".txt", ".json", ".yaml", ".yml"):
        script = path.suffix in (".py", ".js", ".ts", ".mjs", ".cjs", ".rb") or ":" in path.name
        why = (
            "a value computed by a script cannot be imported"
            if script
            else "unsupported file type (promptfoo reads a value from a .txt, .json or .yaml file)"
        )
        raise DatasetError(f"assert: value: {value}: {why}")
    path = inside(base, path, f"assert: value: {value}")
    return read_text(path).strip() if path.suffix == ".txt" else load_yaml(path, core=True)


def _js_string(value: JsonValue) -> JsonValue:
    """A number or boolean as promptfoo compares it, JavaScript's `String(value)` (`1.0` is "1",
    `true` is "true"); other values as they are."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    if isinstance(value, int | float):
        return repr(value)
    return value


def _decided(kind: str, parts: list[JsonValue]) -> JsonObject | None:
    """The check of a `-any`/`-all` list whose verdict promptfoo decides whatever the output: an
    empty part, which every output contains, passes an `-any` (and fails its `not-`); no part at
    all passes an `-all` and fails an `-any`. convoeval's checks take no empty part: a `regex` that
    every output matches stands in, so the verdict stays promptfoo's. None for the other lists."""
    if "" in parts and kind.endswith("-any"):
        passes, why = True, "an empty part, which every output contains"
    elif not any(part != "" for part in parts):
        passes, why = kind.endswith("-all"), "no part"
    else:
        return None
    negated = kind.startswith("not-")
    return {
        "type": "regex",
        "value": "^",
        "name": f"{kind} with {why}",
        **({"negate": True} if negated == passes else {}),
    }


def _text_list(value: str) -> list[JsonValue]:
    """A `-any`/`-all` value given as one text, split as promptfoo's `parseCommaSeparatedValues`
    splits it: at commas, each part trimmed, repeated commas skipped; a part in double quotes may
    hold commas, `\\"` or `""` (a quote) and `\\\\` (a backslash); `""` is an empty part.

    Raises:
        DatasetError: a quoted part that is not closed, or followed by more than a comma (promptfoo
            fails the check).
    """
    parts: list[JsonValue] = []
    i, end = 0, len(value)
    while True:
        while i < end and (value[i] == "," or value[i].isspace()):
            i += 1
        if i >= end:
            return parts
        if value[i] != '"':
            comma = value.find(",", i)
            comma = end if comma < 0 else comma
            parts.append(value[i:comma].strip())
            i = comma
            continue
        part, i = _quoted(value, i + 1)
        parts.append(part)
        while i < end and value[i].isspace():
            i += 1
        if i < end and value[i] != ",":
            raise DatasetError(f"assert: value: {value!r}: a quoted part is followed by more than a comma")


def _quoted(value: str, i: int) -> tuple[str, int]:
    """The part in double quotes that starts at `i` (after its quote), and where it ends."""
    part: list[str] = []
    while i < len(value):
        char = value[i]
        if char == "\\" and value[i + 1 : i + 2] in ('"', "\\"):
            part.append(value[i + 1])
            i += 2
        elif char == '"' and value[i + 1 : i + 2] == '"':
            part.append('"')
            i += 2
        elif char == '"':
            return "".join(part), i + 1
        else:
            part.append(char)
            i += 1
    raise DatasetError(f"assert: value: {value!r}: a quoted part is not closed")


def _schema(value: JsonValue, base: Path) -> JsonObject | None:
    """The JSON Schema an `is-json` / `contains-json` value gives (`{}`: none): a mapping, YAML or
    JSON text, or `file://` a .json/.yaml/.yml file (relative to the config); None for a
    schema convoeval cannot read (a script's, or one that is no mapping)."""
    if not value:
        return {}
    if isinstance(value, str):
        if value.startswith("file://"):
            path = base / value.removeprefix("file://")
            if path.suffix not in (".json", ".yaml", ".yml"):
                return None
            value = load_yaml(inside(base, path, f"assert: value: {value}"), core=True)
        else:
            try:
                value = parse_yaml(value, base, core=True)
            except DatasetError:  # promptfoo fails the check; convoeval names it in the warning
                return None
    return value if isinstance(value, dict) else None


def _code_grader(language: str, value: str, variables: JsonObject, base: Path, threshold: JsonValue) -> JsonObject:
    source = _absolute(value, base)
    command = ["python3", "-c", PYTHON_RUNNER] if language == "python" else ["node", "-e", JAVASCRIPT_RUNNER]
    grader: JsonObject = {
        "type": "code-grader",
        "name": language,
        "command": [*command, source],
        "config": {"vars": variables},
    }
    if isinstance(threshold, (int, float)):
        grader["min_score"] = threshold
        grader["config"] = {"vars": variables, "threshold": threshold}
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
