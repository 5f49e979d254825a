"""Run AgentV eval suites through the real `agentv` CLI (npm) and through convoeval against the
same loopback answers (tests/agentv_loopback.py), and reduce each program's results to the
same summary: per test its verdict, score and, in order, each assertion's type, score and verdict.

`python tests/agentv_real.py record` runs the real CLI on every suite of SUITES and writes
tests/data/agentv-real/recorded/NAME.json (see that folder's SOURCE.txt); `python
tests/agentv_real.py compare [NAME...]` prints both programs' summaries side by side;
`python tests/agentv_real.py replies NAME...` writes the replies of AgentV's example suites.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

try:
    from .agentv_loopback import LoopbackServer, Replies
except ImportError:  # run as a script
    from agentv_loopback import LoopbackServer, Replies  # type: ignore[no-redef]

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
DATA = HERE / "data" / "agentv-real"
AGENTV_DATA = HERE / "data" / "agentv"
AGENTV_VERSION = "4.42.4"
#: The targets file every suite runs with: AgentV's own at v4.42.4 (`llm` -> $LLM_TARGET -> `openai`).
TARGETS_TAG = "v4.42.4"

Summary = dict[str, dict[str, Any]]


@dataclass(frozen=True)
class Suite:
    """One compared suite: `folder` (under tests/data/agentv/TAG/ or tests/data/agentv-real/suites/)
    copied into a scratch tree beside AgentV's .agentv/, and the eval file in it."""

    name: str
    folder: str
    eval_file: str
    tag: str = ""  # AgentV's files at this tag; "" for this project's own suites

    @property
    def source(self) -> Path:
        return AGENTV_DATA / self.tag / self.folder if self.tag else DATA / "suites" / self.folder

    @property
    def replies(self) -> list[list[str]]:
        path = DATA / "replies" / f"{self.name}.json"
        return json.loads(path.read_text()) if path.is_file() else []


