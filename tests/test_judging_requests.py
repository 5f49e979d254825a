"""The judge requests of rubric and llm-grader shapes, and the results they give, stay exactly
what they were: the prompt text is part of the response cache's key and of recorded results.

`tests/data/judge_requests/*.eval.yaml` run against the loopback fake server with a judge that
answers from what it is asked (yes and no, scores across the scale, one unparseable answer that
is re-asked). Every judge request body and every graded result is compared with
`golden.json`, recorded by the code before the judge path was made leaner; regenerate it (only
when a prompt is meant to change) with `CONVOEVAL_GOLDEN=write`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import convoeval
from convoeval.testing import FakeOpenAIServer

DATA = Path(__file__).resolve().parent / "data" / "judge_requests"
GOLDEN = DATA / "golden.json"
#: Result fields that change from run to run (times, ids, paths).
VOLATILE = {"duration_ms", "latency_ms", "started_at", "finished_at", "timestamp", "run_id", "created", "path"}


def varied_judge(body: dict[str, Any]) -> str:
    """An answer read off the request: the same request always gets the same answer."""
    messages = body["messages"]
    if "REASK-ME" in messages[1]["content"] and len(messages) == 2:
        return "Yes, it names a city."  # no JSON: the grader re-asks
    seed = sum(len(m["content"]) for m in messages) + body.get("seed", 0) + len(json.dumps(body))
    schema = body["response_format"]["json_schema"]["schema"]

    def value(spec: dict[str, Any], k: int) -> object:
        if spec.get("type") == "object":
            return {key: value(sub, k + i) for i, (key, sub) in enumerate(spec["properties"].items())}
        if spec.get("type") == "boolean":
            return (seed + k) % 3 != 0
        if spec.get("type") == "integer":
            low, high = spec.get("minimum", 0), spec.get("maximum", 10)
            return low + (seed + k) % (high - low + 1)
        return f"reason {(seed + k) % 97}"

    return json.dumps(value(schema, 0))


def _stable(value: object) -> object:
    """`value` without what changes from run to run, with the suites' paths relative to the
    checkout (`checks.file`), wherever the repository is."""
    if isinstance(value, dict):
        return {k: _stable(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [_stable(v) for v in value]
    if isinstance(value, str) and value.startswith(str(DATA)):
        return value.replace(str(DATA), "tests/data/judge_requests", 1)
    return value


def run_shapes(tmp_path: Path) -> dict[str, object]:
    """Judge request bodies (sorted) and graded results of the pinned suites, each suite run on
    its own (a suite's `execution.judge.repeats` is the whole run's: run together, every judge
    call would be repeated)."""
    results = []
    with FakeOpenAIServer(judge=varied_judge) as server:
        os.environ["OPENAI_BASE_URL"] = server.base_url
        for suite in sorted(DATA.glob("*.eval.yaml")):
            report = convoeval.run(
                [str(suite)],
                target="openai:pinned-target",
                judge="openai:pinned-judge",
                cache=False,
                store=False,
                concurrency=1,
            )
            results += [json.loads(r.model_dump_json()) for r in report.results]
        bodies = sorted(server.judge_requests(), key=lambda body: json.dumps(body, sort_keys=True))
    results.sort(key=lambda r: (r["test_id"], r.get("trial", 0)))
    return {"judge_requests": bodies, "results": _stable(results)}


def test_judge_requests_and_results_are_unchanged(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-pinned-0000")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    got = run_shapes(tmp_path)
    if os.environ.get("CONVOEVAL_GOLDEN") == "write":
        GOLDEN.write_text(json.dumps(got, indent=1) + "\n")
    want = json.loads(GOLDEN.read_text())
    assert len(got["judge_requests"]) == len(want["judge_requests"])
    for sent, pinned in zip(got["judge_requests"], want["judge_requests"], strict=True):
        assert json.dumps(sent) == json.dumps(pinned)  # key order included: it is what is sent
    assert got["results"] == want["results"]


#: Answers where reading the JSON text in one step could differ from `json.loads` + validation.
ODD_ANSWERS = [
    '{"c1": {"reasoning": "a", "satisfied": true}, "s": {"reasoning": "b", "score": 7}}',
    '{"c1": {"reasoning": "a", "satisfied": true}, "c1": {"reasoning": "z", "satisfied": false}, '
    '"s": {"reasoning": "b", "score": 7}}',
    '{"c1": {"reasoning": "a", "reasoning": "q", "satisfied": true}, "s": {"reasoning": "b", "score": 7}}',
    '{"c1": {"reasoning": "a\nb", "satisfied": true}, "s": {"reasoning": "b", "score": 7}}',
    '{"c1": {"reasoning": "a\\ud800b", "satisfied": true}, "s": {"reasoning": "b", "score": 7}}',
    '{"c1": {"reasoning": "a\ud800b", "satisfied": true}, "s": {"reasoning": "b", "score": 7}}',
    '{"c1": {"reasoning": "\\u00e9\\ud83d\\ude00\\u0000", "satisfied": true}, "s": {"reasoning": "b", "score": 7}}',
    '{"c1": {"reasoning": "a", "satisfied": true}, "s": {"reasoning": "b", "score": NaN}}',
    '{"c1": {"reasoning": "a", "satisfied": true}, "s": {"reasoning": "b", "score": 0.7e1}}',
    '{"c1": {"reasoning": "a", "satisfied": true}, "s": {"reasoning": "b", "score": 7.5}}',
    '{"c1": {"reasoning": "a", "satisfied": true}, "s": {"reasoning": "b", "score": "7"}}',
    '{"c1": {"reasoning": "a", "satisfied": 1}, "s": {"reasoning": "b", "score": 7}}',
    '{"c1": {"reasoning": "a", "satisfied": true}, "s": {"reasoning": "b", "score": 1e400}}',
    '\ufeff{"c1": {"reasoning": "a", "satisfied": true}, "s": {"reasoning": "b", "score": 7}}',
    ' \n{"c1": {"reasoning": "a", "satisfied": true}, "s": {"reasoning": "b", "score": -0}}\n ',
    '{"c1": {"reasoning": "a", "satisfied": true}, "s": {"reasoning": "b", "score": 7}} and more',
    'Sure: ```json\n{"c1": {"reasoning": "a", "satisfied": true}, "s": {"reasoning": "b", "score": 7}}\n```',
    '{"k0": {"reasoning": "a", "satisfied": true}, "k1": {"reasoning": "b", "score": 7}}',
    '[{"c1": 1}]',
    "",
]


def test_parse_answer_reads_every_answer_as_the_general_path_does() -> None:
    """`parse_answer` validates the usual answer from its text in one step; on these answers
    it gives what finding the JSON and validating it gives, value or error message."""
    from pydantic import ValidationError

    from convoeval.judging import RubricItem, rubric_parser, score_model
    from convoeval.judging._call import JudgeOutputError, describe_validation_error, extract_json, parse_answer

    def general(model, text: str) -> str:
        """What parse_answer gave before it read answers in one step."""
        try:
            data = extract_json(text)
        except JudgeOutputError as exc:
            return f"error: {exc}"
        if not isinstance(data, dict):
            return f"error: expected a JSON object, got {type(data).__name__}"
        try:
            return repr(model.model_validate(data))
        except ValidationError as exc:
            return f"error: {describe_validation_error(exc)}"

    def direct(model, text: str) -> str:
        try:
            return repr(parse_answer(model, text))
        except JudgeOutputError as exc:
            return f"error: {exc}"

    parser = rubric_parser([RubricItem("c1", "holds"), RubricItem("s", bands=[(0, 10, "any")])])
    assert parser.json_direct
    for text in ODD_ANSWERS:
        assert direct(parser, text) == general(parser, text), text
    likert = score_model(1, 5, "justification")
    for text in [
        '{"justification": "ok", "score": 5}',
        '{"reasoning": "ok", "score": 5}',
        '{"justification": "", "score": 6}',
    ]:
        assert direct(likert, text) == general(likert, text), text
