"""AgentV's assertion templates (v5.3.1-next.1 and main, `loaders/grader-parser.ts`
`expandGraderEntries`; eval-files.mdx "Assert Includes"): an item `{include: REF}` of an
`assert` list is replaced by the `assert` list of a template file. A bare name is
`.agentv/templates/NAME.yaml` (or `.yml`), a path is a file; each is looked up in the eval file's
folder, then each folder above it up to the repository, then the working folder (AgentV's search
roots), within the folders a suite may name. Templates may include others, three deep at most;
`${{ VAR }}` and `{{ env.NAME }}` in a template are filled from the environment.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TypeGuard

from .._paths import confined_file
from .._unseen import hide_from_models
from ._agentv_env import substitute_env
from ._agentv_paths import search_roots
from ._lines import DataPath, LineMap
from ._yaml import load_yaml_file

#: AgentV's `MAX_ASSERTION_INCLUDE_DEPTH`.
MAX_DEPTH = 3


def is_include(item: object) -> TypeGuard[dict]:
    """`{include: REF}` and nothing else, as AgentV's `isIncludeEntry`."""
    return isinstance(item, dict) and len(item) == 1 and isinstance(item.get("include"), str)


def expand_templates(
    items: list, where: DataPath, base: Path, lines: LineMap, report: Callable[[DataPath, str], None]
) -> list:
    """`items` (the `assert` list at `where`) with each include replaced by its template's
    assertions (a list of the same kind); their lines are the include's. A template that
    cannot be read is a problem at the include."""
    if not any(is_include(item) for item in items):
        return items
    expanded: list = []
    origins: list[int] = []  # the index in `items` each expanded item comes from
    for i, item in enumerate(items):
        found = [item]
        if is_include(item):
            try:
                found = _template(item["include"], base, ())
            except ValueError as exc:
                report((*where, i), str(exc))
                found = []
        expanded += found
        origins += [i] * len(found)
    places = [lines.locate((*where, i)) for i in origins]
    lines.renumber(where, {i: k for k, i in enumerate(origins) if not is_include(items[i])})
    for k, place in enumerate(places):
        lines.add((*where, k), *place)
    return type(items)(expanded)


def _template(ref: str, base: Path, chain: tuple[Path, ...]) -> list:
    """The assertions of the template `ref` names, its own includes expanded."""
    if len(chain) >= MAX_DEPTH:
        names = " -> ".join([*(str(p) for p in chain), ref])
        raise ValueError(f"assertion templates include each other more than {MAX_DEPTH} deep: {names}")
    file = _find(ref, base)
    if file in chain:
        raise ValueError("assertion templates include each other in a cycle: " + " -> ".join(map(str, (*chain, file))))
    hide_from_models([file])  # its assertions hold answers
    try:
        data = load_yaml_file(file)
    except ValueError as exc:
        raise ValueError(f"cannot read the assertion template {file}: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("assert"), list):
        raise ValueError(f"the assertion template {file} must be a mapping with a top-level `assert` list")
    filled = substitute_env({"assert": data["assert"]}, (), LineMap(), [])  # AgentV's interpolateEnv: unset is empty
    found: list = []
    for item in filled["assert"]:  # type: ignore[attr-defined]  # a list, as checked above
        found += _template(item["include"], file.parent, (*chain, file)) if is_include(item) else [item]
    return found


def _find(ref: str, base: Path) -> Path:
    """The template file `ref` names (AgentV's `resolveAssertionTemplateReference`)."""
    bare = not ref.startswith(".") and "/" not in ref and "\\" not in ref
    candidates = [f".agentv/templates/{ref}.yaml", f".agentv/templates/{ref}.yml"] if bare else [ref]
    roots = search_roots(base)
    for root in roots:
        for candidate in candidates:
            if (root / candidate).is_file():
                return confined_file(str(root / candidate), base)
    looked = ", ".join(str(root / candidates[0]) for root in roots)
    raise ValueError(f"assertion template not found: {ref} (looked for {looked})")
