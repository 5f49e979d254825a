"""The REAL `claude` and `codex` CLIs inside the workspace's bubblewrap sandbox, against the
loopback fake model servers: three turns with tool use, each resuming the session kept in the
conversation's private HOME; the agent's shell sees neither a host file outside the workspace
nor a host secret, and only the key the target names reaches the model server.

Skipped (with the reason) only where bubblewrap or npm is missing (see test_agent_clis_real).
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from convoeval import _secrets
from convoeval._sandbox._cgroup import PREFIX, _place
from convoeval.errors import TargetError
from convoeval.targets._base import TargetConfig
from convoeval.targets.agents import _boxed
from convoeval.targets.agents._boxed import AgentHomes, boxed_env
from convoeval.targets.agents._settings import AgentCliSettings

from . import test_agent_clis_real as real
from .agent_servers import FakeAnthropic, FakeModelServer, FakeResponses, Rule
from .conftest import write
from .test_agent_clis_real import (
    ANTHROPIC_KEY,
    OPENAI_KEY,
    SYSTEM,
    claude_target,
    codex_target,
    grade_session,
    run_suite,
    turn_calls,
)

clis = real.clis  # the installed CLIs (skips where npm is missing)
agent_home = real.agent_home  # convoeval's HOME a temp folder, both providers' keys set

OTHER_SECRET = "other-SECRET-token-never-passed-0003"
FILE_SECRET = "host-file-SECRET-never-read-0004"
SECOND_KEY = "second-provider-key-SECRET-0005"

#: The real-CLI conversation (test_agent_clis_real.ORDERS) in a workspace, where the CLI runs in
#: bubblewrap; the workspace is kept for the test to look into.
SUITE = real.ORDERS.replace("  - id: orders\n", "  - id: boxed\n    workspace: {keep: always}\n")
assert "workspace:" in SUITE


@pytest.fixture
def bwrap() -> None:
    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap is missing: agent CLIs run in the workspace's sandbox with `bwrap` (apt bubblewrap)")


@pytest.fixture
def secrets(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A secret in a host file outside the workspace and outside /tmp (which every sandbox
    hides anyway), readable by any user, one in convoeval's environment, and a second key
    variable of each provider (only the first set one goes in)."""
    monkeypatch.setenv("OTHER_SECRET_TOKEN", OTHER_SECRET)
    monkeypatch.setenv("ANTHROPIC_AUTH_TOKEN", SECOND_KEY)
    monkeypatch.setenv("CODEX_API_KEY", SECOND_KEY)
    outside = Path("/var/tmp") / f"convoeval-outside-{uuid.uuid4().hex}"
    outside.mkdir(mode=0o755)
    secret = outside / "secret.txt"
    secret.write_text(FILE_SECRET)
    secret.chmod(0o644)
    try:
        yield secret
    finally:
        shutil.rmtree(outside)


def rules(tool: str, secret: Path, server: FakeModelServer) -> list[Rule]:
    """Turn 1 writes a file in the workspace; turn 2 tries the host file, prints the environment
    of every process it can see and posts to the model server's `/probe` (does the command have the network?); turn 3
    answers from the resumed session."""
    arg = "command" if tool == "Bash" else "cmd"
    probe = f"python3 -c \"import urllib.request as u; u.urlopen(u.Request('{server.url}/probe', data=b'1'))\""
    environs = "cat /proc/[0-9]*/environ 2>/dev/null | tr '\\000' '\\n'"  # every process it can see
    return [
        Rule("Create an order", "Created order {output}.", (tool, {arg: "echo ORD-1042 > order.txt && cat order.txt"})),
        Rule(
            r"^- what is the status of ORD-1042\?$",
            "ORD-1042 is shipped.",
            (tool, {arg: f"cat {secret}; {environs}; env; echo HOME-IS=$HOME; {probe}"}),
        ),
        Rule(r"^--help me cancel ORD-1042$", "ORD-1042 is cancelled."),
    ]


