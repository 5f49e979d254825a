"""Secrets: the one redaction of every text convoeval writes, and environments without keys.

The known secret values are the API keys targets resolved (`remember`) and the values of
environment variables named like `*KEY*`, `*TOKEN*`, `*SECRET*`, `*PASSWORD*`, `*HEADERS*`
(`OTEL_EXPORTER_OTLP_HEADERS=Authorization=...`), `*_PWD`, `*_PAT`, `*_DSN`, as they were when
first asked for or when `reread_environment` last ran (every run starts with it: reading the
environment on each of the thousands of redactions a run makes cost more than its HTTP), each
also as JSON writes it. `redact` replaces them and credentials in URLs (`user:pass@`,
`?api_key=...`) with `[REDACTED]`; results, the run store, result files and the terminal all go
through it, and `convoeval._text.shorten` redacts a text before cutting it (a cut key is no
longer the key).
"""

from __future__ import annotations

import base64
import json
import os
import re
import string
import sys
from collections.abc import Callable, Iterable, Mapping
from urllib.parse import unquote, unquote_plus, urlsplit, urlunsplit

REDACTED = "[REDACTED]"
#: Environment variables whose values are secrets (and are not passed to graders and hooks):
#: `SMTP_PASS` and `RABBITMQ_DEFAULT_PASS` too, GitLab's `CI_JOB_JWT`, a webhook's URL (its own key).
SECRET_NAME = re.compile(
    r"KEY|TOKEN|SECRET|PASSW|PASSPHRASE|CREDENTIAL|CREDS|COOKIE|(^|_)PW($|_)|_PWD($|_)|(^|_)PAT($|_)|(^|_)DSN($|_)"
    r"|(^|_)PASS$|JWT|WEBHOOK|(^|_)AUTH(?!_SOCK)|HEADERS",
    re.IGNORECASE,
)
#: Headers of a target whose values are not credentials; every other header's value is one
#: (a gateway's `X-Gw: ...` says nothing by its name).
PLAIN_HEADERS = frozenset(
    {"accept", "accept-encoding", "accept-language", "content-type", "user-agent", "anthropic-version",
     "anthropic-beta", "openai-beta", "openai-organization", "openai-project", "http-referer", "referer",
     "x-title", "cache-control", "connection"}
)  # fmt: skip
#: Query parameters of a target's URL whose values are not credentials; every other one's is.
PLAIN_PARAMS = frozenset({"api-version", "api_version", "version", "v", "model", "deployment", "format", "stream"})
_KEY_SHAPED = re.compile(r"\b(sk|pk|rk|key|api)[-_][A-Za-z0-9_\-]{8,}")
#: A URL's `user:password@` (`redis://:password@host` too); neither part holds what a URL may not
#: (a quote, a backslash, `<`, `>`), so a match never runs across the fields of a JSON text.
_URL_USERINFO = re.compile(r'(?<=://)[^/\s:@"\\<>]*:[^/\s@"\\<>]+@')
#: URL query parameters that carry credentials (`?api_key=`, `?code=` of Azure Functions, `?sig=`,
#: `?pass=`, `?db_pwd=`): a name holding one of the first words, or ending in one of the second
#: (`bypass`, `compass` do not).
_URL_SECRET_NAME = (
    r"[^=&\s]*(?:key|token|secret|sig|passw|passphrase|passcode|auth|credential|jwt)[^=&\s]*"
    r"|(?:[^=&\s]*[_.-])?(?:pass|pwd|pw)|code"
)
#: The value ends before a quote or a backslash (in a JSON text, a result, `\"` may end it): what
#: is left stays JSON.
_URL_SECRET_PARAM = re.compile(rf"(?i)([?&](?:{_URL_SECRET_NAME})=)[^&\s#\"'\\]+")
#: Shorter values are not treated as secrets (they would redact ordinary words).
MIN_SECRET_LENGTH = 6

_remembered: set[str] = set()
_known: list[str] | None = None  # remembered and environment secrets, longest first; None: to compute


def remember(*values: str | None) -> None:
    """Add values (API keys a target resolved) to the known secrets."""
    global _known
    new = {v for v in values if v and len(v) >= MIN_SECRET_LENGTH} - _remembered
    if new:
        _remembered.update(new)
        _known = None


