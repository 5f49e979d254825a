"""`tau-reward` on tau2-bench's own recorded simulations, with tau2-bench's own domain tools and database.

    python benchmarks/tau2_reward.py --tau2 PATH --deps DIR RESULTS.json [RESULTS.json ...]
        [--airline-data TAU_BENCH/tau_bench/envs/airline/data]

PATH is a checkout of github.com/sierra-research/tau2-bench (MIT): from it the benchmark takes a
domain's database (data/tau2/domains/<domain>/db.json, read through tau2's own model of it, so
the state compared is what tau2 hashes: `DB.model_dump()`) and its tool class
(src/tau2/domains/<domain>/tools.py; tau2's package __init__ is not run, which would import
its LLM stack). Each tool becomes a convoeval tool function `name(db, /, **arguments)`: a tool
tau2 marks as changing the state (`mutates_state`, its WRITE tools) runs on tau2's model of the
state and writes the model back; the others do not run, as tau2 replays only state-changing
calls when it evaluates (src/tau2/environment/environment.py `set_state`).
Telecom (tau2's user acts on its phone with tools of its own): the state is `{"agent": TelecomDB,
"user": TelecomUserDB}` (db.toml and user_db.toml through tau2's models); every method of
tau2's two toolkits becomes a function of the tools file, the user's tools listed in
`USER_TOOLS`, the methods that are nobody's tool (initialization actions, assertions) in
`ENV_FUNCTIONS`; each run (a state-changing tool, an environment function) is followed by tau2's
own `TelecomEnvironment.sync_tools` on both databases, as tau2's `set_state` does.
tau2's tools need a few packages convoeval does not (toml, deepdiff, loguru, addict; telecom's
environment also python-dotenv): DIR is a folder they were installed into
(`pip install --target DIR toml deepdiff loguru addict python-dotenv`).
`--airline-data`: tau-bench's airline data (flights, users, reservations; each user given its
`user_id`, the one field tau2's model has that tau-bench's data lacks) as the airline database,
when the tau2 checkout lacks data/tau2/domains/airline/db.json.

Each RESULTS.json (tau2 `Results`: data/tau2/results/final/*.json or any `tau2 run` output) is
imported with `convoeval import tau2 --recorded` and graded with `convoeval grade`; the
benchmark prints, per domain, how many simulations were imported, how many trial rewards equal
tau2's recorded reward, how many trial verdicts are pass exactly when that reward is 1, the
simulations left out, every trial that differs with what tau-reward found, and how many
conversations never name the user of the task they are filed under (a hint, when most do not,
that a file's task ids do not belong to its conversations).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

#: What every generated tools file begins with: tau2's package, without its __init__.
_PREAMBLE = """\
import sys
import types
from pathlib import Path

ROOT = Path({root!r}) / "src"
sys.path.append({deps!r})  # tau2's own dependencies, after convoeval's
if "tau2" not in sys.modules:  # its __init__ imports the agents and LLM clients
    package = types.ModuleType("tau2")
    package.__path__ = [str(ROOT / "tau2")]
    sys.modules["tau2"] = package
"""

TOOLS = (
    '''\
"""tau2-bench's {domain} tools (from {root}) as convoeval tool functions."""

'''
    + _PREAMBLE
    + """from tau2.domains.{domain}.data_model import {db_class} as _DB  # noqa: E402
from tau2.domains.{domain}.tools import {tools_class} as _Tools  # noqa: E402
from tau2.environment.toolkit import MUTATES_STATE_ATTR as _MUTATES  # noqa: E402


def _tool(name, mutates):
    def call(db, /, **arguments):
        if not mutates:
            return None  # tau2's replay runs only the calls that change the state
        model = _DB.model_validate(db)
        output = getattr(_Tools(model), name)(**arguments)
        db.clear()
        db.update(model.model_dump(mode="json"))
        return output.model_dump(mode="json") if hasattr(output, "model_dump") else output

    call.__name__ = name
    return call


for _name in dir(_Tools):
    _fn = getattr(_Tools, _name)
    if callable(_fn) and hasattr(_fn, _MUTATES):
        globals()[_name] = _tool(_name, getattr(_fn, _MUTATES))
"""
)

TELECOM_TOOLS = (
    '''\
"""tau2-bench's telecom domain (from {root}) as convoeval tool functions on one state:
{{"agent": the agent's database (TelecomDB), "user": the user's phone and surroundings (TelecomUserDB)}}."""

'''
    + _PREAMBLE
    + '''from tau2.domains.telecom.data_model import TelecomDB as _DB  # noqa: E402
