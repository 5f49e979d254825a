"""AgentV v5's `environment` (a testbed recipe) and `extensions` (lifecycle hooks), read from
AgentV's `packages/core/src/evaluation/` at v5.3.1-next.1 (`loaders/environment-recipe.ts`,
`environment/host.ts`, `workspace/setup.ts`, `extensions/runner.ts`, `yaml-parser.ts`
`parseExtensions`), as convoeval's `workspace:`.

- `environment: {type: host, workdir, setup: {command, cwd, timeout_ms}}` (inline, or
  `file://recipe.yaml` whose relative paths are the recipe file's): the agent works in
  `workdir`. AgentV uses that folder itself, shared by the suite's tests; convoeval copies it
  into a fresh workspace per trial (its `template:`; a workdir that does not exist is an empty
  workspace, as AgentV creates it). `setup` runs there first as AgentV runs it: the argv, in
  `cwd` (relative to the workdir) or else the recipe's folder, with `AGENTV_ENVIRONMENT_WORKDIR`
  and `{"environment": {"type": "host", "workdir": ...}}` on stdin; a failing setup is the
  test's execution error, its `env` (main) added to the setup's environment. `type: docker` is
  refused.
- `extensions: [file://hook.ts:beforeAll | beforeEach | afterEach | afterAll, ...]`: the named
  function of the module is called with AgentV's context (`hook_name`, `workspace_path`,
  `test_id`, `eval_run_id`, `eval_dir`), run by `bun` in the eval file's folder; `beforeAll` /
  `beforeEach` ones run after the setup, `afterEach` / `afterAll` ones when the trial ends (the
  `*All` ones once per trial: each trial has its own workspace). What they return (a provider
  context for AgentV's agent providers, metadata, `output`) is not used; `output` is printed.
- `agentv:agent-rules`: without paths it only tells AgentV's providers where the workspace's
  skills and rules are (no provider of v5.3.1 reads it): nothing to do; its `skills`, `hooks`,
  `agents`, `rules` paths are copied into the workspace's `.agentv/agent-rules/KIND/`, as AgentV
  stages them.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from ._yaml import load_yaml_file

Report = Callable[[tuple[str | int, ...], str], None]
"""`report(subpath, message)`: a problem at `subpath` of the field being read."""

UNSUPPORTED = "this AgentV form is not supported: "
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")  # an environment variable the shell can assign
EXTENSION_HOOKS = ("beforeAll", "beforeEach", "afterEach", "afterAll")
RULE_KINDS = ("skills", "hooks", "agents", "rules")
#: AgentV runs a setup without a time limit; here it has ten minutes unless `timeout_ms` says.
SETUP_TIMEOUT_MS = 600_000
EXTENSION_TIMEOUT_MS = 120_000
#: Calls one exported hook of an extension module (its path, hook and AgentV's context come on
#: stdin, so that `process.argv[1]` stays empty as when AgentV imports it: some modules run
#: their own `main` when argv[1] names them).
_RUNNER = (
    "const {file, hook, context} = JSON.parse(await Bun.stdin.text());"
    "const m = await import(require('node:url').pathToFileURL(file).href);"
    "const fn = m[hook] ?? (m.default && typeof m.default === 'object' ? m.default[hook] : undefined);"
    "if (typeof fn !== 'function') { console.error(`extension ${file} does not export function ${hook}`);"
    " process.exit(1); }"
    "const r = await fn(context, {hookName: hook});"
    "if (r && typeof r.output === 'string') console.log(r.output);"
)


@dataclass
class Testbed:
    """An AgentV v5 testbed read from a file: the workdir to copy, the setup line, and the
    extension modules ((path, hook) pairs) and agent-rules lines of each hook."""

    template: str | None = None
    setup: list[tuple[str, int]] = field(default_factory=list)
    modules: list[tuple[Path, str]] = field(default_factory=list)
    staging: dict[str, list[tuple[str, int]]] = field(default_factory=lambda: {h: [] for h in EXTENSION_HOOKS})

    def workspace(self, base: Path, test: dict | None = None) -> dict:
        """convoeval's `workspace:`; `test` (its id, input, metadata) fills AgentV's hook context."""
        hooks: dict[str, list[tuple[str, int]]] = {h: list(lines) for h, lines in self.staging.items()}
        for path, hook in self.modules:
            hooks[hook].append(_module_line(path, hook, base, test))
        before = [*self.setup, *hooks["beforeAll"], *hooks["beforeEach"]]
        after = [*hooks["afterEach"], *hooks["afterAll"]]
        workspace: dict[str, object] = {}
        if self.template is not None:
            workspace["template"] = self.template
        slots = {}
        for slot, lines in (("before_each", before), ("after_each", after)):
            if lines:
                command = " && ".join(f"( {line} )" for line, _ in lines)
                slots[slot] = {"command": command, "timeout_ms": min(sum(t for _, t in lines), 86_400_000)}
        workspace["hooks"] = slots
        return workspace


def agentv_testbed(
    data: dict, base: Path, report: Report, substitute: Callable[[object], object], suite: Testbed | None = None
) -> Testbed | None:
    """The testbed of `data`'s `environment` and `extensions` (both taken out of it), None when
    it has neither; a test's (`suite` given) keeps the suite's extensions and, without an
    `environment` of its own, the suite's workdir and setup."""
    if "environment" not in data and "extensions" not in data and suite is None:
        return None
    testbed = Testbed() if suite is None else replace(suite)
    if "environment" in data:
        recipe = _recipe(data.pop("environment"), base, report, substitute)
        testbed.template, testbed.setup = _host(*recipe, report) if recipe is not None else (None, [])
    if "extensions" in data:
        if suite is not None:
            report(("extensions",), "`extensions` belong to the suite (AgentV reads them at the top of the file)")
            del data["extensions"]
        else:
            _extensions(data.pop("extensions"), base, report, testbed)
    if "workspace" in data:
        if "environment" in data or not _template_only(data["workspace"]):
            report(("workspace",), "give the testbed once: AgentV v5's `environment`/`extensions` or `workspace`")
            return None
        workspace = data.pop("workspace")  # AgentV v5.1: the extensions' workdir is `workspace.template`
        if isinstance(workspace.get("template"), str):
            template = (base / workspace["template"]).resolve()
            testbed.template = str(template) if os.path.isdir(template) else None
    return testbed


