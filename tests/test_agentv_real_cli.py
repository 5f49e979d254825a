"""convoeval's verdicts on AgentV eval files against the real `agentv` CLI's (npm agentv@4.42.4).

Each suite of `agentv_real.SUITES` (AgentV's own example files at v4.15.0/v4.42.4, and this
project's edge-case suites in tests/data/agentv-real/suites) runs against a loopback server
that answers both programs alike (tests/agentv_loopback.py). The real CLI's results were
recorded (tests/data/agentv-real/recorded, see SOURCE.txt there); convoeval must give the same
verdict, score and per-assertion outcome for every test and send the target the same messages,
except for the differences listed in KNOWN, each explained in docs/guides/agentv.md
("Differences from the real agentv CLI"). Where the CLI is installed (.ci/run puts it in
.tools/agentv/, or $AGENTV_BIN names it), it runs the suites of LIVE again and must give the
recorded results.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from convoeval.graders._agentv_code import agentv_grade
from convoeval.spec._agentv_meaning import js_pattern, js_rejects

from .agentv_real import SUITES, Suite, agentv_bin, recorded, run_ours, run_real, same

#: (suite, test, why convoeval's result differs from the real AgentV 4.42.4 CLI's).
_KNOWN = [
    ("edges-judged", "negated-grader", "a negated graded assertion's own verdict: AgentV flips it"),
    ("edges-judged", "required-min-score-met", "an llm-grader's own verdict: AgentV at 0.8, convoeval at min_score"),
    ("edges-judged", "score-ranges", "AgentV's 2.4/3 is 0.7999999999999999 < 0.8; convoeval rounds to 6 digits"),
    ("edges-conversation", "turn-expected-output", "AgentV's judge does not see a turn's expected_output"),
    ("edges-trajectory", "exact-with-extra-call", "AgentV's `exact` scores the expected positions only"),
    ("edges-trajectory", "negated-exact", "the same, negated"),
    ("edges-more", "required-numeric-met", "an llm-grader's own verdict: AgentV at 0.8, convoeval at min_score"),
    ("edges-more", "min-score-deterministic", "the same"),
    ("edges-more", "composite-code-crash", "a failing aggregator program: AgentV scores 0, convoeval an error"),
    ("edges-more", "composite-code-not-json", "the same, the program printing no JSON"),
    ("edges-more", "conversation-metrics", "AgentV has no latency or tokens in conversation mode: it fails them"),
    ("edges-threshold", "half-passes", "AgentV's row status ignores the suite's threshold (its exit code does not)"),
    ("edges-threshold", "conversation-half", "the same, a conversation"),
    ("edges-threshold", "judged-at-suite-threshold", "the same, a judged check"),
    ("edges-code-conversation", "per-turn-and-final", "AgentV runs a turn's code-grader in its own working folder"),
    ("edges-errors", "agent-error-field", "a cli reply's `error`: an error since AgentV v5, ignored by 4.42.4"),
]
KNOWN = {(suite, test): why for suite, test, why in _KNOWN}
IDS = [s.name for s in SUITES]
#: The suites the installed CLI runs again (each takes it about a second): the edge suites and a
#: few of AgentV's examples covering the other kinds (the rest were recorded the same way).
LIVE = [
    s
    for s in SUITES
    if not s.tag
    or s.name in ("deterministic-graders", "rubric", "composite", "multi-turn-live", "input-files-shorthand")
    or s.name in ("tool-trajectory-simple", "execution-metrics", "document-extraction-fields")
]


@pytest.mark.parametrize("suite", SUITES, ids=IDS)
def test_convoeval_gives_the_recorded_agentv_verdicts(suite: Suite, tmp_path: Path) -> None:
    real, real_sent = recorded(suite)
    ours, ours_sent = run_ours(suite, tmp_path)
    assert ours_sent == real_sent  # the same target requests: both graded the same replies
    assert sorted(ours) == sorted(real)
    for test_id, result in real.items():
        if (suite.name, test_id) in KNOWN or (suite.name, "*") in KNOWN:
            assert not same(result, ours[test_id]), f"{test_id} now agrees with AgentV: drop it from KNOWN and the docs"
        else:
            assert same(result, ours[test_id]), (test_id, result, ours[test_id])


@pytest.mark.skipif(
    agentv_bin() is None, reason="the agentv CLI is not installed (.ci/run installs it; or set AGENTV_BIN)"
)
@pytest.mark.parametrize("suite", LIVE, ids=[s.name for s in LIVE])
def test_the_real_agentv_cli_gives_the_recorded_results(suite: Suite, tmp_path: Path) -> None:
    binary = agentv_bin()
    assert binary is not None
    assert run_real(suite, tmp_path, binary) == recorded(suite)


def test_every_known_difference_names_a_recorded_test() -> None:
    names = {s.name: s for s in SUITES}
    for suite_name, test_id in KNOWN:
        assert test_id == "*" or test_id in recorded(names[suite_name])[0], (suite_name, test_id)


@pytest.mark.parametrize(
    ("pattern", "flags", "text", "matches"),
    [
        (r"^\d$", "", "\u0663", False),  # JavaScript's \d is ASCII only
        (r"^\d$", "", "3", True),
        (r"done$", "", "all done\n", False),  # $ is the very end without the m flag
        (r"done$", "m", "all done\nnext", True),
        (r"a.c", "", "a\rc", False),  # . stops at \r in JavaScript
        (r"a.c", "s", "a\rc", True),
        (r"\bstra", "", "\u00e9stra", True),  # \b between a non-ASCII letter and an ASCII one
        (r"[\d]+x", "", "12x", True),
        (r"\$5", "", "costs $5", True),  # an escaped $ stays a dollar sign
        (r"[$]", "", "$", True),
    ],
)
def test_javascript_patterns_match_as_in_javascript(pattern: str, flags: str, text: str, matches: bool) -> None:
    import regex

    bits = (regex.MULTILINE if "m" in flags else 0) | (regex.DOTALL if "s" in flags else 0)
    assert bool(regex.search(js_pattern(pattern, flags), text, bits)) is matches


#: Patterns, flags and texts whose match Node's own `new RegExp(pattern, flags).test(text)` decides.
JS_CASES = [
    (r"^\d$", "", "\u0663"), (r"^\d+$", "", "42\n"), (r"\w+", "", "\u00e9"), (r"\bfoo\b", "", "\u00e9foo"),
    (r"\p{L}", "", "p{L}"), (r"\p{L}", "", "x"), (r"\p{L}", "u", "\u00e9"), (r"\P{L}", "u", "1"),
    (r"\A", "", "A"), (r"x\Z", "", "xZ"), (r"\e", "", "e"), (r"\z", "", "z"), (r"\G", "", "G"),
    (r"\cJ", "", "\n"), (r"[\A]", "", "A"), (r"[\d\w]", "", "\u0663"), (r"a.c", "", "a\u2028c"),
    (r"(?<year>\d{4})-\k<year>", "", "2024-2024"), (r"(?:ab)+$", "", "abab"), (r"(?<=\$)\d", "", "$5"),
    (r"(?!x)y", "", "y"), (r"\s", "", "\u00a0"), (r"\x41", "", "A"), (r"\u0041", "", "A"), (r"ABC", "i", "abc"),
]  # fmt: skip


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed (.ci/run installs it)")
def test_javascript_patterns_match_as_node_matches() -> None:
    """`js_pattern` against Node's own regular expressions: every case's match is Node's."""
    import regex

    script = "const c = JSON.parse(process.argv[1]); console.log(JSON.stringify(c.map(([p, f, t]) => new RegExp(p, f).test(t))))"
    node = subprocess.run(["node", "-e", script, json.dumps(JS_CASES)], capture_output=True, text=True, check=True)
    for (pattern, flags, text), matches in zip(JS_CASES, json.loads(node.stdout), strict=True):
        bits = (regex.MULTILINE if "m" in flags else 0) | (regex.DOTALL if "s" in flags else 0)
        bits |= regex.IGNORECASE if "i" in flags else 0
        assert bool(regex.search(js_pattern(pattern, flags), text, bits)) is matches, (pattern, flags, text)


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed (.ci/run installs it)")
@pytest.mark.parametrize(
    "pattern", ["(?i)abc", "(?i:abc)", "(?P<n>a)", "(?#note)a", "(?:a)(?=b)(?<n>c)", r"\(?i", "[a](?<=a)"]
)
def test_patterns_javascript_refuses(pattern: str) -> None:
    """`js_rejects` says what Node's `new RegExp` refuses (Python-only group syntax)."""
    script = "try { new RegExp(process.argv[1]); console.log('ok') } catch (e) { console.log('refused') }"
    node = subprocess.run(["node", "-e", script, pattern], capture_output=True, text=True, check=True)
    assert js_rejects(pattern) is (node.stdout.strip() == "refused"), pattern