SUITES = [
    Suite("deterministic-graders", "examples/features/deterministic-graders", "evals/dataset.eval.yaml", "v4.42.4"),
    Suite("assert", "examples/features/assert", "evals/dataset.eval.yaml", "v4.15.0"),
    Suite("assert-extended", "examples/features/assert-extended", "evals/dataset.eval.yaml", "v4.15.0"),
    Suite("multi-turn-conversation", "examples/features/multi-turn-conversation", "evals/dataset.eval.yaml", "v4.15.0"),
    Suite("composite", "examples/features/composite", "evals/dataset.eval.yaml", "v4.42.4"),
    Suite("weighted-graders", "examples/features/weighted-graders", "evals/dataset.eval.yaml", "v4.42.4"),
    Suite("threshold-grader", "examples/features/threshold-grader", "evals/dataset.eval.yaml", "v4.42.4"),
    Suite("rubric", "examples/features/rubric", "evals/dataset.eval.yaml", "v4.42.4"),
    Suite("rubric-operators", "examples/features/rubric", "evals/operators.eval.yaml", "v4.42.4"),
    Suite("default-graders", "examples/features/default-graders", "evals/dataset.eval.yaml", "v4.42.4"),
    Suite(
        "red-team-benign",
        "examples/red-team",
        "archetypes/customer-facing-agent/suites/benign-controls.eval.yaml",
        "v4.42.4",
    ),
    Suite("multi-turn-live", "examples/features/multi-turn-conversation-live", "evals/dataset.eval.yaml", "v4.15.0"),
    Suite("input-files-shorthand", "examples/features/input-files-shorthand", "evals/dataset.eval.yaml", "v4.15.0"),
    Suite("suite-level-input", "examples/features/suite-level-input", "evals/dataset.eval.yaml", "v4.15.0"),
    Suite("suite-level-input-files", "examples/features/suite-level-input-files", "evals/dataset.eval.yaml", "v4.15.0"),
    Suite("env-interpolation", "examples/features/env-interpolation", "evals/dataset.eval.yaml", "v4.15.0"),
    Suite("test-vars-templating", "examples/features/test-vars-templating", "evals/dataset.eval.yaml", "v4.42.4"),
    Suite("eval-assert-demo", "examples/features/eval-assert-demo", "evals/dataset.eval.yaml", "v4.15.0"),
    Suite("nlp-metrics", "examples/features/nlp-metrics", "evals/dataset.eval.yaml", "v4.42.4"),
    Suite("experiments", "examples/features/experiments", "evals/coding-ability.eval.yaml", "v4.42.4"),
    Suite("trace-analysis", "examples/features/trace-analysis", "evals/dataset.eval.yaml", "v4.15.0"),
    Suite("basic-jsonl", "examples/features/basic-jsonl", "evals/dataset.eval.yaml", "v4.42.4"),
    Suite("external-datasets", "examples/features/external-datasets", "evals/dataset.eval.yaml", "v4.15.0"),
    Suite("autoresearch", "examples/features/autoresearch", "EVAL.yaml", "v4.42.4"),
    Suite("tool-trajectory-simple", "examples/features/tool-trajectory-simple", "evals/dataset.eval.yaml", "v4.42.4"),
    Suite(
        "tool-trajectory-advanced",
        "examples/features/tool-trajectory-advanced",
        "evals/trace-file-demo.eval.yaml",
        "v4.42.4",
    ),
    Suite("execution-metrics", "examples/features/execution-metrics", "evals/dataset.eval.yaml", "v4.42.4"),
    Suite("latency-assertions", "examples/features/latency-assertions", "evals/dataset.eval.yaml", "v4.42.4"),
    Suite(
        "document-extraction-fields",
        "examples/features/document-extraction",
        "evals/field-accuracy.eval.yaml",
        "v4.42.4",
    ),
    Suite(
        "document-extraction-confusion",
        "examples/features/document-extraction",
        "evals/confusion-metrics.eval.yaml",
        "v4.42.4",
    ),
    Suite("threshold-evaluator", "examples/features/threshold-evaluator", "evals/dataset.eval.yaml", "v4.15.0"),
    Suite("weighted-evaluators", "examples/features/weighted-evaluators", "evals/dataset.eval.yaml", "v4.15.0"),
    Suite("red-team-backdoor", "examples/red-team", "archetypes/coding-agent/suites/backdoor-pr.eval.yaml", "v4.42.4"),
    Suite("red-team-git", "examples/red-team", "archetypes/coding-agent/suites/destructive-git.eval.yaml", "v4.42.4"),
    Suite(
        "red-team-sandbox", "examples/red-team", "archetypes/coding-agent/suites/sandbox-escape.eval.yaml", "v4.42.4"
    ),
    Suite(
        "red-team-escalation",
        "examples/red-team",
        "archetypes/customer-facing-agent/suites/escalation-hijack.eval.yaml",
        "v4.42.4",
    ),
    Suite("edges-text", "edges", "evals/text.eval.yaml"),
    Suite("edges-judged", "edges", "evals/judged.eval.yaml"),
    Suite("edges-code", "edges", "evals/code.eval.yaml"),
    Suite("edges-conversation", "edges", "evals/conversation.eval.yaml"),
    Suite("edges-trajectory", "edges-agent", "evals/trajectory.eval.yaml"),
    Suite("edges-more", "edges-more", "evals/more.eval.yaml"),
    Suite("edges-errors", "edges-failing", "evals/errors.eval.yaml"),
    Suite("edges-threshold", "edges-more", "evals/threshold.eval.yaml"),
    Suite("edges-metrics", "edges-agent", "evals/metrics.eval.yaml"),
    Suite("edges-rubrics", "edges-more", "evals/judged.eval.yaml"),
    Suite("edges-code-conversation", "edges-more", "evals/code-conversation.eval.yaml"),
    Suite(
        "red-team-bola", "examples/red-team", "archetypes/customer-facing-agent/suites/bola-bfla.eval.yaml", "v4.42.4"
    ),
]


def agentv_bin() -> Path | None:
    """The real CLI: $AGENTV_BIN, else .tools/agentv/node_modules/.bin/agentv (installed by .ci/run)."""
    named = os.environ.get("AGENTV_BIN")
    for path in [Path(named)] if named else [REPO / ".tools" / "agentv" / "node_modules" / ".bin" / "agentv"]:
        if path.is_file():
            return path
    return None


