"""Live telecom runs on tau2-bench's own telecom toolkits: each recorded simulation played again live.

    python benchmarks/tau2_telecom_live.py --tau2 PATH --deps DIR RESULTS.json [RESULTS.json ...] [--limit N]

PATH and DIR are those of benchmarks/tau2_reward.py (a tau2-bench checkout, tau2's few extra
packages). The domain is that benchmark's telecom wrapper (tau2's TelecomTools and
TelecomUserTools on one state, `sync_tools` after each call), except that every tool runs,
the read-only ones too: a live agent and user read their results (tau2's replay skips them).

Each RESULTS.json (a tau2 telecom results file) is imported for a live run (`convoeval import
tau2`, not --recorded): the tasks become simulated-user tests whose trial backend starts from
the task's initialization actions. Each simulation is then run live, once: convoeval's tool agent
around a model that answers, turn after turn, what tau2's agent answered (its tool calls, then
its text), and a simulated user that answers what tau2's user did (its own tool calls on its
phone, its messages, and its last ###STOP### message as its stop), both on the loopback fake
OpenAI server. The calls run for real on the trial's backend: the user's through the user's
tools (`USER_TOOLS`), the agent's through the agent's.

The benchmark prints, per file, how many live rewards equal tau2's recorded reward and how many
read the trial's live backend (`details.final_state: live`: exactly the transcript's calls were
made on it, so a replay reaches the same state), and every simulation that differs. tau2's
agent greets first; a convoeval conversation starts with the user, so the greeting is left out
(one step fewer in tau2's count).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tau2_reward import TELECOM_TOOLS, telecom_database  # noqa: E402

import convoeval  # noqa: E402
from convoeval.targets import TargetConfig  # noqa: E402
from convoeval.testing import FakeOpenAIServer, default_judge, tool_calls  # noqa: E402

REPLAY_ONLY = "    if not run_it:\n        return None  # tau2's replay runs only the calls that change the state\n"
STOP = "###STOP###"


def live_tools(root: Path, deps: str) -> str:
    """The benchmark's telecom wrapper with every tool run (a live agent reads its results)."""
    tools = TELECOM_TOOLS.format(root=str(root), deps=deps)
    assert REPLAY_ONLY in tools, "benchmarks/tau2_reward.py's telecom wrapper changed"
    return tools.replace(REPLAY_ONLY, "")


class Recorded:
    """What tau2's agent and user said and called, in order, answered to convoeval's calls."""

    def __init__(self, messages: list[dict[str, Any]]):
        first_user = next(i for i, m in enumerate(messages) if m["role"] == "user")
        self.agent = [m for m in messages[first_user:] if m["role"] == "assistant"]
        self.user = [m for m in messages if m["role"] == "user"]

    def reply(self, body: dict[str, Any]) -> str | dict[str, Any]:
        if not self.agent:
            return "Goodbye."
        message = self.agent.pop(0)
        if message.get("tool_calls"):
            return tool_calls(*[(c["name"], c.get("arguments") or {}) for c in message["tool_calls"]])
        return message.get("content") or ""

    def step(self, body: dict[str, Any]) -> str:
        if body["response_format"]["json_schema"]["name"] != "user_step":
            return default_judge(body)
        answer: dict[str, Any] = {"message": "", "stop": False, "stop_reason": "none", "tool_calls": []}
        if not self.user:
            return json.dumps({**answer, "stop": True, "stop_reason": "objective_met"})
        message = self.user.pop(0)
        if message.get("tool_calls"):
            calls = [
                {"name": c["name"], "arguments": json.dumps(c.get("arguments") or {})} for c in message["tool_calls"]
            ]
            return json.dumps({**answer, "tool_calls": calls})
        text = message.get("content") or ""
        if STOP in text:  # tau2's user ends the episode: convoeval's stop, its goodbye kept
            return json.dumps({**answer, "message": text, "stop": True, "stop_reason": "objective_met"})
        return json.dumps({**answer, "message": text})


def run(results: Path, root: Path, deps: str, limit: int | None) -> None:
    data = json.loads(results.read_text())
    simulations = data["simulations"][:limit] if limit else data["simulations"]
    same = live = 0
    differ = []
    with tempfile.TemporaryDirectory() as tmp, FakeOpenAIServer() as server:
        work = Path(tmp)
        (work / "db.json").write_text(telecom_database(root, deps))
        (work / "tools.py").write_text(live_tools(root, deps))
        os.environ["OPENAI_BASE_URL"] = server.base_url
        os.environ.setdefault("OPENAI_API_KEY", "fake")
        imported = subprocess.run(
            [sys.executable, "-m", "convoeval", "import", "tau2", str(results.resolve()), "-o", "live.eval.yaml"],
            cwd=work,
            capture_output=True,
            text=True,
        )
        print(imported.stdout.strip() or imported.stderr.strip())
        if imported.returncode != 0:
            return
        suite = yaml.safe_load((work / "live.eval.yaml").read_text())
        tests = {str(t["metadata"]["task_id"]): t for t in suite["tests"]}
        agent = {
            "name": "agent",
            "provider": "openai",
            "model": "tau2-agent",
            "agent": {"tools": [], "max_tool_calls": 200},
        }
        target = TargetConfig.model_validate(agent)
        for simulation in simulations:
            test = tests.get(simulation["task_id"])
            if test is None:
                continue
            (work / "one.eval.yaml").write_text(yaml.safe_dump({**suite, "tests": [test]}, sort_keys=False))
            recorded = Recorded(simulation["messages"])
            server.reset(reply=recorded.reply, judge=recorded.step)
            [result] = convoeval.run(
                work / "one.eval.yaml", target=target, judge="openai:tau2-user", store=False, cache=False
            ).results
            expected = simulation["reward_info"]["reward"]
            grader = next((g for e in result.trials[0].scores for g in e.graders if g.type == "tau-reward"), None)
            details = (grader.details if grader else None) or {}
            same += details.get("reward") == expected
            live += details.get("final_state") == "live"
            if details.get("reward") != expected:
                keys = ("env_assertions_failed", "required_actions_missing", "episode_end", "final_state")
                why = result.error or {k: details.get(k) for k in keys if k in details}
                differ.append(
                    f"{simulation['id']} ({simulation['termination_reason']}): {details.get('reward')} vs {expected}: {why}"
                )
    print(f"{results.name}: {len(simulations)} simulations run live on tau2's telecom toolkits")
    print(f"  reward equal to tau2's recorded reward: {same} of {len(simulations)}")
    print(f"  graded on the trial's live backend (final_state: live): {live} of {len(simulations)}")
    for line in differ:
        print(f"  differs: {line}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tau2", type=Path, required=True, help="a checkout of sierra-research/tau2-bench")
    parser.add_argument("--deps", type=Path, required=True, help="a folder with toml, deepdiff, loguru, addict")
    parser.add_argument("--limit", type=int, help="the first N simulations of each file only")
    parser.add_argument("results", type=Path, nargs="+", help="tau2 telecom results files")
    args = parser.parse_args()
    for results in args.results:
        run(results, args.tau2.resolve(), str(args.deps.resolve()), args.limit)


if __name__ == "__main__":
    main()
