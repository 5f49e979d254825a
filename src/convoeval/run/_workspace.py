"""Persistent environments: a workspace per trial, `verify` after each turn, hints between turns.

An environment (registry kind `environment`, chosen by `workspace.environment`) makes the
trial's place and tears it down. The built-in `directory` environment makes a folder (the
template copied in, `before_each` run) and afterwards runs `after_each` and removes it (or
keeps it, as `keep:` says). A plugin environment registers an object with the same two
async methods, `open(spec, base_dir, test_id) -> Path` and `close(spec, root, passed) -> str | None`.
`VerifiedTurns` wraps the trial's turn source: before asking for the next turn it runs
`verify` in the workspace; exit 0 ends the conversation (`stopped: verified at turn N`, the
turns not needed are recorded as not sent), otherwise the next turn goes out preceded by its
hint (a user message with `source: hint`).
"""

from __future__ import annotations

import contextvars
import difflib
import os
import shlex
import shutil
import stat
import sys
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol
from urllib.parse import unquote, urlsplit, urlunsplit

from .. import _sandbox as sandbox
from .. import registry
from .._paths import confined_folder
from .._secrets import remember_credentials, scrubbed_env, shown_url
from ..results import AssertionOutcome, GraderScore, Message, ScoreEntry
from ..spec import Docker, Repo, Suite, Verify, Workspace
from ..targets import TargetConfig
from ._plan import TurnPlan
from ._turns import TurnSource

if TYPE_CHECKING:
    from ._conversation import Conversation

#: Longest command output quoted in evidence.
OUTPUT_TAIL = 400
#: Bytes of a command's output kept (the rest is read and dropped).
COMMAND_BYTES = 256 * 1024
#: Files larger than this are compared by size only in `file_changes`; the diff is cut here.
SNAPSHOT_FILE_BYTES = 256 * 1024
#: Files compared at most, and bytes read from them in all (the rest by size), by `snapshot`.
SNAPSHOT_FILES = 20_000
SNAPSHOT_BYTES = 32 * 2**20
DIFF_CHARS = 50_000
IGNORED = frozenset({".git", "__pycache__"})


class WorkspaceError(Exception):
    """The workspace could not be prepared (missing template, failing hook)."""


@dataclass
class Ran:
    code: int
    output: str


async def shell(
    command: str, cwd: Path, timeout_s: float, passed: Iterable[str] = (), extra: Mapping[str, str] | None = None
) -> Ran:
    """Run a command convoeval itself composes (git, docker) in `cwd`, unsandboxed, without
    secret-named variables except the `passed` ones (and `extra`); a timeout is exit code 124."""
    env = {**scrubbed_env(passed), **(extra or {})}
    ran = await sandbox.run(command, cwd, timeout_s=timeout_s, env=env, cap=COMMAND_BYTES, host=True)
    return Ran(ran.code, f"timed out after {timeout_s:g} s" if ran.timed_out else ran.output)


async def sandboxed(
    command: str,
    cwd: Path,
    timeout_s: float,
    writable: Path,
    passed: Iterable[str] = (),
    readable: Sequence[Path] = (),
    kept: Sequence[Path] = (),
    extra: Mapping[str, str] | None = None,
    shared: bool = False,
) -> Ran:
    """Run a suite's command (hook, verify) in the run's sandbox: `writable` the only folder it
    may change (`readable` ones still seen), no secret-named variable in its environment but the
    `passed` ones (and `extra`); `shared`: `writable` is a folder other users reach (the eval
    folder), which it may not open to them. No sandbox available raises SandboxError (saying how
    to get one): the test is an execution error, never a failed or passed check."""
    ran = await sandbox.run(
        command,
        cwd,
        timeout_s=timeout_s,
        writable=writable,
        readable=readable,
        env={**scrubbed_env(passed), **(extra or {})},
        cap=COMMAND_BYTES,
        kept=kept,
        shared=shared,
    )
    return Ran(ran.code, f"timed out after {timeout_s:g} s" if ran.timed_out else ran.output)


#: What of an eval folder a suite hook may never change nor make (convoeval reads them on the
#: host): its `.git` (a hook there, or `core.fsmonitor`, would run unconfined at your next `git
#: status`), a run store (`.convoeval`: this run's results and cached replies), `.env` and the
#: targets files.
KEPT_NAMES = (".git", ".convoeval", ".env", "targets.yaml", ".agentv")