def scratch_tree(suite: Suite, root: Path) -> Path:
    """A repository-like scratch folder holding the suite's folder and AgentV's .agentv/ at
    TARGETS_TAG; returns the eval file's path in it."""
    shutil.copytree(AGENTV_DATA / TARGETS_TAG / ".agentv", root / ".agentv")
    shutil.copytree(suite.source, root / suite.folder)
    (root / ".git").mkdir()  # the repository root, for both programs' upward look-ups
    return root / suite.folder / suite.eval_file


def environment(base_url: str) -> dict[str, str]:
    """The variables AgentV's targets file reads, pointing every target at the loopback server."""
    tools = [REPO / ".tools" / "node_modules" / ".bin", Path(sys.executable).parent]
    return {
        **os.environ,
        "PATH": os.pathsep.join([*(str(p) for p in tools), os.environ.get("PATH", "")]),
        "OPENAI_ENDPOINT": base_url,
        "OPENAI_BASE_URL": base_url,
        "OPENAI_API_KEY": "sk-loopback-not-a-secret",
        "OPENAI_MODEL": "loopback-model",
        "LLM_TARGET": "openai",
        "GRADER_TARGET": "openai",
        "AGENT_TARGET": "openai",
        "AGENTV_NO_UPDATE_CHECK": "1",  # else AgentV asks registry.npmjs.org for its newest version
        "UV_NO_PROJECT": "1",
        "UV_OFFLINE": "1",
    }


def run_agentv(binary: Path, eval_file: Path, root: Path, env: dict[str, str], out: Path) -> list[dict[str, Any]]:
    """The real CLI on one eval file (one test at a time): its index.jsonl rows, trimmed (`trimmed`)."""
    command = ["node", str(binary), "eval", "run", str(eval_file), "-o", str(out), "--workers", "1"]
    done = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True, timeout=120, check=False)
    index = out / "index.jsonl"
    (out.parent / f"{out.name}.log").write_text(done.stdout + done.stderr)
    if not index.is_file():
        raise RuntimeError(
            f"agentv wrote no results (exit {done.returncode}): {done.stdout[-800:]}{done.stderr[-800:]}"
        )
    return [trimmed(json.loads(line)) for line in index.read_text().splitlines() if line.strip()]


#: What is kept of each row of AgentV's index.jsonl (the rest is bookkeeping: paths of its
#: artifact folders, timestamps, durations, ids), and of each of its `scores` (not `input`, the
#: judge's whole prompt, nor times).
ROW_KEYS = ("test_id", "suite", "target", "score", "execution_status", "error", "token_usage", "scores")
SCORE_KEYS = ("name", "type", "score", "weight", "verdict", "assertions", "details", "scores")


def _trimmed_scores(scores: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {k: (_trimmed_scores(v) if k == "scores" else v) for k, v in s.items() if k in SCORE_KEYS and v is not None}
        for s in scores
    ]


def trimmed(row: dict[str, Any]) -> dict[str, Any]:
    kept = {k: row[k] for k in ROW_KEYS if k in row}
    if isinstance(kept.get("scores"), list):
        kept["scores"] = _trimmed_scores(kept["scores"])
    return kept


def run_convoeval(eval_file: Path, root: Path, env: dict[str, str], out: Path) -> Summary:
    """convoeval on one eval file, summarized from its results JSONL."""
    command = [sys.executable, "-m", "convoeval", "run", str(eval_file), "-o", str(out), "--no-cache"]
    done = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True, timeout=120, check=False)
    if not out.is_file():
        raise RuntimeError(
            f"convoeval wrote no results (exit {done.returncode}): {done.stdout[-800:]}{done.stderr[-800:]}"
        )
    return summarize_convoeval([json.loads(line) for line in out.read_text().splitlines() if line.strip()])


AGENTV_VERDICTS = {"ok": "pass", "quality_failure": "fail", "execution_error": "error"}
#: Types named alike: AgentV reports a `rubrics` assertion as the `llm-grader` that runs it.
SAME_TYPE = {"rubrics": "llm-grader"}


def _row(kind: Any, score: Any, verdict: Any) -> list[Any]:
    return [SAME_TYPE.get(kind, kind), _round(score), verdict]