def remember_credentials(
    headers: Mapping[str, str], *urls: str | None, env: object = None, body: object = None
) -> None:
    """Add the credentials a target sends (its headers but `PLAIN_HEADERS`, `Authorization`'s
    token without its scheme, the user info and query values of its URLs but `PLAIN_PARAMS`,
    the secret-named fields of its request `body`: `{api_key: ...}`, at any depth) and the
    secret-named variables of its `env:` (an agent process's) to the known secrets (values
    shorter than `MIN_SECRET_LENGTH` are not)."""
    values = _secret_named(env, SECRET_NAME.search) + _secret_named(body, _secret_field)
    for name, value in headers.items():
        if name.lower() not in PLAIN_HEADERS:
            values += [value, value.split(" ", 1)[-1].strip()]
    for url in urls:
        if url and "://" in url:
            parts = urlsplit(url)
            values += _basic_credentials(parts.username, parts.password)
            for pair in parts.query.split("&"):
                name, _, value = pair.partition("=")
                if unquote_plus(name).lower() not in PLAIN_PARAMS:
                    values += _as_written_and_decoded(value)
    remember(*values)


def _secret_named(value: object, secret: Callable[[str], object]) -> list[str]:
    """The texts under the keys of `value`'s mappings that `secret` calls secret, at any depth,
    but templates (`{{ prompt }}`), which are filled with the conversation."""
    if isinstance(value, Mapping):
        found = []
        for key, item in value.items():
            if isinstance(item, str) and isinstance(key, str) and secret(key) and "{{" not in item:
                found.append(item)
            else:
                found += _secret_named(item, secret)
        return found
    return [text for item in value for text in _secret_named(item, secret)] if isinstance(value, list) else []


_WORD = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")
#: The words of a request body's field name that make its value a credential (`api_key`,
#: `apiKey`, `auth: {token: ...}`; not `keywords` nor `author`).
_SECRET_WORDS = frozenset(
    {"key", "apikey", "token", "secret", "password", "passwd", "pwd", "pass", "passphrase", "auth",
     "authorization", "credential", "credentials", "creds", "bearer", "jwt", "cookie", "sig", "signature"}
)  # fmt: skip


def _secret_field(name: str) -> bool:
    return any(word.lower() in _SECRET_WORDS for word in _WORD.findall(name))


def _as_written_and_decoded(value: str) -> set[str]:
    """A URL part as written (`S3cr%2Bt%2Fx`), as an HTTP client sends it (and a server echoing
    the URL shows it: aiohttp's yarl decodes the escapes of characters a URL may hold as they are,
    `S3cr%2Bt/x`), and percent-decoded (`S3cr+t/x`, with a `+` kept or read as a space)."""
    sent = _ESCAPE.sub(lambda m: chr(int(m[1], 16)) if chr(int(m[1], 16)) in _SENT_AS_IS else m[0].upper(), value)
    return {value, sent, unquote(value), unquote_plus(value)}


_ESCAPE = re.compile(r"%([0-9A-Fa-f]{2})")
#: The characters yarl sends as they are in a query (unreserved, and `/?:@!$'()*,`).
_SENT_AS_IS = frozenset(string.ascii_letters + string.digits + "-._~/?:@!$'()*,")


def _basic_credentials(user: str | None, password: str | None) -> list[str]:
    """What a URL's user info puts on the wire: the password, and the Basic credential HTTP
    clients build from the user and password (as written and percent-decoded)."""
    if user is None:
        return []
    values = [*_as_written_and_decoded(password or user)]  # `https://KEY@host`: the user is the key
    for name, word in {(user, password or ""), (unquote(user), unquote(password or ""))}:
        pair = f"{name}:{word}"
        values += [base64.b64encode(pair.encode(encoding, "replace")).decode() for encoding in ("latin-1", "utf-8")]
    return values


def shown_url(url: str) -> str:
    """`url` as an error message may show it: without user info, query or fragment (which may
    hold credentials no name reveals, before they are known secrets)."""
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        return "(a URL that cannot be parsed)"
    netloc = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=netloc, query="..." if parts.query else "", fragment=""))


def reread_environment() -> None:
    """Take the secret-named environment variables as they are now (a run calls this first)."""
    global _known
    _known = None


def known_secrets() -> list[str]:
    """Every known secret value, longest first, with the forms it takes in JSON text (see
    `_in_json`)."""
    global _known
    if _known is None:
        from_env = {v for k, v in os.environ.items() if SECRET_NAME.search(k) and len(v) >= MIN_SECRET_LENGTH}
        in_urls = {c for v in os.environ.values() if "://" in v for c in _url_credentials(v)}
        values = {*_remembered, *from_env, *(c for c in in_urls if len(c) >= MIN_SECRET_LENGTH)}
        _known = sorted({form for value in values for form in _in_json(value)}, key=len, reverse=True)
    return _known