def kept_in_eval_folder(
    base_dir: Path, suites: Iterable[Suite] = (), targets: Iterable[TargetConfig] = (), files: Iterable[Path] = ()
) -> list[Path]:
    """What a `before_all`/`after_all` hook, which may change the eval file's folder, must not
    (`KEPT_NAMES`, absent ones too), with the run store, the eval files of `suites`, the Python
    files convoeval has imported from the folder (a `python` target's, a tool's, a plugin) with
    their `__pycache__` (absent ones too: Python runs a `.pyc` there that claims its source's
    modification time and size, whatever the source holds), the
    files a `command` of `suites` names (a code-grader's script, which may run on the host), those
    the `targets` run (`_target_files`: a `cli` target's script runs on the host) and `files` (the
    run's own: its store, cache, targets and results files). A link among them is kept with where
    it leads (`_sandbox`)."""
    folder = base_dir.resolve()
    store = Path(os.environ.get("CONVOEVAL_HOME") or ".convoeval").resolve()
    suites = list(suites)
    pythons = list(dict.fromkeys(Path(p).resolve() for p in (sys.prefix, sys.base_prefix)))
    named = [*(s.path for s in suites if s.path), *_imported_files(pythons), *_command_files(folder, suites)]
    named += [*_target_files(folder, targets), *files]
    named += [p.parent / "__pycache__" for p in named if p.suffix == ".py"]  # a planted .pyc runs as the .py
    named += pythons  # a venv in the eval folder, whole: one folder bound, not each module it holds
    return [*(folder / n for n in KEPT_NAMES), store, *(p for p in named if _in_folder(p, folder))]


def _in_folder(path: Path, folder: Path) -> bool:
    """Whether `path`, or where it leads, lies in `folder` (a link there to elsewhere is kept too)."""
    return any(Path(f(path)).is_relative_to(folder) for f in (os.path.abspath, os.path.realpath))


def _imported_files(pythons: Sequence[Path]) -> list[Path]:
    """The files of the Python modules loaded now, but those of the `pythons` folders (kept whole)."""
    files = (getattr(m, "__file__", None) for m in list(sys.modules.values()))
    paths = (Path(f).resolve() for f in files if isinstance(f, str))
    return [p for p in paths if not any(p.is_relative_to(python) for python in pythons)]


def _command_files(folder: Path, suites: Iterable[Suite]) -> list[Path]:
    """The files a `command` of the `suites` of `folder` (a code-grader's) names."""
    words: list[str] = []
    for suite in suites:
        if suite.path is not None and suite.base_dir.resolve() == folder:
            words += _programs(suite.model_dump(), skip="workspace")
    return _named_files(words, [folder])


def _target_files(folder: Path, targets: Iterable[TargetConfig]) -> list[Path]:
    """The files the `targets` run or import (`_programs`: a `cli` command's script, a healthcheck's,
    an `executable`, a `python` target's or tool's file), each word read from where the target runs
    (the eval folder, the targets file's folder or convoeval's, or its `cwd`/`base_dir` there)."""
    files: list[Path] = []
    for config in targets:
        data = config.model_dump()
        tops = (folder, config.source_dir, Path.cwd())
        subs = [s for s in (data.get("cwd"), data.get("base_dir")) if isinstance(s, str)]
        files += _named_files(_programs(data), [*tops, *(top / sub for top in tops for sub in subs)])
    return files


def _named_files(words: Iterable[str], bases: Sequence[Path]) -> list[Path]:
    """The files the `words` name: paths from one of `bases` (or absolute), or programs on PATH."""
    found: list[Path] = []
    for word in dict.fromkeys(words):
        program = shutil.which(word) if "/" not in word else None
        found += [p for p in (*(base / word for base in bases), *([Path(program)] if program else [])) if p.is_file()]
    return list(dict.fromkeys(found))


#: The fields of a suite's or target's data naming what convoeval runs: a command line (a
#: code-grader's, a `cli` target's, its healthcheck's, a command tool's), a program and its
#: arguments, a Python file (`file.py:function`: a `python` target's callable, a Python tool).
COMMAND_FIELDS = frozenset({"command", "executable", "args"})
PYTHON_FIELDS = frozenset({"callable", "callable_ref", "function", "python"})


