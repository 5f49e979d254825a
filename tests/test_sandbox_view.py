"""What of the host a sandboxed command can read, probed as an attacker would: a model's `bash`
reading the eval file (its answer key), the run store, the user's home and `/etc/shadow`; a
suite's own commands reading the home and `/etc/shadow`, and the model's code they run reading
`.env`, the targets file and the answers. Real bubblewrap, a real chat model behind loopback
HTTP, files outside `/tmp` (which every sandbox hides anyway)."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import convoeval
from convoeval._sandbox import agent_bwrap_argv
from convoeval.testing import FakeOpenAIServer, tool_calls

from .conftest import read_jsonl, write

needs_bwrap = pytest.mark.skipif(
    shutil.which("bwrap") is None, reason="bubblewrap is not installed (.ci/run installs it)"
)
ANSWER = "the-answer-is-" + uuid.uuid4().hex


@pytest.fixture
def outside(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A folder outside /tmp (under /var/tmp) holding the suite, its store and a HOME with a
    private file: what a real user's files look like to the sandbox."""
    root = Path("/var/tmp") / f"convoeval-view-{uuid.uuid4().hex}"
    (root / "home" / ".ssh").mkdir(parents=True)
    write(root / "home" / ".ssh" / "id_ed25519", "PRIVATE-KEY-" + uuid.uuid4().hex)
    monkeypatch.setenv("HOME", str(root / "home"))
    monkeypatch.delenv("CONVOEVAL_SANDBOX", raising=False)
    try:
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _readable_by_root_only() -> bool:
    return os.geteuid() == 0 and Path("/etc/shadow").exists()


@needs_bwrap
def test_a_models_bash_sees_the_system_not_the_answer_key_store_home_or_shadow(outside: Path) -> None:
    suite = outside / "suite"
    store = outside / "state"
    store.mkdir()
    probe = (
        f"cat {suite}/s.eval.yaml; ls {store}; cat {outside}/home/.ssh/id_ed25519; head -c 4 /etc/shadow; "
        "echo; python3 -c 'print(6*7)'; ls /usr/bin/env"
    )
    with FakeOpenAIServer() as server:
        server.reset(
            reply=lambda body: (
                "done" if body["messages"][-1]["role"] == "tool" else tool_calls(("bash", {"command": probe}))
            )
        )
        write(
            suite / "targets.yaml",
            f"targets:\n  - {{name: bot, provider: openai, model: m, base_url: '{server.base_url}', api_key: sk-x1234567,"
            " agent: {bash_timeout_s: 20}}\n",
        )
        write(
            suite / "s.eval.yaml",
            f"execution: {{target: bot}}\ntests:\n  - id: t\n    workspace: {{}}\n    input: go\n"
            f"    assertions: [{{type: contains, value: {ANSWER}}}]\n",
        )
        report = convoeval.run(suite / "s.eval.yaml", judge="scripted", cache=False, store=store / "runs.sqlite")
    result = report.results[0]
    found = [c for e in result.scores for c in e.tool_calls] or [c for m in result.output for c in m.tool_calls]
    assert found, result.error
    call = found[0]
    assert "42" in call.output and "/usr/bin/env" in call.output, call.output  # the system is there
    assert ANSWER not in call.output, "the model read its own answer key"
    assert "runs.sqlite" not in call.output, "the model listed the run store"
    assert "PRIVATE-KEY" not in call.output, "the model read a file of the user's home"
    if _readable_by_root_only():
        assert "root" not in call.output.split("/etc/shadow")[-1][:40], call.output
    assert (store / "runs.sqlite").exists()


@needs_bwrap
def test_a_suites_commands_see_their_project_but_not_the_rest_of_the_home_or_shadow(outside: Path) -> None:
    """A suite in `~/projects/evals/suite` whose hooks use `../../scripts`: the project stays
    readable (`~/projects`), the rest of the home (`~/.ssh`) does not."""
    home = outside / "home"
    suite = home / "projects" / "evals" / "suite"
    write(suite / "targets.yaml", "targets:\n  - {name: bot, provider: scripted, default: done}\n")
    write(home / "projects" / "scripts" / "fact.txt", "from the project\n")
    shadow = "! head -c 1 /etc/shadow 2>/dev/null | grep -q ." if _readable_by_root_only() else "true"
    write(
        suite / "s.eval.yaml",
        f"""\
execution: {{target: bot}}
tests:
  - id: t
    workspace: {{}}
    verify: {{command: 'grep -q project {suite}/../../scripts/fact.txt && ! cat {home}/.ssh/id_ed25519 && {shadow}'}}
    input: go
""",
    )
    result = convoeval.run(suite / "s.eval.yaml", judge="scripted", cache=False, store=False).results[0]
    verify = result.scores[-1]
    assert verify.name == "verify" and verify.verdict == "pass", verify.assertions[0].evidence