def _template_only(workspace: object) -> bool:
    """Whether an AgentV v5.1 `workspace` gives only a folder to copy and its lifetime (`scope`)."""
    return isinstance(workspace, dict) and set(workspace) <= {"template", "scope"} and "template" in workspace


def _recipe(
    value: object, base: Path, report: Report, substitute: Callable[[object], object]
) -> tuple[object, Path, Path | None] | None:
    """(recipe mapping, its folder, the recipe file or None when inline) of an environment."""
    if isinstance(value, str):
        if not value.startswith("file://"):
            report(("environment",), "must be a recipe (a mapping) or a `file://` reference to a recipe file")
            return None
        file = (base / value.removeprefix("file://")).resolve()
        try:
            loaded = substitute(load_yaml_file(file))
        except ValueError as exc:
            report(("environment",), f"cannot read the environment recipe {value} ({file}): {exc}")
            return None
        if isinstance(loaded, dict) and "environment" in loaded:
            report(("environment",), f"the recipe file {file} must hold the recipe itself, not `environment:`")
            return None
        return loaded, file.parent, file
    return value, base, None


def _host(recipe: object, folder: Path, file: Path | None, report: Report) -> tuple[str | None, list]:
    """A host recipe's workdir (the template, None when it does not exist) and setup line; a
    problem in a recipe file is reported at `environment`, naming the file and its field."""
    if file is not None:
        inner = report

        def report(sub: tuple[str | int, ...], message: str) -> None:
            inner(("environment",), f"in {file}: {'.'.join(map(str, sub[1:])) or 'the recipe'}: {message}")

    def where(*sub: str | int) -> tuple[str | int, ...]:
        return ("environment", *sub)

    if not isinstance(recipe, dict):
        report(where(), "must be a mapping with `type: host | docker` and `workdir`")
        return None, []
    kind = recipe.get("type")
    if kind == "docker":
        report(
            where("type"),
            UNSUPPORTED + "`type: docker` (AgentV builds or pulls the image and runs the agent's testbed in a "
            "container): use a host recipe, or convoeval's `workspace: {docker: {image: ...}}`",
        )
        return None, []
    if kind != "host":
        report(where("type"), "must be `host` or `docker`")
        return None, []
    unknown = sorted(set(recipe) - {"type", "workdir", "setup", "env"})
    if unknown:
        report(where(unknown[0]), f"unknown field in a host environment (known: type, workdir, setup, env): {unknown}")
    env = recipe.get("env", {})
    if not isinstance(env, dict) or not all(
        isinstance(k, str) and _NAME.fullmatch(k) and isinstance(v, str) for k, v in env.items()
    ):
        report(where("env"), "must map variable names to text values (for the setup command)")
        env = {}
    workdir = recipe.get("workdir")
    if not isinstance(workdir, str) or not workdir.strip():
        report(where("workdir"), "must be a folder (a non-empty string)")
        return None, []
    resolved = (folder / workdir).resolve()
    template = str(resolved) if os.path.isdir(resolved) else None  # False for a name too long
    setup = recipe.get("setup")
    if setup is None:
        return template, []
    line = _setup_line(setup, folder, env, lambda sub, message: report(where("setup", *sub), message))
    return template, [line] if line else []


