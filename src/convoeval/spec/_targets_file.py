"""The targets file (`targets.yaml`, or AgentV's `.agentv/targets.yaml`, or AgentV v5's
`.agentv/providers.yaml` catalog): named targets a suite or `--target NAME` can refer to.

Each entry is validated when the file loads: the common fields by `TargetConfig`, the rest by
its provider's settings model (`file:line: field: message`). An entry that cannot be used (its
provider is not implemented, or a `${{ VAR }}` it references is unset) is only an error when a
run selects it, so one file can list targets for several machines, as AgentV's files do.
"""

from __future__ import annotations

import os
import re
from collections.abc import Collection, Iterable, Sequence
from pathlib import Path
from urllib.parse import urlsplit

from pydantic import AliasChoices, BaseModel, ValidationError

from .. import registry
from .._secrets import remember
from ..errors import ConfigError, suggest
from ..judging import PanelRule
from ..targets import TargetConfig, provider_names, settings_model
from ._agentv_env import ENV_REF, substitute_env
from ._errors import Problem, SpecError, field_path
from ._models import TargetName, TargetRole
from ._yaml import DataPath, LineMap, load_yaml

TARGETS_FILE = "targets.yaml"
AGENTV_TARGETS_FILE = Path(".agentv") / "targets.yaml"
#: AgentV v5's catalog (its main branch, July 2026): a list of `{id: PROVIDER, label: NAME, ...}`.
AGENTV_PROVIDERS_FILE = Path(".agentv") / "providers.yaml"
_ENV_TEMPLATE = re.compile(r"\{\{\s*env\.([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
#: Providers whose AgentV `endpoint` is their base URL.
_BASE_URL_ENDPOINT = frozenset({"openai", "openrouter"})
#: AgentV's names of the Claude Code CLI provider (`providers/index.ts`, v4.15: `claude-cli`, and
#: `claude` for it too), convoeval's `claude-code`.
_AGENTV_CLAUDE = frozenset({"claude", "claude-cli"})


def find_targets_file(suite_dir: Path) -> Path | None:
    """`targets.yaml` next to the suite, else AgentV's `.agentv/targets.yaml` in the suite's
    folder or the nearest folder above it (up to the repository root, as AgentV looks)."""
    if os.path.lexists(suite_dir / TARGETS_FILE):  # a folder or a link loop too: `named_targets` says so
        return suite_dir / TARGETS_FILE
    for folder in (suite_dir, *suite_dir.parents):
        for name in (AGENTV_TARGETS_FILE, AGENTV_PROVIDERS_FILE):
            if (folder / name).is_file():
                return folder / name
        if (folder / ".git").is_file() or (
            folder / ".git" / "HEAD"
        ).exists():  # a repository (not a hook's placeholder)
            break
    return None


def _remember_url_secrets(raw: dict[str, object], filled: object) -> None:
    """A value a `${{ VAR }}` puts in the path of a target's URL (`/gw/${{ ROUTE }}/v1`, a
    gateway's key) is a credential no name reveals: `redact` knows it from now on (the URL's
    user info and query values are known when the target is made)."""
    if not isinstance(filled, dict):
        return
    for field in ("base_url", "url", "endpoint"):
        text, url = raw.get(field), filled.get(field)
        if not isinstance(text, str) or not isinstance(url, str) or "${{" not in text:
            continue
        try:
            path = urlsplit(url).path
        except ValueError:
            continue
        for match in ENV_REF.finditer(text):
            value = os.environ.get(match.group(1))
            if value and value in path:
                remember(value)


def load_targets_file(path: str | Path) -> dict[str, TargetConfig]:
    """Named target configs; `${{ NAME }}` references are filled from the environment.

    Raises:
        SpecError: `file:line: field: message` for every problem.
    """
    path = Path(path)
    lines = LineMap()
    problems: list[Problem] = []
    data = load_yaml(path, lines, problems)
    if problems:
        raise SpecError(problems)
    # AgentV v5's providers.yaml: a list of {id, label, ...}, or `providers:` holding one.
    under: DataPath = ()  # where the list is: the file itself, `providers:` or `targets:`
    if isinstance(data, dict):
        under = ("providers",) if "targets" not in data and isinstance(data.get("providers"), list) else ("targets",)
    catalog = under != ("targets",)
    entries = data.get(under[0]) if isinstance(data, dict) else data
    if not isinstance(entries, list):
        raise SpecError([lines.problem((), "targets", "a targets file holds `targets: [{name, provider, ...}]`")])
    items: list[tuple[DataPath, object]] = [((*under, i), entry) for i, entry in enumerate(entries)]
    configs = target_configs(items, path.resolve().parent, lines, problems, catalog=catalog)
    if problems:
        raise SpecError(problems)
    return configs


def target_configs(
    items: Iterable[tuple[DataPath, object]],
    source_dir: Path,
    lines: LineMap,
    problems: list[Problem],
    *,
    catalog: bool,
) -> dict[str, TargetConfig]:
    """The target configs of the entries (each with where it is; `catalog`: AgentV v5's
    `{id: PROVIDER, label: NAME}` form); relative paths in their settings resolve in `source_dir`.
    An entry's problems go to `problems` or make it unusable (an error when a run uses it)."""
    configs: dict[str, TargetConfig] = {}
    aliases: list[tuple[str, object, DataPath, list[Problem]]] = []  # (name, use_target, where, unset)
    for where, entry in items:
        if not isinstance(entry, dict):
            problems.append(lines.problem(where, field_path(where), "each target is a mapping"))
            continue
        if catalog:
            entry = _catalog_entry(entry, where, lines)
        unset: list[Problem] = []  # problems that make this target unusable (an error only when it is used)
        entry = _v5_fields({k: _env_refs(v) for k, v in entry.items()}, where, lines, unset)
        raw, entry = entry, substitute_env(entry, where, lines, unset, unset_empty=False)
        _remember_url_secrets(raw, entry)
        if "id" in entry and "name" not in entry:  # AgentV v5's name of a target (#1631, v5.1)
            entry = {("name" if k == "id" else k): v for k, v in entry.items()}
            lines.add((*where, "name"), *lines.locate((*where, "id")))
        name = entry.get("name")
        if not isinstance(name, str) or not name:
            problems.append(lines.problem((*where, "name"), field_path((*where, "name")), "required: a target name"))
            continue
        if name in configs or any(a[0] == name for a in aliases):
            problems.append(
                lines.problem((*where, "name"), field_path((*where, "name")), f"duplicate target name {name!r}")
            )
            continue
        if "use_target" in entry:
            aliases.append((name, entry.get("use_target"), where, unset))
            continue
        config = _entry_config(entry, where, lines, problems, unset)
        if config is not None:
            config._source_dir = source_dir  # relative paths in settings resolve here
            configs[name] = config
    _resolve_aliases(aliases, configs, lines, problems)
    return configs


def _catalog_entry(entry: dict, where: DataPath, lines: LineMap) -> dict:
    """An entry of AgentV v5's providers.yaml as a target: `label` is its name (default: its
    `id`), `id` its provider, `{{ env.NAME }}` an environment reference (`${{ NAME }}`)."""
    kind = entry.get("id")
    found = {("provider" if k == "id" else k): _env_refs(v) for k, v in entry.items() if k != "label"}
    found["name"] = entry.get("label", kind)
    lines.add((*where, "name"), *lines.locate((*where, "label" if "label" in entry else "id")))
    lines.add((*where, "provider"), *lines.locate((*where, "id")))
    return found


def _v5_fields(entry: dict, where: DataPath, lines: LineMap, problems: list[Problem]) -> dict:
    """AgentV v5's target fields (its `providers/targets.ts`, v5.3.1) in convoeval's names:
    `max_output_tokens` is `max_tokens`; `api_format: chat` is what convoeval's openai target
    speaks and `batch_requests: false` is the default (both dropped); a codex target's
    `model_reasoning_effort` (or `reasoning_effort`) is `--config model_reasoning_effort=...`. `api_format: responses`
    (OpenAI's Responses API) and `batch_requests: true` (one provider call for every test) make
    the target unusable (an error when a run uses it): they change what the target is sent.
    A `config:` block holds more fields, the entry's own winning, and `runtime: host` (or
    `{mode: host}`) is where a target runs anyway (`normalizeTargetDefinition`, v5.3.1 and main);
    another runtime makes it unusable."""
    config = entry.get("config")
    if isinstance(config, dict):
        entry = {**config, **{k: v for k, v in entry.items() if k != "config"}}
        for key in config:  # a key the entry gives itself keeps its own line
            lines.add((*where, key), *lines.locate((*where, "config", key)))
    entry = dict(entry)
    runtime = entry.pop("runtime", "host")
    if runtime not in ("host", {"mode": "host"}):
        problems.append(
            lines.problem(
                (*where, "runtime"),
                field_path((*where, "runtime")),
                "this AgentV form is not supported: a `runtime` other than `host` (AgentV's profile or "
                "sandbox runtimes for coding agents); convoeval runs targets on the host, agent CLIs in its sandbox",
            )
        )
    if entry.get("provider") == "mock":
        entry = _mock(entry)
    if "max_output_tokens" in entry and "max_tokens" not in entry:
        entry["max_tokens"] = entry.pop("max_output_tokens")
        lines.add((*where, "max_tokens"), *lines.locate((*where, "max_output_tokens")))
    effort = next((k for k in ("reasoning_effort", "model_reasoning_effort") if k in entry), None)
    if entry.get("provider") == "codex" and effort and isinstance(entry.get("args", []), list):
        # AgentV's codex option, passed as it passes it (codex-cli.ts: `--config model_reasoning_effort=...`)
        entry["args"] = [*entry.get("args", []), "--config", f"model_reasoning_effort={entry.pop(effort)}"]
        entry.pop("model_reasoning_effort", None)
        lines.add((*where, "args"), *lines.locate((*where, effort)))
    refused = {
        "api_format": (
            "chat",
            "`api_format: responses` (OpenAI's Responses API; convoeval's openai "
            "target speaks Chat Completions): use `api_format: chat`",
        ),
        "batch_requests": (
            False,
            "`batch_requests: true` (AgentV sends every test in one provider "
            "request, a CLI writing all answers to {OUTPUT_FILE}): one call per test here",
        ),
    }
    for key, (accepted, why) in refused.items():
        if key not in entry:
            continue
        if entry[key] != accepted:
            problems.append(
                lines.problem((*where, key), field_path((*where, key)), f"this AgentV form is not supported: {why}")
            )
        del entry[key]
    return entry


#: What AgentV's `mock` provider answers without a `response` (`providers/mock.ts`).
_MOCK_RESPONSE = '{"answer":"Mock provider response. Configure targets.yaml to supply a custom value."}'


def _mock(entry: dict) -> dict:
    """AgentV's `mock` provider (`providers/mock.ts`, v5.3.1 and main), which answers every
    request with its `response` text (no other setting is read: `resolveMockConfig`), as
    convoeval's `scripted` target with that `default`."""
    found = {k: v for k, v in entry.items() if k != "response"}
    response = entry.get("response")
    return {**found, "provider": "scripted", "default": response if isinstance(response, str) else _MOCK_RESPONSE}


def _env_refs(value: object) -> object:
    if isinstance(value, str):
        return _ENV_TEMPLATE.sub(r"${{ \1 }}", value)
    if isinstance(value, dict):
        return {k: _env_refs(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_env_refs(v) for v in value]
    return value


#: How a judge panel's answers may combine (as `judging.PANEL_RULES`).
PANEL_RULE_NAMES = ("mean", "majority", "min")


def targets_file_panel(path: str | Path) -> tuple[list[str], str | None]:
    """The targets file's judge panel: `judges: [name or provider:model, ...]` and
    `panel_rule: mean | majority | min` (both optional; `([], None)` without them).

    Raises:
        SpecError: `file:line: field: message` when they are malformed.
    """
    path = Path(path)
    lines = LineMap()
    problems: list[Problem] = []
    data = load_yaml(path, lines, problems)
    if problems or not isinstance(data, dict):
        return [], None
    judges = data.get("judges", [])
    rule = data.get("panel_rule")
    if not isinstance(judges, list) or not all(isinstance(j, str) and j.strip() for j in judges):
        problems.append(lines.problem(("judges",), "judges", "a list of judges (target names or provider:model)"))
    elif len(set(judges)) != len(judges):
        twice = next(j for j in judges if judges.count(j) > 1)
        problems.append(lines.problem(("judges",), "judges", f"judge {twice!r} is named twice"))
    if rule is not None and rule not in PANEL_RULE_NAMES:
        problems.append(
            lines.problem(("panel_rule",), "panel_rule", f"must be one of {', '.join(PANEL_RULE_NAMES)}, got {rule!r}")
        )
    if problems:
        raise SpecError(problems)
    return list(judges), rule


#: A promptfoo JavaScript provider (`id: file://provider.cjs`) in an AgentV file: AgentV's
#: `normalizePublicProviderId` makes it provider `file`, a `cli` target running
#: `bun run .agentv/providers/file.ts {PROMPT}` (targets.ts `resolveDiscoveredProviderConfig`).
_FILE_PROVIDER = (
    "; a promptfoo JavaScript provider, which AgentV cannot run either (it runs "
    "`bun run .agentv/providers/file.ts {PROMPT}`; promptfoo runs it once AgentV exports the file)"
)


def _entry_config(
    entry: dict, where: DataPath, lines: LineMap, problems: list[Problem], unset: list[Problem]
) -> TargetConfig | None:
    provider = entry.get("provider")
    if provider == "replay" and "transcripts" in entry:  # AgentV's replay (`providers/targets.ts`, v5.3)
        at = (*where, "transcripts")
        unset.append(
            lines.problem(
                at,
                field_path(at),
                "this AgentV form is not supported: AgentV's `replay` provider reading recorded agent "
                "`transcripts`; convoeval's `replay` target replays a convoeval results file named as its `model`",
            )
        )
    if unset:
        return _unusable(entry, unset)
    if isinstance(provider, str) and provider in _AGENTV_CLAUDE:
        entry = _agentv_claude(entry, where, lines)
        provider = entry["provider"]
    if isinstance(provider, str) and registry.lookup("provider", provider) is None:
        at = (*where, "provider")
        return _unusable(
            entry,
            [
                lines.problem(
                    at,
                    field_path(at),
                    f"provider {provider!r} is not implemented by convoeval{suggest(provider, provider_names())}"
                    f" (known: {', '.join(provider_names())}){_FILE_PROVIDER if provider.startswith('file://') else ''}",
                )
            ],
        )
    entry = dict(entry)
    if "timeout_seconds" in entry and "timeout_s" not in entry:  # AgentV's name (v4.42)
        entry["timeout_s"] = entry.pop("timeout_seconds")
        lines.add((*where, "timeout_s"), *lines.locate((*where, "timeout_seconds")))
    if isinstance(provider, str) and provider in _BASE_URL_ENDPOINT and "endpoint" in entry:
        endpoint = entry.pop("endpoint")
        entry.setdefault("base_url", endpoint)
    try:
        config = TargetConfig.model_validate(entry)
    except ValidationError as exc:
        _add_errors(exc, where, lines, problems)
        return None
    model = settings_model(config.provider)
    if model is not None:
        try:
            model.model_validate(config.model_extra or {})
        except ValidationError as exc:
            _add_errors(exc, where, lines, problems, model)
            return None
    return config


def _agentv_claude(entry: dict, where: DataPath, lines: LineMap) -> dict:
    """An AgentV `claude-cli` (or `claude`) target as `claude-code`: its `max_turns` is the
    `--max-turns` AgentV passes (`claude-cli.ts` `buildArgs`, v4.15)."""
    entry = {**entry, "provider": "claude-code"}
    turns = entry.pop("max_turns", None)
    if turns is not None and isinstance(entry.get("args", []), list):
        entry["args"] = [*entry.get("args", []), "--max-turns", str(turns)]
        lines.add((*where, "args"), *lines.locate((*where, "max_turns")))
    elif turns is not None:
        entry["max_turns"] = turns  # refused with the args' own error
    return entry


def _unusable(entry: dict, reasons: list[Problem]) -> TargetConfig:
    """A config that names its problems when a run tries to build it."""
    config = TargetConfig.model_construct(name=str(entry.get("name")), provider=str(entry.get("provider", "")))
    config.mark_unusable("; ".join(str(p) for p in reasons))
    return config


def _resolve_aliases(
    aliases: list[tuple[str, object, DataPath, list[Problem]]],
    configs: dict[str, TargetConfig],
    lines: LineMap,
    problems: list[Problem],
) -> None:
    """`{name: grader, use_target: default}`: another name for a target (chains allowed)."""
    pending = list(aliases)
    while pending:
        left = []
        for name, ref, where, unset in pending:
            if unset:
                configs[name] = _unusable({"name": name}, unset)
            elif isinstance(ref, str) and ref in configs:
                configs[name] = configs[ref].model_copy(update={"name": name})
            else:
                left.append((name, ref, where, unset))
        if len(left) == len(pending):
            aliases_left = {name for name, *_ in left}
            for _name, ref, where, _ in left:
                at = (*where, "use_target")
                known = ", ".join(sorted(configs)) or "none"
                said = f"no target named {ref!r} (names: {known})"
                if ref in aliases_left:
                    said = f"{ref!r} is a use_target that reaches no target (a loop, or a chain to an unknown name)"
                problems.append(lines.problem(at, field_path(at), said))
            return
        pending = left


def _add_errors(
    exc: ValidationError, where: DataPath, lines: LineMap, problems: list[Problem], model: type[BaseModel] | None = None
) -> None:
    for error in exc.errors(include_url=False):
        loc = (*where, *error["loc"])
        if error["type"] == "missing":
            message = "required field is missing"
        elif error["type"] == "extra_forbidden":
            known = sorted({*_yaml_names(TargetConfig), *(_yaml_names(model) if model else ())})
            message = f"unknown field for this provider{suggest(str(loc[-1]), known)} (known: {', '.join(known)})"
        else:
            message = error["msg"].removeprefix("Value error, ")
        problems.append(lines.problem(loc, field_path(loc), message))


def _yaml_names(model: type[BaseModel]) -> list[str]:
    """The names a targets file writes `model`'s fields by: a field's first alias (`callable`,
    not `callable_ref`), else its own name."""
    names = []
    for name, info in model.model_fields.items():
        aliases = info.validation_alias.choices if isinstance(info.validation_alias, AliasChoices) else []
        names.append(next((a for a in aliases if isinstance(a, str)), info.alias or name))
    return names


class NamedTargets(dict[str, TargetConfig]):
    """Target configs by name, with the targets files' judge panel (`judges:`, `panel_rule:`)
    and AgentV's `defaults: {provider, grader}` (`defaults`, with the file that gave them)."""

    judges: list[str]
    panel_rule: PanelRule | None
    defaults: dict[str, str]
    defaults_file: Path | None

    def __init__(self) -> None:
        super().__init__()
        self.judges, self.panel_rule, self.defaults, self.defaults_file = [], None, {}, None


def agentv_defaults(path: Path) -> tuple[dict[str, str], Path | None]:
    """AgentV's (main, July 2026) default provider and grader for the targets in `path`: the
    `defaults: {provider, grader}` of that providers file, else of the project config beside it
    (`.agentv/config.yaml`, its `defaults` inline or `file://NAME`, as config-graph.ts reads them).
    ({}, None) when there are none, or they are v5.3's `{target, grader}`, which its config-graph.ts
    checks but its runs do not use."""
    places = [path]
    if path.parent.name == ".agentv":
        places.append(path.parent / "config.yaml")
    for place in places:
        data = _yaml_data(place)
        found = data.get("defaults") if isinstance(data, dict) else None
        if isinstance(found, str) and found.startswith("file://"):
            place = place.parent / found.removeprefix("file://")
            found = _yaml_data(place)
        if isinstance(found, dict) and "target" not in found:  # v5.3's `{target, grader}`: its runs ignore them
            picked = {k: v.strip() for k in ("provider", "grader") if isinstance(v := found.get(k), str) and v.strip()}
            if picked:
                return picked, place
    return {}, None


def _yaml_data(path: Path) -> object:
    """A YAML file's data, or None when it is missing or unreadable."""
    problems: list[Problem] = []
    data = load_yaml(path, LineMap(), problems) if path.is_file() else None
    return None if problems else data


def named_targets(candidates: Sequence[Path], targets_file: str | Path | None = None) -> NamedTargets:
    """Named target configs: from `targets_file` when given (it must exist), else from those of
    the candidate files that exist (later files win, their `judges:` too).

    Raises:
        ConfigError: the given targets file does not exist.
        SpecError: a targets file is invalid (`file:line: field: message`).
    """
    if targets_file is not None:
        if Path(targets_file).is_dir():
            raise ConfigError(f"targets file {targets_file} is a folder; give the file (its {TARGETS_FILE})")
        if os.path.lexists(targets_file) and not Path(targets_file).is_file():
            raise ConfigError(f"targets file {targets_file}: {_not_a_file(Path(targets_file))}")
        if not Path(targets_file).is_file():
            raise ConfigError(f"targets file not found: {targets_file}")
        files = [Path(targets_file)]
    else:
        files = [f for f in dict.fromkeys(candidates) if os.path.lexists(f)]
    named = NamedTargets()
    for file in files:
        if not file.is_file():  # left out, its targets would be "undefined" with no word of why
            raise SpecError([Problem(str(file), 1, "(file)", _not_a_file(file))])
        named.update(load_targets_file(file))
        judges, rule = targets_file_panel(file)
        if judges:
            named.judges = judges
        if rule:
            named.panel_rule = rule  # type: ignore[assignment]
        defaults, where = agentv_defaults(file)
        if defaults:
            named.defaults, named.defaults_file = defaults, where
    return named


def _not_a_file(path: Path) -> str:
    """Why `path`, which is there but no regular file, cannot be read as a targets file."""
    if path.is_dir():
        return f"a folder, not a targets file; give the file (its {TARGETS_FILE})"
    if path.exists():
        return "not a regular file (a device, a pipe or a socket)"
    return "a symbolic link loop, or one to nothing"


#: Providers a target spec may name without a model (`local`: the embedded model).
BARE_PROVIDERS = frozenset({"local", "scripted", "claude-code", "codex"})


def unknown_target(spec: str, named: Collection[str]) -> str | None:
    """Why `spec` names no target: it is neither a name in `named` (the targets files') nor
    `provider:model` of a known provider. None when it names one."""
    if spec in named:
        return None
    provider, _, model = spec.partition(":")
    if not model and provider not in BARE_PROVIDERS:
        return (
            f"{spec!r} is neither `provider:model` nor a name from a targets file"
            f"{suggest(spec, [*named, *BARE_PROVIDERS])} (names defined: {', '.join(sorted(named)) or 'none'}); "
            f"define it in {TARGETS_FILE} (next to the eval file, or --targets FILE), or name a model as "
            "provider:model (openai:gpt-4o-mini; `local`, the embedded model)"
        )
    if registry.lookup("provider", provider) is None:
        providers = provider_names()
        return (
            f"unknown provider {provider!r}{suggest(provider, providers)} in {spec!r} (known: {', '.join(providers)})"
        )
    return None


def _unimplemented(name: str, named: Collection[str]) -> str | None:
    """Why the targets file's `name` can never be built: its provider is not implemented (an
    unset `${{ VAR }}` is left to the run, which may have it)."""
    config = named.get(name) if isinstance(named, dict) else None
    if config is None or not config.provider or "${{" in config.provider:
        return None  # no provider written (a `use_target` through an unset variable), or one unset
    if registry.lookup("provider", config.provider) is not None:
        return None
    return f"target {name!r}: {config.unusable}"


def target_name_problems(
    names: Iterable[TargetName], named: Collection[str], replaced: Collection[TargetRole] = ()
) -> list[Problem]:
    """`file:line: field: why` for each target, judge or simulator model an eval file names that
    `unknown_target` refuses, but those of the roles in `replaced` (a run's --target, --judge)."""
    problems = [
        Problem(n.at.file, n.at.line, n.at.field, why)
        for n in names
        if n.role not in replaced and (why := unknown_target(n.name, named) or _unimplemented(n.name, named))
    ]
    return sorted(problems, key=lambda p: (p.file, p.line))


def parse_target_spec(spec: str, named: dict[str, TargetConfig]) -> TargetConfig:
    """`NAME` from a targets file, or `provider:model` (`openai:gpt-4o-mini`, `local`).

    Raises:
        ValueError: it is neither (`unknown_target`).
    """
    if spec in named:
        return named[spec]
    if why := unknown_target(spec, named):
        raise ValueError(why)
    provider, _, model = spec.partition(":")
    return TargetConfig(name=spec, provider=provider, model=model)
