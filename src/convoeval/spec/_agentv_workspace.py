"""AgentV's workspace forms, rewritten into convoeval's `workspace:` (read from AgentV's
`yaml-parser.ts` and `repo-config-parser.ts` at v4.15.0 and v4.42.4).

- `workspace: path/to/workspace.yaml` (a shared file): read, its relative paths taken from
  its own folder.
- hook `command` as a list (or `script`): run as that argv, with AgentV's JSON context on
  stdin (`workspace_path`; `test_id` and `eval_run_id` empty), `{{workspace_path}}` filled in
  its arguments, in `cwd` or else the eval file's folder. AgentV's `before_all` / `after_all` get the shared
  workspace's path; convoeval makes a fresh workspace per trial, so they run in each trial's
  workspace (before `before_each`, after `after_each`).
- a hook with only `reset:` and `mode: pooled | temp`, `isolation`, v5.1's `scope: suite |
  attempt`: nothing to do, as every trial has its own fresh workspace.
- v4.42's repos `{path, repo: org/name | URL, commit | base_commit, ancestor, sparse}`.
"""

from __future__ import annotations

import json
import math
import re
import shlex
from collections.abc import Callable, Sequence
from pathlib import Path

from ._yaml import load_yaml_file

UNSUPPORTED = "this AgentV workspace form is not supported: "
_GITHUB_SHORTHAND = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")
_ARG_VARIABLE = re.compile(r"\{\{(\w+)\}\}")
HOOKS = ("before_all", "before_each", "after_each", "after_all")

Report = Callable[[tuple[str | int, ...], str], None]
"""`report(subpath, message)`: a problem at `subpath` of the workspace."""


def agentv_workspace(
    value: object, base: Path, report: Report, agentv: bool, substitute: Callable[[object], object] = lambda v: v
) -> object:
    """The workspace `value` of an eval file in `base`, in convoeval's form (or as given when
    it is not an AgentV form); `report(subpath, message)` records a problem; `substitute`
    fills `${{ VAR }}` in a shared workspace file."""
    shared = isinstance(value, str)
    if isinstance(value, str):
        loaded = _read_shared(value, base, report)
        if loaded is None:
            return None
        value, base = substitute(loaded[0]), loaded[1]
        agentv = True
    if not isinstance(value, dict):
        return value
    value = dict(value)
    mode = value.pop("mode", None)
    value.pop("isolation", None)
    scope = value.pop("scope", None)  # AgentV v5.1's name of the two: its workspace's lifetime
    if scope is not None and scope not in ("suite", "attempt"):
        report(("scope",), f"must be suite or attempt (AgentV's workspace lifetimes), got {scope!r}")
    if mode == "static" or "path" in value:
        report(("path",) if "path" in value else ("mode",), UNSUPPORTED + _STATIC)
        value.pop("path", None)
    elif mode is not None and mode not in ("pooled", "pool", "temp"):
        report(("mode",), f"unknown workspace mode {mode!r} (AgentV's are pooled, temp, static)")
    if shared and isinstance(value.get("template"), str) and not Path(value["template"]).is_absolute():
        value["template"] = str((base / value["template"]).resolve())
    if isinstance(value.get("repos"), list):
        value["repos"] = [_repo(repo, base, shared) for repo in value["repos"]]
    if isinstance(value.get("hooks"), dict):
        value["hooks"] = _hooks(value["hooks"], base, agentv)
    return value


_STATIC = (
    "`mode: static` / `path:` (a fixed folder shared by every test); convoeval gives each trial a fresh "
    "workspace so that trials cannot see each other's changes: use `template:` with the folder instead"
)


def _read_shared(name: str, base: Path, report: Report) -> tuple[dict, Path] | None:
    """A shared workspace file named by a string (relative to the eval file)."""
    file = (base / name).resolve()
    try:
        data = load_yaml_file(file)
    except ValueError as exc:
        report((), f"cannot read the workspace file {name} ({file}): {exc}")
        return None
    if not isinstance(data, dict):
        report((), f"the workspace file {name} must hold a mapping")
        return None
    return data, file.parent


