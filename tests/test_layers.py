"""The package's import layers stay one-way (CONTRIBUTING.md, "Layers").

Every import under src/convoeval is read with `ast`. A module may import from its own layer and
the layers below it, never from a layer above; a convoeval import hidden inside a function (to
dodge a cycle) is refused, except the few listed in LAZY (start-up time); and no two packages import each other, even through a third.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = "convoeval"

#: Lowest first. A top-level module or package of convoeval belongs to exactly one layer.
LAYERS: list[set[str]] = [
    {
        "results",
        "errors",
        "registry",
        "_templates",
        "_secrets",
        "_paths",
        "_version",
        "_base_model",
        "_jsonpath",
        "_lazy",
        "_sandbox",
        "_unseen",
        "_result_files",
        "_text",
        "_regex",
        "_jsonl",
        "_json_in_text",
        "_binomial",
        "_sync",
    },
    {"targets"},
    {"judging"},
    {"graders"},
    {"spec"},
    {"run"},
    {"engine"},
    {"report", "rank", "stats"},
    {"api", "arena", "datasets"},
    {"cli", "__main__", "testing", "pytest_plugin", PACKAGE},
]
LAYER_OF = {unit: level for level, units in enumerate(LAYERS) for unit in units}

#: (importing unit, imported unit) pairs that may import inside a function, and why. Only for
#: start-up time: `stats` brings numpy, which `run` and most commands never need.
LAZY = {
    ("cli", "stats"): "numpy loads only for `agreement`",
    ("report", "stats"): "numpy loads only when the viewer shows or exports labels",
    ("report", "report"): "the HTML, JUnit and Markdown writers load only when a results file asks for one",
    ("cli", "cli"): "the typer app loads after `convoeval run` has started loading its HTTP client on a thread",
    ("cli", "errors"): "the same: the errors load pydantic",
    (
        "pytest_plugin",
        "spec",
    ): "pytest loads the plugin in every session; convoeval loads when an eval file is collected",
    ("pytest_plugin", "api"): "the same",
    ("pytest_plugin", "errors"): "the same",
    ("pytest_plugin", "report"): "the same",
}


@dataclass(frozen=True)
class Import:
    source: str  # importing module, e.g. convoeval.targets._base
    target: str  # imported module, e.g. convoeval.results
    line: int
    in_function: bool
    type_checking: bool

    @property
    def where(self) -> str:
        return f"{self.source.replace('.', '/')}.py:{self.line}"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def is_package(module: str) -> bool:
    return (SRC / module.replace(".", "/") / "__init__.py").is_file()


def exists(module: str) -> bool:
    return is_package(module) or (SRC / (module.replace(".", "/") + ".py")).is_file()


def unit(module: str) -> str:
    """The top-level module or package a module belongs to (`targets` for convoeval.targets._http)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else PACKAGE


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imports_of(path: Path) -> list[Import]:
    return imports_in(path.read_text(encoding="utf-8"), module_name(path), path.name == "__init__.py")


def imports_in(text: str, source: str, is_init: bool) -> list[Import]:
    """The convoeval imports in the source `text` of module `source`."""
    package = source if is_init else source.rsplit(".", 1)[0]
    found: list[Import] = []

    def add(target: str, node: ast.stmt, in_function: bool, type_checking: bool) -> None:
        if target == PACKAGE or target.startswith(PACKAGE + "."):
            found.append(Import(source, target, node.lineno, in_function, type_checking))

    def visit(node: ast.AST, in_function: bool, type_checking: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import):
                for alias in child.names:
                    add(alias.name, child, in_function, type_checking)
            elif isinstance(child, ast.ImportFrom):
                if child.level:
                    base = package.split(".")[: len(package.split(".")) - (child.level - 1)]
                    module = ".".join([*base, *([child.module] if child.module else [])])
                else:
                    module = child.module or ""
                # `from pkg import submodule` imports the submodule.
                subs = [f"{module}.{a.name}" for a in child.names if exists(f"{module}.{a.name}")]
                for target in subs or [module]:
                    add(target, child, in_function, type_checking)
                if subs and len(subs) < len(child.names):
                    add(module, child, in_function, type_checking)
            elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                visit(child, True, type_checking)
            elif isinstance(child, ast.If) and _is_type_checking(child):
                for stmt in child.body:
                    visit(ast.Module(body=[stmt], type_ignores=[]), in_function, True)
                for stmt in child.orelse:
                    visit(ast.Module(body=[stmt], type_ignores=[]), in_function, type_checking)
            else:
                visit(child, in_function, type_checking)

    visit(ast.parse(text, source), False, False)
    return found


