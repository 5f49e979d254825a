"""promptfoo's text checks imported by convoeval decide as the real promptfoo decides them.

The oracle is promptfoo itself (the npm package, pinned in .ci/run): its `assertions.runAssertion`
grades each (check, reply) pair in Node; the same checks, imported as a promptfoo config with
`import_dataset`, are run by convoeval against a loopback server that gives the same replies.
Every verdict must be promptfoo's. Left out: `ends-with` (newer than this promptfoo, which calls it
unknown) and `contains-json` (promptfoo finds a YAML-parsed object; docs/guides/importing.md).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

import convoeval
from convoeval.datasets import import_dataset, write_suite

from .conftest import write

ROOT = Path(__file__).resolve().parents[1]
PROMPTFOO = Path(os.environ.get("PROMPTFOO_DIR") or ROOT / ".tools" / "promptfoo" / "node_modules" / "promptfoo")

pytestmark = pytest.mark.skipif(
    shutil.which("node") is None or not (PROMPTFOO / "package.json").is_file(),
    reason="node or the promptfoo npm package is not installed (.ci/run installs it in .tools/promptfoo)",
)

#: Runs promptfoo's own `runAssertion` on each case of the JSON file argv[2]; prints the verdicts.
ORACLE = """
const promptfoo = require(process.argv[1]);
const cases = JSON.parse(require("fs").readFileSync(process.argv[2], "utf8"));
(async () => {
  const verdicts = [];
  for (const c of cases) {
    const assertion = { type: c.type, ...(c.value === null ? {} : { value: c.value }) };
    try {
      const graded = await promptfoo.assertions.runAssertion({
        assertion, test: { vars: {} }, providerResponse: { output: c.output },
      });
      verdicts.push(graded.pass ? "pass" : "fail");
    } catch (e) {
      verdicts.push("error: " + e.message);
    }
  }
  console.log(JSON.stringify(verdicts));
})();
"""

REPLIES = ["Paris, France", "paris france", "PARIS", "", "The capital is Paris.\n", "  Paris  ", "Straße", "İstanbul"]
TEXTS = ["\u0663", "42\n", "abc123", "a\nb", "a\u2028b", "\u00e9foo", "p{L}", "AZ", "caf\u00e9", "\u00a0x", "x\ty"]
JSONS = ['{"a": 1}', '```json\n{"a": 1}\n```', 'Here: {"a": 1} done', "[1, 2]", '"s"', "null", "nope", "NaN", " {} "]


def cases() -> list[dict[str, object]]:
    found: list[dict[str, object]] = []
    for kind in ("equals", "contains", "icontains", "starts-with", "not-equals", "not-contains", "not-icontains"):
        for value in (
            "Paris",
            "paris",
            "Paris, France",
            "straße",
            "İstanbul",
            " Paris ",
            *([42] if "with" not in kind else []),
        ):
            found += [{"type": kind, "value": value, "output": r} for r in REPLIES]
    for kind in ("contains-any", "contains-all", "icontains-any", "icontains-all", "not-contains-any"):
        for value in ("Paris, France", ["Paris", "France"], "paris,rome", '"Paris, France", zebra', '"", zebra'):
            found += [{"type": kind, "value": value, "output": r} for r in REPLIES]
    for pattern in (r"\d", r"^\d+$", r"\w+$", r"(?i)abc", r"^a.b$", r"\bfoo", r"\p{L}", r"\A", r"Z$", r"[\d]"):
        found += [{"type": kind, "value": pattern, "output": t} for kind in ("regex", "not-regex") for t in TEXTS]
    for kind in ("is-json", "not-is-json"):
        for value in (None, {"type": "object", "required": ["a"]}):
            found += [{"type": kind, "value": value, "output": j} for j in JSONS]
    found += [{"type": "equals", "value": {"a": 1}, "output": o} for o in ('{"a": 1}', '{"a":1}', '{"a": 1, "b": 2}')]
    found += [{"type": "equals", "value": 42, "output": o} for o in ("42.0", " 42")]
    return found


def test_imported_text_checks_decide_as_promptfoo_decides(fake_openai, tmp_path: Path) -> None:
    checks = cases()
    write(tmp_path / "cases.json", json.dumps(checks))
    node = subprocess.run(
        ["node", "-e", ORACLE, str(PROMPTFOO), str(tmp_path / "cases.json")],
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    theirs = json.loads(node.stdout.strip().splitlines()[-1])
    assert not [v for v in theirs if v.startswith("error")], "promptfoo refused a case: the case list is wrong"

    tests = []
    for n, check in enumerate(checks):
        given = {"type": check["type"], **({"value": check["value"]} if check["value"] is not None else {})}
        tests.append({"description": f"case-{n}", "vars": {"q": f"case-{n}"}, "assert": [given]})
    config = {"prompts": ["{{q}}"], "providers": ["openai:m"], "tests": tests}
    write(tmp_path / "promptfooconfig.yaml", yaml.safe_dump(config, allow_unicode=True))
    suite = import_dataset("promptfoo", tmp_path / "promptfooconfig.yaml")
    replies = {f"case-{n}": str(check["output"]) for n, check in enumerate(checks)}
    fake_openai.reset(reply=lambda body: replies[body["messages"][-1]["content"]])
    report = convoeval.run(write_suite(suite, tmp_path / "s.eval.yaml"), target="openai:m", store=False, cache=False)
    ours = {r.metadata["description"]: r.verdict for r in report.results}

    differ = [
        (check["type"], check["value"], check["output"], verdict, ours[f"case-{n}"])
        for n, (check, verdict) in enumerate(zip(checks, theirs, strict=True))
        if ours[f"case-{n}"] != verdict
    ]
    assert not differ, (
        f"{len(differ)} of {len(checks)} verdicts differ from promptfoo's (type, value, reply, theirs, ours): {differ[:10]}"
    )
