"""The defects an attacker and a fault injector found (issue 27, D4-D15 but D12), each as the
probe that showed it: real files, real HTTP, real `convoeval` processes."""

from __future__ import annotations

import asyncio
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import pytest

import convoeval
from convoeval._sandbox._cgroup import process_limit, rlimit_holds
from convoeval._templates import TemplateProblem, render
from convoeval.graders import GradeContext
from convoeval.graders._text import Regex
from convoeval.report.viewer import Viewer
from convoeval.results import ToolCall
from convoeval.run._workspace import WORKSPACE_PREFIX, sweep_stale_workspaces
from convoeval.targets._tool_settings import ToolAgentSettings
from convoeval.targets.agents._tools import ToolBox

from .conftest import write

SCRIPTED = "targets:\n  - {name: bot, provider: scripted, default: done}\n"


def _grade(assertion: dict, reply: str):
    context = GradeContext(level="turn", output=reply, history=[], transcript=[])
    return asyncio.run(Regex.model_validate({"type": "regex", **assertion}).evaluate(context))


def test_a_catastrophic_regex_is_a_grader_error_naming_it_not_a_hang() -> None:
    """D4: `^(a+)+$` on a 38-character reply hung the run, deaf to Ctrl-C."""
    started = time.monotonic()
    assert _grade({"value": "^(a+)+$"}, "a" * 38 + "!").verdict == "fail"  # the probe: decided at once
    assert time.monotonic() - started < 1
    outcome = _grade({"value": "^(a|aa)+$", "timeout_s": 0.2}, "a" * 38 + "!")  # backtracks even in `regex`
    assert time.monotonic() - started < 5
    assert outcome.verdict == "error" and "/^(a|aa)+$/" in (outcome.error or "") and "stopped" in (outcome.error or "")
    assert _grade({"value": r"ref: [A-Z]{3}"}, "ref: ABC").verdict == "pass"


def _box(tmp_path: Path, chars: int = 2000) -> tuple[ToolBox, Path]:
    root = tmp_path / "ws"
    root.mkdir(exist_ok=True)
    return ToolBox(ToolAgentSettings(output_chars=chars), tmp_path, "bot"), root


def _call(box: ToolBox, root: Path, name: str, **args: str) -> ToolCall:
    return asyncio.run(box.run(ToolCall(name=name, arguments=args), root))


def test_list_files_and_read_file_stop_at_the_output_cap_while_reading(tmp_path: Path) -> None:
    """D5: list_files sent 228,903 characters with a 2,000 limit; read_file read 300 MB whole."""
    box, root = _box(tmp_path)
    for k in range(200):  # about 9,000 characters of names
        (root / f"file-with-a-fairly-long-name-{k:05d}.txt").touch()
    listing = _call(box, root, "list_files").output
    assert isinstance(listing, str) and len(listing) < 2100 and listing.endswith("[... listing cut at 2000 characters]")
    with (root / "big.log").open("wb") as big:
        big.truncate(300 * 1024 * 1024)  # sparse: 300 MB to read, no disk used
    tracemalloc.start()
    text = _call(box, root, "read_file", path="big.log").output
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 5_000_000 and isinstance(text, str) and text.endswith("characters of a 314572800-byte file]")


def test_hard_links_out_of_the_workspace_are_refused_like_symlinks(tmp_path: Path) -> None:
    """D10: a hard link made by `bash` let read_file/edit_file read and change a file outside."""
    box, root = _box(tmp_path)
    secret = tmp_path / "secret.txt"
    secret.write_text("password=hunter2\n")
    os.link(secret, root / "innocent.txt")
    read = _call(box, root, "read_file", path="innocent.txt")
    edit = _call(box, root, "edit_file", path="innocent.txt", old="hunter2", new="changed")
    write_ = _call(box, root, "write_file", path="innocent.txt", content="overwritten")
    for call in (read, edit, write_):
        assert call.error == "innocent.txt: a hard link (it may be a file outside the workspace); refused"
    assert secret.read_text() == "password=hunter2\n"