def _url_credentials(value: str) -> list[str]:
    """The credentials in a URL a variable of any name holds: its password (and the Basic
    credential built from it) and its credential-named query values
    (`DATABASE_URL=postgres://app:PW@db/x`, `SERVICE=https://h/?api_key=K`). Commands never get
    such a variable (`scrubbed_env`); these make the password alone, as a driver or a model may
    print it, a known secret too."""
    try:
        parts = urlsplit(value.strip())
    except ValueError:
        return []
    found = _basic_credentials(parts.username, parts.password) if parts.password else []
    for pair in parts.query.split("&"):
        name, _, secret = pair.partition("=")
        if secret and re.fullmatch(_URL_SECRET_NAME, unquote_plus(name), re.IGNORECASE):
            found += _as_written_and_decoded(secret)
    return found


def _in_json(value: str) -> set[str]:
    """`value` and how JSON writes it in a string, with and without non-ASCII escaped, once and
    nested (a tool call's arguments are JSON inside a result's JSON): results are redacted as
    JSON, where a secret holding `"` or a backslash is not written as itself."""
    forms = {value}
    for _ in range(2):
        forms |= {json.dumps(form, ensure_ascii=ascii_only)[1:-1] for form in forms for ascii_only in (False, True)}
    return forms


def redact(text: str, extra: Iterable[str] = (), *, key_shaped: bool = False) -> str:
    """`text` with known secrets (and `extra` ones) and URL credentials replaced by [REDACTED];
    with `key_shaped`, also strings that look like keys (`sk-...`: for provider error bodies)."""
    if extra:
        for secret in sorted((e for e in extra if e and len(e) >= 4), key=len, reverse=True):
            if secret in text:
                text = text.replace(secret, REDACTED)
    for secret in known_secrets():
        if secret in text:
            text = text.replace(secret, REDACTED)
    if "@" in text:  # the patterns scan the whole text: skip them when they cannot match
        text = _URL_USERINFO.sub(REDACTED + "@", text)
    if "=" in text:
        text = _URL_SECRET_PARAM.sub(r"\1" + REDACTED, text)
    return _KEY_SHAPED.sub(REDACTED, text) if key_shaped else text


def contains_secret(text: str, extra: Iterable[str] = ()) -> bool:
    """Whether `text` holds a known secret value (or one of `extra`)."""
    for secret in known_secrets():
        if secret in text:
            return True
    for secret in extra:
        if secret and secret in text:
            return True
    return False


def scrubbed_env(passed: Iterable[str] = ()) -> dict[str, str]:
    """The process environment without secrets, except the `passed` names: no secret-named
    variable, and none whose value holds a secret whatever its name (a target's key read from
    `${{ GATEWAY }}`, `DATABASE_URL=postgres://user:password@...`, a URL's `?api_key=`);
    PATH and the locale always stay."""
    keep = {*passed, *_ALWAYS_KEPT}
    return {k: v for k, v in os.environ.items() if k in keep or not (SECRET_NAME.search(k) or holds_secret(v))}


def secret_environment() -> dict[str, str]:
    """The variables of the process environment that `scrubbed_env` leaves out."""
    kept = scrubbed_env()
    return {k: v for k, v in os.environ.items() if k not in kept}


#: Variables a command always gets from the parent, whatever they hold (`_sandbox.BASE_ENV`).
_ALWAYS_KEPT = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TERM")


def holds_secret(text: str) -> bool:
    """Whether `text` holds a known secret value or a URL credential (`user:password@`, a
    secret-named query value): what `redact` would change."""
    return redact(text) != text


#: prctl's option that makes a process non-dumpable (linux/prctl.h).
_PR_SET_DUMPABLE = 4


def keep_environment_private() -> bool:
    """Make this process non-dumpable (`prctl(PR_SET_DUMPABLE, 0)`, as ssh-agent does): its
    environment and memory, which hold the API keys, are then out of reach of the other
    processes of its user (`/proc/<pid>/environ`, `/proc/<pid>/mem`, ptrace), such as a
    code-grader run on the host or a `--sandbox none` command, and it never leaves a core dump.
    What it starts is dumpable again once it runs a program (execve resets the flag). Root with
    CAP_SYS_PTRACE still reads it. False where it cannot be set (not Linux)."""
    if sys.platform != "linux":
        return False
    import ctypes  # only the CLI asks, once

    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return False
    return bool(prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0) == 0)
