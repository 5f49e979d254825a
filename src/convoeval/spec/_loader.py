"""Load and validate eval files; every problem becomes `file:line: field: message`."""

from __future__ import annotations

from pathlib import Path

from .. import registry
from .._paths import confined_file
from ..errors import RegistryError
from ._agentv import AgentvNormalizer, agentv_key
from ._checker import Checker
from ._errors import Problem, SpecError
from ._models import Suite
from ._yaml import LineMap, load_jsonl, load_yaml


def load_suite(path: str | Path) -> Suite:
    """Load one eval file.

    Raises:
        SpecError: with every problem of the file, each `file:line: field: message`.

    Example:
        suite = load_suite("examples/travel-planning.eval.yaml")
        print([t.id for t in suite.tests])
    """
    suite, problems = _load(Path(path))
    if problems or suite is None:
        raise SpecError(problems)
    return suite


def validate_paths(paths: list[str | Path]) -> list[Problem]:
    """All problems of all the given eval files (an empty list when they are valid)."""
    problems: list[Problem] = []
    for path in paths:
        problems.extend(_load(Path(path))[1])
    return problems


def _load(path: Path) -> tuple[Suite | None, list[Problem]]:
    problems: list[Problem] = []
    lines = LineMap()
    if not path.is_file():
        return None, [Problem(str(path), 1, "(file)", "no such file")]
    data = load_yaml(path, lines, problems, rename=agentv_key)
    if data is None:
        return None, problems
    if not isinstance(data, dict):
        problems.append(lines.problem((), "(file)", "an eval file is a mapping with a `tests` list"))
        return None, problems
    _load_plugins(data, path, lines, problems)
    _load_external_tests(data, path, lines, problems)
    normalizer = AgentvNormalizer(path, data, lines, problems)
    normalizer.run()
    data = normalizer.data
    checker = Checker(data, lines, problems, path.parent)
    checker.check()
    suite = checker.validate_models()
    problems.sort(key=lambda p: (p.file, p.line, p.field))
    if suite is not None and not problems:
        suite._path = path.resolve()
        return suite, []
    return None, _dedupe(problems)


def _load_plugins(data: dict, path: Path, lines: LineMap, problems: list[Problem]) -> None:
    """Import the suite's `plugins` (modules, or .py files relative to the suite) so that the
    assertion types they register validate below."""
    plugins = data.get("plugins")
    if plugins is None:
        return
    if not isinstance(plugins, list) or not all(isinstance(p, str) for p in plugins):
        problems.append(lines.problem(("plugins",), "plugins", "a list of module names or .py files"))
        data.pop("plugins")
        return
    for i, plugin in enumerate(plugins):
        try:
            registry.load_plugin(plugin, base_dir=path.parent)
        except RegistryError as exc:
            problems.append(lines.problem(("plugins", i), f"plugins[{i}]", str(exc)))


def _load_external_tests(data: dict, path: Path, lines: LineMap, problems: list[Problem]) -> None:
    """`tests: cases.yaml` or `tests: cases.jsonl` -> the list of tests in that file."""
    ref = data.get("tests")
    if not isinstance(ref, str):
        return
    try:
        target = confined_file(ref, path.parent)
    except ValueError as exc:
        message = f"tests file not found: {ref}" if str(exc).endswith("no such file") else str(exc)
        problems.append(lines.problem(("tests",), "tests", message))
        data["tests"] = []
        return
    if target.suffix == ".jsonl":
        loaded = load_jsonl(target, lines, problems, ("tests",), agentv_key)
    else:
        loaded = load_yaml(target, lines, problems, ("tests",), agentv_key)
    if loaded is None:
        data["tests"] = []
    elif not isinstance(loaded, list):
        problems.append(lines.problem(("tests",), "tests", f"{ref} must hold a list of tests"))
        data["tests"] = []
    else:
        data["tests"] = loaded


def _dedupe(problems: list[Problem]) -> list[Problem]:
    return list(dict.fromkeys(problems))
