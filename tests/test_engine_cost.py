"""Prices, cost totals per test/target/run, and the --max-cost budget."""

from __future__ import annotations

from pathlib import Path

import pytest

import convoeval
from convoeval.results import Usage
from convoeval.targets import TargetConfig, call_cost, create_target, lookup_price

from .conftest import read_jsonl, write


def test_price_table_matches_exact_dated_and_routed_names() -> None:
    assert lookup_price("gpt-4o-mini") == (0.15, 0.6)
    assert lookup_price("gpt-4o-mini-2024-07-18") == (0.15, 0.6)  # not gpt-4o's price
    assert lookup_price("gpt-4o-2024-08-06") == (2.5, 10.0)
    assert lookup_price("claude-sonnet-4-5-20250929") == (3.0, 15.0)
    assert lookup_price("openai/gpt-4.1-mini") == (0.4, 1.6)
    assert lookup_price("my-finetune") is None and lookup_price("gpt-4ox") is None
    assert call_cost(1_000_000, 500_000, (0.15, 0.6)) == pytest.approx(0.45)
    assert call_cost(10, 10, None) == 0.0


def test_targets_take_list_prices_unless_overridden_per_field() -> None:
    listed = create_target(TargetConfig(name="a", provider="openai", model="gpt-4o-mini"))
    assert listed.prices == (0.15, 0.6)
    override = create_target(TargetConfig(name="b", provider="openai", model="gpt-4o-mini", price_output_per_mtok=1.0))
    assert override.prices == (0.15, 1.0)
    unknown = create_target(TargetConfig(name="c", provider="openai", model="local-thing"))
    assert unknown.prices == (0.0, 0.0) and unknown.cost(Usage(input_tokens=1000, output_tokens=1000)) == 0.0


PRICEY = """\
targets:
  - name: pricey
    provider: openai
    model: m
    price_input_per_mtok: 1000000
    price_output_per_mtok: 1000000
"""


def test_costs_are_totalled_per_test_target_and_run(cli, fake_openai, tmp_path: Path) -> None:
    write(tmp_path / "targets.yaml", PRICEY)
    suite = write(
        tmp_path / "s.eval.yaml",
        """\
tests:
  - id: a
    mode: conversation
    turns: [{input: one two}, {input: three}]
  - id: b
    input: four
""",
    )
    code, out, _ = cli("run", suite, "--target", "pricey", "-o", tmp_path / "r.jsonl")
    results = {r["test_id"]: r for r in read_jsonl(tmp_path / "r.jsonl")}
    # The fake server counts words: a token costs $1 here.
    assert (
        results["a"]["cost_usd"]
        == results["a"]["token_usage"]["input_tokens"] + results["a"]["token_usage"]["output_tokens"]
    )
    total = results["a"]["cost_usd"] + results["b"]["cost_usd"]
    assert f"cost ${total:.4f}" in out and f"pricey: 2 test(s), target ${total:.4f}" in out


def test_max_cost_stops_new_work_and_resume_finishes_it(cli, fake_openai, tmp_path: Path) -> None:
    write(tmp_path / "targets.yaml", PRICEY)
    suite = write(
        tmp_path / "s.eval.yaml",
        """\
tests:
  - id: t1
    input: one
  - id: t2
    input: two
  - id: t3
    input: three
    depends_on: t2
  - id: t4
    input: four
""",
    )
    code, out, _ = cli(
        "run", suite, "--target", "pricey", "--concurrency", "1", "--max-cost", "0.5", "-o", tmp_path / "r.jsonl"
    )
    results = {r["test_id"]: r for r in read_jsonl(tmp_path / "r.jsonl")}
    assert results["t1"]["verdict"] == "pass"
    for test_id in ("t2", "t3", "t4"):
        assert (results[test_id]["verdict"], results[test_id]["execution_status"]) == ("skip", "budget_exhausted")
        assert "max-cost" in results[test_id]["error"]
    assert len(fake_openai.requests) == 1 and code == 1
    assert "budget reached" in out and "3 test(s) not started" in out and "--resume" in out

    code, out, _ = cli("run", "--resume", "last", "--max-cost", "1000")
    results = {r["test_id"]: r for r in read_jsonl(tmp_path / "r.jsonl")}
    assert {r["verdict"] for r in results.values()} == {"pass"} and len(results) == 4
    assert len(fake_openai.requests) == 4 and code == 0


