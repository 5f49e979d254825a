"""Secrets in the forms an adversarial review found them leaking in: a value holding `"` or a
backslash (results are redacted as JSON, where it is escaped), a key cut by evidence or an
error snippet before redaction, the Basic credential an HTTP client builds from a URL's
`user:password@`, and variables whose names or URLs did not look secret (`MYSQL_PWD`,
`GITHUB_PAT`, `SENTRY_DSN`, `redis://:password@host`)."""

from __future__ import annotations

import base64
import json
import sqlite3
import uuid
from pathlib import Path

import pytest

from convoeval import _secrets
from convoeval.testing import FakeOpenAIServer, Fault

from .conftest import write


def _everything_written(tmp_path: Path, out: str) -> dict[str, str]:
    """Every file the runs wrote (databases by their rows and their raw bytes) and the terminal."""
    texts = {"terminal": out}
    for path in tmp_path.rglob("*"):
        if not path.is_file() or path.name in ("targets.yaml", "s.eval.yaml"):
            continue
        if path.suffix == ".sqlite":
            with sqlite3.connect(path) as conn:
                for (table,) in conn.execute("select name from sqlite_master where type = 'table'"):
                    texts[f"{path.name}:{table}"] = repr(conn.execute(f"select * from {table}").fetchall())
        texts[str(path)] = path.read_bytes().decode("utf-8", "replace")
    return texts


def _fragments(secret: str, size: int = 8) -> set[str]:
    return {secret[i : i + size] for i in range(len(secret) - size + 1)}