def _agentv_rows(scores: list[dict[str, Any]] | None) -> list[list[Any]]:
    found: list[list[Any]] = []
    for score in scores or []:
        found.append(_row(score.get("type"), score.get("score"), score.get("verdict")))
        found += _agentv_rows(score.get("scores"))
    return found


def summarize_agentv(results: list[dict[str, Any]]) -> Summary:
    """AgentV's index.jsonl: `execution_status` ok / quality_failure / execution_error is the
    verdict pass / fail / error; a conversation's `turn-N` and `conversation` entries are its
    turns (rows of type `turn`), followed by their graders."""
    summary: Summary = {}
    for r in results:
        scores = r.get("scores") or []
        rows: list[list[Any]] = []
        conversation = bool(scores) and all(s.get("name", "").startswith(("turn-", "conversation")) for s in scores)
        for score in scores if conversation else []:
            rows.append(["turn", _round(score.get("score")), score.get("verdict")])
            rows += _agentv_rows(score.get("scores"))
        summary[r["test_id"]] = {
            "verdict": AGENTV_VERDICTS.get(r.get("execution_status", ""), r.get("execution_status")),
            "score": _round(r.get("score")),
            "assertions": rows if conversation else _agentv_rows(scores),
        }
    return summary


def _convoeval_rows(graders: list[dict[str, Any]]) -> list[list[Any]]:
    found: list[list[Any]] = []
    for grader in graders:
        found.append(_row(grader.get("type"), grader.get("score"), grader.get("verdict")))
        details = grader.get("details")
        if isinstance(details, dict) and isinstance(details.get("scores"), list):  # a composite's
            found += _convoeval_rows(details["scores"])
    return found


def summarize_convoeval(results: list[dict[str, Any]]) -> Summary:
    """convoeval's results; a conversation's score entries are its turns (rows of type `turn`)."""
    summary: Summary = {}
    for r in results:
        rows: list[list[Any]] = []
        for entry in r.get("scores", []):
            if r.get("mode") == "conversation":
                rows.append(["turn", _round(entry.get("score")), entry.get("verdict")])
            rows += _convoeval_rows(entry.get("graders", []))
        summary[r["test_id"]] = {"verdict": r.get("verdict"), "score": _round(r.get("score")), "assertions": rows}
    return summary


def same(real: dict[str, Any], ours: dict[str, Any]) -> bool:
    """Whether one test's summaries agree. AgentV leaves the llm-grader it runs for a test
    without assertions out of its `scores`, so an empty list there matches convoeval's one
    implicit llm-grader; an execution error's score is 0 in AgentV, null (no score) in convoeval."""
    if real["assertions"] == [] and len(ours["assertions"]) == 1 and ours["assertions"][0][0] == "llm-grader":
        ours = {**ours, "assertions": []}
    if real["verdict"] == ours["verdict"] == "error" and real["score"] == 0 and ours["score"] is None:
        ours = {**ours, "score": 0.0}  # an execution error: AgentV writes score 0, convoeval null
    return real == ours


def _round(value: Any) -> float | None:
    return None if value is None else round(float(value), 4)


def recorded(suite: Suite) -> tuple[Summary, list[str]]:
    """The summary and target requests of the real CLI's recorded run of `suite`."""
    record = json.loads((DATA / "recorded" / f"{suite.name}.json").read_text())
    return summarize_agentv(record["index"]), record["target_requests"]


def write_record(suite: Suite, rows: list[dict[str, Any]], requests: list[str]) -> None:
    """tests/data/agentv-real/recorded/NAME.json: one line per index row and per request."""
    head = {"agentv": AGENTV_VERSION, "suite": suite.name, "eval_file": f"{suite.folder}/{suite.eval_file}"}
    lines = [json.dumps(head)[:-1] + ', "index": [']
    lines += [" " + json.dumps(row, ensure_ascii=False) + "," for row in rows]
    lines[-1] = lines[-1].rstrip(",")
    lines.append('], "target_requests": [')
    lines += [" " + json.dumps(text, ensure_ascii=False) + "," for text in requests]
    lines[-1] = lines[-1].rstrip(",")
    lines.append("]}")
    (DATA / "recorded").mkdir(parents=True, exist_ok=True)
    (DATA / "recorded" / f"{suite.name}.json").write_text("\n".join(lines) + "\n")


