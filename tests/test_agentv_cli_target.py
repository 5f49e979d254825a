"""Where a `cli` target runs and what its `{FILES}` holds, as the real AgentV CLI does for its
files (`providers/targets.ts` v4.42.4 `resolveCliConfig`: `cwd` relative to the eval file's
folder, and without one that folder; `providers/cli.ts` `buildTemplateValues`: `{FILES}` the
test's attached files as absolute paths), and as convoeval does for its own suites (`cwd`
relative to the targets file's folder, and without one the working folder).

Each run is a real `convoeval run` subprocess started in another folder, on a real program that
reports where it ran and what it was given.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from .conftest import read_jsonl, write

#: Replies with where it runs, its arguments after the output file, and whether it is healthy.
TOOL = """\
import json, os, pathlib, sys
out = sys.argv[1]
pathlib.Path(out).write_text(json.dumps({"text": "cwd=" + os.getcwd() + " files=" + "|".join(sys.argv[2:])}))
"""


def run(eval_file: Path, where: Path, target: str) -> str:
    """`convoeval run EVAL_FILE --target TARGET` started in `where`: the one reply's text."""
    out = where / "r.jsonl"
    command = [sys.executable, "-m", "convoeval", "run", str(eval_file), "--target", target, "-o", str(out)]
    done = subprocess.run(
        [*command, "--no-cache"], cwd=where, env=os.environ, capture_output=True, text=True, timeout=60, check=False
    )
    assert out.is_file(), done.stdout + done.stderr
    [result] = read_jsonl(out)
    assert result["verdict"] == "pass", json.dumps(result)[:2000]
    return result["output"][-1]["content"]


def test_an_agentv_cli_target_runs_in_the_eval_files_folder_with_its_attachments(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    write(root / "example" / "tool.py", TOOL)
    write(root / "example" / "fixtures" / "invoice.json", '{"n": 1}\n')
    (root / "example" / "data").mkdir()
    python = sys.executable
    write(
        root / ".agentv" / "targets.yaml",
        f"""\
targets:
  - name: here
    provider: cli
    command: {python} ../tool.py {{OUTPUT_FILE}} {{FILES}}
    healthcheck: {{command: test -f ../tool.py}}
  - name: there
    provider: cli
    cwd: ../data
    command: {python} ../tool.py {{OUTPUT_FILE}} {{FILES}}
    healthcheck: {{command: test -f invoice.json, cwd: ../fixtures}}
    files_format: "--file={{path}}"
""",
    )
    eval_file = write(
        root / "example" / "evals" / "x.eval.yaml",
        """\
tests:
  - id: t
    input:
      - role: user
        content:
          - {type: file, value: ../fixtures/invoice.json}
          - {type: text, value: Extract it.}
    assertions:
      - {type: contains, value: "cwd="}
""",
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    invoice = (root / "example" / "fixtures" / "invoice.json").resolve()
    evals = (root / "example" / "evals").resolve()
    assert run(eval_file, elsewhere, "here") == f"cwd={evals} files={invoice}"
    data = (root / "example" / "data").resolve()
    assert run(eval_file, elsewhere, "there") == f"cwd={data} files=--file={invoice}"


def test_a_convoeval_cli_target_keeps_its_folders(tmp_path: Path) -> None:
    """convoeval's own suites: `cwd` from the targets file's folder, else the working folder;
    `{FILES}` is the `files` setting only."""
    suite_dir = tmp_path / "suite"
    write(suite_dir / "tool.py", TOOL)
    write(suite_dir / "notes.txt", "notes\n")
    (suite_dir / "sub").mkdir()
    tool = (suite_dir / "tool.py").resolve()
    write(
        suite_dir / "targets.yaml",
        f"""\
targets:
  - {{name: plain, provider: cli, command: "{sys.executable} {tool} {{OUTPUT_FILE}} {{FILES}}", files: [a.txt]}}
  - {{name: placed, provider: cli, cwd: sub, command: "{sys.executable} {tool} {{OUTPUT_FILE}}"}}
""",
    )
    eval_file = write(
        suite_dir / "s.eval.yaml",
        """\
tests:
  - id: t
    input:
      - role: user
        content: [{type: file, value: notes.txt}, {type: text, value: hi}]
    assertions: [{type: contains, value: "cwd="}]
""",
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    assert run(eval_file, elsewhere, "plain") == f"cwd={elsewhere.resolve()} files=a.txt"
    assert run(eval_file, elsewhere, "placed") == f"cwd={(suite_dir / 'sub').resolve()} files="


def test_an_agentv_conversation_calls_a_cli_target_once_per_turn_with_its_message(tmp_path: Path) -> None:
    """A `cli` target cannot resume, yet AgentV (`orchestrator.ts` `runConversationMode`) calls it
    for each turn with that turn's message alone and grades each reply; so does convoeval in
    AgentV's files (in its own suites such a test is single-shot)."""
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    write(
        root / "echo.py",
        "import json, sys\nopen(sys.argv[2], 'w').write(json.dumps({'text': 'echo: ' + sys.argv[1]}))\n",
    )
    command = f"{sys.executable} ../echo.py {{PROMPT}} {{OUTPUT_FILE}}"
    write(root / ".agentv" / "targets.yaml", f"targets:\n  - name: echo\n    provider: cli\n    command: {command}\n")
    turns = "".join(
        f"      - {{input: {w}, assertions: [{{type: equals, value: 'echo: {w}'}}]}}\n" for w in ("one", "two")
    )
    header = "tests:\n  - id: c\n    mode: conversation\n    input: [{role: system, content: Echo.}]\n    turns:\n"
    eval_file = write(root / "evals" / "c.eval.yaml", header + turns)
    assert run(eval_file, root, "echo") == "echo: two"
