"""Plugins: a user's grader in its own module, used from YAML through the CLI.

Three ways in: a suite's `plugins:` key, `--plugin MODULE`, and the `convoeval` entry-point
group of an installed package (a real `convoeval` subprocess with a `.dist-info` on PYTHONPATH).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from convoeval import Grade, GradeContext, GraderError, RegistryError, grader, registry
from convoeval.graders import lookup_assertion_type

from .conftest import read_jsonl, write

pytestmark = pytest.mark.usefixtures("clean_registry")

BOT = """\
targets:
  - name: bot
    provider: scripted
    rules:
      - {match: "price", reply: "It costs $40, please book soon."}
      - {match: "refund", reply: "No."}
"""


def plugin_source(prefix: str) -> str:
    """A plugin module with one class grader and three function graders, named `<prefix>-...`."""
    return f'''
from typing import Literal

from convoeval import Assertion, Grade, GradeContext, assertion_type, grader


@assertion_type
class Polite(Assertion):
    type: Literal["{prefix}-polite"]
    word: str = "please"

    async def grade(self, ctx: GradeContext) -> Grade:
        return Grade(score=1.0 if self.word in ctx.output.lower() else 0.0)


@grader("{prefix}-has-price")
def has_price(ctx: GradeContext) -> bool:
    return "$" in ctx.output


@grader("{prefix}-short")
async def short(ctx: GradeContext) -> float:
    return 1.0 if len(ctx.output) < 10 else 0.25


@grader("{prefix}-broken")
def broken(ctx: GradeContext):
    return "not a score"
'''


def suite_source(prefix: str, plugins: str = "") -> str:
    return f"""\
{plugins}tests:
  - id: price
    input: What is the price?
    assertions:
      - {{type: {prefix}-polite}}
      - {{type: {prefix}-has-price}}
      - {{type: {prefix}_short}}
  - id: refund
    input: Can I get a refund?
    assertions:
      - {{type: {prefix}-polite, word: "no"}}
      - {{type: {prefix}-has-price}}
      - {{type: {prefix}-broken}}