@needs_bwrap
def test_private_temp_folders_are_bounded_so_a_command_cannot_fill_memory(tmp_path: Path) -> None:
    """/tmp, HOME, /var/tmp, /dev/shm and /dev inside are tmpfs (memory): unbounded, `while :; do head -c 1G
    /dev/zero > /tmp/$RANDOM; done` took the machine's memory, file by file under the file limit."""
    from convoeval import _sandbox
    from convoeval._sandbox import DEFAULT_SETTINGS, command_env

    settings = DEFAULT_SETTINGS.model_copy(update={"file_size_mb": 1})
    fill = "; ".join(
        f"head -c 700000 /dev/zero > {folder}/a && head -c 700000 /dev/zero > {folder}/b && echo filled {folder}"
        for folder in ("/tmp", "~", "/var/tmp", "/dev/shm", "/dev")
    )
    for system_only in (False, True):
        ran = asyncio.run(
            _sandbox.run(
                fill + "; echo end",
                tmp_path,
                timeout_s=20,
                writable=tmp_path,
                env=command_env(),
                settings=settings,
                system_only=system_only,
            )
        )
        assert ran.output.rstrip().endswith("end") and "No space left on device" in ran.output, ran.output
        assert "filled /tmp" not in ran.output and "filled ~" not in ran.output, ran.output
        assert "filled /dev" not in ran.output, ran.output  # /dev/shm: full; /dev: read-only
        if system_only:
            assert "filled /var/tmp" not in ran.output, ran.output


@needs_bwrap
def test_an_agent_clis_private_folders_are_bounded_too(tmp_path: Path) -> None:
    import subprocess

    from convoeval._sandbox import DEFAULT_SETTINGS, agent_bwrap_argv

    settings = DEFAULT_SETTINGS.model_copy(update={"file_size_mb": 1})
    (tmp_path / "ws").mkdir()
    (tmp_path / "home").mkdir()
    fill = "; ".join(
        f"head -c 700000 /dev/zero > {folder}/a && head -c 700000 /dev/zero > {folder}/b && echo filled {folder}"
        for folder in ("/tmp", "/run/home", "/dev/shm", "/dev")
    )
    box = agent_bwrap_argv(["/bin/sh", "-c", fill], tmp_path / "ws", tmp_path / "home", [], None, settings)
    ran = subprocess.run(box.argv, capture_output=True, text=True, timeout=30)
    assert "No space left on device" in ran.stderr and "filled" not in ran.stdout.replace("filled /run/home", ""), ran
    assert "filled /run/home" in ran.stdout  # the conversation's HOME is a host folder: not a tmpfs


#: A model's command run as the tool agent runs it (`sandbox.run`, `system_only`), by the
#: Python given on the command line: argv[1] the command, argv[2] the workspace.
_MODEL_COMMAND = """\
import asyncio, sys
from pathlib import Path
from convoeval import _sandbox as sandbox
ws = Path(sys.argv[2])
ran = asyncio.run(sandbox.run(sys.argv[1], ws, timeout_s=30, writable=ws, env=sandbox.command_env(), system_only=True))
print(ran.output)
"""


@needs_bwrap
@pytest.mark.timeout(120)
def test_a_models_bash_sees_a_venv_in_the_project_not_the_project_around_it(outside: Path) -> None:
    """convoeval installed in `~/projects/app/.venv`: its `sys.prefix` (and that venv's `bin` on
    PATH) showed the home's top folder, `~/projects`, where the model's `grep -r` found the eval
    file's answer."""
    home = outside / "home"
    app = home / "projects" / "app"
    write(app / "evals" / "s.eval.yaml", f"tests:\n  - id: t\n    input: go\n    expected_output: {ANSWER}\n")
    venv = app / ".venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = next((venv / "lib").glob("python3*/site-packages"))
    here = [str(Path(convoeval.__file__).parents[1]), *(p for p in sys.path if p.endswith("site-packages"))]
    write(site / "convoeval-src.pth", "\n".join(here) + "\n")
    workspace = outside / "ws"
    workspace.mkdir()
    python = venv / "bin" / "python"
    probe = f"grep -r {ANSWER} {home}/projects; ls {app}/evals; {python} -c 'print(6*7)'"
    env = {**os.environ, "PATH": f"{venv / 'bin'}:{os.environ['PATH']}"}
    ran = subprocess.run(
        [str(python), "-c", _MODEL_COMMAND, probe, str(workspace)], env=env, capture_output=True, text=True, timeout=90
    )
    assert ran.returncode == 0, ran.stderr
    assert "42" in ran.stdout, ran.stdout  # the venv's own Python still runs
    assert ANSWER not in ran.stdout and "s.eval.yaml" not in ran.stdout, ran.stdout


