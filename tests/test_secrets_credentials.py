"""Credentials a target sends other than its API key: header values and URL parameters filled
from variables whose names do not look secret (`${{ GW_AUTH }}`, `?code=` of Azure Functions),
echoed back by the model. They reach no result file, report, store table, cache or terminal."""

from __future__ import annotations

import json
import sqlite3
import uuid
from pathlib import Path

import pytest

from convoeval import _secrets
from convoeval.testing import FakeOpenAIServer

from .conftest import write


def test_credentials_in_headers_and_urls_are_found_nowhere(
    cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gateway, bearer, code, odd, param = (f"{n}-{uuid.uuid4().hex}" for n in ("gw", "bearer", "code", "odd", "zz"))
    monkeypatch.setenv("GW_AUTH", gateway)
    monkeypatch.setenv("MY_GATEWAY", bearer)  # a name no pattern would call secret
    monkeypatch.setenv("FUNC", code)
    monkeypatch.setenv("ODD", odd)
    monkeypatch.setenv("ZZ", param)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-" + uuid.uuid4().hex)
    write(
        tmp_path / "s.eval.yaml", "tests:\n  - id: t1\n    input: hi\n    assertions: [{type: contains, value: sent}]\n"
    )
    echo = f"you sent {gateway}, {bearer}, {odd}, {param} and {code} (Bearer {bearer})"
    with FakeOpenAIServer(reply=lambda body: echo) as server:
        write(
            tmp_path / "targets.yaml",
            f"""\
targets:
  - name: t
    provider: openai
    model: m
    base_url: "{server.base_url}?code=${{{{ FUNC }}}}&api-version=2024-06-01&zz=${{{{ ZZ }}}}"
    headers: {{X-Gateway-Auth: "${{{{ GW_AUTH }}}}", Authorization: "Bearer ${{{{ MY_GATEWAY }}}}", X-Gw: "${{{{ ODD }}}}"}}
""",
        )
        out = err = ""
        for suffix in ("jsonl", "json", "html", "xml", "md"):
            code_, stdout, stderr = cli("run", "s.eval.yaml", "--target", "t", "--store", "state", "-o", f"r.{suffix}")
            assert code_ == 0, stderr
            out, err = out + stdout, err + stderr
        assert server.requests, "the model was called"
    texts = {"terminal": out + err}
    for path in tmp_path.rglob("*"):
        if path.is_file() and path.suffix != ".sqlite" and path.name not in ("targets.yaml", "s.eval.yaml"):
            texts[str(path)] = path.read_text(errors="replace")
    for db in tmp_path.rglob("*.sqlite"):
        with sqlite3.connect(db) as conn:
            for (table,) in conn.execute("select name from sqlite_master where type = 'table'"):
                texts[f"{db.name}:{table}"] = repr(conn.execute(f"select * from {table}").fetchall())
    assert any(name.endswith(":responses") for name in texts) and "r.html" in str(list(texts))
    assert "you sent [REDACTED]" in texts[str(tmp_path / "r.jsonl")]
    for name, text in texts.items():
        for secret in (gateway, bearer, code, odd, param):
            assert secret not in text, f"{secret[:6]}... leaked into {name}"


def test_credentials_in_a_request_body_are_found_nowhere(cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An `http` target's `body: {auth: {api_key: ...}}` and an openai target's `params:
    {user_token: ...}` (from variables whose names do not look secret) were stored as a server
    echoed them back (FastAPI's 422 answer quotes the request body)."""
    token, key = (f"{n}-{uuid.uuid4().hex}" for n in ("tok", "key"))
    monkeypatch.setenv("P", token)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-" + uuid.uuid4().hex)
    write(
        tmp_path / "s.eval.yaml", "tests:\n  - id: t1\n    input: hi\n    assertions: [{type: contains, value: hi}]\n"
    )
    with FakeOpenAIServer(reply=json.dumps) as server:
        write(
            tmp_path / "targets.yaml",
            f"""\
targets:
  - {{name: o, provider: openai, model: m, base_url: "{server.base_url}", params: {{user_token: "${{{{ P }}}}"}}}}
  - name: h
    provider: http
    url: "{server.base_url}/chat/completions"
    body: {{message: "{{{{ prompt }}}}", auth: {{apiKey: "{key}", user: bot-user}}, keywords: travel-words}}
    reply_path: $.choices[0].message.content
""",
        )
        for target in ("o", "h"):
            code, out, err = cli("run", "s.eval.yaml", "--target", target, "--store", "state", "-o", f"{target}.jsonl")
            assert code == 0, out + err
            stored = (tmp_path / f"{target}.jsonl").read_text()
            assert "[REDACTED]" in stored and token not in stored + out + err and key not in stored + out + err
    assert "bot-user" in stored and "travel-words" in stored  # fields not named like credentials
    for db in tmp_path.rglob("*.sqlite*"):
        assert token.encode() not in db.read_bytes() and key.encode() not in db.read_bytes(), db


def test_every_header_and_parameter_but_the_plain_ones_is_remembered() -> None:
    token = uuid.uuid4().hex
    _secrets.remember_credentials(
        {"Content-Type": "application/json-" + token[:4], "X-Api-Key": "k" + token, "X-Gw": "g" + token},
        f"https://user:pw{token}@h.example/v1?api-version=2024-06-01&sig=s{token}&zz=z{token}",
    )
    text = f"k{token} g{token} pw{token} s{token} z{token} application/json-{token[:4]} 2024-06-01"
    assert _secrets.redact(text) == "[REDACTED] " * 5 + f"application/json-{token[:4]} 2024-06-01"


def test_a_secret_an_agent_process_is_given_in_env_is_redacted_from_what_it_prints(
    cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`env: {GITHUB_TOKEN: "${{ GH }}"}` of a `cli` agent: the value (from a variable whose
    name does not look secret) was stored as the agent printed it, in its reply and its error."""
    token = "gh-" + uuid.uuid4().hex
    monkeypatch.setenv("GH", token)
    write(
        tmp_path / "targets.yaml",
        "targets:\n  - name: c\n    provider: cli\n"
        "    command: \"sh -c 'echo agent says $GITHUB_TOKEN; echo failed with $GITHUB_TOKEN >&2; exit 3'\"\n"
        '    env: {GITHUB_TOKEN: "${{ GH }}"}\n',
    )
    write(tmp_path / "s.eval.yaml", "tests:\n  - id: t1\n    input: hi\n    assertions: [{type: contains, value: a}]\n")
    code, out, err = cli("run", "s.eval.yaml", "--target", "c", "--store", "state", "-o", "r.jsonl")
    assert code == 3, out + err  # the agent failed: an execution error
    stored = (tmp_path / "r.jsonl").read_text()
    assert "failed with [REDACTED]" in stored
    for db in tmp_path.rglob("*.sqlite*"):  # the databases and their write-ahead logs
        assert token.encode() not in db.read_bytes(), db
    assert token not in stored + out + err


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("htp://h.example/v1?code=${{ QK }}", "'htp://h.example/v1?...' is not an http(s) URL"),
        ("http://u:${{ QK }}@h.example:99999/v1", "'http://h.example:99999/v1': Port out of range"),
    ],
)
def test_a_bad_url_is_refused_without_showing_its_credentials(
    cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, url: str, shown: str
) -> None:
    """The load error quoted the whole `base_url`, a `${{ QK }}` credential in it (its name not
    secret-looking, not yet known) included, to the terminal and CI logs."""
    secret = "qk-" + uuid.uuid4().hex
    monkeypatch.setenv("QK", secret)
    write(tmp_path / "targets.yaml", f'targets:\n  - {{name: c, provider: openai, model: m, base_url: "{url}"}}\n')
    write(tmp_path / "s.eval.yaml", "tests:\n  - id: t1\n    input: hi\n")
    code, out, err = cli("run", "s.eval.yaml", "--target", "c", "--store", "state")
    assert code == 2 and shown in out + err, out + err
    assert secret not in out + err


@pytest.mark.parametrize("backend", [["--processes", "2"], ["--backend", "ray"]], ids=["processes", "ray"])
def test_a_worker_keeps_the_targets_credentials_from_the_commands_it_starts(
    cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, backend: list[str]
) -> None:
    """A worker (`--processes`, Ray) gets the target configs pickled, and unpickling skipped what
    makes their credentials known; a Ray task gets only its own roles' configs. So a code-grader
    (and `verify`, which runs the model's code) got another target's header value, read from
    `${{ MY_GATEWAY }}`, in its environment; one process did not."""
    if backend[0] == "--backend":
        pytest.importorskip("ray")
        monkeypatch.delenv("RAY_ADDRESS", raising=False)
    gateway = f"gw-{uuid.uuid4().hex}"
    monkeypatch.setenv("MY_GATEWAY", gateway)  # a name no pattern would call secret
    monkeypatch.setenv("OPENAI_API_KEY", "sk-" + uuid.uuid4().hex)
    write(tmp_path / "grader.py", "import json, os\nprint(json.dumps({'pass': 'MY_GATEWAY' not in os.environ}))\n")
    write(
        tmp_path / "s.eval.yaml",
        "tests:\n  - id: t1\n    input: hi\n    assertions: [{type: code-grader, command: [python3, grader.py]}]\n",
    )
    with FakeOpenAIServer(reply=lambda body: "ok") as server:
        targets = "".join(
            f"  - name: {name}\n    provider: openai\n    model: m\n    base_url: {server.base_url}\n{more}"
            for name, more in (("t", ""), ("gw", "    headers: {X-Gw: '${{ MY_GATEWAY }}'}\n"))
        )
        write(tmp_path / "targets.yaml", "targets:\n" + targets)
        code, out, err = cli("run", "s.eval.yaml", "--target", "t", *backend, "--no-cache", "-o", "r.jsonl")
    assert code == 0, out + err
    assert json.loads((tmp_path / "r.jsonl").read_text())["verdict"] == "pass", out + err