def _programs(data: object, skip: str | None = None) -> list[str]:
    """The words of the `COMMAND_FIELDS` and the files of the `PYTHON_FIELDS` anywhere in `data`,
    but under a `skip` key (a suite's `workspace`: hooks and `verify` run sandboxed, and write the
    files they name: `>> log.txt`)."""
    words: list[str] = []
    if isinstance(data, dict):
        for key, value in data.items():
            if key in COMMAND_FIELDS and isinstance(value, str):
                words += value.split()
            elif key in COMMAND_FIELDS and isinstance(value, list):
                words += [w for w in value if isinstance(w, str)]
            elif key in PYTHON_FIELDS and isinstance(value, str) and value.rpartition(":")[0].endswith(".py"):
                words.append(value.rpartition(":")[0])
            elif key != skip:
                words += _programs(value, skip)
    elif isinstance(data, list):
        for item in data:
            words += _programs(item, skip)
    return words


#: The sandbox settings each open workspace put in force, to restore when it closes.
_tokens: dict[Path, contextvars.Token[sandbox.SandboxSettings | None]] = {}


async def open_workspace(spec: Workspace, base_dir: Path, test_id: str) -> Path:
    """The trial's workspace, made by the environment the spec names; its `sandbox:` settings
    hold for the trial's commands until it closes."""
    token = sandbox.use_trial_settings(spec.sandbox)  # before_each runs with them too
    try:
        root = await environment(spec).open(spec, base_dir, test_id)
    except BaseException:
        sandbox.reset_trial_settings(token)
        raise
    _tokens[root] = token
    return root


async def close_workspace(spec: Workspace, root: Path, passed: bool) -> str | None:
    """Tear the trial's workspace down; returns where it was kept, if it was."""
    try:
        return await environment(spec).close(spec, root, passed)
    finally:
        if (token := _tokens.pop(root, None)) is not None:
            try:
                sandbox.reset_trial_settings(token)
            except ValueError:  # closed from another context than it was opened in
                pass


class Environment(Protocol):
    """What an `environment` plugin registers: it makes a trial's workspace and tears it down."""

    async def open(self, spec: Workspace, base_dir: Path, test_id: str) -> Path: ...

    async def close(self, spec: Workspace, root: Path, passed: bool) -> str | None: ...


def environment(spec: Workspace) -> Environment:
    found = registry.lookup("environment", spec.environment)
    if found is None:
        known = ", ".join(registry.names("environment"))
        raise WorkspaceError(f"unknown workspace environment {spec.environment!r} (known: {known})")
    return found


class DirectoryEnvironment:
    """The built-in environment: a temporary folder per trial."""

    async def open(self, spec: Workspace, base_dir: Path, test_id: str) -> Path:
        return await _open_directory(spec, base_dir, test_id)

    async def close(self, spec: Workspace, root: Path, passed: bool) -> str | None:
        return await _close_directory(spec, root, passed)


async def _open_directory(spec: Workspace, base_dir: Path, test_id: str) -> Path:
    """A fresh folder for one trial: the template copied in, the repos cloned, the container
    started (with `docker`), `before_each` run. It lies in a folder of its own (mode 0700) that
    no sandbox shows, while commands run in it: a command owns the workspace (as root, its uid
    0 is the host's), and could open it to every user (`chmod 755 .`) with a set-user-ID program
    in it (`chmod 4755 sh`, a root shell)."""
    safe = "".join(c if c.isalnum() or c in "-_" else "-" for c in test_id)[:40]
    holder = Path(tempfile.mkdtemp(prefix=f"{WORKSPACE_PREFIX}{sandbox.owner_tag()}-{safe}-"))
    root = holder / holder.name
    root.mkdir(mode=0o700)
    _eval_folders[root] = base_dir
    try:
        if spec.template is not None:
            template = _confined(spec.template, base_dir, "workspace template")
            if not template.is_dir():
                raise WorkspaceError(f"workspace template {spec.template!r} is not a folder (looked in {template})")
            shutil.copytree(template, root, symlinks=True, dirs_exist_ok=True, copy_function=_copy_file)
        for repo in spec.repos:
            await clone_repo(repo, base_dir, root, spec.env)
        if spec.docker is not None:
            _containers[root] = await start_container(spec.docker, root)
        hook = spec.hooks.before_each
        if hook is not None:
            ran = await run_in(root, hook.command, hook.cwd, hook.timeout_ms / 1000, spec.env)
            if ran.code != 0:
                raise WorkspaceError(
                    f"workspace hook before_each exited with code {ran.code}: {ran.output[-OUTPUT_TAIL:]}"
                )
    except BaseException:
        await _remove(root)
        raise
    return root


