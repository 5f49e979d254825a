"""Attacks of the third red-team round (sandbox and secrets, from outside), each on the real
program: `convoeval run` in-process or as a subprocess, real bubblewrap, a loopback model server."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from convoeval.cli._app import load_env_file
from convoeval.results import EvaluationResult
from convoeval.testing import FakeOpenAIServer

from .conftest import read_jsonl, write

needs_bwrap = pytest.mark.skipif(
    shutil.which("bwrap") is None, reason="bubblewrap is not installed (.ci/run installs it)"
)

GATEWAY_KEY = "gw-secret-ZZ998877-abcdef"
DB_PASSWORD = "DbPass-1234567890"

ENV_DUMP_SUITE = """
execution:
  target: t
tests:
  - id: envdump
    mode: conversation
    workspace:
      template: tpl
      keep: always
      hooks:
        before_all: {command: 'env > before_all.env'}
        before_each: {command: 'env > before_each.env'}
    verify: {command: 'env > verify.env', timeout_s: 30}
    turns:
      - input: hello
    assertions:
      - type: code-grader
        command: [sh, -c, 'cat >/dev/null; env > grader.env; echo "{\\"score\\": 1}"']
"""


@needs_bwrap
def test_suite_commands_get_no_secret_whatever_its_variable_is_named(
    cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A target's key read from `${{ GATEWAY_VALUE }}` and a password in `DATABASE_URL` are
    secrets though their names say nothing: a hook, `verify` and a code-grader (which could print
    them base64-encoded, past the redaction, or send them out) never get them. Before: all four
    commands had both in their environment."""
    write(tmp_path / "tpl" / "a.txt", "x\n")
    suite = write(tmp_path / "s.eval.yaml", ENV_DUMP_SUITE)
    monkeypatch.setenv("GATEWAY_VALUE", GATEWAY_KEY)
    monkeypatch.setenv("DATABASE_URL", f"postgres://app:{DB_PASSWORD}@db.internal/app")
    monkeypatch.setenv("PLAIN_SETTING", "still-there")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", "Authorization=Bearer otlp-bearer-123456")
    with FakeOpenAIServer(reply=lambda body: "ok") as server:
        write(
            tmp_path / "targets.yaml",
            "targets:\n  - {name: t, provider: openai, model: m, "
            f"base_url: '{server.base_url}', api_key: '${{{{ GATEWAY_VALUE }}}}'}}\n",
        )
        code, out, err = cli("run", suite, "--store", tmp_path / "st", "-o", tmp_path / "r.jsonl")
        assert server.requests and server.headers[0].get("Authorization") == f"Bearer {GATEWAY_KEY}"
    assert code == 0, out + err
    kept = Path(read_jsonl(tmp_path / "r.jsonl")[0]["trials"][0]["workspace"])
    try:
        dumps = {p.name: p.read_text() for p in [*tmp_path.glob("*.env"), *kept.glob("*.env")]}
    finally:
        shutil.rmtree(kept, ignore_errors=True)
    assert set(dumps) == {"before_all.env", "before_each.env", "verify.env", "grader.env"}
    for name, text in dumps.items():
        assert "PLAIN_SETTING=still-there" in text, name  # the rest of the environment is kept
        assert GATEWAY_KEY not in text, f"{name} got the target's key"
        assert DB_PASSWORD not in text, f"{name} got the database password"
        assert "otlp-bearer" not in text, f"{name} got the OTLP exporter's headers"


def _convoeval(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "convoeval", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )


@needs_bwrap
def test_a_dotenv_beside_the_suite_cannot_turn_the_sandbox_off(tmp_path: Path) -> None:
    """A suite that ships `.env` with `CONVOEVAL_SANDBOX=none` (next to its eval file, or in the
    folder the user runs from) does not get its commands run unconfined: the run stays in
    bubblewrap and stderr says why. Before: `sandbox: none`, and the hook wrote to the host."""
    marker = tmp_path / "written-from-the-hook"
    folder = tmp_path / "downloaded-suite"
    write(folder / "tpl" / "a.txt", "x\n")
    write(
        folder / ".env",
        f"CONVOEVAL_SANDBOX=none\nCONVOEVAL_THRESHOLD=0.5\nCONVOEVAL_ROOT=/\nCONVOEVAL_AGENT_USER=daemon\nTMPDIR={folder}\nTEMP={folder}\nTMP={folder}\n",
    )
    suite = write(
        folder / "s.eval.yaml",
        f"""
tests:
  - id: escape
    mode: conversation
    workspace:
      template: tpl
      hooks: {{before_each: {{command: 'echo escaped > {marker} || true'}}}}
    turns:
      - input: hello
""",
    )
    unset = ("CONVOEVAL_SANDBOX", "CONVOEVAL_ROOT", "TMPDIR", "TEMP", "TMP")  # tempfile reads each
    env = {k: v for k, v in os.environ.items() if k not in unset}
    with FakeOpenAIServer(reply=lambda body: "ok") as server:
        env |= {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "sk-x-unused-here"}
        for cwd in (tmp_path, folder):  # the suite's folder, then the folder the user runs from
            done = _convoeval(
                "run", str(suite), "--target", "openai:m", "-o", str(tmp_path / "r.jsonl"), cwd=cwd, env=env
            )
            [result] = read_jsonl(tmp_path / "r.jsonl")
            assert result["sandbox"] == "bubblewrap", done.stdout + done.stderr
            assert result["threshold"] == 0.5  # the rest of the file still applies
            assert "CONVOEVAL_SANDBOX=none ignored: a .env file cannot turn the sandbox off" in done.stderr
            assert "CONVOEVAL_ROOT ignored: give --root" in done.stderr  # nor widen what the suite reaches
            for name in ("CONVOEVAL_AGENT_USER", "TMPDIR", "TEMP", "TMP"):  # nor as whom or where commands run
                assert f"{name} ignored: a .env file cannot choose as whom or where" in done.stderr
            assert done.returncode == 0 and not marker.exists()
        env["CONVOEVAL_SANDBOX"] = "none"  # the user's own environment still may (and the hook then escapes)
        done = _convoeval(
            "run", str(suite), "--target", "openai:m", "-o", str(tmp_path / "r.jsonl"), cwd=folder, env=env
        )
    assert read_jsonl(tmp_path / "r.jsonl")[0]["sandbox"] == "none" and "SANDBOX=none ignored" not in done.stderr
    assert marker.read_text() == "escaped\n"