from tau2.domains.telecom.environment import TelecomEnvironment as _Environment  # noqa: E402
from tau2.domains.telecom.tools import TelecomTools as _Tools  # noqa: E402
from tau2.domains.telecom.user_data_model import TelecomUserDB as _UserDB  # noqa: E402
from tau2.domains.telecom.user_tools import TelecomUserTools as _UserTools  # noqa: E402
from tau2.environment.toolkit import MUTATES_STATE_ATTR as _MUTATES, TOOL_ATTR as _TOOL  # noqa: E402


def _run(state, side, name, arguments, run_it):
    """tau2's environment: the call on its side's toolkit, then `sync_tools` (as `set_state`
    replays a state-changing call, or runs an initialization action or an assertion)."""
    if not run_it:
        return None  # tau2's replay runs only the calls that change the state
    agent = _Tools(_DB.model_validate(state["agent"]))
    user = _UserTools(_UserDB.model_validate(state["user"]))
    output = getattr(user if side == "user" else agent, name)(**arguments)
    _Environment.sync_tools(types.SimpleNamespace(tools=agent, user_tools=user))
    state["agent"] = agent.db.model_dump(mode="json")
    state["user"] = user.db.model_dump(mode="json")
    return output.model_dump(mode="json") if hasattr(output, "model_dump") else output


def _function(side, name, tool):
    mutates = getattr(getattr(_UserTools if side == "user" else _Tools, name), _MUTATES, True)

    def call(state, /, **arguments):
        return _run(state, side, name, arguments, mutates or not tool)

    call.__name__ = name
    return call


USER_TOOLS, ENV_FUNCTIONS, _seen = [], [], set()
for _side, _kit in (("assistant", _Tools), ("user", _UserTools)):
    for _name, _fn in vars(_kit).items():
        if _name.startswith("_") or not callable(_fn):
            continue
        if _name in _seen:
            raise SystemExit(f"{{_name}}: both toolkits have it (one namespace here)")
        _seen.add(_name)
        _is_tool = hasattr(_fn, _TOOL)
        globals()[_name] = _function(_side, _name, _is_tool)
        if not _is_tool:
            ENV_FUNCTIONS.append(_name)
        elif _side == "user":
            USER_TOOLS.append(_name)