def _confined(ref: str, base_dir: Path, what: str) -> Path:
    """A folder the suite names for its workspace, never outside the suite's (`confined_folder`):
    what a template or a local repository holds ends up where the model reads it."""
    try:
        return confined_folder(ref, base_dir, what)
    except ValueError as exc:
        raise WorkspaceError(str(exc)) from None


def _copy_file(source: str, target: str) -> object:
    """A template's regular file copied (links are copied as links, never followed: a link to
    `~/.ssh` must not put its files in the workspace); a FIFO, socket or device is refused
    (copying one would block the run or never end)."""
    if not stat.S_ISREG(os.stat(source, follow_symlinks=False).st_mode):
        raise WorkspaceError(f"workspace template: {source} is not a regular file, folder or link")
    return shutil.copy2(source, target)


async def _close_directory(spec: Workspace, root: Path, passed: bool) -> str | None:
    """Run `after_each`, stop the container, then remove the folder unless it is kept; returns
    the kept path."""
    hook = spec.hooks.after_each
    if hook is not None:
        await run_in(root, hook.command, hook.cwd, hook.timeout_ms / 1000, spec.env)
    if spec.keep == "always" or (spec.keep == "on_failure" and not passed):
        await _stop_container(root)
        _eval_folders.pop(root, None)
        holder = _holder(root)
        kept = holder.with_name(root.name.replace(WORKSPACE_PREFIX, KEPT_PREFIX, 1))
        try:  # closed to other users as it was made, out of its folder, where no sweep takes it
            root.chmod(0o700)
            root.rename(kept)
        except OSError:
            return str(root)
        if holder != root:
            sandbox.remove_tree(holder)
        return str(kept)
    await _remove(root)
    return None


WORKSPACE_PREFIX = "convoeval-ws-"
KEPT_PREFIX = "convoeval-kept-"


def sweep_stale_workspaces(folder: Path | None = None) -> list[Path]:
    """Remove the workspaces left in the temp folder by runs that were killed (kill -9, a
    crash): only those whose owning process is gone (same pid, same start time). Returns them."""
    swept = []
    for path in Path(folder or tempfile.gettempdir()).glob(f"{WORKSPACE_PREFIX}*"):
        if not path.is_dir() or not sandbox.left_by_gone_owner(path.name[len(WORKSPACE_PREFIX) :]):
            continue
        sandbox.remove_tree(path)
        swept.append(path)
    return swept


async def _remove(root: Path) -> None:
    _eval_folders.pop(root, None)
    await _stop_container(root)
    sandbox.remove_tree(_holder(root))


def _holder(root: Path) -> Path:
    """The folder of its own a workspace lies in (`_open_directory`: of the same name); the
    workspace itself for any other folder, whose parent is never removed."""
    return root.parent if root.parent.name == root.name else root


#: The container each docker workspace lives in, by its folder.
_containers: dict[Path, str] = {}
#: The eval file's folder of each open workspace: its hooks and verify may read it.
_eval_folders: dict[Path, Path] = {}
CONTAINER_DIR = "/workspace"


async def run_in(root: Path, command: str, cwd: str | None, timeout_s: float, passed: Iterable[str] = ()) -> Ran:
    """Run a shell command in the workspace (`cwd` inside it): in its container when it has one."""
    container = _containers.get(root)
    if container is None:
        readable = [_eval_folders[root]] if root in _eval_folders else []
        return await sandboxed(command, root / (cwd or "."), timeout_s, root, passed, readable)
    inside = f"{CONTAINER_DIR}/{cwd}" if cwd else CONTAINER_DIR
    return await shell(
        f"docker exec -w {shlex.quote(inside)} {container} sh -c {shlex.quote(command)}", root, timeout_s, passed
    )