def test_max_cost_says_which_calls_it_could_not_count(cli, fake_openai, tmp_path: Path) -> None:
    """A model without prices costs nothing the budget can see: the run says so (the old code
    ran everything without a word about --max-cost)."""
    suite = write(tmp_path / "s.eval.yaml", "tests:\n  - {id: t1, input: one}\n  - {id: t2, input: two}\n")
    code, out, _ = cli("run", suite, "--target", "openai:my-vllm-model", "--max-cost", "0.000001")
    assert "--max-cost counts only calls with a known price: 2 call(s) of openai:my-vllm-model had none" in out
    assert code == 0


def test_resume_keeps_the_sandbox_the_run_chose(cli, fake_openai, tmp_path: Path) -> None:
    write(tmp_path / "targets.yaml", PRICEY)
    suite = write(
        tmp_path / "s.eval.yaml",
        "tests:\n  - {id: t1, input: one}\n  - {id: t2, input: two}\n  - {id: t3, input: three}\n",
    )
    args = ("--target", "pricey", "--concurrency", "1", "--max-cost", "0.5", "-o", tmp_path / "r.jsonl")
    code, out, _ = cli("run", suite, *args, "--sandbox", "none")
    assert code == 1 and "sandbox: none" in out and "budget reached" in out

    code, out, _ = cli("run", "--resume", "last", "--max-cost", "0.5")  # the run's sandbox
    assert "sandbox: none" in out and "sandbox: bubblewrap" not in out

    code, out, _ = cli("run", "--resume", "last", "--max-cost", "1000", "--sandbox", "docker")  # given: it wins
    assert "sandbox: docker" in out and code == 0


def test_a_target_priced_at_zero_costs_zero_and_cost_checks_decide(cli, fake_openai, tmp_path: Path) -> None:
    """A target whose prices are set to 0 (a free local server) costs a known $0: `cost` checks
    pass, at each turn and for the conversation, answered live and from the cache. A target
    without prices reports $0 too, but that says nothing: the same checks are errors, also when
    its answers come from the cache the free target filled (prices are not in the cache key)."""
    write(
        tmp_path / "targets.yaml",
        "targets:\n  - {name: free, provider: openai, model: local-thing,"
        " price_input_per_mtok: 0, price_output_per_mtok: 0}\n"
        "  - {name: unpriced, provider: openai, model: local-thing}\n",
    )
    suite = write(
        tmp_path / "s.eval.yaml",
        """\
tests:
  - id: t
    mode: conversation
    turns:
      - input: one
        assertions: [{type: cost, max_usd: 0.01}]
      - input: two
    assertions: [{type: cost, max_usd: 0.01}]
""",
    )
    for answered in ("live", "cached"):
        code, _, err = cli("run", suite, "--target", "free", "-o", tmp_path / "r.jsonl")
        assert len(fake_openai.requests) == 2, answered  # the second run is answered from the cache
        [result] = read_jsonl(tmp_path / "r.jsonl")
        verdicts = {s["name"]: s["verdict"] for s in result["scores"] if s["name"] != "turn-2"}
        assert (code, verdicts, result["cost_usd"]) == (0, {"turn-1": "pass", "conversation": "pass"}, 0.0), err
    cli("run", suite, "--target", "unpriced", "-o", tmp_path / "r.jsonl")
    assert len(fake_openai.requests) == 2
    [result] = read_jsonl(tmp_path / "r.jsonl")
    verdicts = {s["name"]: s["verdict"] for s in result["scores"] if s["name"] != "turn-2"}
    assert verdicts == {"turn-1": "error", "conversation": "error"}


def test_a_suites_budget_usd_leaves_out_its_own_later_tests_only(cli, fake_openai, tmp_path: Path) -> None:
    """`execution.budget_usd` (AgentV's `evaluate_options.budget_usd`): once a suite's finished
    tests cost that much on a target, its tests not started yet are left out; other suites run."""
    write(tmp_path / "targets.yaml", PRICEY)
    capped = write(
        tmp_path / "capped.eval.yaml",
        "execution: {budget_usd: 0.5}\ntests:\n  - {id: t1, input: one}\n  - {id: t2, input: two}\n"
        "  - {id: t3, input: three}\n",
    )
    free = write(tmp_path / "free.eval.yaml", "tests:\n  - {id: u1, input: five}\n  - {id: u2, input: six}\n")
    code, out, _ = cli("run", capped, free, "--target", "pricey", "--concurrency", "1", "-o", tmp_path / "r.jsonl")
    results = {r["test_id"]: r for r in read_jsonl(tmp_path / "r.jsonl")}
    assert results["t1"]["verdict"] == "pass" and results["t1"]["cost_usd"] >= 0.5
    for test_id in ("t2", "t3"):
        assert (results[test_id]["verdict"], results[test_id]["execution_status"]) == ("skip", "budget_exhausted")
        assert "the suite's budget_usd $0.5 was reached" in results[test_id]["error"]
    assert results["u1"]["verdict"] == results["u2"]["verdict"] == "pass"
    assert len(fake_openai.requests) == 3 and code == 1