def test_a_secret_holding_a_quote_or_a_backslash_is_redacted_in_every_file(
    cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    quoted, slashed = f'qt"{uuid.uuid4().hex[:16]}', f"bs\\{uuid.uuid4().hex[:16]}"
    monkeypatch.setenv("QUOTE_SECRET", quoted)
    monkeypatch.setenv("BACKSLASH_SECRET", slashed)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-" + uuid.uuid4().hex)
    write(tmp_path / "s.eval.yaml", "tests:\n  - id: t1\n    input: hi\n    assertions: [{type: contains, value: v}]\n")
    reply = f"value: {quoted} and {slashed} end"
    tool_call = {"id": "c1", "type": "function", "function": {"name": "look", "arguments": f'{{"q": "{quoted}"}}'}}
    with FakeOpenAIServer(reply=lambda body: {"content": reply, "tool_calls": [tool_call]}) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        out = ""
        for suffix in ("jsonl", "html", "xml", "md"):
            code, stdout, stderr = cli(
                "run", "s.eval.yaml", "--target", "openai:m", "--store", "state", "--cache-dir", "cache",
                "-o", f"r.{suffix}",
            )  # fmt: skip
            assert code == 0, stderr
            out += stdout + stderr
        assert server.requests
    texts = _everything_written(tmp_path, out)
    assert "value: [REDACTED] and [REDACTED] end" in texts[str(tmp_path / "r.jsonl")]
    for name, text in texts.items():
        for secret in (quoted, slashed):
            for form in (secret, secret.replace("\\", "\\\\").replace('"', '\\"'), secret[3:]):
                assert form not in text, f"{secret[:4]}... leaked into {name}"


def test_a_key_cut_by_evidence_or_an_error_snippet_leaves_nothing_of_it(
    cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`ends-with` evidence quoted the last characters of a reply holding the key, and an HTTP
    error snippet cut at 300 characters, before the key was looked for."""
    key = "sk-hunt-" + uuid.uuid4().hex[:24]
    monkeypatch.setenv("OPENAI_API_KEY", key)
    write(
        tmp_path / "s.eval.yaml",
        "tests:\n"
        "  - id: ends\n    input: hi\n"
        "    assertions: [{type: ends-with, value: not-the-ending-at-all}, {type: starts-with, value: zz}]\n"
        "  - id: fails\n    input: please fail\n    assertions: [{type: contains, value: x}]\n"
        "  - id: judged\n    input: hi\n    assertions: [The reply is fine]\n",
    )
    error_body = "e" * 281 + key + "tail" * 80
    judge = (
        "no JSON here " + "y" * 115 + key + " and more after it"
    )  # quoted, cut at 160 characters, in the grader's error
    with FakeOpenAIServer(reply=lambda body: key + "BBBBB", judge=lambda body: judge) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        server.faults.append(Fault(status=400, body=error_body, match="please fail"))
        code, stdout, stderr = cli(
            "run", "s.eval.yaml", "--target", "openai:m", "--judge", "openai:j", "--store", "state", "-o", "r.jsonl"
        )
    assert code in (1, 3), stdout + stderr
    texts = _everything_written(tmp_path, stdout + stderr)
    results = texts[str(tmp_path / "r.jsonl")]
    assert "ends with" in results and "last answer: 'no JSON here y" in results
    for name, text in texts.items():
        leaked = [f for f in _fragments(key[8:]) if f in text]
        assert not leaked, f"{leaked[0]} of the key leaked into {name}"


def test_the_basic_credential_built_from_a_url_password_is_redacted(
    cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    password = "upwd" + uuid.uuid4().hex[:16]
    basic = base64.b64encode(f"bob:{password}".encode()).decode()
    write(tmp_path / "s.eval.yaml", "tests:\n  - id: t1\n    input: hi\n    assertions: [{type: contains, value: a}]\n")
    with FakeOpenAIServer(reply=lambda body: "echo") as server:
        server.reply = lambda body: f"auth was {server.headers[-1].get('Authorization')}"
        url = server.base_url.replace("://", f"://bob:{password}@") + "?tenant=acme"
        write(tmp_path / "targets.yaml", f'targets:\n  - {{name: u, provider: openai, model: m, base_url: "{url}"}}\n')
        code, stdout, stderr = cli("run", "s.eval.yaml", "--target", "u", "--store", "state", "-o", "r.jsonl")
        assert code == 0, stdout + stderr
        assert server.headers[-1]["Authorization"] == f"Basic {basic}"
        assert server.paths == ["/v1/chat/completions?tenant=acme"]  # the query after the path, not before it
    texts = _everything_written(tmp_path, stdout + stderr)
    assert "auth was Basic [REDACTED]" in texts[str(tmp_path / "r.jsonl")]
    for name, text in texts.items():
        assert basic not in text and password not in text, name


def test_the_password_of_a_url_in_any_variable_is_redacted_alone(
    cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`DATABASE_URL=postgres://app:PW@db/x` was kept from commands, but PW alone (a driver's
    `password=PW` DSN, a model repeating it) reached the results, the store and the terminal."""
    password, token = "pgpw" + uuid.uuid4().hex[:16], "svct" + uuid.uuid4().hex[:16]
    monkeypatch.setenv("OPENAI_API_KEY", "sk-" + uuid.uuid4().hex)
    monkeypatch.setenv("DATABASE_URL", f"postgres://app:{password}@db:5432/x")
    monkeypatch.setenv("BILLING_ENDPOINT", f"https://billing.example/v1?region=eu-west-1&access_token={token}")
    write(tmp_path / "s.eval.yaml", "tests:\n  - id: t1\n    input: hi\n    assertions: [{type: contains, value: a}]\n")
    reply = f"dsn host=db user=app password={password}; token {token}; region eu-west-1"
    with FakeOpenAIServer(reply=lambda body: reply) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        code, stdout, stderr = cli("run", "s.eval.yaml", "--target", "openai:m", "--store", "state", "-o", "r.jsonl")
    assert code == 0, stdout + stderr
    texts = _everything_written(tmp_path, stdout + stderr)
    assert "password=[REDACTED]; token [REDACTED]; region eu-west-1" in texts[str(tmp_path / "r.jsonl")]
    for name, text in texts.items():
        assert password not in text and token not in text, name


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("MYSQL_PWD", "hunt-mysql-pw"),
        ("GITHUB_PAT", "ghp_huntpat1234567890"),
        ("SENTRY_DSN", "https://huntdsnkey123@o1.ingest.sentry.io/1"),
        ("REDIS_URL", "redis://:hunt-redis-pw@localhost:6379/0"),
    ],
)
def test_these_variables_are_secrets(monkeypatch: pytest.MonkeyPatch, name: str, value: str) -> None:
    monkeypatch.setenv(name, value)
    _secrets.reread_environment()
    assert name not in _secrets.scrubbed_env()
    assert "hunt" not in _secrets.redact(f"it was {value}")


