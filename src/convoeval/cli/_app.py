"""The typer application that every CLI command module registers on, and `.env` loading."""

from __future__ import annotations

import inspect
import io
import logging
import os
import re
import sys
from collections import Counter
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Annotated, Any

import typer
from typer.core import TyperCommand, TyperGroup, TyperOption

from .._jsonl import read_problem
from .._paths import ROOT_ENV, confined_path
from .._unseen import hide_from_models
from .._version import __version__

#: Options as other tools name them, and what convoeval takes instead (said when a command has
#: no option of that name).
PEER_OPTIONS = {
    "--model": "--target (Inspect's `--model`; --judge for the grading model)",
    "--providers": "--target (promptfoo's `--providers`)",
    "--config": "the eval files as arguments (a promptfoo config: `convoeval import promptfoo CONFIG` first)",
    "-c": "the eval files as arguments (a promptfoo config: `convoeval import promptfoo CONFIG` first)",
    "--filter": "--test-id ID (repeatable) or --tag TAG (promptfoo's `--filter-pattern`)",
    "--filter-pattern": "--test-id ID (repeatable) or --tag TAG",
    "--repeat": "--trials N (promptfoo's `--repeat`; --judge-repeats repeats only the judge's call)",
    "--epochs": "--trials N (Inspect's `--epochs`)",
    "--max-concurrency": "--concurrency N (promptfoo's `--max-concurrency`)",
    "-j": "--concurrency N (promptfoo's `-j`)",
}


class StrictCommand(TyperCommand):
    """A command that refuses an option given twice unless it takes several values (click
    would silently keep the last one): `--threshold 0.5 --threshold 0.9` is an error, exit 2.
    An option it lacks that another tool has (`PEER_OPTIONS`) says what it takes instead (when
    it has that option)."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:  # typer's vendored click.Context
        own = {name for param in self.params for name in getattr(param, "opts", ())}
        for arg in args:
            if arg == "--":
                break
            name = arg.split("=", 1)[0]
            instead = PEER_OPTIONS.get(name, "").split(" ", 1)[0]
            if name in PEER_OPTIONS and name not in own and (instead in own or not instead.startswith("-")):
                ctx.fail(f"No such option: {name}; convoeval {self.name} takes {PEER_OPTIONS[name]}.")
        try:
            _, _, order = self.make_parser(ctx).parse_args(args=list(args))
        except Exception:  # a usage error: click reports it
            return super().parse_args(ctx, args)
        single = [p for p in order if isinstance(p, TyperOption) and not p.multiple and not p.count]
        for param, times in Counter(single).items():
            if times > 1:
                names = " / ".join(param.opts + param.secondary_opts)
                ctx.fail(f"{names} was given {times} times; it takes one value, give it once")
        return super().parse_args(ctx, args)


#: A command as other tools name it: convoeval's command, and the tools.
PEER_COMMANDS = {"eval": ("run", "AgentV's, promptfoo's and Inspect's")}


class Group(TyperGroup):
    """The app's command group: a command named as another tool names it says which it is."""

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        if args and args[0] in PEER_COMMANDS and args[0] not in self.commands:
            ours, tools = PEER_COMMANDS[args[0]]
            ctx.fail(f"No such command {args[0]!r}: {tools} `{args[0]}` is `convoeval {ours}`.")
        return super().resolve_command(ctx, args)


class Typer(typer.Typer):
    """The app's typer: every command is a `StrictCommand`, listed in `--help` by the first
    paragraph of its help (or docstring) as one line (rich's help keeps the line breaks)."""

    def command(self, *args: Any, cls: type[TyperCommand] | None = None, **kwargs: Any) -> Callable[[Any], Any]:
        def register(function: Callable[..., Any]) -> Any:
            first = inspect.cleandoc(kwargs.get("help") or function.__doc__ or "").split("\n\n")[0]
            kwargs.setdefault("short_help", " ".join(first.split()) or None)
            return super(Typer, self).command(*args, cls=cls or StrictCommand, **kwargs)(function)

        return register