def _setup_line(setup: object, folder: Path, env: dict[str, str], report: Report) -> tuple[str, int] | None:
    """The shell line running `environment.setup` in the trial's workspace, as AgentV's
    `prepareHostEnvironment` runs it: with the recipe's `env` added to the environment
    (AGENTV_ENVIRONMENT_WORKDIR over it)."""
    if not isinstance(setup, dict):
        report((), "must be a mapping: {command: [argv], cwd, timeout_ms}")
        return None
    unknown = sorted(set(setup) - {"command", "cwd", "timeout_ms"}, key=str)  # YAML keys may be numbers
    if unknown:
        report((unknown[0],), f"unknown field (known: command, cwd, timeout_ms): {unknown}")
    command = setup.get("command")
    if not isinstance(command, list) or not command or not all(isinstance(c, str) and c.strip() for c in command):
        report(("command",), 'must be a non-empty list of strings (argv; ["bash", "-lc", "..."] for a shell line)')
        return None
    cwd = setup.get("cwd")
    timeout = setup.get("timeout_ms", SETUP_TIMEOUT_MS)
    if cwd is not None and not isinstance(cwd, str):
        report(("cwd",), "must be a folder (relative to the workdir)")
        return None
    if not isinstance(timeout, (int, float)) or isinstance(timeout, bool) or timeout <= 0:
        report(("timeout_ms",), "must be a positive number of milliseconds")
        return None
    if cwd is None:
        place = shlex.quote(str(folder.resolve()))  # the hook runs in the workspace: never relative
    elif Path(cwd).is_absolute():
        place = shlex.quote(cwd)
    else:
        place = f'"$WS"/{shlex.quote(cwd)}'
    payload = shlex.quote(json.dumps({"environment": {"type": "host", "workdir": "@WS@"}}))
    payload = payload.replace("@WS@", "'\"$WS\"'")
    words = " ".join(shlex.quote(c) for c in command)
    assigned = "".join(f"{name}={shlex.quote(value)} " for name, value in env.items())
    line = f'WS="$PWD"; cd {place} && printf %s {payload} | {assigned}AGENTV_ENVIRONMENT_WORKDIR="$WS" {words}'
    return line, min(int(timeout), 86_400_000)


