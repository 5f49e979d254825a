"""Environment references in eval files, as AgentV fills them.

AgentV v4's `${{ NAME }}`, and AgentV v5's `{{ env.NAME }}` (its `interpolation.ts`
`interpolateEnv`, applied to the whole eval file, v5.0 to v5.3.1-next.1): each `{{ env. ... }}`
in a string is a nunjucks expression rendered with `env` (the environment, plus
`AGENTV_REPO_ROOT`: the eval file's repository) and nothing else, so filters work
(`{{ env.NAME | default("text") }}`, AgentV's `load`); an unset variable renders as empty text
(a warning here); a string that is one such reference and nothing else becomes `true`/`false` or a
number when it reads as one; a string holding `${{` is left to the v4 form (v5 leaves it as
written). The expression renders in convoeval's sandboxed Jinja, which reads these expressions
as nunjucks does.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import overload

from .._paths import enclosing_repository
from .._templates import TemplateProblem, render_lenient
from ._errors import Problem, field_path
from ._lines import DataPath, Key, LineMap
from ._yaml import load_yaml

ENV_REF = re.compile(r"\$\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
#: AgentV v5's `{{ env.… }}` (`ENV_OUTPUT_PATTERN`, `WHOLE_ENV_OUTPUT_PATTERN`).
_ENV_TEMPLATE = re.compile(r"\{\{\s*env\.[\s\S]*?\}\}")
_WHOLE_ENV_TEMPLATE = re.compile(r"\s*\{\{\s*env\.[\s\S]*?\}\}\s*")
_PLAIN_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?")


@overload
def substitute_env(
    value: dict[Key, object],
    path: DataPath,
    lines: LineMap,
    problems: list[Problem],
    unset_empty: bool = True,
    warnings: list[str] | None = None,
) -> dict[Key, object]: ...
@overload
def substitute_env(
    value: object,
    path: DataPath,
    lines: LineMap,
    problems: list[Problem],
    unset_empty: bool = True,
    warnings: list[str] | None = None,
) -> object: ...
def substitute_env(
    value: object,
    path: DataPath,
    lines: LineMap,
    problems: list[Problem],
    unset_empty: bool = True,
    warnings: list[str] | None = None,
) -> object:
    """Fill `${{ NAME }}` and `{{ env.NAME }}` in every string from the environment (the module
    docstring). An unset variable becomes an empty string, as in AgentV (`interpolateEnv`), with
    a warning in `warnings`; with `unset_empty=False` (targets files) it is a problem naming it.
    A `{{ env. }}` expression that does not render is a problem. Without any reference the
    value itself is returned; with one, a copy."""
    if not _has_reference(value):
        return value
    unset: list[Problem] = []
    found = _substitute(value, path, lines, unset, problems, _config_env(lines))
    for problem in unset:
        if not unset_empty:
            problems.append(problem)
        elif warnings is not None:
            message = problem.message.replace(")", "): sent as an empty string, as AgentV does", 1)
            warnings.append(f"warning: {problem.file}:{problem.line}: {problem.field}: {message}")
    return found


def _config_env(lines: LineMap) -> dict[str, str]:
    """What `{{ env.… }}` reads: the environment, and `AGENTV_REPO_ROOT` unless it is set
    (AgentV's `createEvalConfigEnv`): the repository holding the file being read."""
    env = dict(os.environ)
    file = lines.file or (lines.parent.file if lines.parent is not None else None)
    if "AGENTV_REPO_ROOT" not in env and file:
        root = enclosing_repository(Path(file).parent)
        if root is not None:
            env["AGENTV_REPO_ROOT"] = str(root)
    return env


def _has_reference(value: object) -> bool:
    if isinstance(value, str):
        return "${{" in value or ("{{" in value and _ENV_TEMPLATE.search(value) is not None)
    items: Iterable[object]
    if isinstance(value, dict):
        items = value.values()
    elif isinstance(value, list):
        items = value
    else:
        return False
    for item in items:
        if _has_reference(item):
            return True
    return False


def _substitute(
    value: object, path: DataPath, lines: LineMap, unset: list[Problem], errors: list[Problem], env: dict[str, str]
) -> object:
    if isinstance(value, str):
        if "${{" in value:
            return _v4_reference(value, path, lines, unset)
        if "{{" in value and _ENV_TEMPLATE.search(value):
            return _v5_reference(value, path, lines, unset, errors, env)
        return value
    if isinstance(value, dict):
        return {k: _substitute(v, (*path, k), lines, unset, errors, env) for k, v in value.items()}
    if isinstance(value, list):
        return [_substitute(v, (*path, i), lines, unset, errors, env) for i, v in enumerate(value)]
    return value


def _v4_reference(value: str, path: DataPath, lines: LineMap, unset: list[Problem]) -> str:
    def fill(match: re.Match[str]) -> str:
        name = match.group(1)
        found = os.environ.get(name)
        if found is None:
            message = f"environment variable {name} is not set (used as ${{{{ {name} }}}})"
            unset.append(lines.problem(path, field_path(path), message))
        return found or ""

    return ENV_REF.sub(fill, value)


def _v5_reference(
    value: str, path: DataPath, lines: LineMap, unset: list[Problem], errors: list[Problem], env: dict[str, str]
) -> object:
    def fill(match: re.Match[str]) -> str:
        try:
            text, empty = render_lenient(match.group(0), {"env": env})
        except TemplateProblem as exc:
            errors.append(lines.problem(path, field_path(path), f"{match.group(0)}: {exc}"))
            return match.group(0)
        for name in dict.fromkeys(empty):
            message = f"environment variable {name} is not set (used as {{{{ env.{name} }}}})"
            unset.append(lines.problem(path, field_path(path), message))
        return text

    rendered = _ENV_TEMPLATE.sub(fill, value)
    if _WHOLE_ENV_TEMPLATE.fullmatch(value) is None:
        return rendered
    if rendered in ("true", "false"):  # AgentV's `coercePrimitive`
        return rendered == "true"
    if _PLAIN_NUMBER.fullmatch(rendered):
        return float(rendered) if "." in rendered else int(rendered)
    return rendered


_CONFIG_NAMES = ("config.yaml", "config.local.yaml")
_NOT_RUN = (
    "this AgentV form is not supported: `env_from` (commands AgentV runs before an eval, their output setting "
    "environment variables); convoeval does not run them: set those variables in the environment"
)


def agentv_config_problems(eval_file: Path) -> list[Problem]:
    """AgentV v5's `env_path` and `env_from` of the project config (`.agentv/config.yaml` and
    `config.local.yaml`, the nearest at or above the eval file up to its repository: AgentV's
    `loadConfig`; `env-injection.ts`), which fill the environment before the eval. A dotenv file
    convoeval's CLI loads itself (the `.env` of the working folder or of the eval file's folder;
    variables already set win, as in AgentV) is accepted, or one that does not exist (AgentV
    skips it); other files and any `env_from` are refused, never ignored."""
    folder = eval_file.resolve().parent
    root = enclosing_repository(folder) or folder
    for candidate in (folder, *folder.parents):
        files = [candidate / ".agentv" / name for name in _CONFIG_NAMES if (candidate / ".agentv" / name).is_file()]
        if files:
            return [p for f in files for p in _config_file_problems(f, candidate, folder)]
        if candidate == root:
            break
    return []


def _config_file_problems(config: Path, project: Path, eval_folder: Path) -> list[Problem]:
    lines, problems = LineMap(str(config)), list[Problem]()
    data = load_yaml(config, lines, problems)
    if not isinstance(data, dict):
        return problems
    if data.get("env_from") is not None:
        problems.append(lines.problem(("env_from",), "env_from", _NOT_RUN))
    paths = data.get("env_path")
    loaded = {(Path.cwd() / ".env").resolve(), (eval_folder / ".env").resolve()}
    for i, entry in enumerate(paths if isinstance(paths, list) else [paths] if paths is not None else []):
        file = (project / entry.strip()).resolve() if isinstance(entry, str) and entry.strip() else None
        if file is None or not file.is_file() or file in loaded:
            continue
        where: DataPath = ("env_path", i) if isinstance(paths, list) else ("env_path",)
        problems.append(
            lines.problem(
                where,
                field_path(where),
                f"this AgentV form is not supported: `env_path` {entry} (a dotenv file AgentV loads into the "
                "environment); convoeval loads only the `.env` of the working folder and of the eval file's "
                "folder: set its variables in the environment, or name it `.env` there",
            )
        )
    return problems