'''
)

CLASSES = {"airline": ("FlightDB", "AirlineTools"), "retail": ("RetailDB", "RetailTools")}


def database(root: Path, domain: str, deps: str, airline_data: Path | None) -> str:
    """The domain's initial state as tau2's model dumps it (JSON text)."""
    path = root / "data" / "tau2" / "domains" / domain / "db.json"
    if domain == "telecom":
        return telecom_database(root, deps)
    if path.is_file():
        raw = path.read_text()
    elif domain == "airline" and airline_data is not None:
        tables = {n: json.loads((airline_data / f"{n}.json").read_text()) for n in ("flights", "users", "reservations")}
        for user_id, user in tables["users"].items():  # the one field tau2's FlightDB has that tau-bench's lacks
            user.setdefault("user_id", user_id)
        raw = json.dumps(tables)
    else:
        raise SystemExit(f"{path}: no such file (the {domain} database)")
    script = (
        f"import sys, types, json; sys.path.append({deps!r}); p = types.ModuleType('tau2'); "
        f"p.__path__ = [{str(root / 'src' / 'tau2')!r}]; sys.modules['tau2'] = p; "
        f"from tau2.domains.{domain}.data_model import {CLASSES[domain][0]} as D; "
        "print(json.dumps(D.model_validate(json.loads(sys.stdin.read())).model_dump(mode='json'), separators=(',', ':')))"
    )
    done = subprocess.run([sys.executable, "-c", script], input=raw, capture_output=True, text=True, check=True)
    return done.stdout


def telecom_database(root: Path, deps: str) -> str:
    """Telecom's initial state: both databases (db.toml, user_db.toml) as tau2's models dump them."""
    folder = root / "data" / "tau2" / "domains" / "telecom"
    script = (
        f"import sys, types, json; sys.path.append({deps!r}); p = types.ModuleType('tau2'); "
        f"p.__path__ = [{str(root / 'src' / 'tau2')!r}]; sys.modules['tau2'] = p; "
        "from tau2.domains.telecom.data_model import TelecomDB as D; "
        "from tau2.domains.telecom.user_data_model import TelecomUserDB as U; "
        f"a = D.load({str(folder / 'db.toml')!r}).model_dump(mode='json'); "
        f"u = U.load({str(folder / 'user_db.toml')!r}).model_dump(mode='json'); "
        "print(json.dumps({'agent': a, 'user': u}, separators=(',', ':')))"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    return done.stdout


def grade(results: Path, root: Path, deps: str, airline_data: Path | None) -> None:
    data = json.loads(results.read_text())
    domain = data["info"]["environment_info"]["domain_name"]
    if domain not in CLASSES and domain != "telecom":
        print(f"{results.name}: domain {domain}: not wrapped here")
        return
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "db.json").write_text(database(root, domain, deps, airline_data))
        if domain == "telecom":
            tools = TELECOM_TOOLS.format(root=str(root), deps=deps)
        else:
            db_class, tools_class = CLASSES[domain]
            tools = TOOLS.format(domain=domain, root=str(root), deps=deps, db_class=db_class, tools_class=tools_class)
        (work / "tools.py").write_text(tools)
        python = [sys.executable, "-m", "convoeval"]
        imported = subprocess.run(
            [*python, "import", "tau2", str(results.resolve()), "--recorded", "-o", "s.eval.yaml"],
            cwd=work,
            capture_output=True,
            text=True,
        )
        print(imported.stdout.strip() or imported.stderr.strip())
        if imported.returncode != 0:
            return
        started = time.perf_counter()
        subprocess.run(
            [*python, "grade", "s.eval.yaml", "-o", "r.jsonl", "--quiet", "--store", "state"],
            cwd=work,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env={**os.environ, "CONVOEVAL_CONCURRENCY": "2"},
        )
        wall = time.perf_counter() - started
        rows = [json.loads(line) for line in (work / "r.jsonl").read_text().splitlines()]
    report(results, domain, data, rows, wall)


def report(results: Path, domain: str, data: dict, rows: list[dict], wall: float) -> None:
    graded = agree = verdicts = 0
    differ = []
    for row in rows:
        meta = row["metadata"]
        for position, trial in enumerate(row.get("trials") or [row]):
            expected = meta["recorded_rewards"][position]
            grader = next(
                (g for e in trial["scores"] for g in e.get("graders") or [] if g["type"] == "tau-reward"), None
            )
            details = (grader or {}).get("details") or {}
            got = details.get("reward")
            graded += 1
            agree += got == expected
            verdicts += trial["verdict"] == ("pass" if expected == 1 else "fail")
            if got != expected:
                why = (grader or {}).get("error") or {
                    k: details.get(k)
                    for k in (
                        "state_diff",
                        "missing_outputs",
                        "env_assertions_failed",
                        "required_actions_missing",
                        "episode_end",
                    )
                    if k in details
                }
                ending = meta["termination_reasons"][position]
                differ.append(
                    f"{meta['simulation_ids'][position]} ({row['test_id']}, {ending}): {got} vs {expected}: {why}"
                )
    left_out = Counter(s["task_id"] for s in data["simulations"]) - Counter(
        str(r["metadata"]["task_id"]) for r in rows for _ in r["metadata"]["recorded_rewards"]
    )
    print(
        f"{results.name} ({domain}): {len(data['simulations'])} simulations, {graded} imported and graded "
        f"({sum(left_out.values())} left out), `convoeval grade` wall {wall:.1f} s"
    )
    print(f"  reward equal to tau2's recorded reward: {agree} of {graded}")
    strangers = mislabelled(data)
    if strangers:
        print(f"  conversations that never name their task's user (known_info): {len(strangers)} of {graded}")
    print(f"  trial verdict pass exactly when tau2's reward is 1: {verdicts} of {graded}")
    for line in differ:
        print(f"  differs: {line}")


def mislabelled(data: dict) -> list[str]:
    """Simulations whose conversation never names the user of the task they are filed under (the
    user id or name the task's `known_info` gives; a user may also give it otherwise, so a few
    are expected: most of a file is a sign that its task ids and conversations do not belong
    together, and then its rewards cannot be reproduced from its tasks)."""
    tasks = {t["id"]: t for t in data["tasks"]}
    found = []
    for simulation in data["simulations"]:
        instructions = tasks[simulation["task_id"]]["user_scenario"]["instructions"]
        known = (instructions.get("known_info") or "") if isinstance(instructions, dict) else ""
        names = re.findall(r"[a-z]+_[a-z]+_\d{4}", known) or re.findall(r"You are ([A-Z][a-z]+ [A-Z][a-z]+)", known)
        said = json.dumps(simulation["messages"])
        if names and not any(name in said for name in names):
            found.append(simulation["id"])
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tau2", type=Path, required=True, help="a checkout of sierra-research/tau2-bench")
    parser.add_argument("--deps", type=Path, required=True, help="a folder with toml, deepdiff, loguru, addict")
    parser.add_argument("--airline-data", type=Path, help="tau-bench's tau_bench/envs/airline/data folder")
    parser.add_argument("results", type=Path, nargs="+", help="tau2 results files")
    args = parser.parse_args()
    for results in args.results:
        grade(results, args.tau2.resolve(), str(args.deps.resolve()), args.airline_data)


if __name__ == "__main__":
    main()