@needs_bwrap
@pytest.mark.timeout(120)
def test_a_command_tool_in_the_eval_folder_cannot_show_the_eval_file_or_the_run_store(outside: Path) -> None:
    """A command tool runs with its targets file's folder readable: next to the suite, that is
    the eval folder, and a tool that prints a path the model chooses printed the eval file's
    answer, and the run store in it."""
    suite = outside / "suite"
    store = suite / "state" / "runs.sqlite"
    write(suite / "show.py", "import json, os\nprint(open(json.loads(os.environ['TOOL_ARGS'])['path']).read())\n")
    asks = [f"{suite}/s.eval.yaml", f"{suite}/show.py", str(store)]
    with FakeOpenAIServer() as server:
        server.reset(
            reply=lambda body: (
                "done" if body["messages"][-1]["role"] == "tool" else tool_calls(*(("show", {"path": p}) for p in asks))
            )
        )
        write(
            suite / "targets.yaml",
            f"targets:\n  - {{name: bot, provider: openai, model: m, base_url: '{server.base_url}', api_key: sk-x1234567,"
            f" agent: {{tools: [{{name: show, command: 'python3 {suite}/show.py'}}]}}}}\n",
        )
        write(
            suite / "s.eval.yaml",
            f"execution: {{target: bot}}\ntests:\n  - id: t\n    workspace: {{}}\n    input: go\n"
            f"    assertions: [{{type: contains, value: {ANSWER}}}]\n",
        )
        report = convoeval.run(suite / "s.eval.yaml", judge="scripted", cache=False, store=store)
    result = report.results[0]
    calls = [c for m in result.output for c in m.tool_calls]
    assert len(calls) == 3, result.error
    eval_file, script, stored = calls
    assert "TOOL_ARGS" in (script.output or ""), script  # the tool's own folder is still there
    assert ANSWER not in (eval_file.output or "") and "tests:" not in (eval_file.output or ""), eval_file
    assert "SQLite" not in (stored.output or "") + (stored.error or ""), stored


def _plays(turns: list[list[tuple[str, dict]]]) -> Callable[[dict], str | dict]:
    """A model that makes the tool calls of `turns[k]` in turn k, one a request, then says done."""

    def reply(body: dict) -> str | dict:
        messages = body["messages"]
        users = [i for i, m in enumerate(messages) if m["role"] == "user"]
        calls = turns[len(users) - 1] if len(users) <= len(turns) else []
        made = sum(1 for m in messages[users[-1] :] if m["role"] == "tool")
        return tool_calls(calls[made]) if made < len(calls) else "done"

    return reply


#: A program the model plants: it writes each of `paths` (or why it could not) to `out`.
_PRINT_FILES = """\
import sys
out = {out}
for path in {paths!r}:
    try:
        print(path, open(path, "rb").read().decode("latin-1"), file=out)
    except OSError as exc:
        print(path, type(exc).__name__, file=out)
out.flush()
"""


def _secret_suite(
    suite: Path, server: FakeOpenAIServer, tool: str, store: Path, verify: str = ""
) -> tuple[list[str], list[str]]:
    """A suite in `suite` whose `.env`, targets file, eval file and file of tests each hold a
    marker no name calls a secret (so redaction would not hide a leak); the markers, and the
    files convoeval reads or writes for the run (with `-o out.jsonl` and the run store `store`)."""
    marks = [f"{name}-{uuid.uuid4().hex}" for name in ("dotenv", "targets", "eval", "answer")]
    write(suite / ".env", f"PROJECT_NOTE={marks[0]}\n")
    write(
        suite / "targets.yaml",
        f"# {marks[1]}\ntargets:\n  - {{name: bot, provider: openai, model: m, base_url: '{server.base_url}',"
        f" api_key: sk-inline-{uuid.uuid4().hex}, agent: {{tools: [bash, write_file{tool}]}}}}\n",
    )
    write(suite / "s.eval.yaml", f"# {marks[2]}\nexecution: {{target: bot}}\ntests: cases.yaml\n")
    write(
        suite / "cases.yaml",
        "- id: t\n  mode: conversation\n  workspace: {}\n"
        + (f"  verify: {{command: {verify!r}}}\n" if verify else "")
        + "  turns: [{input: fix calc.py}, {input: still failing}]\n"
        + f"  assertions: [{{type: contains, value: {marks[3]}}}]\n",
    )
    names = (".env", "targets.yaml", "s.eval.yaml", "cases.yaml", "out.jsonl")
    return marks, [*(str(suite / n) for n in names), str(store)]