def test_a_test_the_suites_budget_usd_leaves_out_runs_none_of_its_trials(cli, fake_openai, tmp_path: Path) -> None:
    """Only a test's first trial read the budget: its other trials ran (and were paid) while
    the test was reported not started."""
    write(tmp_path / "targets.yaml", PRICEY)
    capped = write(
        tmp_path / "capped.eval.yaml",
        "execution: {budget_usd: 0.5, trials: 3}\ntests:\n  - {id: t1, input: one}\n  - {id: t2, input: two}\n"
        "  - {id: t3, input: three, depends_on: [t2]}\n",
    )
    code, _, err = cli("run", capped, "--target", "pricey", "--concurrency", "3", "-o", tmp_path / "r.jsonl")
    results = {r["test_id"]: r for r in read_jsonl(tmp_path / "r.jsonl")}
    assert (results["t1"]["verdict"], len(results["t1"]["trials"])) == ("pass", 3)
    assert (results["t2"]["verdict"], results["t2"]["trials"], results["t2"]["cost_usd"]) == ("skip", [], 0.0)
    assert "the suite's budget_usd $0.5 was reached" in results["t2"]["error"]
    assert "the suite's budget_usd $0.5 was reached" in results["t3"]["error"]  # not --max-cost
    assert len(fake_openai.requests) == 3 and code == 1, err


def test_a_resumed_run_counts_what_its_stored_results_cost_in_budget_usd(cli, fake_openai, tmp_path: Path) -> None:
    """A resumed run started the suite's budget at $0: the tests the budget had left out ran
    (and were paid), though the stored results had spent it already."""
    write(tmp_path / "targets.yaml", PRICEY)
    capped = write(
        tmp_path / "capped.eval.yaml",
        "execution: {budget_usd: 0.5}\ntests:\n  - {id: t1, input: one}\n  - {id: t2, input: two}\n"
        "  - {id: t3, input: three}\n",
    )
    # --max-cost stops the first run after t1: t2 and t3 are left to the resumed run.
    code, _, err = cli("run", capped, "--target", "pricey", "--concurrency", "1", "--max-cost", "0.4")
    assert code == 1 and len(fake_openai.requests) == 1, err
    code, _, err = cli("run", "--resume", "last", "--max-cost", "100", "-o", tmp_path / "r.jsonl")
    results = {r["test_id"]: r for r in read_jsonl(tmp_path / "r.jsonl")}
    assert results["t1"]["verdict"] == "pass" and results["t1"]["cost_usd"] >= 0.5
    for test_id in ("t2", "t3"):
        assert (results[test_id]["verdict"], results[test_id]["execution_status"]) == ("skip", "budget_exhausted")
        assert "the suite's budget_usd $0.5 was reached" in results[test_id]["error"], err
    assert len(fake_openai.requests) == 1  # nothing more was paid for


def test_budget_usd_is_a_suite_setting(cli, tmp_path: Path) -> None:
    suite = write(tmp_path / "s.eval.yaml", "tests:\n  - id: t\n    input: hi\n    execution: {budget_usd: 1}\n")
    code, _, err = cli("validate", suite)
    assert code == 2 and f"{suite}:4: tests[0].execution.budget_usd: `budget_usd` is a suite-level setting" in err
    suite = write(tmp_path / "s.eval.yaml", "execution: {budget_usd: 0}\ntests:\n  - {id: t, input: hi}\n")
    code, _, err = cli("validate", suite)
    assert code == 2 and "execution.budget_usd" in err


def test_what_a_failed_turn_spent_counts_in_the_run(tmp_path: Path) -> None:
    """An agent's turn that failed after it spent (`TargetError.usage`, `cost_usd`) counted in its
    result but not in the run's totals, which `--max-cost` reads."""
    from convoeval.errors import TargetError
    from convoeval.results import Usage

    class Spender:
        name = "spender"

        async def chat(self, request):
            raise TargetError("the agent gave up", usage=Usage(input_tokens=7, output_tokens=3), cost_usd=0.5)

        async def aclose(self) -> None:
            return None

    suite = write(tmp_path / "s.eval.yaml", "tests:\n  - {id: t, input: hi}\n")
    report = convoeval.run(suite, target=Spender(), judge="scripted", cache=False, store=False)
    assert report.results[0].execution_status == "execution_error"
    summary = report.summary
    assert (summary["errors"], summary["input_tokens"], summary["output_tokens"]) == (1, 7, 3)
    assert summary["spent_usd"] == 0.5