async def start_container(docker: Docker, root: Path) -> str:
    """Start the workspace's container (the folder mounted at /workspace); a missing daemon or
    image is a WorkspaceError naming it."""
    if shutil.which("docker") is None:
        raise WorkspaceError("docker: the docker command is not installed")
    ran = await shell("docker info --format '{{.ServerVersion}}'", root, 20)
    if ran.code != 0:
        raise WorkspaceError(f"docker: no Docker daemon is running ({ran.output.strip()[-200:]})")
    limits = (f" --memory {shlex.quote(docker.memory)}" if docker.memory else "") + (
        f" --cpus {docker.cpus:g}" if docker.cpus else ""
    )
    command = (
        f"docker run -d --rm -v {shlex.quote(str(root))}:{CONTAINER_DIR} -w {CONTAINER_DIR}{limits} "
        f"{shlex.quote(docker.image)} sleep {docker.timeout}"
    )
    ran = await shell(command, root, 600)
    if ran.code != 0:
        raise WorkspaceError(f"docker: cannot start {docker.image}: {ran.output.strip()[-OUTPUT_TAIL:]}")
    return ran.output.strip().splitlines()[-1]


async def _stop_container(root: Path) -> None:
    container = _containers.pop(root, None)
    if container is not None:
        await shell(f"docker rm -f {container}", root, 60)


async def clone_repo(repo: Repo, base_dir: Path, root: Path, passed: Iterable[str] = ()) -> None:
    """Clone `repo` into the workspace at its `path`, check out its ref (and ancestor). A URL's
    user info (`https://user:token@...`) is a known secret from then on, and the clone's `origin`
    is left without it and the query: git keeps its URL in `.git/config`, where the model reads
    it."""
    dest = (root / repo.path).resolve()
    if not dest.is_relative_to(root.resolve()):
        raise WorkspaceError(f"repos: {repo.path} is outside the workspace")
    plain = None  # the URL without its credentials, when it has some
    login: dict[str, str] = {}  # its user info, for git's credential helper (`_credentials`)
    if repo.source.url is not None:
        source = shown = repo.source.url
        if source.startswith("file://") or ":" not in source:  # a folder on this machine, named as a URL
            _confined(source.removeprefix("file://"), base_dir, "repos: url")
        elif "://" in source:
            parts = urlsplit(source)
            remember_credentials({}, urlunsplit(parts._replace(query="")))  # a query's are redacted by name
            host = parts.netloc.rpartition("@")[2]
            bare = urlunsplit(parts._replace(netloc=host, query="", fragment=""))
            plain, shown = (bare, shown_url(source)) if bare != source else (None, source)
            if parts.username is not None:  # never on git's command line, which every user can read
                source, login = urlunsplit(parts._replace(netloc=host)), _credentials(parts.username, parts.password)
    else:
        local = _confined(repo.source.path or "", base_dir, "repos: local source")
        source = shown = f"file://{local}" if repo.clone.depth or repo.clone.filter else str(local)
    options = (f" --depth {repo.clone.depth}" if repo.clone.depth else "") + (
        f" --filter={shlex.quote(repo.clone.filter)}" if repo.clone.filter else ""
    )
    if repo.clone.sparse:
        options += " --no-checkout"
    # `--`: the URL is never taken for an option (`--upload-pack=...`); `--no-hardlinks`: a local
    # repository's objects are copied, not linked (the model could write the suite's through a link)
    steps = [f"git clone -q --no-hardlinks{options} -- {shlex.quote(source)} {shlex.quote(str(dest))}"]
    if repo.clone.sparse:
        patterns = " ".join(shlex.quote(p) for p in repo.clone.sparse)
        steps.append(f"git -C {shlex.quote(str(dest))} sparse-checkout set --no-cone {patterns}")
    ref = repo.checkout.ref
    if ref or repo.clone.sparse:
        target = ref or "HEAD"
        fetch = f"git -C {shlex.quote(str(dest))} fetch -q origin {shlex.quote(target)}" + (
            f" --depth {repo.clone.depth + repo.checkout.ancestor}" if repo.clone.depth else ""
        )
        steps.append(
            f"(git -C {shlex.quote(str(dest))} checkout -q {shlex.quote(target)} 2>/dev/null || "
            f"({fetch} && git -C {shlex.quote(str(dest))} checkout -q FETCH_HEAD))"
        )
    if repo.checkout.ancestor:
        steps.append(f"git -C {shlex.quote(str(dest))} checkout -q HEAD~{repo.checkout.ancestor}")
    if plain is not None:
        steps.append(f"git -C {shlex.quote(str(dest))} remote set-url origin {shlex.quote(plain)}")
    for step in steps:
        ran = await shell(step, root, 600, passed, login)
        if ran.code != 0:
            raise WorkspaceError(f"repos: {shown}: {ran.output.strip()[-OUTPUT_TAIL:] or f'exit code {ran.code}'}")