def _extensions(value: object, base: Path, report: Report, testbed: Testbed) -> None:
    """The extensions' modules and agent-rules copies, by hook, in the order they are listed."""
    if not isinstance(value, list):
        report(("extensions",), "must be a list (`file://hook.ts:beforeAll`, `agentv:agent-rules`, ...)")
        return
    for i, entry in enumerate(value):
        where = ("extensions", i)
        if isinstance(entry, str) and entry.startswith("file://"):
            file, _, hook = entry.removeprefix("file://").rpartition(":")
            if hook not in EXTENSION_HOOKS or not file:
                report(where, f"must be `file://path/to/hook.ts:HOOK`, HOOK one of {', '.join(EXTENSION_HOOKS)}")
                continue
            path = (base / file).resolve()
            if not path.is_file():
                report(where, f"the extension module {file} is not a file (looked in {path})")
                continue
            testbed.modules.append((path, hook))
            continue
        rules = _agent_rules(entry, where, report)
        if rules is None:
            continue
        hook, paths = rules
        line = _stage_line(paths, base, where, report)
        if line:
            testbed.staging[hook].append((line, EXTENSION_TIMEOUT_MS))


def _module_line(path: Path, hook: str, base: Path, test: dict | None) -> tuple[str, int]:
    """The shell line calling `hook` of the module at `path` with AgentV's context: a
    `*Each` hook gets the test's id, input text and metadata (`case_input`, `case_metadata`)."""
    base = base.resolve()  # the line runs in the workspace: a relative eval folder would not be found
    context: dict[str, object] = {"hook_name": hook, "workspace_path": "@WS@", "eval_run_id": "", "eval_dir": str(base)}
    if hook.endswith("All"):
        context["test_id"] = f"__{'before' if hook == 'beforeAll' else 'after'}_all__"
    else:
        test = test or {}
        context["test_id"] = str(test.get("id", ""))
        context["case_input"] = _input_text(test.get("input"))
        context["case_metadata"] = test.get("metadata") if isinstance(test.get("metadata"), dict) else None
    stdin = json.dumps({"file": str(path), "hook": hook, "context": context})
    quoted = shlex.quote(stdin).replace("@WS@", "'\"$WS\"'")
    line = f'WS="$PWD"; cd {shlex.quote(str(base))} && printf %s {quoted} | bun -e {shlex.quote(_RUNNER)}'
    return line, EXTENSION_TIMEOUT_MS


def _input_text(value: object) -> str:
    """A test's input as text (AgentV's `question`): a string, or its messages' texts."""
    if isinstance(value, str):
        return value
    texts = []
    for message in value if isinstance(value, list) else []:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, str):
            texts.append(content)
    return "\n\n".join(texts)


def _agent_rules(entry: object, where: tuple, report: Report) -> tuple[str, dict[str, list[str]]] | None:
    """(hook, paths by kind) of an `agentv:agent-rules` extension, as AgentV's parser reads it."""
    if isinstance(entry, str):
        if entry == "agentv:agent-rules":
            return "beforeAll", {}
        hook = entry.removeprefix("agentv:agent-rules:")
        if entry.startswith("agentv:agent-rules:") and hook in EXTENSION_HOOKS:
            return hook, {}
        report(where, "must start with `file://` or be `agentv:agent-rules[:HOOK]`")
        return None
    if not isinstance(entry, dict) or entry.get("id") != "agentv:agent-rules":
        report(where, "must be a string or `{id: agentv:agent-rules, ...}`")
        return None
    hook = entry.get("hook", "beforeAll")
    if hook not in EXTENSION_HOOKS:
        report((*where, "hook"), f"must be one of {', '.join(EXTENSION_HOOKS)}")
        return None
    source = entry["config"] if isinstance(entry.get("config"), dict) else entry
    paths: dict[str, list[str]] = {}
    for kind in RULE_KINDS:
        raw = source.get(kind)
        if raw is None:
            continue
        values = [raw] if isinstance(raw, str) else raw
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            report((*where, kind), "must be a path or a list of paths")
            continue
        paths[kind] = values
    return hook, paths


def _stage_line(paths: dict[str, list[str]], base: Path, where: tuple, report: Report) -> str:
    """Copies of the configured agent-rules paths into the workspace's `.agentv/agent-rules/`."""
    parts = []
    for kind, values in paths.items():
        target = f".agentv/agent-rules/{kind}"
        for value in values:
            source = (base / value).resolve()
            if not source.exists():
                report((*where, kind), f"agentv:agent-rules {kind} path not found: {value} (looked in {source})")
                continue
            parts.append(f"mkdir -p {target} && cp -R {shlex.quote(str(source))} {target}/")
    return " && ".join(parts)
