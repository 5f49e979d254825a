"""What a code-grader of an AgentV file reads on stdin: what the newest AgentV sends
(`graders/code-grader.ts` at v4.42.4 lines 146 and 168-174, main 58f316c lines 234 and 257-262):
`output` the reply's text, `messages` the conversation, `expected_output` the expected messages
with JSON-object content kept, `input_files` the attachments, and no `answer` (main's own contract check requires it absent,
`examples/contract/scripts/check-script-grader-payload.ts`). convoeval's own suites keep
convoeval's shape (`output` the list of messages, `answer`, `expected_output` text).

Real `convoeval run` on a real program that records what it read.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import convoeval

from .conftest import write

RECORDER = """\
import json, pathlib, sys
data = json.load(sys.stdin)
pathlib.Path("seen.json").write_text(json.dumps(data))
print(json.dumps({"score": 1}))
"""

SUITE = f"""\
tests:
  - id: t
    input:
      - role: user
        content: [{{type: file, value: invoice.txt}}, {{type: text, value: Extract the invoice.}}]
    expected_output:
      - role: assistant
        content: {{invoice: INV-7, total: 100}}
    assertions:
      - type: code-grader
        command: [{sys.executable}, grader.py]
"""

TARGETS = """\
targets:
  - {name: extractor, provider: scripted, default: '{"invoice": "INV-7", "total": 100}'}
"""


def _seen(folder: Path) -> dict:
    suite = write(folder / "x.eval.yaml", SUITE)
    write(folder / "grader.py", RECORDER)
    write(folder / "targets.yaml", TARGETS)
    write(folder / "invoice.txt", "INV-7, total 100\n")
    report = convoeval.run(suite, target="extractor", judge="scripted", cache=False)
    assert report.results[0].verdict == "pass", report.results[0].model_dump_json()[:2000]
    return json.loads((folder / "seen.json").read_text())


def test_an_agentv_code_grader_reads_what_the_newest_agentv_sends(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / ".agentv").mkdir()
    seen = _seen(tmp_path / "evals")
    reply = '{"invoice": "INV-7", "total": 100}'
    assert seen["output"] == reply
    assert seen["expected_output"] == [{"role": "assistant", "content": {"invoice": "INV-7", "total": 100}}]
    assert [m["role"] for m in seen["messages"]] == ["user", "assistant"]
    assert seen["messages"][-1]["content"] == reply
    assert "answer" not in seen
    assert seen["input_files"] == [str((tmp_path / "evals" / "invoice.txt").resolve())]
    assert seen["output_text"] == reply  # AgentV v4.15's name, which its old examples read


def test_a_convoeval_code_grader_keeps_convoevals_payload(tmp_path: Path) -> None:
    seen = _seen(tmp_path)
    reply = '{"invoice": "INV-7", "total": 100}'
    assert [(m["role"], m["content"]) for m in seen["output"]] == [("assistant", reply)]
    assert seen["answer"] == seen["output_text"] == reply
    assert json.loads(seen["expected_output"]) == {"invoice": "INV-7", "total": 100}