def sent(targets: list[list[dict[str, str]]]) -> list[str]:
    """The target requests' messages, each as `role: content` lines, sorted (tests may run in
    any order)."""
    return sorted("\n".join(f"{m['role']}: {m['content']}" for m in messages) for messages in targets)


def run_real(suite: Suite, scratch: Path, binary: Path, record: bool = False) -> tuple[Summary, list[str]]:
    """The real CLI's summary of `suite` and the target requests it sent (written to
    recorded/ when `record`)."""
    root = scratch / f"{suite.name}.tree"
    eval_file = scratch_tree(suite, root)
    with LoopbackServer(Replies(suite.replies)) as server:
        env = {**environment(server.base_url), "AGENTV_HOME": str(scratch / "agentv-home")}  # not ~/.agentv
        rows = run_agentv(binary, eval_file, root, env, scratch / f"{suite.name}.agentv")
        requests = sent(server.targets)
    if record:
        write_record(suite, rows, requests)
    return summarize_agentv(rows), requests


def run_ours(suite: Suite, scratch: Path) -> tuple[Summary, list[str]]:
    """convoeval's summary of `suite` and the target requests it sent."""
    root = scratch / f"{suite.name}.ours"
    eval_file = scratch_tree(suite, root)
    with LoopbackServer(Replies(suite.replies)) as server:
        summary = run_convoeval(
            eval_file, root, environment(server.base_url), scratch / f"{suite.name}.convoeval.jsonl"
        )
        return summary, sent(server.targets)


def example_replies(suite: Suite) -> list[list[str]]:
    """Replies for one of AgentV's example suites (`python tests/agentv_real.py replies NAME`
    wrote replies/NAME.json): per test, keyed by the first 50 characters of its last user
    message, by a CRC-32 of its id one of three: none (the server echoes), its expected output
    (or a greeting), or that text upper-cased with a number and a URL added."""
    import zlib

    from convoeval.spec import load_suite

    rules = []
    for test in load_suite(suite.source / suite.eval_file).tests:
        users = [m.content for m in test.input or [] if m.role == "user"] if not isinstance(test.input, str) else []
        last = users[-1] if users else test.input if isinstance(test.input, str) else ""
        kind = zlib.crc32(test.id.encode()) % 3
        if not isinstance(last, str) or not last.strip() or kind == 0:
            continue
        expected = test.expected_output
        if isinstance(expected, list):
            expected = "\n".join(m.content for m in expected if isinstance(m.content, str))
        reply = expected or "Hello! Here is my answer."
        rules.append(
            [" ".join(last.split())[:50], reply if kind == 1 else reply.upper() + " Also: 42, see https://example.org."]
        )
    return rules


def main(argv: list[str]) -> None:
    import tempfile

    if argv[0] == "replies":
        for suite in [s for s in SUITES if s.name in argv[1:]]:
            (DATA / "replies" / f"{suite.name}.json").write_text(json.dumps(example_replies(suite), indent=1) + "\n")
        return

    binary = agentv_bin()
    names = argv[1:]
    chosen = [s for s in SUITES if not names or s.name in names]
    with tempfile.TemporaryDirectory() as scratch:
        for suite in chosen:
            real = real_sent = None
            if binary is not None:
                real, real_sent = run_real(suite, Path(scratch), binary, record=argv[0] == "record")
            ours, ours_sent = run_ours(suite, Path(scratch))
            if real_sent is not None and real_sent != ours_sent:
                print("DIFF", suite.name, "target requests")
                for a, b in zip(real_sent, ours_sent, strict=False):
                    if a != b:
                        print("   agentv   ", json.dumps(a)[:400])
                        print("   convoeval", json.dumps(b)[:400])
            for test_id in sorted(set(real or {}) | set(ours)):
                a, b = (real or {}).get(test_id), ours.get(test_id)
                agree = a is not None and b is not None and same(a, b)
                print("SAME" if agree else "DIFF", suite.name, test_id)
                if not agree:
                    print("   agentv   ", json.dumps(a))
                    print("   convoeval", json.dumps(b))


if __name__ == "__main__":
    main(sys.argv[1:] or ["compare"])