app = Typer(
    cls=Group,
    name="convoeval",
    help="Evaluate multi-turn conversations with LLMs and agents.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


#: How the name of a variable that says where a provider's calls go ends (OPENAI_BASE_URL,
#: AZURE_OPENAI_ENDPOINT, ...); its provider's keys are the variables with the same prefix.
_URL_SUFFIXES = ("_BASE_URL", "_API_BASE", "_ENDPOINT", "_API_URL")
_KEY_SUFFIXES = ("_API_KEY", "_KEY", "_TOKEN", "_SECRET")


def _redirects_a_key(name: str, outside: Mapping[str, str]) -> str | None:
    """The key variable whose calls `name` would send to a server the `.env` chose: one set
    `outside` the file (the environment before it loaded), whose value wins over the file's own
    (a `.env` that sets a dummy key redirects the real one all the same); None when `name`
    redirects none."""
    prefix = next((name[: -len(end)] for end in _URL_SUFFIXES if name.endswith(end)), None)
    if not prefix:
        return None
    return next((key for key in (f"{prefix}{end}" for end in _KEY_SUFFIXES) if outside.get(key)), None)


#: What was said of each `.env` file (it is loaded more than once): `(file, NAME)`, a variable
#: ignored; `(file, "")`, its unreadable lines.
_SAID: set[tuple[Path, str]] = set()
#: Variables that make a program convoeval starts on the host run code of their choosing: the
#: dynamic loader's, git's (`GIT_SSH_COMMAND`, `GIT_CONFIG_*`; `XDG_CONFIG_HOME` holds its config),
#: Python's (a `--processes` worker imports `PYTHONPATH`'s `sitecustomize`, then gets the keys),
#: Node's (promptfoo's transforms), bash's start-up file (`BASH_ENV`), Ray's (`RAY_ADDRESS`: with a
#: suite's `execution.backend: ray`, the cluster of the file's choosing got the target configs and
#: answered with pickles), OpenSSL's (`OPENSSL_CONF` names a provider library that every Python
#: process loads as it starts: `--processes` workers ran the file's code, then got the keys) and
#: glibc's character set modules (`GCONV_PATH`).
_STARTUP = re.compile(
    r"LD_.*|GIT_.*|PYTHON.*|RAY_.*|NODE_OPTIONS|NODE_PATH|BASH_ENV|XDG_CONFIG_HOME|SSH_ASKPASS.*|OPENSSL_.*|GCONV_PATH"
)
#: Variables that route requests, keys in their headers (the `litellm` provider's HTTP client
#: honours them): a proxy, the certificates that would let one read HTTPS, and the file Python's
#: and Node's TLS write each session's secrets to (`SSLKEYLOGFILE`: what decrypts the requests).
_ROUTE = re.compile(
    r"(?i)(https?|all|no)_proxy|SSL_CERT_(FILE|DIR)|REQUESTS_CA_BUNDLE|CURL_CA_BUNDLE|NODE_EXTRA_CA_CERTS"
    r"|SSLKEYLOGFILE"
)
#: Variables that name where a run writes (the results file, the store, the cache) or what it
#: reads as its targets: a `.env` may name a place in its own folder or repository only (a suite's
#: `CONVOEVAL_OUTPUT=/etc/docker/daemon.json` replaced that file with the results).
_PLACES = ("CONVOEVAL_OUTPUT", "CONVOEVAL_HOME", "CONVOEVAL_CACHE_DIR", "CONVOEVAL_TARGETS")
#: Variables that decide as whom sandboxed agents run (as root: another user's files would be
#: theirs) and where workspaces and agents' homes are made (Python's `tempfile` reads `TMPDIR`,
#: then `TEMP`, then `TMP`): the user's, never a suite's.
_SANDBOX_PLACES = ("CONVOEVAL_AGENT_USER", "TMPDIR", "TEMP", "TMP")


class _UnparsedLines(logging.Filter):
    """python-dotenv's warnings about lines it cannot read (it names no file), kept to be said."""

    def __init__(self) -> None:
        super().__init__()
        self.lines: list[object] = []

    def filter(self, record: logging.LogRecord) -> bool:
        self.lines.append(record.args[0] if isinstance(record.args, tuple) and record.args else "?")
        return False


def _env_values(path: Path) -> dict[str, str | None]:
    """The variables a `.env` sets; a file that is no UTF-8 text stops the command (exit 2), a
    line that is no `NAME=value` is said with the file's name and left out."""
    from dotenv import dotenv_values  # python-dotenv loads only where there is a .env

    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        print(f"error: {read_problem(path, exc)}", file=sys.stderr)
        raise SystemExit(2) from None
    unparsed, logger = _UnparsedLines(), logging.getLogger("dotenv.main")
    logger.addFilter(unparsed)
    try:
        values = dotenv_values(stream=io.StringIO(text))
    finally:
        logger.removeFilter(unparsed)
    if (path.resolve(), "") not in _SAID:  # the same file is loaded for the working folder and the suite's
        _SAID.add((path.resolve(), ""))
        for line in unparsed.lines:
            print(f"convoeval: {path}:{line}: not a NAME=value line; ignored", file=sys.stderr)
    return values


def load_env_file(folder: Path) -> None:
    """Load `folder/.env` into the environment; variables already set win (values never printed).
    A `.env` cannot turn the sandbox off (`CONVOEVAL_SANDBOX=none`), set the dynamic loader
    (`LD_PRELOAD`: every program convoeval starts outside the sandbox would load it) or another
    variable that makes such a program run code (`_STARTUP`: `GIT_SSH_COMMAND`, `PYTHONPATH`), widen
    what a suite's files may reach (`CONVOEVAL_ROOT`): it comes with a suite as often as from its
    user (said on stderr). A `.env` that names a server (`OPENAI_BASE_URL`) for a key that will
    not be its own (OPENAI_API_KEY from the shell, which wins over one the file sets) stops the
    command (exit 2): using the server would send the key where the file says, ignoring it would
    send the calls elsewhere than you meant."""
    path = folder / ".env"
    if path.is_file():
        hide_from_models([path])  # it holds keys: no sandboxed command sees it
        values, outside = _env_values(path), dict(os.environ)
        for name, value in values.items():
            if name in os.environ or value is None:
                continue
            if key := _redirects_a_key(name, outside):
                print(
                    f"error: {path}: {name}: a .env file cannot send {key}, set outside it (which wins over a"
                    f" .env's), to a server of its choice: set {name} in the environment, or unset {key} there"
                    " and give it in that .env",
                    file=sys.stderr,
                )
                raise SystemExit(2)
            if name == "CONVOEVAL_SANDBOX" and value.strip() == "none":
                _ignored(
                    path,
                    "CONVOEVAL_SANDBOX=none",
                    "a .env file cannot turn the sandbox off (give --sandbox none, or set it in the environment)",
                )
            elif _STARTUP.fullmatch(name):  # every program convoeval starts, bubblewrap and git too, would use it
                what = "the dynamic loader" if name.startswith("LD_") else "how the programs convoeval starts run"
                _ignored(path, name, f"a .env file cannot set {what}")
            elif _ROUTE.fullmatch(name):
                _ignored(path, name, "a .env file cannot route requests (a proxy, the certificates trusted)")
            elif name in _PLACES and _elsewhere(value, folder):
                _ignored(path, name, f"{value} lies outside the .env file's folder and its repository")
            elif name == ROOT_ENV:  # what the files a suite names may reach: yours to widen, not the suite's
                _ignored(path, name, "give --root, or set it in the environment")
            elif name in _SANDBOX_PLACES:
                _ignored(path, name, "a .env file cannot choose as whom or where sandboxed commands run")
            else:
                os.environ[name] = value


def _elsewhere(value: str, folder: Path) -> bool:
    """Whether the path `value` lies outside `folder`, its repository and `--root` (`confined_path`)."""
    try:
        return confined_path(value, folder, None) is None
    except ValueError:  # a NUL, a link loop
        return True


def _ignored(path: Path, name: str, why: str) -> None:
    """Say on stderr, once, that `path` sets `name` in vain, and why."""
    if (path.resolve(), name) not in _SAID:
        _SAID.add((path.resolve(), name))
        print(f"convoeval: {path}: {name} ignored: {why}", file=sys.stderr)


def _use_root(value: Path | None) -> Path | None:
    if value is not None:
        if not value.is_dir():
            raise typer.BadParameter(f"{value} is not a folder")
        os.environ[ROOT_ENV] = str(value.resolve())
    return value


Root = Annotated[
    Path | None,
    typer.Option(
        "--root",
        metavar="DIR",
        envvar=ROOT_ENV,
        callback=_use_root,
        help="A folder the files a suite names may also lie in, besides the suite's own folder.",
    ),
]


def _print_version(asked: bool) -> None:
    if asked:
        typer.echo(f"convoeval {__version__}")
        raise typer.Exit()


@app.callback()
def _settings(
    version: Annotated[
        bool, typer.Option("--version", callback=_print_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """Evaluate multi-turn conversations with LLMs and agents."""
    load_env_file(Path.cwd())  # before a command's options are read, so CONVOEVAL_* there apply
