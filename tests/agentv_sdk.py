"""AgentV's real grader SDK, at the tag of each copy of its files, as the packages AgentV's
TypeScript graders import (`@agentv/eval` at v4.15, `@agentv/sdk` later, `agentv` on main).

The SDK's sources and package.json are test data (tests/data/agentv/<tag>/packages/, see
SOURCE.txt there); bun runs the TypeScript as it is. `node_path` lays out a node_modules folder
whose packages (with the tag's own package.json `version`, which convoeval reads to pick the
payload's shape) point at them, for NODE_PATH (zod comes from .tools/node_modules, as npm installs
it for the SDK). Two small stand-ins remain, for what the SDK imports but graders never call:

- `@agentv/core` (v4.44 and later): the SDK takes `toCamelCaseDeep` from it (re-exported here
  from AgentV's own `case-conversion.ts` of the tag, copied too; on main also its
  `@agentv/core/script-grader` modules, copied and used as they are) and re-exports `evaluate`,
  AgentV's whole eval runner (its core package, with the AI SDKs and providers behind it), which
  this stand-in only names: calling it throws.
- `yaml` (v4.42 and later): imported by the SDK's eval-authoring helpers (`serializeEvalYaml`)
  only; bun's own YAML writer stands in for the npm package, which is not in .tools.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data" / "agentv"
REPO = Path(__file__).resolve().parent.parent
#: The SDK packages each copy's graders import, and where their sources are (by package name).
PACKAGES = {
    "v4.15.0": {"@agentv/eval": "packages/eval"},
    "v4.42.4": {"@agentv/sdk": "packages/sdk", "@agentv/eval": "packages/eval"},
    "v4.44.0-next.1": {"@agentv/sdk": "packages/sdk"},
    "v5.3.1-next.1": {"@agentv/sdk": "packages/sdk"},
    "main-58f316c": {"@agentv/sdk": "packages/sdk", "agentv": "packages/sdk"},  # `agentv`: main's name
}
#: The newest tag: what AgentV sends now, and what a grader written today imports.
NEWEST = "v5.3.1-next.1"

_CORE = """\
// Stand-in for @agentv/core (tests/agentv_sdk.py): AgentV's own toCamelCaseDeep of this tag.
export { toCamelCaseDeep, toSnakeCaseDeep } from './src/evaluation/case-conversion.ts';
export function evaluate() {
  throw new Error('evaluate() is AgentV\\'s eval runner, not part of convoeval\\'s tests');
}
"""
_YAML = """\
// Stand-in for npm's yaml (tests/agentv_sdk.py): only the SDK's serializeEvalYaml writes YAML.
export const stringify = (value) => Bun.YAML.stringify(value, null, 2);
"""


def _package(folder: Path, name: str, main: str, version: str | None = None) -> None:
    folder.mkdir(parents=True)
    found = {"name": name, "type": "module", "main": main, **({"version": version} if version else {})}
    (folder / "package.json").write_text(json.dumps(found))


def node_path(tag: str, root: Path, *, copy: bool = False) -> str:
    """NODE_PATH for graders of the copy at `tag`: its real SDK (a node_modules folder made
    under `root`), then .tools/node_modules (zod). With `copy`, the SDK's sources and zod are
    copied into it (a sandbox shows `root`, not the checkout's tests/data and .tools)."""
    modules = root / "node_modules"

    def place(source: Path, folder: Path) -> None:
        if copy:
            shutil.copytree(source, folder)
        else:
            folder.symlink_to(source, target_is_directory=True)

    for name, source in PACKAGES[tag].items():
        folder = modules / name
        version = json.loads((DATA / tag / source / "package.json").read_text())["version"]
        _package(folder, name, "./src/index.ts", version)  # the tag's own version (convoeval reads it)
        place(DATA / tag / source / "src", folder / "src")
    core = DATA / tag / "packages" / "core" / "src"
    if core.is_dir():
        folder = modules / "@agentv" / "core"
        _package(folder, "@agentv/core", "./index.mjs")
        (folder / "index.mjs").write_text(_CORE)
        place(core, folder / "src")
        if (core / "script-grader.ts").is_file():  # `@agentv/core/script-grader` (main)
            (folder / "script-grader.mjs").write_text("export * from './src/script-grader.ts';\n")
    _package(modules / "yaml", "yaml", "./index.mjs")
    (modules / "yaml" / "index.mjs").write_text(_YAML)
    if copy:
        shutil.copytree(REPO / ".tools" / "node_modules" / "zod", modules / "zod")
        return str(modules)
    return os.pathsep.join([str(modules), str(REPO / ".tools" / "node_modules")])