@needs_bwrap
@pytest.mark.timeout(120)
def test_code_a_model_plants_for_verify_cannot_reach_keys_answers_or_the_store(
    cli, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """verify `python3 checks/check.py` imports the workspace's `calc.py`; the model wrote one
    that copied `.env`, the targets file, the eval file, its file of tests and the run store into
    the workspace (a suite's commands saw the whole host), and `cat` them the next turn. They are
    covered for every sandboxed command now; the check's own files beside them are not."""
    suite = outside / "suite"
    monkeypatch.setenv("PROJECT_NOTE", "placeholder")  # the .env sets it: restored at teardown
    monkeypatch.delenv("PROJECT_NOTE")
    write(suite / "checks" / "expected.txt", "5\n")
    expected = suite / "checks" / "expected.txt"
    write(
        suite / "checks" / "check.py",
        f"import sys\nsys.path.insert(0, '.')\nimport calc\nsys.exit(calc.add(2, 3) != int(open('{expected}').read()))\n",
    )
    with FakeOpenAIServer() as server:
        store = suite / ".convoeval" / "runs.sqlite"
        marks, files = _secret_suite(suite, server, "", store, verify=f"python3 -B {suite}/checks/check.py")
        calc = _PRINT_FILES.format(out="open('loot.txt', 'w')", paths=files) + "def add(a, b):\n    return a - b\n"
        fix = "cat loot.txt; printf 'def add(a, b):\\n    return a + b\\n' > calc.py"
        server.reset(
            reply=_plays([[("write_file", {"path": "calc.py", "content": calc})], [("bash", {"command": fix})]])
        )
        monkeypatch.chdir(suite)  # the default store, .convoeval, next to the suite
        code, out, err = cli("run", "s.eval.yaml", "-o", "out.jsonl", "--no-cache")
        sent = json.dumps(server.requests)
    assert f"{suite / '.env'} " in sent, out + err  # the model read what its code copied
    for mark in marks:
        assert mark not in sent, f"the model read {mark.split('-')[0]}"
    assert "SQLite format" not in sent
    [result] = read_jsonl(suite / "out.jsonl")
    [verify] = [s for s in result["scores"] if s["name"] == "verify"]
    assert verify["verdict"] == "pass", (verify, out + err)  # at turn 2: it still reads its own files


@needs_bwrap
@pytest.mark.timeout(120)
def test_a_command_tool_running_the_models_tests_cannot_show_keys_or_answers(
    cli, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A command tool `python3 -m unittest` runs the test files the model wrote, with the tool's
    folder (the suite's) shown: they printed `.env`, the targets file (an inline `api_key`) and
    the file of tests (the answers)."""
    suite = outside / "suite"
    monkeypatch.setenv("PROJECT_NOTE", "placeholder")  # the .env sets it: restored at teardown
    monkeypatch.delenv("PROJECT_NOTE")
    tool = ", {name: run_tests, command: 'python3 -m unittest -q'}"
    with FakeOpenAIServer() as server:
        marks, files = _secret_suite(suite, server, tool, outside / "state" / "runs.sqlite")
        test = _PRINT_FILES.format(out="sys.stdout", paths=files)
        server.reset(reply=_plays([[("write_file", {"path": "test_x.py", "content": test}), ("run_tests", {})]]))
        monkeypatch.chdir(suite)
        code, out, err = cli("run", "s.eval.yaml", "-o", "out.jsonl", "--store", outside / "state", "--no-cache")
        sent = json.dumps(server.requests)
    assert f"{suite / 'cases.yaml'} " in sent, out + err  # the tool ran the model's file
    for mark in marks:
        assert mark not in sent, f"the model read {mark.split('-')[0]}"
    assert "SQLite format" not in sent


@needs_bwrap
@pytest.mark.timeout(120)
@pytest.mark.parametrize("processes", [None, "2"])
def test_a_command_tool_works_from_the_suites_folder_with_the_default_store(
    cli, tmp_path: Path, processes: str | None
) -> None:
    """Run from the suite's folder, the default store `.convoeval/runs.sqlite` lies in the tool's
    folder: bubblewrap covered `.convoeval`, then could not bind over `runs.sqlite` in it
    (read-only), and every command tool failed."""
    with FakeOpenAIServer(reply=_plays([[("shout", {"text": "hi"})]])) as server:
        write(
            tmp_path / "targets.yaml",
            f"targets:\n  - {{name: bot, provider: openai, model: m, base_url: '{server.base_url}', api_key: sk-x1234567,"
            " agent: {tools: [{name: shout, command: 'tr a-z A-Z'}]}}\n",
        )
        write(tmp_path / "s.eval.yaml", "execution: {target: bot}\ntests:\n  - {id: t1, workspace: {}, input: go}\n")
        code, out, err = cli(
            "run", "s.eval.yaml", "-o", "out.jsonl", *(("--processes", processes) if processes else ())
        )
    assert (tmp_path / ".convoeval" / "runs.sqlite").is_file(), out + err
    [result] = read_jsonl(tmp_path / "out.jsonl")
    [call] = [c for m in result["output"] for c in m.get("tool_calls") or []]
    assert call["output"] == 'exit code 0\n{"TEXT": "HI"}', call


@needs_bwrap
@pytest.mark.parametrize("system_only", [False, True])
def test_hidden_paths_inside_hidden_folders_need_no_cover_of_their_own(tmp_path: Path, system_only: bool) -> None:
    """Whatever the order they were hidden in: a file in a hidden folder, before and after it,
    a folder in one, a file next to them. A hidden folder holding the workspace is not covered
    whole (the command could not run), but what is hidden in it is."""
    from convoeval import _sandbox
    from convoeval._sandbox import command_env, hide_from_models

    shown, workspace = tmp_path / "suite", tmp_path / "suite" / "ws"
    for name in ("state/runs.sqlite", "state/deep/cache.sqlite", "s.eval.yaml", "fixture.txt"):
        write(shown / name, f"content of {name}\n")
    workspace.mkdir()
    hide_from_models([shown / "state" / "runs.sqlite", shown / "state", shown / "state" / "deep"])
    hide_from_models([shown / "state" / "deep" / "cache.sqlite", shown / "s.eval.yaml", shown])
    probe = f"cd {shown} && cat s.eval.yaml fixture.txt && ls -A state; echo end"
    ran = asyncio.run(
        _sandbox.run(
            probe,
            workspace,
            timeout_s=20,
            writable=workspace,
            readable=[shown],
            env=command_env(),
            system_only=system_only,
        )
    )
    assert ran.code == 0 and ran.output == "content of fixture.txt\nend\n", ran.output


@needs_bwrap
@pytest.mark.timeout(60)
def test_earlier_results_in_the_store_folder_are_hidden(cli, outside: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With `--store DIR`, only `./.convoeval` was covered, not DIR: a `verify` running the
    model's code read an earlier run's default results file there, with the expected answers."""
    suite = outside / "suite"
    state = suite / "state"  # in the eval folder, which a suite's commands see
    write(state / "results" / "results-earlier.jsonl", json.dumps({"evidence": ANSWER}) + "\n")
    verify = f"! grep -rqs {ANSWER} {state}"
    write(
        suite / "s.eval.yaml", f"tests:\n  - {{id: t, input: go, workspace: {{}}, verify: {{command: '{verify}'}}}}\n"
    )
    monkeypatch.chdir(suite)
    code, out, err = cli("run", "s.eval.yaml", "-t", "scripted", "-o", "out.jsonl", "--store", state, "--no-cache")
    [result] = read_jsonl(suite / "out.jsonl")
    [checked] = [s for s in result["scores"] if s["name"] == "verify"]
    assert checked["verdict"] == "pass", (checked, out + err)


@needs_bwrap
@pytest.mark.skipif(not os.access("/opt", os.W_OK), reason="needs a writable /opt")
def test_a_models_bash_does_not_see_a_project_that_lies_in_a_system_folder() -> None:
    """A project in `/opt/app` (or `/usr/src/app`, as containers have it) lay in the system's
    folders a model's commands see: the model read an earlier run's results there (the answers)
    and a `.env.local` convoeval never loaded."""
    project = Path("/opt") / f"convoeval-view-{uuid.uuid4().hex}"
    write(project / "out" / "earlier.jsonl", json.dumps({"evidence": ANSWER}) + "\n")
    probe = f"cat {project}/out/earlier.jsonl; ls -a {project}; python3 -c 'print(6*7)'"
    try:
        with FakeOpenAIServer() as server:
            server.reset(
                reply=lambda body: (
                    "done" if body["messages"][-1]["role"] == "tool" else tool_calls(("bash", {"command": probe}))
                )
            )
            write(
                project / "targets.yaml",
                f"targets:\n  - {{name: bot, provider: openai, model: m, base_url: '{server.base_url}',"
                " api_key: sk-x1234567, agent: {bash_timeout_s: 20}}\n",
            )
            write(project / "s.eval.yaml", "execution: {target: bot}\ntests:\n  - {id: t, workspace: {}, input: go}\n")
            result = convoeval.run(project / "s.eval.yaml", judge="scripted", cache=False, store=False).results[0]
        (project / "ws").mkdir()
        (project / "home").mkdir()
        box = agent_bwrap_argv(["/bin/sh", "-c", probe], project / "ws", project / "home", [], None)
        agent = subprocess.run(box.argv, capture_output=True, text=True, timeout=30)  # an agent CLI's view
    finally:
        shutil.rmtree(project)
    [call] = [c for m in result.output for c in m.tool_calls]
    assert call.output and "42" in call.output, call  # the system is still there
    assert ANSWER not in call.output and "targets.yaml" not in call.output, call.output
    assert "42" in agent.stdout and ANSWER not in agent.stdout and "targets.yaml" not in agent.stdout, agent


@needs_bwrap
@pytest.mark.timeout(120)
def test_an_earlier_runs_results_file_is_hidden_from_a_python_api_run(
    outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same through the Python API (`convoeval.run` with a store), from the suite's folder:
    the runner hides every results file the store's runs wrote, not only the CLI."""
    suite = outside / "suite"
    verify = f"! grep -qs {ANSWER} {suite}/earlier.jsonl"
    path = write(
        suite / "s.eval.yaml",
        f"tests:\n  - {{id: t, input: go, expected_output: {ANSWER}, workspace: {{}}, verify: {{command: '{verify}'}}}}\n",
    )
    earlier = [sys.executable, "-m", "convoeval", "run", "s.eval.yaml", "-t", "scripted", "--judge", "scripted"]
    ran = subprocess.run(  # another process: what a process hid once it keeps hidden
        [*earlier, "-o", "earlier.jsonl", "--no-cache", "--store", "state"], cwd=suite, capture_output=True, text=True, timeout=60
    )  # fmt: skip
    assert ANSWER in (suite / "earlier.jsonl").read_text(), ran.stdout + ran.stderr
    monkeypatch.chdir(suite)
    common = {"target": "scripted", "judge": "scripted", "cache": False, "store": suite / "state" / "runs.sqlite"}
    [result] = convoeval.run(path, output=suite / "later.jsonl", **common).results
    [checked] = [s for s in result.scores if s.name == "verify"]
    assert checked.verdict == "pass", checked


def test_an_earlier_runs_named_results_file_is_hidden(cli, outside: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Only this run's `-o` file and the state folder were covered: a `verify` running the
    model's code read `earlier.jsonl`, which an earlier run of the suite wrote into the eval
    folder with the expected answers (the store records where each run wrote its results)."""
    suite = outside / "suite"
    verify = f"! grep -qs {ANSWER} {suite}/earlier.jsonl"
    write(
        suite / "s.eval.yaml",
        f"tests:\n  - {{id: t, input: go, expected_output: {ANSWER}, workspace: {{}}, verify: {{command: '{verify}'}}}}\n",
    )
    earlier = [sys.executable, "-m", "convoeval", "run", "s.eval.yaml", "-t", "scripted", "--judge", "scripted"]
    ran = subprocess.run(
        [*earlier, "-o", "earlier.jsonl", "--no-cache"], cwd=suite, capture_output=True, text=True, timeout=60
    )
    assert ANSWER in (suite / "earlier.jsonl").read_text(), ran.stdout + ran.stderr
    monkeypatch.chdir(suite)
    code, out, err = cli(
        "run", "s.eval.yaml", "-t", "scripted", "--judge", "scripted", "-o", "later.jsonl", "--no-cache"
    )
    [result] = read_jsonl(suite / "later.jsonl")
    [checked] = [s for s in result["scores"] if s["name"] == "verify"]
    assert checked["verdict"] == "pass", (checked, out + err)