@pytest.mark.parametrize(
    ("code", "stdout", "stderr", "score", "texts"),
    [
        (0, '{"score": 1.7}', "", 1.0, []),
        (0, '{"assertions": [{"text": "a", "passed": true}, {"text": "b", "passed": false}]}', "", 0.5, ["a", "b"]),
        (0, "looks fine", "", 1.0, ["looks fine"]),
        (0, "[1, 2]", "", 1.0, ["[1, 2]"]),
        (0, "{}", "", 0.0, []),
        (1, "not good", "", 0.0, ["not good"]),
        (1, "", "", 0.0, ["exit 1"]),
        (2, "", "crashed", 0.0, ["Code evaluator failed: `node g.mjs` exited with code 2: crashed"]),
        (1, '{"score": 1}', "", 0.0, ["Code evaluator failed: `node g.mjs` exited with code 1"]),
    ],
)
def test_a_program_is_read_as_agentv_reads_it(code: int, stdout: str, stderr: str, score: float, texts: list) -> None:
    grade = agentv_grade(code, stdout, stderr, "node g.mjs")
    assert (grade.score, [a.text for a in grade.assertions]) == (score, texts)


def test_what_agentv_ignores_is_named_in_a_warning(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """The forms AgentV drops without a word (an empty value, a composite member's weight,
    `negate` and `required`, an expected call's `input`) load with a warning that says so, at
    their line."""
    import logging

    from convoeval.spec import load_suite

    from .conftest import write

    (tmp_path / ".git").mkdir()
    (tmp_path / ".agentv").mkdir()
    suite = write(
        tmp_path / "e.eval.yaml",
        """\
tests:
  - id: a
    input: hi
    assertions:
      - {type: equals, value: ""}
      - {type: contains, value: 4}
      - type: composite
        aggregator: {type: weighted_average}
        assertions:
          - {type: contains, value: hi, weight: 3}
          - {type: contains, value: bye, negate: true, required: true}
      - type: tool-trajectory
        expected: [{tool: search, input: {q: x}}]
""",
    )
    with caplog.at_level(logging.WARNING, logger="convoeval.spec"):
        [test] = load_suite(suite).tests
    assert [a.type for a in test.assertions] == ["composite", "tool-trajectory"]
    text = caplog.text
    assert "e.eval.yaml:5: tests[0].assertions[0]: skipped, as AgentV skips it" in text
    assert "e.eval.yaml:6: tests[0].assertions[1]: skipped" in text
    assert "assertions[2].assertions[0].weight: ignored, as AgentV ignores it" in text
    for field in ("negate", "required"):  # AgentV applies them to top-level checks only
        assert f"assertions[2].assertions[1].{field}: ignored, as AgentV ignores it on a composite's member" in text
    member = test.assertions[0].assertions[1]  # type: ignore[attr-defined]
    assert (member.negate, member.required) == (False, False)
    assert "assertions[3].expected[0].input: ignored, as AgentV ignores it" in text
    assert test.assertions[1].args_match == "exact"  # type: ignore[attr-defined]


def test_an_llm_grader_with_its_own_rubric_prompt_is_refused_with_its_reason(tmp_path: Path) -> None:
    """AgentV's `llm-grader` with `rubrics` is a `rubrics` check (recorded: edges-rubrics); with
    its own `prompt` as well (a custom rubric prompt) it is refused, saying what to drop."""
    from convoeval import SpecError
    from convoeval.spec import load_suite

    from .conftest import write

    (tmp_path / ".git").mkdir()
    (tmp_path / ".agentv").mkdir()
    suite = "tests:\n  - id: a\n    input: hi\n    assertions:\n"
    suite += "      - {type: llm-grader, prompt: Judge it., rubrics: [{id: r, criteria: Greets.}]}\n"
    with pytest.raises(SpecError, match=r"e.eval.yaml:5: .*prompt: .*own prompt for its `rubrics`"):
        load_suite(write(tmp_path / "e.eval.yaml", suite))