@pytest.mark.parametrize("name", ["PWD", "OLDPWD", "PATH", "XDG_DATA_PATH", "PATHEXT"])
def test_these_variables_are_not(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    monkeypatch.setenv(name, "/usr/local/bin")
    assert not _secrets.SECRET_NAME.search(name)
    assert _secrets.scrubbed_env().get(name) == "/usr/local/bin"


def test_a_percent_encoded_query_credential_is_redacted_as_written_sent_and_decoded(
    cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A target URL's `?pass=S3cr%2Bt%2F...`: the run store kept it as written (only its decoded
    form was a known secret, and `pass` was no credential's name), and a server echoing the
    request (sent as `S3cr%2Bt/...`) put it in results and on the terminal."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    mark = uuid.uuid4().hex[:12]
    written, sent, decoded = f"S3cr%2Bt%2F{mark}", f"S3cr%2Bt/{mark}", f"S3cr+t/{mark}"
    write(
        tmp_path / "s.eval.yaml",
        "tests:\n  - {id: echoed, input: hi, assertions: [{type: contains, value: a}]}\n"
        "  - {id: refused, input: fail me, assertions: [{type: contains, value: a}]}\n",
    )
    with FakeOpenAIServer(reply=lambda body: "echo") as server:
        server.reply = lambda body: f"you called {server.paths[-1]}"
        error = f"no route for /v1/chat/completions?pass={written} (pass {decoded})"
        server.faults.append(Fault(status=404, body=error, match="fail me"))
        url = f"{server.base_url}?pass={written}"
        write(
            tmp_path / "targets.yaml",
            f'targets:\n  - {{name: u, provider: openai, model: m, base_url: "{url}", max_retries: 0}}\n',
        )
        code, stdout, stderr = cli("run", "s.eval.yaml", "--target", "u", "--store", "state", "-o", "r.jsonl")
        assert server.paths[0] == f"/v1/chat/completions?pass={sent}", server.paths
    assert code == 1, stdout + stderr
    texts = _everything_written(tmp_path, stdout + stderr)
    assert "you called /v1/chat/completions?pass=[REDACTED]" in texts[str(tmp_path / "r.jsonl")]
    for name, text in texts.items():
        assert mark not in text, f"the query credential leaked into {name}"


@pytest.mark.parametrize(
    ("query", "redacted"),
    [
        ("pass=hunter2x", True),
        ("pwd=hunter2x", True),
        ("pw=hunter2x", True),
        ("passwd=hunter2x", True),
        ("db_pass=hunter2x", True),
        ("user-pwd=hunter2x", True),
        ("passphrase=hunter2x", True),
        ("bypass=cache", False),
        ("compass=north", False),
        ("passenger=alice", False),
        ("page=2", False),
    ],
)
def test_query_parameters_named_like_passwords_are_redacted_in_any_text(query: str, redacted: bool) -> None:
    shown = _secrets.redact(f"GET https://h.example/v1?tenant=acme&{query}&x=1")
    assert (shown != f"GET https://h.example/v1?tenant=acme&{query}&x=1") is redacted, shown


def test_a_reply_with_a_credential_link_or_a_url_beside_an_address_is_stored_as_json(cli, tmp_path: Path) -> None:
    """A reply holding a link with `?code=` in quotes crashed the run: redacting the result's JSON
    ate the backslash of `\\"`. A reply in JSON with a URL and then an e-mail address lost its
    text: `user:password@` was matched across the fields, from `://` to the `@`."""
    reply = (
        'See <a href="https://h.example/login?code=ABC123">it</a>. {"home":"http://localhost:8080","mail":"a@b.org"}'
    )
    write(tmp_path / "targets.yaml", f"targets:\n  - name: bot\n    provider: scripted\n    replies: ['{reply}']\n")
    write(
        tmp_path / "s.eval.yaml", "tests:\n  - id: t1\n    input: hi\n    assertions: [{type: contains, value: it}]\n"
    )
    code, stdout, stderr = cli("run", "s.eval.yaml", "--target", "bot", "--store", "state", "-o", "r.jsonl")
    assert code == 0, stderr
    stored = json.loads((tmp_path / "r.jsonl").read_text())["output"][-1]["content"]
    assert stored == reply.replace("ABC123", "[REDACTED]")