"""


def graders_by_type(result: dict) -> dict[str, dict]:
    return {g["type"]: g for entry in result["scores"] for g in entry["graders"]}


def check_results(path: Path, prefix: str) -> None:
    results = {r["test_id"]: r for r in read_jsonl(path)}
    price = graders_by_type(results["price"])
    assert (price[f"{prefix}-polite"]["score"], price[f"{prefix}-polite"]["verdict"]) == (1.0, "pass")
    assert (price[f"{prefix}-has-price"]["score"], price[f"{prefix}-has-price"]["verdict"]) == (1.0, "pass")
    assert (price[f"{prefix}-short"]["score"], price[f"{prefix}-short"]["verdict"]) == (0.25, "fail")
    refund = graders_by_type(results["refund"])
    assert refund[f"{prefix}-polite"]["verdict"] == "pass"  # the plugin's own field `word` was read
    assert refund[f"{prefix}-has-price"]["verdict"] == "fail"
    broken = refund[f"{prefix}-broken"]
    assert broken["verdict"] == "error" and broken["score"] is None
    assert "returned 'not a score'; expected a Grade" in broken["error"]


def test_suite_plugins_key_loads_a_file_next_to_the_suite(cli, tmp_path: Path) -> None:
    write(tmp_path / "suite" / "graders" / "mine.py", plugin_source("sk"))
    suite = write(tmp_path / "suite" / "s.eval.yaml", suite_source("sk", "plugins: [graders/mine.py]\n"))
    targets = write(tmp_path / "targets.yaml", BOT)
    code, out, err = cli("validate", suite)
    assert code == 0, out + err
    code, out, err = cli("run", suite, "--targets", targets, "--target", "bot", "-o", tmp_path / "r.jsonl")
    assert code == 1, out + err  # `short` fails a test
    check_results(tmp_path / "r.jsonl", "sk")


def test_plugin_option_loads_a_module(cli, tmp_path: Path) -> None:
    write(tmp_path / "opt_plugin_mod.py", plugin_source("opt"))
    suite = write(tmp_path / "s.eval.yaml", suite_source("opt"))
    targets = write(tmp_path / "targets.yaml", BOT)

    code, out, err = cli("validate", suite)
    assert code == 2
    assert f"{suite}:5: tests[0].assertions[0].type: unknown assertion type 'opt-polite'" in err

    code, out, err = cli("validate", suite, "--plugin", "opt_plugin_mod")
    assert code == 0, out + err
    code, out, err = cli(
        "run", suite, "--plugin", "opt_plugin_mod", "--targets", targets, "--target", "bot", "-o", tmp_path / "r.jsonl"
    )
    assert code == 1, out + err
    check_results(tmp_path / "r.jsonl", "opt")

    code, out, err = cli("schema", "--plugin", "opt_plugin_mod")
    assert code == 0
    types = {
        name
        for d in json.loads(out)["$defs"].values()
        if "type" in d.get("properties", {})
        for name in d["properties"]["type"].get("enum", [d["properties"]["type"].get("const")])
    }
    assert {"opt-polite", "opt-has-price", "opt-short"} <= types


def test_a_plugin_that_fails_is_a_one_line_error(cli, tmp_path: Path) -> None:
    write(tmp_path / "bad.py", "raise RuntimeError('boom')\n")
    suite = write(
        tmp_path / "s.eval.yaml", "plugins:\n  - missing_plugin_xyz\n  - bad.py\ntests:\n  - id: a\n    input: hi\n"
    )
    code, out, err = cli("validate", suite)
    assert code == 2
    lines = err.strip().splitlines()
    assert lines[0].startswith(f"{suite}:2: plugins[0]: plugin module 'missing_plugin_xyz' not found")
    assert lines[1].startswith(f"{suite}:3: plugins[1]: plugin file ") and "RuntimeError: boom" in lines[1]
    assert "Traceback" not in err

    code, out, err = cli("run", suite, "--plugin", "missing_plugin_xyz", "--target", "bot")
    assert code == 2
    assert err.startswith("error: --plugin missing_plugin_xyz: plugin module 'missing_plugin_xyz' not found")


def test_a_plugin_cannot_take_a_builtin_name(cli, tmp_path: Path) -> None:
    write(
        tmp_path / "clash.py", "from convoeval import grader\n\n@grader('contains')\ndef mine(ctx):\n    return True\n"
    )
    suite = write(tmp_path / "s.eval.yaml", "plugins: [clash.py]\ntests:\n  - id: a\n    input: hi\n")
    code, out, err = cli("validate", suite)
    assert code == 2
    assert f"{suite}:1: plugins[0]: assertion 'contains' is already registered" in err


def test_an_installed_package_registers_through_its_entry_point(tmp_path: Path) -> None:
    site = tmp_path / "site"
    write(site / "ep_graders_pkg.py", plugin_source("ep"))
    write(site / "ep_graders-1.0.dist-info" / "METADATA", "Metadata-Version: 2.1\nName: ep-graders\nVersion: 1.0\n")
    write(site / "ep_graders-1.0.dist-info" / "entry_points.txt", "[convoeval]\nep = ep_graders_pkg\n")
    suite = write(tmp_path / "s.eval.yaml", suite_source("ep"))
    targets = write(tmp_path / "targets.yaml", BOT)
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env["PYTHONPATH"] = str(site)
    convoeval = [sys.executable, "-m", "convoeval"]

    done = subprocess.run(
        [*convoeval, "validate", str(suite)], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60
    )
    assert done.returncode == 0, done.stdout + done.stderr
    done = subprocess.run(
        [
            *convoeval,
            "run",
            str(suite),
            "--targets",
            str(targets),
            "--target",
            "bot",
            "-o",
            str(tmp_path / "r.jsonl"),
            "-q",
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=60,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    check_results(tmp_path / "r.jsonl", "ep")
    done = subprocess.run([*convoeval, "schema"], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60)
    assert '"ep-has-price"' in done.stdout

    env.pop("PYTHONPATH")  # not installed: the type is unknown again
    done = subprocess.run(
        [*convoeval, "validate", str(suite)], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60
    )
    assert done.returncode == 2 and "unknown assertion type 'ep-polite'" in done.stderr


async def test_function_graders_from_python() -> None:
    @grader("fn-async-grade")
    async def full(ctx: GradeContext) -> Grade:
        return Grade(score=0.5, passed=True)

    @grader("fn-raises", levels=("conversation",))
    def raises(ctx: GradeContext) -> bool:
        raise GraderError("cannot tell")

    ctx = GradeContext(level="turn", output="hi", history=[], transcript=[])
    score = await lookup_assertion_type("fn-async-grade")(type="fn-async-grade").evaluate(ctx)  # type: ignore[misc]
    assert (score.score, score.verdict) == (0.5, "pass")
    cls = lookup_assertion_type("fn-raises")
    assert cls is not None and cls.levels == ("conversation",)
    score = await cls(type="fn-raises", negate=True).evaluate(ctx)
    assert (score.score, score.verdict, score.error) == (None, "error", "cannot tell")
    with pytest.raises(RegistryError, match="'fn-raises' is already registered"):
        grader("fn-raises")(lambda ctx: True)
    assert registry.lookup("assertion", "fn-raises") is cls


def test_a_broken_installed_plugin_is_a_one_line_error(tmp_path: Path) -> None:
    site = tmp_path / "site"
    write(site / "broken_ep_mod.py", "raise RuntimeError('kaput')\n")
    write(site / "broken-1.0.dist-info" / "METADATA", "Metadata-Version: 2.1\nName: broken\nVersion: 1.0\n")
    write(site / "broken-1.0.dist-info" / "entry_points.txt", "[convoeval]\nbroken = broken_ep_mod\n")
    suite = write(tmp_path / "s.eval.yaml", "tests:\n  - id: a\n    input: hi\n    assertions: [{type: unknown-one}]\n")
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env["PYTHONPATH"] = str(site)
    for args in (["validate", str(suite)], ["schema"]):
        done = subprocess.run(
            [sys.executable, "-m", "convoeval", *args],
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp_path,
            timeout=60,
        )
        assert done.returncode == 2, done.stdout + done.stderr
        assert done.stderr == "error: plugin entry point 'broken' (broken_ep_mod) failed to load: RuntimeError: kaput\n"


def test_a_graders_reason_is_a_line_of_the_failure(tmp_path: Path) -> None:
    """python-api.md's `short-reply` grader: the reason (DeepEval's metric `reason`) is an
    `AssertionOutcome`, exported from `convoeval`, and is a line of the failure."""
    from convoeval import AssertionOutcome
    from convoeval.testing import assert_conversation

    @grader("short-reply")
    def short_reply(ctx: GradeContext) -> Grade:
        words = len(ctx.output.split())
        outcome = AssertionOutcome(text="at most 50 words", passed=words <= 50, evidence=f"{words} words")
        return Grade(score=1.0 if outcome.passed else 0.0, assertions=[outcome])

    suite = write(tmp_path / "s.eval.yaml", "tests:\n  - id: t\n    input: hi\n    assertions: [{type: short-reply}]\n")

    def wordy(messages: list[dict[str, str]]) -> str:
        return "word " * 80

    with pytest.raises(AssertionError) as failure:
        assert_conversation(suite, target=wordy, store=False, cache=False)
    assert "    x at most 50 words - 80 words" in str(failure.value).splitlines()