def all_imports() -> list[Import]:
    return [imp for path in sorted((SRC / PACKAGE).rglob("*.py")) for imp in imports_of(path)]


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for dep in sorted(graph.get(node, ())):
            if state.get(dep) == 1:
                return [*stack[stack.index(dep) :], dep]
            if dep not in state and (found := visit(dep)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_every_module_has_a_layer() -> None:
    units = {unit(module_name(p)) for p in (SRC / PACKAGE).rglob("*.py")}
    missing = sorted(units - set(LAYER_OF))
    assert not missing, f"add {missing} to LAYERS in tests/test_layers.py (and to CONTRIBUTING.md)"


def test_no_upward_import() -> None:
    upward = [
        f"{imp.where}: {unit(imp.source)} (layer {LAYER_OF[unit(imp.source)]}) imports {imp.target} "
        f"(layer {LAYER_OF[unit(imp.target)]}, higher)"
        for imp in all_imports()
        if unit(imp.source) in LAYER_OF
        and unit(imp.target) in LAYER_OF
        and LAYER_OF[unit(imp.target)] > LAYER_OF[unit(imp.source)]
    ]
    assert not upward, "\n".join(upward)


def test_no_convoeval_import_inside_a_function() -> None:
    hidden = [
        f"{imp.where}: imports {imp.target} inside a function"
        for imp in all_imports()
        if imp.in_function and (unit(imp.source), unit(imp.target)) not in LAZY
    ]
    assert not hidden, "\n".join(hidden)


def test_no_cycle_between_packages() -> None:
    graph: dict[str, set[str]] = {}
    for imp in all_imports():
        if not imp.type_checking and unit(imp.source) != unit(imp.target):
            graph.setdefault(unit(imp.source), set()).add(unit(imp.target))
    assert find_cycle(graph) is None, f"import cycle between packages: {' -> '.join(find_cycle(graph) or [])}"


def test_no_cycle_between_modules() -> None:
    """Inside a package too: a cycle only works thanks to import order. A package's `__init__`
    re-exporting its modules is not a cycle."""
    graph: dict[str, set[str]] = {}
    for imp in all_imports():
        if not imp.type_checking and not is_package(imp.target) and imp.source != imp.target:
            graph.setdefault(imp.source, set()).add(imp.target)
    assert find_cycle(graph) is None, f"import cycle between modules: {' -> '.join(find_cycle(graph) or [])}"


def test_the_checker_sees_a_violation() -> None:
    """The checks above can fail: an upward import, one inside a function, one under
    TYPE_CHECKING and a cycle are all seen."""
    text = (
        "from typing import TYPE_CHECKING\n"
        "from ..engine import RunMeter\n"
        "from . import _base\n"
        "if TYPE_CHECKING:\n    from ..run import Job\n"
        "def f():\n    from ..graders import Grade\n"
    )
    found = imports_in(text, "convoeval.targets._probe", is_init=False)
    assert [(i.target, i.in_function, i.type_checking) for i in found] == [
        ("convoeval.engine", False, False),
        ("convoeval.targets._base", False, False),
        ("convoeval.run", False, True),
        ("convoeval.graders", True, False),
    ]
    assert LAYER_OF[unit(found[0].target)] > LAYER_OF[unit(found[0].source)]
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": {"c"}}) is None


def test_any_module_imports_first() -> None:
    """In a fresh interpreter, every convoeval module can be the first one imported, before the
    package's `__init__` has run (so `from .engine import RunMeter` may be its first line): an
    order-dependent cycle fails here with a partially-initialised-module error."""
    # Importing a submodule runs its parent package first, so the top-level units are enough.
    modules = sorted(
        {f"{PACKAGE}.{unit(module_name(p))}" for p in (SRC / PACKAGE).rglob("*.py")}
        - {f"{PACKAGE}.{PACKAGE}", f"{PACKAGE}.__main__"}
    )
    code = (
        "import importlib, sys, types\n"
        f"for name in {modules!r}:\n"
        "    for loaded in [m for m in sys.modules if m == 'convoeval' or m.startswith('convoeval.')]:\n"
        "        del sys.modules[loaded]\n"
        "    root = types.ModuleType('convoeval')\n"
        f"    root.__path__ = [{str(SRC / PACKAGE)!r}]\n"
        "    sys.modules['convoeval'] = root\n"
        "    try:\n"
        "        importlib.import_module(name)\n"
        "    except Exception as exc:\n"
        "        sys.exit(f'importing {name} first fails: {type(exc).__name__}: {exc}')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]


#: Modules that `convoeval run` does not load until a suite, a target or an option uses them.
NOT_AT_START = (
    "numpy",
    "jsonschema",
    "jinja2",
    "jsonpath_ng",
    "dotenv",
    "rich.progress",
    "convoeval.cli._arena",
    "convoeval.cli._agreement",
    "convoeval.cli._reports",
    "convoeval.arena",
    "convoeval.rank._leaderboard",
    "convoeval.judging._pairwise",
    "convoeval.spec._schema",
    "convoeval.graders._aggregators",
    "convoeval.report._html",
    "convoeval.report._junit",
    "convoeval.report._markdown",
    "convoeval.graders._text",
    "convoeval.graders._dialogue",
    "convoeval.targets._openai",
    "convoeval.targets._local._target",
    "convoeval.targets.agents._claude",
)


def test_start_up_leaves_out_what_a_run_may_not_need() -> None:
    """The `run` command line (what every run pays) loads no other command, no report writer,
    no assertion type or provider (they load when a suite or a target names them) and none of
    the heavy libraries that only some suites use."""
    code = (
        "import sys, convoeval.cli as cli; cli.load_commands(['run']); "
        f"print(' '.join(m for m in {NOT_AT_START!r} if m in sys.modules))"
    )
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert loaded == []