def test_a_full_disk_under_the_results_file_is_one_line_and_exit_2(tmp_path: Path) -> None:
    """D6: a 64-line traceback and exit 1; now one line and exit 2, like the store's full disk."""
    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap makes the small full filesystem (.ci/run installs it)")
    suite = write(tmp_path / "s.eval.yaml", "execution: {target: scripted}\ntests:\n  - {id: t, input: hi}\n")
    full = tmp_path / "full"
    full.mkdir()
    script = f"head -c 200000 /dev/zero > {full}/fill 2>/dev/null; exec {sys.executable} -m convoeval run {suite} -o {full}/r.jsonl --no-cache"
    ran = subprocess.run(
        [
            "bwrap",
            "--dev-bind",
            "/",
            "/",
            "--size",
            "65536",
            "--tmpfs",
            str(full),
            "--chdir",
            str(tmp_path),
            "sh",
            "-c",
            script,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert ran.returncode == 2, ran.stderr
    assert (
        "Traceback" not in ran.stderr
        and f"cannot write results to {full}/r.jsonl: No space left on device" in ran.stderr
    )
    assert len(ran.stderr.strip().splitlines()) <= 2
    # the results so far are in the store: the line says how to finish the run (it did not)
    assert "; results committed so far are kept: convoeval run --resume " in ran.stderr, ran.stderr


def test_output_with_a_trailing_slash_is_refused(tmp_path: Path, cli) -> None:
    """D15: `-o adir.jsonl/` wrote a file named adir.jsonl."""
    write(tmp_path / "s.eval.yaml", "execution: {target: scripted}\ntests:\n  - {id: t, input: hi}\n")
    code, _, err = cli("run", "s.eval.yaml", "-o", "adir.jsonl/", "--no-cache")
    assert code == 2 and "ends with a slash" in err and not (tmp_path / "adir.jsonl").exists()
    with pytest.raises(convoeval.ConfigError, match="ends with a slash"):
        convoeval.run(tmp_path / "s.eval.yaml", output="adir.jsonl/", store=False, cache=False)


def test_a_test_id_repeated_across_included_files_is_a_load_error_naming_both(tmp_path: Path, cli) -> None:
    """D7: the same id in two files of one suite ran twice under one store key, silently."""
    write(tmp_path / "a.yaml", "- id: greet\n  input: hi\n")
    write(tmp_path / "b.yaml", "- id: other\n  input: yo\n- id: greet\n  input: hello\n")
    write(tmp_path / "s.eval.yaml", "execution: {target: scripted}\ntests: [file://a.yaml, file://b.yaml]\n")
    code, out, err = cli("validate", "s.eval.yaml")
    text = out + err
    assert code == 2 and "b.yaml:3" in text and "duplicate test id 'greet'" in text and "a.yaml:1" in text


def _raw_post(url: str, cookie: str, length: str | None, body: bytes = b"") -> tuple[int, str]:
    host, port = url.split("//")[1].rstrip("/").split(":")
    head = f"POST /api/labels HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\nCookie: {cookie}\r\n"
    if length is not None:
        head += f"Content-Length: {length}\r\n"
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(head.encode() + b"\r\n" + body)
        response = http.client.HTTPResponse(sock)
        response.begin()
        return response.status, response.read().decode()


def test_the_viewer_refuses_bad_lengths_and_labels_for_unknown_runs(tmp_path: Path) -> None:
    """D8: `Content-Length: -1` read an unbounded body, `abc` crashed, unknown runs got labels."""
    write(tmp_path / "targets.yaml", SCRIPTED)
    suite = write(tmp_path / "s.eval.yaml", "execution: {target: bot}\ntests:\n  - {id: t, input: hi}\n")
    store = tmp_path / "runs.sqlite"
    report = convoeval.run(suite, store=store, cache=False)
    label = {"suite": "s", "test_id": "t", "target": "bot", "entry": "turn-1", "item": "x", "rater": "ana"}
    with Viewer(store, port=0, scale="pass-fail") as viewer:
        for length in ("-1", "abc", None):
            status, body = _raw_post(viewer.url, viewer.cookie, length, b"{}")
            assert status == 400 and "Content-Length" in body, (length, body)
        unknown = json.dumps({**label, "run_id": "no-such-run", "label": "pass"}).encode()
        status, body = _raw_post(viewer.url, viewer.cookie, str(len(unknown)), unknown)
        assert status == 404 and "no-such-run" in body
        known = json.dumps({**label, "run_id": report.run_id, "label": "pass"}).encode()
        assert _raw_post(viewer.url, viewer.cookie, str(len(known)), known)[0] == 200


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        ("base_url: not a url", "base_url: 'not a url' is not an http(s) URL"),
        ("timeout_s: 1e999", "timeout_s"),
        ("agent: {bash_timeout_s: .inf}", "bash_timeout_s"),
    ],
)
def test_the_targets_file_checks_urls_and_limits_at_load(tmp_path: Path, cli, entry: str, expected: str) -> None:
    """D9: these passed validation and failed at run time (exit 3 after retries)."""
    write(tmp_path / "targets.yaml", f"targets:\n  - name: bot\n    provider: openai\n    model: m\n    {entry}\n")
    write(tmp_path / "s.eval.yaml", "execution: {target: bot}\ntests:\n  - {id: t, input: hi}\n")
    code, out, err = cli("run", "s.eval.yaml", "--no-cache")
    assert code == 2 and "targets.yaml:5" in err and expected in err, err