def check_boxed_run(server: FakeModelServer, result, raw: str, key: str, absent_key: str) -> None:
    """What every sandboxed conversation must show, whichever CLI ran it."""
    assert result.verdict == "pass", result.model_dump_json(indent=1)[:4000]
    assert result.session == "resumed"
    turns = [s for s in result.scores if s.type == "turn"]
    assert turns[0].session_id and {t.session_id for t in turns} == {turns[0].session_id}
    per_turn = turn_calls(server)
    assert len(per_turn) == 3
    # Every turn resumed the session from the private HOME: turn 3's request holds turn 1's words.
    assert "Create an order for a book" in json.dumps(per_turn[2][0].body)
    # Turn 2's command ran inside: the host file is not there, HOME is the sandbox's.
    output = server.tool_output(per_turn[1][-1].body) or ""
    assert "No such file or directory" in output and "HOME-IS=/run/home" in output, output
    # Nothing the server received holds the host file, the other secrets, or the other CLI's key.
    received = json.dumps([(r.headers, r.body) for r in server.requests])
    for secret in (FILE_SECRET, OTHER_SECRET, SECOND_KEY, absent_key):
        assert secret not in received
    assert "OTHER_SECRET_TOKEN" not in output
    assert key not in raw  # nor does the result hold the key the CLI had
    # The workspace was the CLI's writable working directory; its HOME is gone with the conversation.
    kept = Path(result.trials[0].workspace or "")
    assert (kept / "order.txt").read_text() == "ORD-1042\n"
    assert homes_left(kept) == []
    # Lent to the CLI's user for each turn as root, it is owned as before, the CLI's file too.
    owners = {(p.lstat().st_uid, p.lstat().st_gid) for p in [kept, *kept.rglob("*")]}
    assert owners == {(os.getuid(), os.getgid())}, owners
    shutil.rmtree(kept)
    # As root each turn ran in a pids cgroup of its own (test_sandbox_pids.py), gone with the turn.
    base, _ = _place()
    assert base is None or list(base.glob(f"{PREFIX}{os.getpid()}.*")) == []


def homes_left(kept_workspace: Path) -> list[Path]:
    """The private HOMEs still on disk of the conversation that ran in this (kept) workspace."""
    original = kept_workspace.name.replace("convoeval-kept-", "convoeval-ws-", 1)
    return list(Path(tempfile.gettempdir()).glob(f"{original}-agent-home-*"))


def test_claude_runs_in_the_sandbox_and_resumes_every_turn(
    bwrap: None,
    clis: dict[str, Path],
    agent_home: Path,
    secrets: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    cli,
) -> None:
    server = FakeAnthropic()
    server.rules = rules("Bash", secrets, server)
    with server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        target = claude_target(clis, keep_sessions="sessions")
        suite = SUITE % {"system": SYSTEM, "tool": "Bash"}
        result, raw = run_suite(tmp_path, suite, target, sandbox="bubblewrap")
    check_boxed_run(server, result, raw, ANTHROPIC_KEY, OPENAI_KEY)
    # The target's key is the one that reached the model server, on every call.
    assert {r.headers.get("x-api-key") for r in server.model_calls} == {ANTHROPIC_KEY}
    # The trade-off: the CLI needs the network, so the commands it runs have it too.
    assert [r.path for r in server.requests if r.path == "/probe"] == ["/probe"]
    # The CLI never used convoeval's HOME; its session file was kept where the target said.
    assert not (agent_home / ".claude").exists()
    kept = list((tmp_path / "sessions").glob("*.jsonl"))
    assert [p.stem for p in kept] == [result.scores[0].session_id]
    assert ANTHROPIC_KEY not in kept[0].read_text()  # turn 2 ran `env`: its output is in the session, redacted
    grade_session(cli, tmp_path, kept[0], "Bash", ["Create an order for a book", "ORD-1042 is cancelled."])


def test_codex_runs_in_the_sandbox_and_resumes_every_turn(
    bwrap: None, clis: dict[str, Path], agent_home: Path, secrets: Path, tmp_path: Path, cli
) -> None:
    server = FakeResponses()
    server.rules = rules("exec_command", secrets, server)
    with server:
        target = codex_target(clis, server, tmp_path, keep_sessions="sessions")
        suite = SUITE % {"system": SYSTEM, "tool": "command_execution"}
        result, raw = run_suite(tmp_path, suite, target, sandbox="bubblewrap")
    check_boxed_run(server, result, raw, OPENAI_KEY, ANTHROPIC_KEY)
    assert {r.headers.get("authorization") for r in server.model_calls} == {f"Bearer {OPENAI_KEY}"}
    # Codex's own sandbox (`--sandbox workspace-write`) keeps its commands off the network.
    assert not [r for r in server.requests if r.path == "/probe"]
    # Per-turn tokens come from the rollout in the private HOME, as on the host.
    for entry, calls in zip([s for s in result.scores if s.type == "turn"], turn_calls(server), strict=True):
        assert entry.token_usage is not None
        assert entry.token_usage.input_tokens == sum(r.usage["input"] for r in calls)
    assert not (agent_home / ".codex").exists()
    kept = list((tmp_path / "sessions").glob("rollout-*.jsonl"))
    assert len(kept) == 1 and result.scores[0].session_id in kept[0].name
    assert OPENAI_KEY not in kept[0].read_text()  # turn 2 ran `env`: its output is in the rollout, redacted
    grade_session(cli, tmp_path, kept[0], "command_execution", ["Create an order for a book", "ORD-1042 is cancelled."])


