"""Workspace set-up as AgentV describes it: repos cloned per trial, before_all/after_all hooks once
per run, a suite-level workspace, and docker workspaces (a clear error without a daemon)."""

from __future__ import annotations

import base64
import functools
import os
import shutil
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

import convoeval
from convoeval.run._workspace import python_files

from .conftest import write


def git(cwd: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.email=t@t", "-c", "user.name=t", *args], cwd=cwd, check=True, capture_output=True
    )


@pytest.fixture
def origin(tmp_path: Path) -> Path:
    """A local repository whose main branch has two commits: version v1, then v2."""
    repo = tmp_path / "suite" / "origin"
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    for version in ("v1", "v2"):
        (repo / "version.txt").write_text(version + "\n")
        git(repo, "add", ".")
        git(repo, "commit", "-q", "-m", version)
    return repo


def suite_with(tmp_path: Path, workspace: str, verify: str = "true", tests: int = 1) -> Path:
    write(tmp_path / "suite" / "targets.yaml", "targets:\n  - {name: bot, provider: scripted, default: done}\n")
    body = "".join(
        f"  - id: t{i}\n    mode: conversation\n    verify: {{command: '{verify}'}}\n    turns: [{{input: go}}, {{input: again}}]\n"
        for i in range(tests)
    )
    return write(
        tmp_path / "suite" / "s.eval.yaml", f"execution: {{target: bot}}\nworkspace: {workspace}\ntests:\n{body}"
    )


def run(suite: Path):
    return convoeval.run(suite, judge="scripted", cache=False, store=False)


def test_a_repo_is_cloned_at_its_ref_and_ancestor_into_each_trials_workspace(tmp_path: Path, origin: Path) -> None:
    workspace = "{repos: [{path: app, source: {type: local, path: origin}, checkout: {ref: main, ancestor: 1}, clone: {depth: 2}}]}"
    suite = suite_with(tmp_path, workspace, verify="grep -q v1 app/version.txt && test -d app/.git")
    [result] = run(suite).results
    assert result.verdict == "pass", result.error
    assert result.scores[-1].note == "verified at turn 1"


def test_a_local_repos_objects_are_copied_so_the_workspace_cannot_write_them(tmp_path: Path, origin: Path) -> None:
    """`git clone PATH` hard-links the objects: a command in the workspace (the model's `bash`, here
    `verify`) owns them, so it could `chmod u+w` and rewrite the suite's own repository through them."""
    objects = sorted(p for p in (origin / ".git" / "objects").rglob("*") if p.is_file())
    before = [p.read_bytes() for p in objects]
    rewrite = "for f in $(find app/.git/objects -type f); do chmod u+w $f; echo broken > $f; done; true"
    [result] = run(suite_with(tmp_path, "{repos: [{path: app, source: {type: local, path: origin}}]}", rewrite)).results
    assert result.verdict == "pass", result.error
    assert [p.read_bytes() for p in objects] == before


TOKEN = "GITTOKEN-5f1e2d3c4b"


@pytest.fixture
def git_server(tmp_path: Path, origin: Path) -> Iterator[str]:
    """`origin` served as `origin.git` over git's dumb HTTP, from a loopback server that wants
    the user `bot` with the password TOKEN (HTTP Basic); its URL without them."""
    git(tmp_path, "clone", "-q", "--bare", str(origin), "served/origin.git")
    git(tmp_path / "served" / "origin.git", "update-server-info")
    wanted = "Basic " + base64.b64encode(f"bot:{TOKEN}".encode()).decode()

    class Guarded(SimpleHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.headers.get("Authorization") != wanted:
                self.send_response(401)
                self.send_header("WWW-Authenticate", 'Basic realm="git"')
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            super().do_GET()

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Guarded, directory=str(tmp_path / "served")))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"127.0.0.1:{server.server_address[1]}/origin.git"
    server.shutdown()
    server.server_close()