def test_terminal_output_escapes_control_characters_in_test_ids(tmp_path: Path, cli) -> None:
    """D11: test ids printed terminal escape sequences raw."""
    write(tmp_path / "targets.yaml", SCRIPTED)
    write(
        tmp_path / "s.eval.yaml", 'execution: {target: bot}\ntests:\n  - {id: "evil\\e[2J\\e]0;pwned\\a", input: hi}\n'
    )
    code, out, err = cli("run", "s.eval.yaml", "--no-cache")
    assert "\x1b" not in out + err and "\a" not in out + err
    assert "evil\\x1b[2J\\x1b]0;pwned\\x07" in out


@pytest.mark.parametrize(
    "template",
    [
        "{{ 'a' * 800000000 }}",
        "{{ ['a'] * 800000000 }}",
        "{{ 'a' | center(800000000) }}",
        "{{ 'ab' | indent(800000000) }}",
        "{{ '{:>800000000}'.format('a') }}",
        "{{ '%800000000s' | format('a') }}",
        "{{ '%*s' % (800000000, 'a') }}",
        "{{ 9 ** 99999999 }}",
        "{% for a in output %}{% for b in output %}{% for c in output %}{{ output }}{% endfor %}{% endfor %}{% endfor %}",
    ],
)
def test_a_template_cannot_allocate_without_bound(template: str) -> None:
    """D13: a grader prompt `{{ 'a' * 800000000 }}` allocated 2.4 GB."""
    tracemalloc.start()
    try:
        with pytest.raises(TemplateProblem, match="refused"):
            render(template, {"output": "x" * 500})
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 50_000_000
    assert render("{{ output * 3 }}|{{ '%5s' | format(output) }}|{{ output | center(5) }}", {"output": "ab"}) == (
        "ababab|   ab|  ab "
    )


def _command_lines() -> list[bytes]:
    """The command line of every process, as /proc has it (arguments ended by NUL bytes)."""
    lines = []
    for entry in Path("/proc").iterdir():
        try:
            lines.append((entry / "cmdline").read_bytes())
        except OSError:
            continue
    return lines


def _running(argv: list[str]) -> bool:
    """Whether a process runs `argv` itself (not a shell or a bubblewrap whose command line holds it)."""
    return "\0".join(argv).encode() + b"\0" in _command_lines()


def _nap() -> list[str]:
    """A `sleep` no other test or process runs: its command line is how the tests find it."""
    return ["sleep", f"{300 + os.getpid() % 97}.{time.time_ns() % 1000}"]


def _start_napping_run(tmp_path: Path, nap: list[str]) -> subprocess.Popen[bytes]:
    """A `convoeval run` whose one test's verify sleeps `nap` in its workspace."""
    write(tmp_path / "targets.yaml", SCRIPTED)
    suite = write(
        tmp_path / "s.eval.yaml",
        "execution: {target: bot}\ntests:\n  - id: t\n    mode: conversation\n    workspace: {}\n"
        f"    verify: {{command: {' '.join(nap)}}}\n    turns: [{{input: go}}]\n",
    )
    return subprocess.Popen([sys.executable, "-m", "convoeval", "run", str(suite), "--no-cache"], cwd=tmp_path)