def test_the_key_the_target_names_reaches_the_cli_in_the_sandbox(
    bwrap: None, clis: dict[str, Path], agent_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`api_key_env` names the key: the CLI in the sandbox gets it as ANTHROPIC_API_KEY, the
    variable it reads (before: under its own name only, and "Not logged in")."""
    monkeypatch.setenv("TEAM_KEY", SECOND_KEY)
    with FakeAnthropic(real.RULES) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        target = claude_target(clis, api_key_env="TEAM_KEY")
        result, raw = run_suite(tmp_path, SUITE % {"system": SYSTEM, "tool": "Bash"}, target, sandbox="bubblewrap")
    assert result.execution_status != "execution_error", result.error
    assert {r.headers.get("x-api-key") for r in server.model_calls} == {SECOND_KEY}
    assert SECOND_KEY not in raw
    shutil.rmtree(result.trials[0].workspace or "")


def processes_with(marker: str) -> list[str]:
    """Command lines of the running processes that hold `marker`."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            text = cmdline.read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
        except OSError:
            continue
        if marker in text:
            found.append(text)
    return found


def test_a_hung_turn_ends_at_the_timeout_and_leaves_no_process(
    bwrap: None, clis: dict[str, Path], agent_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """bubblewrap starts the CLI in a session of its own: killing convoeval's process group is
    not enough; `--die-with-parent` and the PID namespace take the CLI down with bwrap."""
    marker = f"MARK-{uuid.uuid4().hex}"
    with FakeAnthropic(real.RULES, faults=["hang"]) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        suite = SUITE % {"system": marker, "tool": "Bash"}
        result, _ = run_suite(tmp_path, suite, claude_target(clis, timeout_s=6), sandbox="bubblewrap")
        assert result.execution_status == "execution_error"
        assert "timed out after 6 s" in (result.error or ""), result.error
        assert len(server.model_calls) >= 1  # the CLI in the sandbox reached the server, then hung
        time.sleep(0.2)
        assert processes_with(marker) == []
    kept = Path(result.trials[0].workspace or "")
    assert kept.is_dir() and homes_left(kept) == []  # a first turn that started no session leaves no HOME
    shutil.rmtree(kept)


def test_without_bwrap_an_agent_in_a_workspace_fails_saying_how_to_fix_it(
    clis: dict[str, Path], agent_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))  # no bwrap on PATH
    monkeypatch.delenv("CONVOEVAL_SANDBOX", raising=False)
    with FakeAnthropic(real.RULES) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        result, _ = run_suite(tmp_path, SUITE % {"system": SYSTEM, "tool": "Bash"}, claude_target(clis))
    assert result.execution_status == "execution_error"
    assert "runs in the workspace's sandbox" in (result.error or "")
    assert "apt-get install bubblewrap" in (result.error or "") and "--sandbox none" in (result.error or "")
    assert server.requests == []  # failed before the CLI started: nothing ran unconfined
    shutil.rmtree(result.trials[0].workspace or "")  # kept (`keep: always`), empty


def test_the_docker_sandbox_does_not_run_agent_clis_and_says_what_to_choose(
    clis: dict[str, Path], agent_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with FakeAnthropic(real.RULES) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        target = claude_target(clis)
        result, _ = run_suite(tmp_path, SUITE % {"system": SYSTEM, "tool": "Bash"}, target, sandbox="docker")
    assert result.execution_status == "execution_error"
    assert "agent CLIs do not run in the docker sandbox" in (result.error or "")
    assert "--sandbox bubblewrap" in (result.error or "") and server.requests == []
    shutil.rmtree(result.trials[0].workspace or "")  # kept (`keep: always`), empty


CLAUDE_KEYS = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")


def test_the_sandboxed_environment_holds_one_key_and_what_the_target_names(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in {
        "ANTHROPIC_API_KEY": "key-1",
        "ANTHROPIC_AUTH_TOKEN": "key-2",
        "MY_KEY": "key-3",
        "OTHER_SECRET_TOKEN": OTHER_SECRET,
        "ANTHROPIC_BASE_URL": "http://127.0.0.1:9",
        "PASSED_ON": "yes",
    }.items():
        monkeypatch.setenv(name, value)
    settings = AgentCliSettings(env={"TMPDIR": "/elsewhere", "SET_HERE": "1"}, env_passthrough=["PASSED_ON"])
    config = TargetConfig(name="c", provider="claude-code")
    env, secrets = boxed_env(config, settings, CLAUDE_KEYS, ("ANTHROPIC_BASE_URL",))
    assert env["ANTHROPIC_API_KEY"] == "key-1" and secrets == ["key-1"]  # the provider's first key that is set
    assert not {"ANTHROPIC_AUTH_TOKEN", "MY_KEY", "OTHER_SECRET_TOKEN"} & set(env)
    assert env["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:9" and env["PASSED_ON"] == "yes" and env["SET_HERE"] == "1"
    assert env["HOME"] == "/run/home" and env["TMPDIR"] == "/tmp"  # the sandbox's, whatever `env` says
    # The key the target names, and only it: as the variable the CLI reads, and under its own name.
    env, secrets = boxed_env(config.model_copy(update={"api_key_env": "MY_KEY"}), settings, CLAUDE_KEYS, ())
    assert env["ANTHROPIC_API_KEY"] == env["MY_KEY"] == "key-3" and secrets == ["key-3"]
    assert "ANTHROPIC_AUTH_TOKEN" not in env
    # A key the target gives itself.
    given = TargetConfig(name="c", provider="claude-code", api_key="key-4")
    env, secrets = boxed_env(given, settings, CLAUDE_KEYS, ())
    assert env["ANTHROPIC_API_KEY"] == "key-4" and secrets == ["key-4"] and "ANTHROPIC_AUTH_TOKEN" not in env
    # One of the CLI's own variables, named: given as is.
    named = config.model_copy(update={"api_key_env": "ANTHROPIC_AUTH_TOKEN"})
    env, secrets = boxed_env(named, settings, CLAUDE_KEYS, ())
    assert env["ANTHROPIC_AUTH_TOKEN"] == "key-2" and "ANTHROPIC_API_KEY" not in env
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    env, secrets = boxed_env(config, settings, CLAUDE_KEYS, ())
    assert env["ANTHROPIC_AUTH_TOKEN"] == "key-2" and "ANTHROPIC_API_KEY" not in env
    # A named variable that is not set is an error, not a run with another key.
    monkeypatch.delenv("UNSET_KEY", raising=False)
    with pytest.raises(TargetError, match=r"c: no API key: set UNSET_KEY \(api_key_env\)"):
        boxed_env(config.model_copy(update={"api_key_env": "UNSET_KEY"}), settings, CLAUDE_KEYS, ())


def test_kept_session_files_are_copied_redacted_line_by_line_and_bounded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The agent's commands write its HOME: a Bash command made the Claude Code session file 700 MB,
    which `keep_sessions` read whole on the host (convoeval's memory went from 90 MB to 3.4 GB)."""
    monkeypatch.setattr(_boxed, "MAX_SESSION_LINE", 2**20)  # 16 MB and 256 MB in a run: smaller here
    monkeypatch.setattr(_boxed, "MAX_SESSION_BYTES", 4 * 2**20)
    secret = "sk-session-SECRET-" + uuid.uuid4().hex
    _secrets.remember(secret)
    home = tmp_path / "home"
    session = write(
        home / ".claude" / "projects" / "p" / "s1.jsonl",
        f'{{"env": "{secret}"}}\n{{"big": "{"x" * 2**21}"}}\n{{"after": 1}}\n' + '{"n": 1}\n' * 2**20,
    )
    homes = AgentHomes(keep=tmp_path / "kept")
    homes.settle(home, "s1")
    homes.end("s1")
    kept = tmp_path / "kept" / session.name
    lines = kept.read_text().splitlines()
    assert lines[:3] == ['{"env": "[REDACTED]"}', '{"convoeval": "a line over 1 MB left out"}', '{"after": 1}']
    assert lines[-1] == '{"convoeval": "cut at 4 MB"}' and kept.stat().st_size < 4 * 2**20 + 100
    assert not home.exists()


def test_a_kept_session_file_keeps_no_set_user_id_bit_and_replaces_a_link_at_its_name(tmp_path: Path) -> None:
    """As root the CLI runs as `nobody`, which may `chmod u+s` a file it wrote in its HOME: root's
    copy took its mode (`copystat`) and was a set-user-ID root program. And a link a hook left at
    the copy's name (`keep_sessions` often lies in the eval folder) was written through."""
    home = tmp_path / "home"
    session = write(home / ".claude" / "projects" / "p" / "s1.jsonl", '{"n": 1}\n')
    session.chmod(0o6755)
    written = session.stat().st_mtime_ns
    outside = write(tmp_path / "outside.txt", "mine\n")
    (tmp_path / "kept").mkdir()
    (tmp_path / "kept" / "s1.jsonl").symlink_to(outside)
    homes = AgentHomes(keep=tmp_path / "kept")
    homes.settle(home, "s1")
    homes.end("s1")
    copy = tmp_path / "kept" / "s1.jsonl"
    assert not copy.is_symlink() and copy.read_text() == '{"n": 1}\n'
    assert outside.read_text() == "mine\n"
    assert not copy.stat().st_mode & (stat.S_ISUID | stat.S_ISGID)
    assert copy.stat().st_mtime_ns == written