def _repo(repo: object, base: Path, shared: bool = False) -> object:
    """v4.42's `{path, repo, commit, base_commit, ancestor, sparse}` as `{path, source, checkout, clone}`;
    v4.30's `checkout.base_commit` as the checkout's `ref` (it wins over `ref`: `repo-checkout.ts`)."""
    pinned = repo.get("checkout") if isinstance(repo, dict) else None
    if isinstance(repo, dict) and isinstance(pinned, dict) and "base_commit" in pinned:
        pinned = dict(pinned)
        pinned["ref"] = pinned.pop("base_commit")
        repo = {**repo, "checkout": pinned}
    if shared and isinstance(repo, dict) and isinstance(repo.get("source"), dict):
        source = repo["source"]
        if isinstance(source.get("path"), str) and not Path(source["path"]).is_absolute():
            repo = {**repo, "source": {**source, "path": str((base / source["path"]).resolve())}}
    if not isinstance(repo, dict) or "repo" not in repo or "source" in repo:
        return repo
    repo = dict(repo)
    name = str(repo.pop("repo")).strip()
    url = f"https://github.com/{name}.git" if _GITHUB_SHORTHAND.match(name) else name
    local = (base / name) if not re.match(r"^[a-z+]+://|^git@", name) else None
    if local is not None and (local / ".git").exists():
        source = {"type": "local", "path": str(local.resolve())}
    else:
        source = {"type": "git", "url": url}
    commit = repo.pop("commit", None) or repo.pop("base_commit", None)
    repo.pop("base_commit", None)
    checkout: dict[str, object] = {"ref": commit} if commit else {}
    if "ancestor" in repo:
        checkout["ancestor"] = repo.pop("ancestor")
    out: dict[str, object] = {"path": repo.pop("path", "."), "source": source, "checkout": checkout}
    if "sparse" in repo:
        out["clone"] = {"sparse": repo.pop("sparse")}
    out.update(repo)  # anything else is reported by the model as an unknown field
    return out


def _hooks(hooks: dict, base: Path, agentv: bool) -> dict:
    """AgentV's hooks as convoeval's: list commands run as argv with AgentV's stdin context;
    `before_all`/`after_all` of an AgentV file run in each trial's workspace; `reset`-only
    hooks and `enabled` are dropped (`enabled: false` drops every hook)."""
    hooks = dict(hooks)
    if hooks.pop("enabled", True) is False:
        return {}
    # One list-form command makes the whole set AgentV's (so no convoeval hook is lost in the chain).
    agentv = agentv or any(isinstance(h, dict) and isinstance(h.get("command"), list) for h in hooks.values())
    lines: dict[str, tuple[str, int]] = {}
    for name in HOOKS:
        hook = hooks.get(name)
        if not isinstance(hook, dict):
            continue
        hook = dict(hook)
        hook.pop("reset", None)
        command = hook.pop("command", hook.pop("script", None))
        if command is None:
            del hooks[name]  # only `reset:`: every trial's workspace is fresh already
            continue
        timeout = hook.get("timeout_ms", 60_000)
        if not agentv or not isinstance(command, (str, list)) or not _positive(timeout):
            hooks[name] = {**hook, "command": command}  # the hook's model says what is wrong
            continue
        argv = command if isinstance(command, list) else command.split()
        lines[name] = (_shell_line(argv, hook.get("cwd"), base), int(timeout))
        hooks[name] = None
    if not lines:
        return hooks
    before = [lines[n] for n in ("before_all", "before_each") if n in lines]
    after = [lines[n] for n in ("after_each", "after_all") if n in lines]
    for slot, parts in (("before_each", before), ("after_each", after)):
        if parts:
            hooks[slot] = {
                "command": " && ".join(f"( {line} )" for line, _ in parts),
                "timeout_ms": sum(t for _, t in parts),
            }
    for name in ("before_all", "after_all"):
        if hooks.get(name) is None:
            hooks.pop(name, None)
    return hooks


def _positive(value: object) -> bool:
    """Whether `value` is a finite number above 0 (a timeout)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0


def _shell_line(argv: Sequence[object], cwd: object, base: Path) -> str:
    """One shell line running `argv` as AgentV runs a hook: from the trial's workspace (the
    folder convoeval runs `before_each` in), AgentV's JSON context on stdin (its `test_id` and
    `eval_run_id` empty), `{{workspace_path}}` filled in the arguments, in `cwd` (relative to
    the eval file) or the eval file's folder."""
    folder = (base / cwd).resolve() if isinstance(cwd, str) else base.resolve()
    context = {"workspace_path": "@WS@", "test_id": "", "eval_run_id": "", "case_input": None, "case_metadata": None}
    stdin = shlex.quote(json.dumps(context)).replace("@WS@", "'\"$WS\"'")
    words = " ".join(_word(str(arg)) for arg in argv)
    return f'WS="$PWD"; cd {shlex.quote(str(folder))} && printf %s {stdin} | {words}'


def _word(arg: str) -> str:
    """An argument quoted for the shell, `{{workspace_path}}` as the workspace folder."""
    parts = re.split(r"(\{\{workspace_path\}\})", arg)
    out = "".join('"$WS"' if part == "{{workspace_path}}" else shlex.quote(part) for part in parts if part)
    return out or "''"