def _gone_within(argv: list[str], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while _running(argv) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not _running(argv)


def test_stale_workspaces_are_swept_only_when_their_process_is_gone(tmp_path: Path) -> None:
    """D14: workspaces stayed in the temp folder after kill -9 or Ctrl-C; --resume left them."""
    nap = _nap()
    proc = _start_napping_run(tmp_path, nap)
    temp = Path(tempfile.gettempdir())
    deadline = time.monotonic() + 30
    mine: list[Path] = []
    while not (mine and _running(nap)) and time.monotonic() < deadline:  # the command itself runs
        mine = list(temp.glob(f"{WORKSPACE_PREFIX}{proc.pid}.*"))
        time.sleep(0.05)
    assert mine, "the run never made its workspace"
    live = Path(tempfile.mkdtemp(prefix=f"{WORKSPACE_PREFIX}{os.getpid()}.0-alive-"))  # this process: alive
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert mine[0].is_dir()  # left behind by kill -9
    # verify's command died with it (bubblewrap's --die-with-parent), at the machine's pace
    assert _gone_within(nap, 5) or shutil.which("bwrap") is None
    swept = sweep_stale_workspaces()  # (another run starting now may sweep it first: any run sweeps)
    assert not mine[0].exists() and live.is_dir() and live not in swept
    live.rmdir()


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")
@pytest.mark.skipif(not process_limit().enforced or rlimit_holds(), reason="no pids cgroup per command here")
def test_a_sandbox_left_by_kill_9_during_its_set_up_is_killed_by_the_next_run(tmp_path: Path) -> None:
    """kill -9 while bubblewrap sets the sandbox up can orphan it: bubblewrap arms its parent-death
    signal without checking that its parent still lives (0.8.0 and 0.11.1 alike). Whatever moment
    the kill lands, the next run kills what the dead run's cgroups hold (its header's check)."""
    nap = _nap()
    proc = _start_napping_run(tmp_path, nap)
    deadline = time.monotonic() + 30
    while not _bubblewrap_for(nap) and time.monotonic() < deadline:  # the earliest moment: its exec
        time.sleep(0.005)
    assert _bubblewrap_for(nap), "the run never started its sandbox"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    next_run = "from convoeval._sandbox import process_limit_note; process_limit_note()"
    subprocess.run([sys.executable, "-c", next_run], check=True, timeout=60)
    assert _gone_within(nap, 5), "the dead run's sandboxed command still runs after the next run started"
    sweep_stale_workspaces()  # and its workspace, as a run would


def _bubblewrap_for(nap: list[str]) -> bool:
    """Whether a bubblewrap whose command (its last argument, a shell's) is `nap` runs."""
    tail = b"\0" + " ".join(nap).encode() + b"\0"
    return any(line.startswith(b"bwrap\0") and line.endswith(tail) for line in _command_lines())


def test_a_results_folder_on_a_read_only_file_system_says_so(tmp_path: Path) -> None:
    """Before: "cannot create files in ro (permission denied)", for root too, on a read-only mount."""
    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap makes the read-only mount (.ci/run installs it)")
    suite = write(tmp_path / "s.eval.yaml", "execution: {target: scripted}\ntests:\n  - {id: t, input: hi}\n")
    (tmp_path / "ro").mkdir()
    ran = subprocess.run(
        [
            "bwrap",
            "--dev-bind",
            "/",
            "/",
            "--ro-bind",
            str(tmp_path / "ro"),
            str(tmp_path / "ro"),
            "--chdir",
            str(tmp_path),
        ]
        + [sys.executable, "-m", "convoeval", "run", str(suite), "-o", "ro/r.jsonl", "--no-cache"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert (ran.returncode, ran.stderr) == (
        2,
        "error: cannot write results to ro/r.jsonl: cannot create files in ro (a read-only file system)\n",
    )