#: git's credential helper that answers with a clone URL's user info, given in its environment.
_HELPER = '!f() { test "$1" = get && printf "username=%s\\npassword=%s\\n" "$CONVOEVAL_GIT_USER" "$CONVOEVAL_GIT_PASSWORD"; }; f'


def _credentials(user: str, password: str | None) -> dict[str, str]:
    """The environment that gives git a clone URL's user and password through `_HELPER` (asked
    when the server wants them), the user's own helpers left out."""
    return {
        "GIT_CONFIG_COUNT": "2",
        "GIT_CONFIG_KEY_0": "credential.helper",
        "GIT_CONFIG_VALUE_0": "",
        "GIT_CONFIG_KEY_1": "credential.helper",
        "GIT_CONFIG_VALUE_1": _HELPER,
        "CONVOEVAL_GIT_USER": unquote(user),
        "CONVOEVAL_GIT_PASSWORD": unquote(password or ""),
    }


async def run_suite_hooks(
    which: Literal["before_all", "after_all"],
    specs: list[tuple[Workspace, Path]],
    suites: Sequence[Suite] = (),
    targets: Sequence[TargetConfig] = (),
    files: Sequence[Path] = (),
) -> str | None:
    """Run each distinct `before_all` (or `after_all`) hook of the run's workspaces once, in
    the eval file's folder (or `cwd` in it), which it may change but for what convoeval reads
    or runs there (`kept_in_eval_folder` of the run's `suites`, `targets` and own `files`); the
    first failure, as one line, or None. Before the first, the workspaces of runs that died are
    swept away."""
    if which == "before_all":
        sweep_stale_workspaces()
    seen: set[tuple[str, str]] = set()
    for spec, base_dir in specs:
        hook = getattr(spec.hooks, which)
        if hook is None or (key := (str(base_dir), hook.model_dump_json())) in seen:
            continue
        seen.add(key)
        folders = import_folders(base_dir, targets)
        before = python_files(folders)
        ran = await sandboxed(
            hook.command, base_dir / (hook.cwd or "."), hook.timeout_ms / 1000, base_dir, spec.env,
            kept=kept_in_eval_folder(base_dir, suites, targets, files),
            extra={"PYTHONDONTWRITEBYTECODE": "1"},  # a script it runs leaves no `.pyc` (`python_files`)
            shared=True,  # the eval folder: other users reach it (a workspace lies in a 0700 folder)
        )  # fmt: skip
        if ran.code != 0:
            return f"workspace hook {which} `{hook.command}` exited with code {ran.code}: {ran.output.strip()[-OUTPUT_TAIL:]}"
        if changed := sorted(k for k in before.keys() | python_files(folders).keys() if before.get(k) != _now(k)):
            shown = ", ".join(changed[:5]) + (f" and {len(changed) - 5} more" if len(changed) > 5 else "")
            return (
                f"workspace hook {which} `{hook.command}` changed Python files that convoeval may import on the "
                f"host (a `python` target's or tool's modules, a `cli` target's): {shown}; a hook may not"
            )
    return None


#: Folders `python_files` does not walk: no Python module convoeval runs lies there.
_UNWALKED = frozenset({".git", "node_modules"})
#: What Python loads code from: modules, compiled ones, extensions and `.pth` files.
PYTHON_SUFFIXES = (".py", ".pyc", ".pyo", ".pth", ".so", ".pyd")


def import_folders(base_dir: Path, targets: Iterable[TargetConfig] = ()) -> list[Path]:
    """The folders of the eval folder that code convoeval runs on the host imports from: those
    on `sys.path`, those of the Python files it imported (a `python` target's, a tool's, a
    plugin) and of the Python files the `targets` run (a `cli` target's script). A hook that
    adds or changes a module there (`helper.py` a target imports on its first call, a `json.py`
    shadowing the standard one) would have it run unconfined."""
    folder = base_dir.resolve()
    pythons = list(dict.fromkeys(Path(p).resolve() for p in (sys.prefix, sys.base_prefix)))
    files = [*_imported_files(pythons), *(p for p in _target_files(folder, targets) if p.suffix == ".py")]
    found = [Path(p).resolve() for p in sys.path if p] + [p.resolve().parent for p in files]
    inside = (f for f in found if f.is_relative_to(folder) and not any(f.is_relative_to(p) for p in pythons))
    return list(dict.fromkeys(inside))