def test_a_clone_urls_credentials_stay_out_of_the_workspace_and_gits_command_line(
    tmp_path: Path, git_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """git kept `http://bot:TOKEN@...` in the clone's `.git/config`: the model read the token there
    (`tr` dodged the redaction of URLs), and the results held it. It was also on git's command
    line, which every user of the machine reads in /proc (a `git` first on PATH logs it here)."""
    calls = tmp_path / "git-calls.txt"
    write(tmp_path / "bin" / "git", f'#!/bin/sh\necho "$@" >> {calls}\nexec {shutil.which("git")} "$@"\n').chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:{os.environ['PATH']}")
    workspace = f"{{repos: [{{path: app, source: {{type: git, url: 'http://bot:{TOKEN}@{git_server}'}}}}]}}"
    verify = f"grep -q v2 app/version.txt && ! grep -rq {TOKEN} app/.git && tr @ _ < app/.git/config"
    [result] = run(suite_with(tmp_path, workspace, verify=verify)).results
    assert result.verdict == "pass", (result.error, result.scores[-1].assertions)
    assert TOKEN not in result.model_dump_json()
    assert f"http://{git_server}" in result.scores[-1].assertions[0].evidence  # origin, without its user info
    assert "clone" in calls.read_text() and TOKEN not in calls.read_text()


def test_a_ref_or_image_that_git_or_docker_would_read_as_an_option_is_refused(
    tmp_path: Path, origin: Path, cli
) -> None:
    """`ref: --upload-pack=CMD` went to `git fetch origin REF` on the host, which ran CMD unconfined."""
    mark = tmp_path / "ran-on-the-host"
    ref = f"--upload-pack=touch {mark};:"
    suite = suite_with(
        tmp_path, f"{{repos: [{{path: app, source: {{type: local, path: origin}}, checkout: {{ref: '{ref}'}}}}]}}"
    )
    code, _, err = cli("validate", suite)
    assert code == 2 and f"s.eval.yaml:2: workspace.repos[0].checkout.ref: {ref!r} starts with `-`" in err
    assert cli("run", suite, "--judge", "scripted")[0] == 2 and not mark.exists()
    code, _, err = cli("validate", suite_with(tmp_path, "{docker: {image: --privileged}}"))
    assert code == 2 and "workspace.docker.image: '--privileged' starts with `-`" in err


def test_a_repo_that_cannot_be_cloned_is_an_execution_error(tmp_path: Path, origin: Path) -> None:
    suite = suite_with(tmp_path, "{repos: [{path: app, source: {type: local, path: nowhere}}]}")
    [result] = run(suite).results
    assert result.execution_status == "execution_error" and (result.error or "").startswith("workspace: repos: ")


def test_before_all_and_after_all_run_once_around_every_trial(tmp_path: Path) -> None:
    hooks = "{hooks: {before_all: {command: 'echo start >> log.txt'}, after_all: {command: 'echo end >> log.txt'}}}"
    suite = suite_with(tmp_path, hooks, tests=3)
    report = run(suite)
    assert [r.verdict for r in report.results] == ["pass"] * 3
    assert (suite.parent / "log.txt").read_text() == "start\nend\n"


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed (.ci/run installs it)")
def test_a_hook_cannot_change_a_module_a_python_target_imports_later(tmp_path: Path) -> None:
    """A `python` target's module imports `helper` on its first call: `before_all` rewrote
    helper.py in the eval folder (only modules already imported were kept), and convoeval ran the
    hook's code on the host, unconfined, at the first turn. The run now stops before any call."""
    module = f"helper_{uuid.uuid4().hex[:8]}"
    suite = tmp_path / "suite"
    write(suite / f"{module}.py", "def answer(prompt):\n    return 'fine'\n")
    agent = f"import os, sys\nsys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))\n\n\ndef reply(prompt):\n    import {module}\n    return {module}.answer(prompt)\n"
    write(suite / "agent.py", agent)
    write(suite / "targets.yaml", "targets:\n  - {name: py, provider: python, callable: 'agent.py:reply'}\n")
    planted = f"def answer(prompt):\n    open({str(tmp_path / 'escaped')!r}, 'w').write('ran')\n    return 'pwned'\n"
    payload = base64.b64encode(planted.encode()).decode()
    hook = f"echo {payload} | base64 -d > {module}.py"
    write(
        suite / "s.eval.yaml",
        f"workspace: {{hooks: {{before_all: {{command: '{hook}'}}}}}}\ntests:\n  - {{id: t, input: go}}\n",
    )
    program = Path(sys.executable).parent / "convoeval"
    ran = subprocess.run(
        [str(program), "run", "s.eval.yaml", "-t", "py", "--judge", "scripted", "--no-cache", "-o", "r.jsonl"],
        cwd=suite, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert not (tmp_path / "escaped").exists(), ran.stdout + ran.stderr
    assert ran.returncode == 2 and "changed Python files that convoeval may import on the host" in ran.stderr
    assert f"{module}.py" in ran.stderr


def test_a_failing_before_all_stops_the_run_before_any_call(tmp_path: Path, cli) -> None:
    suite = suite_with(tmp_path, "{hooks: {before_all: {command: 'echo no database; exit 3'}}}")
    code, _, err = cli("run", suite, "--judge", "scripted")
    assert code == 2 and "workspace hook before_all `echo no database; exit 3` exited with code 3: no database" in err


def _daemon() -> bool:
    return (
        shutil.which("docker") is not None and subprocess.run(["docker", "info"], capture_output=True).returncode == 0
    )


@pytest.mark.skipif(_daemon(), reason="a Docker daemon is running here: the no-daemon error cannot be shown")
def test_a_docker_workspace_without_a_daemon_fails_only_its_tests(tmp_path: Path) -> None:
    suite = suite_with(tmp_path, "{}")  # the docker workspace is the first test's own
    suite.write_text(
        suite.read_text().replace(
            "    mode: conversation\n", "    mode: conversation\n    workspace: {docker: {image: python:3.12-slim}}\n"
        )
        + "  - {id: plain, input: hi}\n"
    )
    results = {r.test_id: r for r in run(suite).results}
    assert results["t0"].execution_status == "execution_error"
    assert "workspace: docker: " in (results["t0"].error or "")
    assert results["plain"].verdict == "pass"


@pytest.mark.skipif(not _daemon(), reason="no Docker daemon is running here")
def test_a_docker_workspace_runs_verify_in_its_container(tmp_path: Path) -> None:  # pragma: no cover - needs docker
    suite = suite_with(tmp_path, "{docker: {image: python:3.12-slim}}", verify="test -f /.dockerenv")
    [result] = run(suite).results
    assert result.verdict == "pass", result.error


def test_keep_workspaces_keeps_a_suite_level_workspace_too(tmp_path: Path) -> None:
    suite = suite_with(tmp_path, "{hooks: {before_each: {command: 'echo made > made.txt'}}}")
    [result] = convoeval.run(suite, judge="scripted", cache=False, store=False, keep_workspaces=True).results
    kept = Path(result.trials[0].workspace or "")
    assert result.verdict == "pass" and (kept / "made.txt").read_text() == "made\n"
    shutil.rmtree(kept)


def test_the_python_files_a_hook_may_not_change_are_listed_through_any_depth(tmp_path: Path) -> None:
    """A hook may nest folders deeper than Python's stack (os.walk recursed: RecursionError)."""
    write(tmp_path / "top.py", "")
    here = os.getcwd()
    try:
        os.chdir(tmp_path)
        for _ in range(1500):
            os.mkdir("d")
            os.chdir("d")
        Path("deep.py").write_text("")
    finally:
        os.chdir(here)
    try:
        found = python_files([tmp_path])
    finally:
        subprocess.run(["rm", "-rf", str(tmp_path / "d")], check=True)  # shutil.rmtree recurses too
    assert str(tmp_path / "top.py") in found and any(p.endswith("/d/deep.py") for p in found), len(found)