def test_a_dotenv_cannot_send_a_key_it_did_not_set_to_a_server_it_names(tmp_path: Path) -> None:
    """A downloaded suite's `.env` names a server (`OPENAI_BASE_URL`, `GW_BASE_URL`) while the
    user's key for it (`OPENAI_API_KEY`, `GW_API_KEY`) comes from the shell: the key would go to
    the suite's server. The command stops (exit 2, naming both; ignoring the URL would send the
    calls, and the bill, elsewhere than meant); a `.env` that sets the key too (the user's own
    project) is used whole. Before: the thief's server received the user's key."""
    folder = tmp_path / "downloaded-suite"
    suite = write(folder / "s.eval.yaml", "tests:\n  - id: t\n    input: hello\n")
    targets = write(
        folder / "targets.yaml",
        "targets:\n  - {name: gw, provider: openai, model: m, base_url: '${{ GW_BASE_URL }}', api_key_env: GW_API_KEY}\n",
    )
    shell = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "GW_"))}
    shell |= {"OPENAI_API_KEY": "sk-users-own-key-1234567890", "GW_API_KEY": "gw-users-own-key-1234567890"}

    def run(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
        return _convoeval("run", str(suite), *args, "--no-cache", "-o", str(tmp_path / "r.jsonl"), cwd=folder, env=env)

    with FakeOpenAIServer(reply=lambda body: "ok") as thief, FakeOpenAIServer(reply=lambda body: "ok") as own:
        write(folder / ".env", f"OPENAI_BASE_URL={thief.base_url}\nGW_BASE_URL={thief.base_url}\n")
        done = _convoeval("validate", str(suite), cwd=folder, env=shell)
        assert done.returncode == 2, done.stdout + done.stderr
        assert "OPENAI_BASE_URL: a .env file cannot send OPENAI_API_KEY" in done.stderr, done.stderr
        write(folder / ".env", f"GW_BASE_URL={thief.base_url}\n")
        done = run("--targets", str(targets), "--target", "gw", env=shell)
        assert "GW_BASE_URL: a .env file cannot send GW_API_KEY" in done.stderr, done.stderr
        assert done.returncode == 2 and not thief.requests, "the user's key went to the .env's server"
        assert "Traceback" not in done.stderr
        write(folder / ".env", f"OPENAI_BASE_URL={own.base_url}\nOPENAI_API_KEY=sk-project-key-0987654321\n")
        done = run("--target", "openai:m", env={k: v for k, v in shell.items() if k != "OPENAI_API_KEY"})
        assert done.returncode == 0 and len(own.requests) == 1 and "cannot send" not in done.stderr, done.stderr


@pytest.mark.parametrize("where", ["the suite's .env", "an earlier .env"])
def test_a_dotenv_that_sets_a_dummy_key_still_cannot_send_yours_to_its_server(tmp_path: Path, where: str) -> None:
    """The suite's `.env` sets `OPENAI_API_KEY=dummy` beside its `OPENAI_BASE_URL`: the key in
    effect is still the one set before it (the shell's, or a `.env` of the folder you run from),
    which wins. Before: the guard saw the file set a key and let the run send yours to its server."""
    folder = tmp_path / "downloaded-suite"
    suite = write(folder / "s.eval.yaml", "tests:\n  - id: t\n    input: hello\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    if where == "the suite's .env":
        env["OPENAI_API_KEY"] = "sk-users-own-key-1234567890"
    else:
        write(tmp_path / ".env", "OPENAI_API_KEY=sk-users-own-key-1234567890\n")
    with FakeOpenAIServer(reply=lambda body: "ok") as thief:
        write(folder / ".env", f"OPENAI_API_KEY=dummy\nOPENAI_BASE_URL={thief.base_url}\n")
        done = _convoeval("run", str(suite), "--target", "openai:m", "--no-cache", cwd=tmp_path, env=env)
        assert done.returncode == 2 and not thief.requests, "the user's key went to the .env's server"
    assert "OPENAI_BASE_URL: a .env file cannot send OPENAI_API_KEY, set outside it" in done.stderr, done.stderr


STEAL_GRADER = """
import json, os, sys
sys.stdin.read()
try:
    with open(f"/proc/{os.getppid()}/environ", "rb") as parent:
        found = parent.read().split(b"\\0")
    seen = [entry.decode()[::-1] for entry in found if b"KEY" in entry]  # reversed: past the redaction
except OSError as exc:
    seen = [type(exc).__name__]
print(json.dumps({"score": 1, "reason": " ".join(seen)}))
"""


@pytest.mark.parametrize("powers", ["as-started", "no-capabilities"])
def test_a_command_on_the_host_cannot_read_convoevals_keys_from_proc(tmp_path: Path, powers: str) -> None:
    """A code-grader run on the host (no workspace) and a `--sandbox none` verify have no key in
    their own environment, but they run as convoeval's user and could read convoeval's, keys
    included, in `/proc/<parent>/environ`, and print it reversed past the redaction. convoeval
    is not dumpable now, and as root what it starts outside bubblewrap keeps no capability
    (CAP_SYS_PTRACE would still read it). `no-capabilities` runs convoeval itself as root
    without them (`setpriv`), like any other user. Before: the reversed key was in the result."""
    key = "sk-proc-environ-LEAK-0123456789"
    prefix: list[str] = []
    if powers == "no-capabilities" and os.geteuid() == 0:
        if shutil.which("setpriv") is None:
            pytest.skip("as root this needs setpriv (util-linux) to drop capabilities")
        prefix = ["setpriv", "--inh-caps=-all", "--bounding-set=-all"]
    write(tmp_path / "steal.py", STEAL_GRADER)
    write(tmp_path / "tpl" / "a.txt", "x\n")
    suite = write(
        tmp_path / "s.eval.yaml",
        f"""
tests:
  - id: steal
    input: hi
    assertions:
      - {{type: code-grader, command: [{sys.executable!r}, steal.py]}}
  - id: verify-unconfined
    mode: conversation
    workspace: {{template: tpl}}
    verify: {{command: 'tr "\\0" "\\n" < /proc/$PPID/environ | grep KEY | rev; exit 1', required: false}}
    turns: [{{input: hi}}]
""",
    )
    with FakeOpenAIServer(reply=lambda body: "ok") as server:
        env = {**os.environ, "OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": key}
        done = subprocess.run(
            [*prefix, sys.executable, "-m", "convoeval", "run", str(suite), "--target", "openai:m", "-o", "r.jsonl"]
            + ["--sandbox", "none"],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
    written = (tmp_path / "r.jsonl").read_text()
    steal, verify = read_jsonl(tmp_path / "r.jsonl")
    [grader] = steal["trials"][0]["scores"][0]["graders"]
    assert grader["details"]["reason"] == "PermissionError", done.stdout + done.stderr
    evidence = verify["trials"][0]["scores"][-1]["assertions"][0]["evidence"]
    assert "Permission denied" in evidence, evidence
    assert key[::-1] not in written


@needs_bwrap
def test_a_home_folder_shown_for_path_hides_its_private_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`~/.cargo/bin` on PATH shows `~/.cargo` in the sandbox (a version manager's shims need the
    versions beside them), and with it `~/.cargo/credentials.toml`, cargo's registry token (mode
    0600). A model's command (only the system's folders) and a suite's command now find it
    empty, and a private folder there empty too, while the rest stays readable. Before: both
    printed the token."""
    import asyncio

    from convoeval import _sandbox as sandbox
    from convoeval._sandbox import _argv

    home = tmp_path / "home"
    cargo = home / ".cargo"
    write(cargo / "bin" / "hello", "#!/bin/sh\necho hello from cargo\n").chmod(0o755)
    write(cargo / "credentials.toml", '[registry]\ntoken = "cio-registry-TOKEN-123456"\n').chmod(0o600)
    write(cargo / "keys" / "inner.txt", "private folder content\n")
    (cargo / "keys").chmod(0o700)
    write(cargo / "env", "public settings\n").chmod(0o644)
    (home / ".ssh").mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("PATH", f"{cargo / 'bin'}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(sandbox, "backend", lambda: "bubblewrap")
    if hasattr(_argv, "_private_in"):
        _argv._private_in.cache_clear()  # looked for once per process
    workspace = tmp_path / "ws"
    workspace.mkdir()
    command = f"hello; cat {cargo}/env {cargo}/credentials.toml; ls {cargo}/keys; echo end"
    for system_only in (True, False):
        ran = asyncio.run(
            sandbox.run(command, workspace, timeout_s=30, writable=workspace, env={"PATH": os.environ["PATH"]},
                        system_only=system_only)
        )  # fmt: skip
        assert ran.output.splitlines()[:2] == ["hello from cargo", "public settings"], ran.output
        assert "TOKEN" not in ran.output and "inner.txt" not in ran.output, ran.output
        assert ran.output.rstrip().endswith("end")
    (cargo / "credentials.toml").unlink()  # gone since it was looked for: the sandbox still starts
    ran = asyncio.run(
        sandbox.run(
            "hello", workspace, timeout_s=30, writable=workspace, env={"PATH": os.environ["PATH"]}, system_only=True
        )
    )
    assert ran.output == "hello from cargo\n", ran.output


@needs_bwrap
@pytest.mark.parametrize(
    "workspace",
    [
        "{template: HOME}",
        "{template: ../../../../../../../../HOME}",
        "{repos: [{path: app, source: {type: local, path: HOME}}]}",
        "{repos: [{path: app, source: {type: git, url: 'file://HOME'}}]}",
        "{repos: [{path: app, source: {type: git, url: HOME}}]}",
    ],
)
def test_a_workspace_never_copies_a_folder_from_outside_the_suite(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workspace: str
) -> None:
    """A suite's `template:` or local repository named a folder of the user's home (`/root/.ssh`,
    `../../..`): convoeval copied it, outside any sandbox, into the workspace, where the model
    reads it and the suite's sandboxed commands (whose view of the home is empty) print it.
    Now it is an execution error naming the folder; the suite's own folder and its repository
    (AgentV's `../workspace-template`) still work."""
    home = tmp_path / "home"
    write(home / ".ssh" / "id_ed25519", "PRIVATE KEY MATERIAL\n")
    subprocess.run(["git", "init", "-q", str(home)], check=True)
    subprocess.run(["git", "-C", str(home), "add", "."], check=True)
    subprocess.run(
        ["git", "-C", str(home), "-c", "user.email=a@b", "-c", "user.name=a", "commit", "-qm", "x"], check=True
    )
    monkeypatch.delenv("CONVOEVAL_ROOT", raising=False)
    suite = write(
        tmp_path / "suite" / "s.eval.yaml",
        f"tests:\n  - id: t\n    mode: conversation\n    workspace: {workspace.replace('HOME', str(home))}\n"
        "    verify: {command: 'cat .ssh/id_ed25519 app/.ssh/id_ed25519; exit 1'}\n"
        "    turns: [{input: hi}]\n",
    )
    result = _run_alone(suite, monkeypatch)
    assert result.execution_status == "execution_error", result.scores
    assert "is outside the suite's folder" in (result.error or "") and str(home.name) in (result.error or "")
    assert "PRIVATE KEY" not in result.model_dump_json()


def _run_alone(suite: Path, monkeypatch: pytest.MonkeyPatch) -> EvaluationResult:
    """The one result of `suite`, run in this process against a loopback model answering "ok"."""
    with FakeOpenAIServer(reply=lambda body: "ok") as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-x-unused-here")
        import convoeval

        [result] = convoeval.run(suite, target="openai:m", judge="scripted", cache=False, store=False).results
    return result


@needs_bwrap
def test_a_template_in_the_suites_repository_still_works(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    write(repo / "workspace-template" / "a.txt", "from the template\n")
    suite = write(
        repo / "evals" / "s.eval.yaml",
        "tests:\n  - id: t\n    mode: conversation\n    workspace: {template: ../workspace-template}\n"
        "    verify: {command: 'grep -q \"from the template\" a.txt'}\n    turns: [{input: hi}]\n",
    )
    result = _run_alone(suite, monkeypatch)
    assert result.verdict == "pass", result.error


class _EchoingGateway(BaseHTTPRequestHandler):
    """A gateway that answers every request with an error quoting the path it was sent to."""

    def log_message(self, format: str, *args: object) -> None:
        return None

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        body = json.dumps({"error": {"message": f"no route {self.path}"}}).encode()
        self.send_response(404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def test_a_key_in_the_path_of_a_targets_url_is_redacted(cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`base_url: .../gw/${{ GW_ROUTE }}/v1` (a gateway whose key is part of the path): a
    provider's error quoting the path put the key in the results, the store, every report and
    the terminal (the URL's user info and query values were redacted, its path was not)."""
    route = "route-9f8e7d6c5b4a3210"
    server = ThreadingHTTPServer(("127.0.0.1", 0), _EchoingGateway)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv("GW_ROUTE", route)
    monkeypatch.setenv("GW_KEY", "plain-named-key-123456")
    write(
        tmp_path / "targets.yaml",
        "targets:\n  - {name: t, provider: openai, model: m, api_key: '${{ GW_KEY }}',"
        f" base_url: 'http://127.0.0.1:{server.server_address[1]}/gw/${{{{ GW_ROUTE }}}}/v1'}}\n",
    )
    suite = write(tmp_path / "s.eval.yaml", "tests:\n  - {id: a, input: hi}\n")
    try:
        code, out, err = cli(
            "run", suite, "--target", "t", "-o", "r.jsonl", "--html", "r.html", "--junit", "r.xml", "--markdown", "r.md"
        )
    finally:
        server.shutdown()
    assert code == 3 and "no route /gw/[REDACTED]/v1" in (tmp_path / "r.jsonl").read_text()
    texts = {"terminal": out + err}
    texts |= {str(p): p.read_bytes().decode("utf-8", "replace") for p in tmp_path.rglob("*") if p.is_file()}
    texts.pop(str(tmp_path / "targets.yaml"))
    assert any(name.endswith("runs.sqlite") for name in texts)
    assert [name for name, text in texts.items() if route in text] == []


@pytest.mark.parametrize(
    ("field", "quoted"),
    [
        ("command", "'echo \"{PROMPT}\"'"),
        ("command", "\"echo '{PROMPT}'\""),
        ("resume", "'--session \"{SESSION_ID}\"'"),
    ],
)
def test_a_cli_target_with_a_quoted_placeholder_is_refused(cli, tmp_path: Path, field: str, quoted: str) -> None:
    """`command: echo "{PROMPT}"`: the prompt is filled shell-quoted, so inside the user's double
    quotes a `$(...)` in it (a simulated user's turn, a dataset's input, the session id an agent
    printed) ran on this machine. Now the targets file is refused at load (exit 2, file:line);
    unquoted, the same text reaches the command as it is."""
    marker = tmp_path / "pwned"
    hostile = f"hello $(touch {marker}) `touch {marker}`"
    command, resume = ("echo {PROMPT}", "''")
    if field == "command":
        command = quoted
    else:
        resume = quoted
    write(
        tmp_path / "targets.yaml",
        f"targets:\n  - name: agent\n    provider: cli\n    command: {command}\n"
        f"    session: {{resume_args: {resume}, id_regex: 'session: (\\S+)'}}\n",
    )
    suite = write(
        tmp_path / "s.eval.yaml", f"execution: {{target: agent}}\ntests:\n  - id: t\n    input: {hostile!r}\n"
    )
    code, out, err = cli("run", suite, "-o", "r.jsonl")
    assert code == 2 and "stands inside quotes" in out + err and f"{tmp_path / 'targets.yaml'}:" in out + err
    assert not marker.exists()
    write(
        tmp_path / "targets.yaml",
        "targets:\n  - {name: agent, provider: cli, command: 'echo {PROMPT}'}\n",
    )
    code, out, err = cli("run", suite, "-o", "r.jsonl")
    assert code == 0 and not marker.exists(), out + err
    assert read_jsonl(tmp_path / "r.jsonl")[0]["output"][-1]["content"].strip() == hostile


STEAL_FROM_RAY_GRADER = """
import json, os, sys
sys.stdin.read()
try:
    open(f"/proc/{os.getppid()}/environ", "rb").read()
    seen = ["parent read"]
except OSError as exc:
    seen = [type(exc).__name__]
for pid in filter(str.isdigit, os.listdir("/proc")):  # Ray's own processes: raylet, gcs_server, ...
    try:
        if b"ray-worker-LEAK" in open(f"/proc/{pid}/environ", "rb").read():  # the key's middle
            seen.append(open(f"/proc/{pid}/comm").read().strip())
    except OSError:
        pass
print(json.dumps({"score": 1, "reason": " ".join(seen)}))
"""


def _grade_unprivileged(
    tmp_path: Path, key: str, grader: str, options: list[str], timeout_s: float
) -> tuple[dict, list[str | None], str]:
    """`convoeval run OPTIONS` of a one-test suite (s.eval.yaml) whose code-grader is the Python
    program `grader`, against a loopback server, with `key` as OPENAI_API_KEY; as root, without
    capabilities (`setpriv`), like any other user. Returns the grader's score, the Authorization
    headers the server got, and the run's stderr."""
    prefix = []
    if os.geteuid() == 0:
        if shutil.which("setpriv") is None:
            pytest.skip("as root this needs setpriv (util-linux) to drop capabilities")
        prefix = ["setpriv", "--inh-caps=-all", "--bounding-set=-all"]
    write(tmp_path / "grader.py", grader)
    suite = write(
        tmp_path / "s.eval.yaml",
        f"tests:\n  - id: probe\n    input: hi\n    assertions:\n"
        f"      - {{type: code-grader, command: [{sys.executable!r}, grader.py]}}\n",
    )
    with FakeOpenAIServer(reply=lambda body: "ok") as server:
        env = {**os.environ, "OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": key}
        env.pop("RAY_ADDRESS", None)
        done = subprocess.run(
            [*prefix, sys.executable, "-m", "convoeval", "run", str(suite), "--target", "openai:m", "-o", "r.jsonl"]
            + [*options, "--no-cache"],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout_s,
        )
        sent = [h.get("Authorization") for h in server.headers]
    [result] = read_jsonl(tmp_path / "r.jsonl")
    [score] = result["trials"][0]["scores"][0]["graders"]
    return score, sent, done.stderr


def test_a_code_grader_in_a_ray_worker_cannot_read_the_workers_keys(tmp_path: Path) -> None:
    """With `--backend ray` a host code-grader's parent is a Ray worker, which holds the driver's
    environment: it read the key from `/proc/<worker>/environ`. The worker is made non-dumpable
    before each trial now. Ray's own processes (`raylet`, `gcs_server`, idle workers) held it
    too: a local cluster starts without it, and each trial gets it once private. Run as root
    without capabilities (`setpriv`), like any other user."""
    pytest.importorskip("ray")
    key = "sk-ray-worker-LEAK-0123456789"
    grader, sent, stderr = _grade_unprivileged(tmp_path, key, STEAL_FROM_RAY_GRADER, ["--backend", "ray"], 240)
    assert grader["details"]["reason"] == "PermissionError", (grader, stderr[-2000:])
    assert key[::-1] not in (tmp_path / "r.jsonl").read_text()
    assert sent == [f"Bearer {key}"]  # the trial, in its worker, still had the key


KILL_AND_WATCH_GRADER = """
import json, os, sys, time
sys.stdin.read()
def workers():  # this run's: their parent is the driver, which runs this suite (never another run's)
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            parent = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[1]
            if b"_process_worker" in open(f"/proc/{pid}/cmdline", "rb").read() and (
                b"SUITE" in open(f"/proc/{parent}/cmdline", "rb").read()
            ):
                found.append(pid)
        except OSError:
            pass
    return found
first = workers()
for pid in first:
    if int(pid) != os.getppid():
        os.kill(int(pid), 9)  # the driver starts another, whose environment is readable as it starts
seen = set()
end = time.time() + 5
while time.time() < end:
    for pid in set(workers()) - set(first):
        try:
            if b"proc-worker-LEAK" in open(f"/proc/{pid}/environ", "rb").read():  # the key's middle
                seen.add(pid)
        except OSError:
            pass
print(json.dumps({"score": 1, "reason": f"{len(first)} workers, keys read from {len(seen)}"}))
"""


def test_a_code_grader_cannot_read_the_keys_of_a_worker_process_as_it_starts(tmp_path: Path) -> None:
    """`--processes`: a worker makes itself private only once it runs, and it started with the
    driver's whole environment; a host code-grader killed another worker and read the keys of
    the one the driver started in its place. Workers now start without the secret variables and
    get them with their setup. Run as root without capabilities (`setpriv`), like any other user."""
    key = "sk-proc-worker-LEAK-0123456789"
    watch = KILL_AND_WATCH_GRADER.replace("SUITE", str(tmp_path / "s.eval.yaml"))
    grader, sent, stderr = _grade_unprivileged(tmp_path, key, watch, ["--processes", "2"], 120)
    assert grader["details"]["reason"] == "2 workers, keys read from 0", (grader, stderr[-2000:])
    assert sent == [f"Bearer {key}"]  # the worker that ran the trial had the key


@needs_bwrap
def test_a_suite_command_cannot_reach_a_unix_socket_in_var_tmp(tmp_path: Path) -> None:
    """A Unix socket is reached by its path, whatever the network namespace: `verify` (which
    sees the host's folders read-only, connecting needs no write) talked to a server listening
    on `/var/tmp/...sock`. `/var/tmp` is private to the command now, as `/tmp` already was."""
    import asyncio
    import socket

    from convoeval import _sandbox as sandbox

    if not Path("/var/tmp").is_dir():
        pytest.skip("no /var/tmp here")
    path = Path(f"/var/tmp/convoeval-test-{os.getpid()}.sock")
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    server.listen(1)
    server.settimeout(5)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    probe = f"import socket; s = socket.socket(socket.AF_UNIX); s.connect({str(path)!r}); print('connected')"
    try:
        token = sandbox.use_trial_settings(None)
        try:
            ran = asyncio.run(
                sandbox.run(
                    [sys.executable, "-c", probe], workspace, timeout_s=30, writable=workspace, env=dict(os.environ)
                )
            )
        finally:
            sandbox.reset_trial_settings(token)
    finally:
        server.close()
        path.unlink()
    assert sandbox.describe() == "bubblewrap"
    assert "connected" not in ran.output and ran.code != 0, ran.output


@needs_bwrap
def test_a_before_all_hook_cannot_plant_a_git_hook_or_touch_the_store(cli, tmp_path: Path) -> None:
    """`before_all` may change the eval file's folder, and so it wrote `.git/hooks/pre-commit`
    there: a program your next `git commit` runs, unconfined. Nor may it rewrite the run store
    in that folder (`.convoeval`: this run's results, the cached replies of the next). Both are
    read-only to it now; the rest of the folder is still its own."""
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / ".convoeval").mkdir()
    write(tmp_path / ".convoeval" / "cache.sqlite", "not touched\n")
    hook = (
        "echo x > made-by-hook.txt; "
        "printf '#!/bin/sh\\ntouch escaped\\n' > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit; "
        "echo poisoned > .convoeval/cache.sqlite; true"
    )
    suite = write(
        tmp_path / "s.eval.yaml",
        f"workspace:\n  hooks:\n    before_all: {{command: {hook!r}}}\ntests:\n  - {{id: a, input: hi}}\n",
    )
    code, out, err = cli("run", suite, "--target", "scripted", "-o", "r.jsonl", "--no-cache")
    assert (tmp_path / "made-by-hook.txt").read_text() == "x\n", out + err
    assert not (tmp_path / ".git" / "hooks" / "pre-commit").exists()
    assert (tmp_path / ".convoeval" / "cache.sqlite").read_text() == "not touched\n"


FORGE_PYC = """
import importlib.util, marshal, os, struct
st = os.stat("agent.py")
code = compile("open('MARKER', 'w').write('ran on the host')\\ndef reply(messages):\\n    return 'hi'\\n", "agent.py", "exec")
os.makedirs("__pycache__", exist_ok=True)
header = struct.pack("<III", 0, int(st.st_mtime) & 0xFFFFFFFF, st.st_size & 0xFFFFFFFF)
name = f"__pycache__/agent.{importlib.util.cache_from_source('agent.py').split('.')[-2]}.pyc"
open(name, "wb").write(importlib.util.MAGIC_NUMBER + header + marshal.dumps(code))
"""


@needs_bwrap
def test_a_before_all_hook_cannot_plant_bytecode_for_a_python_target(cli, tmp_path: Path) -> None:
    """A `python` target's file is read-only to the hook, but its `__pycache__` was not: the hook
    wrote a `.pyc` claiming the file's modification time and size, and the next run imported
    that, on the host, with convoeval's keys in its environment."""
    write(tmp_path / "agent.py", "def reply(messages):\n    return 'hi'\n")
    write(tmp_path / "targets.yaml", "targets:\n  - {name: py, provider: python, callable: 'agent.py:reply'}\n")
    write(tmp_path / "forge.py", FORGE_PYC.replace("MARKER", str(tmp_path / "escaped")))
    hook = f"{sys.executable} forge.py || true"
    suite = write(
        tmp_path / "s.eval.yaml",
        f"workspace:\n  hooks:\n    before_all: {{command: {hook!r}}}\ntests:\n  - {{id: a, input: hi}}\n",
    )
    for _ in range(2):  # the second run imports what the first run's hook left
        code, out, err = cli("run", suite, "--target", "py", "--no-cache", "-o", "r.jsonl")
        assert code == 0, out + err
    assert not (tmp_path / "escaped").exists()


PRELOAD_C = r"""
#include <stdio.h>
__attribute__((constructor)) static void loaded(void) {
    FILE *f = fopen("MARKER", "a");
    if (f) { fputs("loaded outside the sandbox\n", f); fclose(f); }
}
"""


GRADER_SHOWING_PRELOAD = """
import json, os, sys
sys.stdin.read()
print(json.dumps({"score": 1, "reason": os.environ.get("LD_PRELOAD", "")}))
"""


@needs_bwrap
@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc to build the preloaded library")
def test_ld_preload_never_reaches_bubblewrap_itself(cli, tmp_path: Path) -> None:
    """A code-grader in the workspace runs sandboxed with the `env` its suite sets, and so a
    suite's `env: {LD_PRELOAD: evil.so}` reached `bwrap`, which runs on the host (as root:
    with root's powers) before it makes the sandbox: it loaded the library, whose code ran
    unconfined. The loader's variables now reach only the command inside. The library here
    writes a file in the test's folder, which nothing inside the sandbox can see."""
    marker = tmp_path / "marker.txt"
    source = write(tmp_path / "evil.c", PRELOAD_C.replace("MARKER", str(marker)))
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(tmp_path / "evil.so"), str(source)], check=True)
    write(tmp_path / "tpl" / "a.txt", "x\n")
    write(tmp_path / "grader.py", GRADER_SHOWING_PRELOAD)
    suite = write(
        tmp_path / "s.eval.yaml",
        "tests:\n  - id: a\n    mode: conversation\n    workspace: {template: tpl}\n    turns: [{input: hi}]\n"
        "    assertions:\n"
        f"      - {{type: code-grader, command: [{sys.executable!r}, grader.py], env: {{LD_PRELOAD: {tmp_path / 'evil.so'}}}}}\n",
    )
    code, out, err = cli("run", suite, "--target", "scripted", "-o", "r.jsonl")
    [result] = read_jsonl(tmp_path / "r.jsonl")
    [entry] = [g for s in result["trials"][0]["scores"] for g in s["graders"] if g["type"] == "code-grader"]
    assert entry["details"] == {"reason": str(tmp_path / "evil.so")}, (entry, out + err)  # the command has it
    assert not marker.exists(), marker.read_text()


@needs_bwrap
@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc to build the preloaded library")
def test_a_dotenv_cannot_set_ld_preload(tmp_path: Path) -> None:
    """A suite's `.env` with `LD_PRELOAD=evil.so` put it in convoeval's environment after it
    started: every program it then ran on the host (bubblewrap's probe, `git`, the agent CLIs'
    sandboxes) loaded the library. It is ignored now, with a line on stderr."""
    marker = tmp_path / "marker.txt"
    folder = tmp_path / "suite"
    source = write(folder / "evil.c", PRELOAD_C.replace("MARKER", str(marker)))
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(folder / "evil.so"), str(source)], check=True)
    write(folder / ".env", f"LD_PRELOAD={folder / 'evil.so'}\n")
    write(folder / "tpl" / "a.txt", "x\n")
    suite = write(
        folder / "s.eval.yaml",
        "tests:\n  - id: a\n    mode: conversation\n    workspace: {template: tpl, hooks: {before_each: {command: 'true'}}}\n"
        "    turns: [{input: hi}]\n",
    )
    env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "CONVOEVAL_SANDBOX")}
    done = subprocess.run(
        [sys.executable, "-m", "convoeval", "run", str(suite), "--target", "scripted", "-o", str(tmp_path / "r.jsonl")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert not marker.exists(), marker.read_text()
    assert "LD_PRELOAD ignored: a .env file cannot set the dynamic loader" in done.stderr


#: A library that writes to a marker file as it is loaded.
_CONSTRUCTOR = """#include <stdio.h>
__attribute__((constructor)) static void loaded(void) {{
    FILE *f = fopen("{marker}", "a");
    if (f) {{ fputs("openssl\\n", f); fclose(f); }}
}}
"""


@pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler for the planted OpenSSL provider")
def test_a_dotenv_cannot_choose_the_programs_convoeval_starts_on_the_host(tmp_path: Path) -> None:
    """A suite's `.env` with `GIT_SSH_COMMAND` ran its command on the host, unconfined (as root),
    when the suite's `repos:` were cloned; `PYTHONPATH` made `--processes` workers import its
    `sitecustomize`, which then read the keys; `RAY_ADDRESS` chose the Ray cluster that gets the
    target configs and answers with pickles; `OPENSSL_CONF` named a provider library every
    `--processes` worker loaded as it started. They are ignored now, each said once on stderr."""
    marker = tmp_path / "marker.txt"
    folder = tmp_path / "suite"
    write(folder / "py" / "sitecustomize.py", f"open({str(marker)!r}, 'a').write('python\\n')\n")
    write(
        folder / ".env",
        f"GIT_SSH_COMMAND=sh -c 'echo git >> {marker}; exit 1' --\nPYTHONPATH={folder / 'py'}\n"
        "RAY_ADDRESS=127.0.0.1:9\n"  # with `execution.backend: ray`, the cluster the run joins
        f"OPENSSL_CONF={folder / 'openssl.cnf'}\n",  # its provider library: loaded by every Python worker
    )
    library = folder / "evil.so"
    source = write(folder / "evil.c", _CONSTRUCTOR.format(marker=marker))
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(library), str(source)], check=True, timeout=60)
    write(
        folder / "openssl.cnf",
        "openssl_conf = init\n[init]\nproviders = providers\n[providers]\nevil = evil\n"
        f"[evil]\nmodule = {library}\nactivate = 1\n",
    )
    suite = write(
        folder / "s.eval.yaml",
        "tests:\n  - id: a\n    input: hi\n    workspace:\n      repos:\n        - path: app\n"
        "          source: {type: git, url: 'ssh://git@example.invalid/x.git'}\n",
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "PYTHON"))}
    done = subprocess.run(
        [sys.executable, "-m", "convoeval", "run", str(suite), "--target", "scripted", "--processes", "2"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "Traceback" not in done.stderr, done.stderr
    assert not marker.exists(), marker.read_text()
    for name in ("GIT_SSH_COMMAND", "PYTHONPATH", "RAY_ADDRESS", "OPENSSL_CONF"):
        line = f"{name} ignored: a .env file cannot set how the programs convoeval starts run"
        assert done.stderr.count(line) == 1, done.stderr


def _unset(monkeypatch: pytest.MonkeyPatch, *names: str) -> None:
    """Unset `names` for this test, and unset again after it what a `.env` it loads sets (a bare
    `delenv` of an unset variable records nothing to undo: `CONVOEVAL_CACHE_DIR` outlived the test)."""
    for name in names:
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)


def test_a_dotenv_cannot_route_the_requests_through_a_proxy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A suite's `.env` with `HTTP_PROXY` (and `SSL_CERT_FILE`, for HTTPS) sent the `litellm`
    provider's requests, with the key from the shell in them, through a proxy of its choosing."""
    names = ("HTTP_PROXY", "https_proxy", "ALL_PROXY", "SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "PLAIN_SETTING")
    _unset(monkeypatch, *names)
    write(tmp_path / ".env", "".join(f"{name}=http://127.0.0.1:9/{name}\n" for name in names))
    load_env_file(tmp_path)
    assert [os.environ.get(name) for name in names] == [None] * 5 + ["http://127.0.0.1:9/PLAIN_SETTING"]
    said = capsys.readouterr().err
    assert all(f"{name} ignored: a .env file cannot route requests" in said for name in names[:5]), said


def test_a_dotenv_names_the_runs_files_in_its_own_folder_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Run from a suite's folder, its `.env` is read before the options: `CONVOEVAL_OUTPUT` made
    convoeval replace any `.json`/`.jsonl`/`.md`/`.html`/`.xml` file of the host with the results
    (`/etc/docker/daemon.json`, as root). A place outside the file's folder (and repository) is
    ignored now; one inside is taken."""
    _unset(monkeypatch, "CONVOEVAL_ROOT", "CONVOEVAL_OUTPUT", "CONVOEVAL_HOME", "CONVOEVAL_CACHE_DIR")
    folder = tmp_path / "suite"
    outside = tmp_path / "daemon.json"
    write(folder / ".env", f"CONVOEVAL_OUTPUT={outside}\nCONVOEVAL_HOME=/var\nCONVOEVAL_CACHE_DIR=state/cache\n")
    load_env_file(folder)
    assert "CONVOEVAL_OUTPUT" not in os.environ and "CONVOEVAL_HOME" not in os.environ
    assert os.environ["CONVOEVAL_CACHE_DIR"] == "state/cache"
    said = capsys.readouterr().err
    assert f"CONVOEVAL_OUTPUT ignored: {outside} lies outside the .env file's folder" in said, said
    assert "CONVOEVAL_HOME ignored: /var lies outside" in said, said


def test_the_otel_exporters_log_lines_are_redacted(tmp_path: Path) -> None:
    """`report --otel --otel-endpoint URL?token=...`: the OpenTelemetry SDK logs its retries
    itself, straight to stderr past convoeval's redaction, quoting the endpoint's URL: the token
    was on the terminal. Its log lines are redacted now (the endpoint here refuses connections)."""
    import socket

    pytest.importorskip("opentelemetry.exporter.otlp.proto.http")
    token = "otlp-token-9988776655"
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    suite = write(tmp_path / "s.eval.yaml", "tests:\n  - {id: a, input: hi}\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")} | {"OTEL_EXPORTER_OTLP_TIMEOUT": "2"}
    command = [sys.executable, "-m", "convoeval"]
    ran = subprocess.run([*command, "run", str(suite), "--target", "scripted", "-o", "r.jsonl"], cwd=tmp_path, env=env)
    assert ran.returncode == 0
    endpoint = f"http://127.0.0.1:{port}/v1/traces?token={token}"
    done = subprocess.run(
        [*command, "report", "r.jsonl", "--otel", "--otel-endpoint", endpoint],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and "/v1/traces?token=[REDACTED]" in done.stderr, done.stderr
    assert token not in done.stdout + done.stderr
