"""The offline path a newcomer takes: the embedded model as target AND judge, through the CLI."""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import read_jsonl, write

pytestmark = pytest.mark.local_model


def test_offline_run_on_the_embedded_model(cli, tmp_path: Path) -> None:
    write(
        tmp_path / "targets.yaml",
        """\
targets:
  - name: small
    provider: local
    max_tokens: 32
""",
    )
    suite = write(
        tmp_path / "s.eval.yaml",
        """\
execution:
  target: small
tests:
  - id: short-chat
    mode: conversation
    input:
      - role: system
        content: You are a helpful assistant. Answer in one sentence.
    turns:
      - input: What is the capital of France?
        assertions:
          - Names Paris as the capital
          - type: icontains
            value: paris
      - input: And what river runs through it?
        assertions:
          - Mentions a river
    assertions:
      - The assistant stays on topic
""",
    )
    code, out, err = cli("run", suite, "--no-cache", "-o", tmp_path / "r.jsonl")
    assert code in (0, 1), out + err  # a verdict either way; 2 would mean errors everywhere
    assert "judge: local" in out and "demo-grade" in out
    [result] = read_jsonl(tmp_path / "r.jsonl")
    assert result["execution_status"] in ("ok", "quality_failure") and result["target"] == "small"
    assert [e["name"] for e in result["scores"]] == ["turn-1", "turn-2", "conversation"]
    for entry in result["scores"]:
        assert entry["score"] is not None, entry
        for grader in entry["graders"]:
            assert grader["verdict"] in ("pass", "fail"), grader  # the judge output parsed
            if grader["type"] == "rubrics":
                assert grader["assertions"] and all(a["evidence"] is not None for a in grader["assertions"])
    replies = [m for m in result["output"] if m["source"] == "target"]
    assert len(replies) == 2 and all(m["content"].strip() for m in replies)
    assert result["judge_token_usage"]["output_tokens"] > 0
