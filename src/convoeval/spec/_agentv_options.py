"""AgentV v5's test `options` (read from AgentV's `yaml-parser.ts`, `loaders/grader-parser.ts`,
`loaders/transform-parser.ts` and `output-transform.ts` at v5.3.1-next.1 and main 58f316c):
`default_test.options` lie under each test's own (`mergeDefaultTestOptionsIntoCases`);
`provider` grades the test's LLM checks that name no judge of their own, the suite's included
(main's `parseGraders`); `transform` rewrites the reply before every check of the test grades it
(`prepareCandidateForGrading`): inline JavaScript, or a `file://` module's default (or named)
export, called with the last assistant message's content (an agent's content parts as they are)
and a context; a result that is not text is graded as its JSON.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .._paths import confined_file
from ..graders import Assertion, JudgedAssertion, lookup_assertion_type
from ._agentv_paths import search_roots

#: Runs an AgentV transform (argv[1]) with bun (it imports TypeScript as AgentV does) on a
#: code-grader's stdin: the input is the graded reply's content parts, else its text; the context
#: is `{vars, prompt: {id, raw}, metadata}` from the check's `config`. Prints the result and a
#: newline (OutputTransform drops one), an object as `JSON.stringify(value, null, 2)`.
TRANSFORM_RUNNER = """\
const p = JSON.parse(require('fs').readFileSync(0, 'utf8'));
const spec = process.argv[1], c = p.config || {};
const last = (p.output || []).filter((m) => m.role === 'assistant').at(-1);
const input = last ? (last.content_parts ?? last.content ?? '') : (p.output_text ?? '');
const prompt = {...(c.prompt_id ? {id: c.prompt_id} : {}), raw: p.question || ''};
const context = {vars: c.vars || {}, prompt, ...(c.metadata ? {metadata: c.metadata} : {})};
async function load() {
  if (!spec.startsWith('file://')) {
    return new Function('output', 'context', spec.includes('\\n') ? spec : 'return ' + spec);
  }
  const ref = spec.slice(7), i = ref.lastIndexOf(':');
  const [file, fn] = i > 1 ? [ref.slice(0, i), ref.slice(i + 1)] : [ref, ''];
  const mod = await import(require('url').pathToFileURL(file).href);
  const f = fn ? mod[fn] : (mod.default ?? mod);
  if (typeof f === 'function') return f;
  throw new Error(fn ? `Transform ${spec} must export function "${fn}"`
    : `Transform ${spec} must export a function or default function`);
}
(async () => {
  const value = await (await load())(input, context);
  if (value === undefined || value === null) throw new Error('Transform function did not return a value');
  process.stdout.write((typeof value === 'string' ? value : JSON.stringify(value, null, 2)) + '\\n');
})().catch((e) => { console.error('Transform failed: ' + (e && e.message || e)); process.exit(1); });
"""


#: The key under which the normalizer hands a test's options to the checker: (TestOptions, where
#: its judge is named, the transform's context).
OPTIONS_KEY = "__agentv_options__"


@dataclass(frozen=True)
class TestOptions:
    """A test's AgentV options: `judge` (its `provider`) and `transform` (inline JavaScript, or
    `file://ABSOLUTE_PATH[:function]`)."""

    __test__ = False  # not a pytest class

    judge: str | None = None
    transform: str | None = None

    def under(self, own: TestOptions) -> TestOptions:
        """These options with a test's `own` over them."""
        return TestOptions(own.judge or self.judge, own.transform or self.transform)


def read_options(raw: object, base: Path, report: Callable[[str, str], None]) -> TestOptions:
    """`options` as written (`default_test.options` or a test's): `report(key, message)` for a
    value AgentV refuses and a key convoeval does not read (`rubric_prompt` is read elsewhere)."""
    if raw is None:
        return TestOptions()
    if not isinstance(raw, dict):
        report("", "must be a mapping")
        return TestOptions()
    found: dict[str, str] = {}
    for key, value in raw.items():
        if key == "rubric_prompt":
            continue
        if key not in ("provider", "transform"):
            report(key, f"this AgentV form is not supported: `options.{key}` (convoeval reads provider and transform)")
        elif not isinstance(value, str) or not value.strip():
            report(key, f"must be a non-empty string (AgentV: the {'grader' if key == 'provider' else 'transform'})")
        elif key == "transform" and value.strip().startswith("file://"):
            spec, problem = _transform_file(value.strip(), base)
            if problem:
                report(key, problem)
            else:
                found[key] = spec
        else:
            found[key] = value.strip()
    return TestOptions(found.get("provider"), found.get("transform"))


def _transform_file(spec: str, base: Path) -> tuple[str, str | None]:
    """`file://PATH[:function]` with PATH found as AgentV finds it (`resolveFileReference` over
    the search roots), as an absolute path; or a problem."""
    ref = spec.removeprefix("file://")
    colon = ref.rfind(":")
    path, function = (ref[:colon], ref[colon:]) if colon > 1 else (ref, "")
    tried = [Path(path)] if Path(path).is_absolute() else [root / path for root in search_roots(base)]
    for candidate in tried:
        if candidate.is_file():
            if candidate.suffix not in (".js", ".mjs", ".cjs", ".ts", ".mts", ".cts"):
                return "", f"unsupported transform file format: {spec} (AgentV runs JavaScript and TypeScript)"
            try:  # a suite's files lie in its folder, its repository or --root, as its scripts do
                return f"file://{confined_file(str(candidate), base)}{function}", None
            except ValueError as exc:
                return "", str(exc)
    return "", f"transform file not found: {path} (looked in {', '.join(str(t.parent) for t in tried)})"


def with_options(assertion: Assertion, options: TestOptions, context: dict[str, object]) -> Assertion:
    """`assertion` as a test with `options` grades it: judged by `options.judge` unless it names
    its own, and grading what `options.transform` makes of the reply (a `composite` holding it,
    with its weight; `context`: the transform's vars, prompt id and metadata)."""
    if options.judge and isinstance(assertion, JudgedAssertion) and assertion.judge is None:
        assertion = assertion.model_copy(update={"judge": options.judge})
    if not options.transform:
        return assertion
    composite = lookup_assertion_type("composite")
    assert composite is not None
    wrapper: dict[str, object] = {
        "type": "composite",
        "name": assertion.name or assertion.type,
        "weight": assertion.weight,
        "transform": {"command": ["bun", "-e", TRANSFORM_RUNNER, options.transform], "config": context},
        "assertions": [assertion.model_copy(update={"weight": 1.0})],
    }
    if assertion.required:
        wrapper.update(required=True, min_score=0)
    elif assertion.min_score is not None:
        wrapper["min_score"] = assertion.min_score
    return composite.model_validate(wrapper)