def python_files(folders: Sequence[Path]) -> dict[str, tuple[int, int, int]]:
    """Each file Python may load under `folders` (`PYTHON_SUFFIXES`, no link followed; `.git`, `node_modules` and convoeval's own Python, kept whole, left out), by its
    path: its inode, size and modification time (at most `SNAPSHOT_FILES`)."""
    found: dict[str, tuple[int, int, int]] = {}
    pythons = {str(Path(p).resolve()) for p in (sys.prefix, sys.base_prefix)}
    pending = [str(top) for top in folders]  # not os.walk: it recurses (a hook may nest folders deeper than the stack)
    while pending:
        try:
            with os.scandir(pending.pop()) as scan:
                entries = list(scan)
        except OSError:  # gone, or a path too long to open: Python cannot import from there either
            continue
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                if entry.name not in _UNWALKED and entry.path not in pythons:
                    pending.append(entry.path)
            elif entry.name.endswith(PYTHON_SUFFIXES) and len(found) < SNAPSHOT_FILES:
                found[entry.path] = _now(entry.path)
    return found


def _now(path: str) -> tuple[int, int, int]:
    try:
        info = os.lstat(path)
    except OSError:
        return (0, 0, 0)
    return (info.st_ino, info.st_size, info.st_mtime_ns)


registry.register("environment", "directory", DirectoryEnvironment())


def snapshot(root: Path) -> dict[str, str]:
    """The text of each regular file under `root` (`.git` and `__pycache__` left out; a big or
    binary file by its size, and so is each past `SNAPSHOT_BYTES` read in all), at most
    `SNAPSHOT_FILES` of them. The model wrote the folder, and may still change it (a process
    left in a docker workspace): each folder and file is opened from the open folder holding
    it, never through a link; the walk does not recurse (folders nested deeper than Python's
    stack) and reads a bounded total (a thousand hard links to one big file)."""
    files: dict[str, str] = {}
    budget = SNAPSHOT_BYTES
    folders: list[tuple[str, _Open | None]] = [("", None)]  # each with the open folder holding it
    try:
        while folders and len(files) < SNAPSHOT_FILES:
            folder, holder = folders.pop()
            try:
                fd = (
                    os.open(folder.rpartition("/")[2], _NO_LINK | os.O_DIRECTORY, dir_fd=holder.fd)
                    if holder is not None
                    else os.open(root, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
                )
            except OSError:  # gone, made a link meanwhile, or too many folders open
                continue
            finally:
                if holder is not None:
                    holder.done()
            opened = _Open(fd)
            try:
                with os.scandir(fd) as scan:
                    entries = sorted(scan, key=lambda e: e.name)
                for entry in entries:
                    name = f"{folder}/{entry.name}" if folder else entry.name
                    if entry.name in IGNORED:
                        continue
                    if entry.is_dir(follow_symlinks=False):
                        opened.pending += 1
                        folders.append((name, opened))
                    elif entry.is_file(follow_symlinks=False) and len(files) < SNAPSHOT_FILES:
                        files[name], budget = _file_text(entry.name, fd, budget)
            finally:
                if opened.pending == 0:
                    os.close(fd)
            folders[len(folders) - opened.pending :] = reversed(folders[len(folders) - opened.pending :])  # name order
    finally:
        for _, holder in folders:
            if holder is not None:
                holder.done()
    return dict(sorted(files.items()))


@dataclass
class _Open:
    """An open folder of `snapshot`'s walk, closed once its last subfolder is opened."""

    fd: int
    pending: int = 0

    def done(self) -> None:
        self.pending -= 1
        if self.pending == 0:
            os.close(self.fd)


_NO_LINK = os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


def _file_text(name: str, folder: int, budget: int) -> tuple[str, int]:
    """The text of the regular file `name` of the open `folder` for `snapshot` (by its size when
    big, binary or over the `budget` of bytes still to read), and what is left of the budget.
    Opened without following a link nor waiting: no FIFO or link put in its place is read."""
    try:
        fd = os.open(name, _NO_LINK | os.O_NONBLOCK, dir_fd=folder)
    except OSError:
        return "<unreadable>\n", budget
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return "<not a regular file>\n", budget
        size = info.st_size
        data = handle.read(size) if size <= min(SNAPSHOT_FILE_BYTES, budget) else b""
    text = data.decode("utf-8", "replace") if data and b"\0" not in data else f"<{size} bytes>\n"
    return text, budget - len(data)


def file_changes(before: dict[str, str], root: Path) -> str:
    """A unified diff from `before` (a snapshot) to what `root` holds now ("" when unchanged),
    made only up to `DIFF_CHARS` (then the number of files changed in all)."""
    after = snapshot(root)
    changed = [name for name in sorted(before.keys() | after.keys()) if before.get(name) != after.get(name)]
    parts: list[str] = []
    size = 0
    for name in changed:
        old, new = before.get(name), after.get(name)
        for line in difflib.unified_diff(
            (old or "").splitlines(keepends=True),
            (new or "").splitlines(keepends=True),
            fromfile=f"a/{name}" if old is not None else "/dev/null",
            tofile=f"b/{name}" if new is not None else "/dev/null",
        ):
            parts.append(line if line.endswith("\n") else line + "\n")
            size += len(parts[-1])
            if size > DIFF_CHARS:
                return "".join(parts)[:DIFF_CHARS] + f"[... diff cut: {len(changed)} files changed in all]\n"
    if SNAPSHOT_FILES in (len(before), len(after)):
        parts.append(f"[... only the first {SNAPSHOT_FILES} files of the workspace compared]\n")
    return "".join(parts)


#: The exit codes by which a POSIX shell says a command could not run at all.
CANNOT_RUN = {126: "not executable", 127: "command not found"}


@dataclass
class VerifiedTurns:
    """A turn source that runs `verify` after each turn and sends hints between turns."""

    inner: TurnSource
    verify: Verify
    workdir: Path
    hints: list[str] = field(default_factory=list)
    passed: list[str] = field(default_factory=list)  # secret-named variables verify may see
    checks: list[AssertionOutcome] = field(default_factory=list)
    verified_at: int | None = None
    _checked: int = 0

    async def next_turn(self, convo: Conversation) -> TurnPlan | None:
        if await self.check(convo):
            return None
        turn = await self.inner.next_turn(convo)
        hint_index = convo.turns_sent - 1  # hint k goes before turn k+2
        if turn is not None and 0 <= hint_index < len(self.hints):
            hint = Message(role="user", content=self.hints[hint_index], source="hint")
            turn = replace(turn, messages=[hint, *turn.messages])
        return turn

    def unsent(self) -> list[TurnPlan]:
        return self.inner.unsent()

    async def check(self, convo: Conversation) -> bool:
        """Run `verify` after the last turn sent, unless it ran already (also once the
        conversation ended on a stop of its own: a capture, a budget, `on_turn_failure`).
        True when it ends the conversation: verified, or it could not run."""
        if convo.turns_sent <= self._checked:
            return False
        self._checked = convo.turns_sent
        ran = await run_in(self.workdir, self.verify.command, None, self.verify.timeout_s, self.passed)
        if ran.code in CANNOT_RUN:  # the shell's own codes: it never ran, so it decided nothing
            convo.error = (
                f"verify after turn {convo.turns_sent} could not run ({CANNOT_RUN[ran.code]}, exit code "
                f"{ran.code}): {ran.output.strip()[-OUTPUT_TAIL:]}"
            )
            return True
        passed = ran.code == 0
        self.checks.append(
            AssertionOutcome(
                text=f"verify after turn {convo.turns_sent}",
                passed=passed,
                evidence=f"exit code {ran.code}"
                + (f": {ran.output.strip()[-OUTPUT_TAIL:]}" if ran.output.strip() else ""),
            )
        )
        if passed:
            self.verified_at = convo.turns_sent
            convo.stop_note = convo.stop_note or f"stopped: verified at turn {convo.turns_sent}"
        return passed

    def entry(self) -> ScoreEntry:
        """The `verify` score: a pass when some turn verified, with one check per turn."""
        passed = self.verified_at is not None
        grader = GraderScore(
            name="verify",
            type="verify",
            score=1.0 if passed else 0.0,
            verdict="pass" if passed else "fail",
            assertions=self.checks,
        )
        return ScoreEntry(
            name="verify",
            type="conversation",
            score=grader.score,
            verdict=grader.verdict,
            assertions=self.checks,
            graders=[grader],
            note=f"verified at turn {self.verified_at}" if passed else "never verified",
        )
