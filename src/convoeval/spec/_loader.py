"""Load and validate eval files; every problem becomes `file:line: field: message`.

An eval file is read as a stream (`_SuiteLoad`): the suite's own keys are kept with their
lines, and each item of `tests` (or of the file `tests:` names) is normalized, checked and
validated as soon as it is read, then only its model is kept (nothing when validating). So a
file of 20,000 tests never holds more than one test's raw data and lines at once.

Two shapes are read twice instead: a key that changes how tests are read (`plugins`, `input`,
`prompts`) given after `tests` (the tests are read again knowing it), and a file whose top
level merges a mapping (`<<:`) or gives `tests` twice (read whole, then test by test).
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from .. import registry
from ..errors import ConfigError, RegistryError
from ._agentv import AgentvNormalizer, agentv_key, v5_prompts
from ._agentv_options import read_options
from ._agentv_v5 import read_default_test
from ._checker import Checker
from ._errors import Problem, SpecError, first_per_field
from ._lines import Key, LineMap
from ._models import Suite, TargetName
from ._targets_file import find_targets_file, named_targets, target_configs, target_name_problems
from ._tests import SuiteTests
from ._yaml import read_text
from ._yaml_events import MERGE, YamlFailure, YamlReader

log = logging.getLogger("convoeval.spec")

#: Suite keys that change how its tests are read.
CONTEXT_KEYS = frozenset({"plugins", "input", "prompts", "input_files", "default_test"})


def load_suite(path: str | Path) -> Suite:
    """Load one eval file.

    Raises:
        SpecError: with every problem of the file, each `file:line: field: message`.

    Example:
        suite = load_suite("examples/travel-planning.eval.yaml")
        print([t.id for t in suite.tests])
    """
    suite, problems, _ = _load(Path(path))
    if problems or suite is None:
        raise SpecError(problems)
    return suite


def validate_paths(paths: list[str | Path], targets_file: str | Path | None = None) -> list[Problem]:
    """All problems of all the given eval files (an empty list when they are valid), among them
    each target, judge or simulator model they name that is neither `provider:model` nor a name
    of the targets files a run of them would read: `targets_file` when given, else the one
    each file finds (`find_targets_file`); a file that finds none may name its targets (a run
    gives them with --target)."""
    problems: list[Problem] = []
    names: list[TargetName] = []
    for path in map(Path, paths):
        _, found, named = _load(path, keep=False)
        problems.extend(found)
        if named and targets_file is None and find_targets_file(path.resolve().parent) is None:
            # No targets file serves it: its own target names are for `run --target` to replace
            # (AgentV's `validate` checks no target names; a shared suite is copied without one).
            # A `provider:model` is no name: its provider is checked (`opnai:gpt-4o` fails any run).
            named = [n for n in named if n.role != "target" or ":" in n.name]
        names.extend(named)
    candidates = [f for p in map(Path, paths) if p.is_file() and (f := find_targets_file(p.resolve().parent))]
    if not names and not candidates and targets_file is None:
        return problems
    try:
        defined = named_targets(candidates, targets_file)
    except SpecError as exc:  # the targets file's own problems
        return problems + exc.problems
    except ConfigError as exc:  # no such --targets file
        return [*problems, Problem(str(targets_file), 1, "(file)", str(exc))]
    return first_per_field(problems + target_name_problems(names, defined))  # one problem a field


#: AgentV's eval files written as programs (`*.eval.ts`, its SDK's `defineEval`).
_SCRIPT_SUFFIXES = (".ts", ".mts", ".cts", ".js", ".mjs", ".cjs")
#: Top-level keys of a promptfoo config that no AgentV file has (AgentV v5 has `defaultTest`).
_PROMPTFOO_KEY = re.compile(r"^(outputPath|assertionTemplates|redteam)\s*:", re.MULTILINE)
_TOP_KEY = re.compile(r"^(prompts|providers)\s*:", re.MULTILINE)
_PROMPTFOO_CONFIG = (
    "a promptfoo config, not an eval file: `convoeval import promptfoo {path} -o suite.eval.yaml` converts it "
    "(then `convoeval run suite.eval.yaml`)"
)
_SCRIPT_SUITE = (
    "this AgentV form is not supported: an eval file written in TypeScript or JavaScript (AgentV's `*.eval.ts`, "
    "built with its SDK); convoeval reads eval files in YAML (or JSONL tests)"
)

_PYTHON_SUITE = (
    "a Python file, not an eval file: convoeval reads eval files in YAML (or JSONL tests); load Python graders"
    " and providers with `plugins:` or --plugin, or run suites from Python with `convoeval.run(...)`"
)


def _not_a_file(path: Path) -> str:
    """Why `path`, which is no regular file, cannot be read as an eval file."""
    if path.is_dir():
        return "a folder, not an eval file"
    if path.exists():
        return "not a regular file (a device, a pipe or a socket)"
    return "a symbolic link loop, or one to nothing" if path.is_symlink() else "no such file"


def _load(path: Path, keep: bool = True) -> tuple[Suite | None, list[Problem], list[TargetName]]:
    """The suite (None when invalid, or when `keep` is False), the file's problems, and the
    targets it names (`Suite.target_names`)."""
    if not path.is_file():
        return None, [Problem(str(path), 1, "(file)", _not_a_file(path))], []
    if path.suffix.lower() in _SCRIPT_SUFFIXES:
        return None, [Problem(str(path), 1, "(file)", _SCRIPT_SUITE)], []
    if path.suffix.lower() == ".py":
        return None, [Problem(str(path), 1, "(file)", _PYTHON_SUITE)], []
    problems: list[Problem] = []
    text = read_text(path, problems)
    if text is None:
        return None, problems, []
    load = _SuiteLoad(path, text, keep)
    suite, problems = load.run()
    if problems and (
        path.name.startswith("promptfooconfig") or _PROMPTFOO_KEY.search(text) or _promptfoo_shaped(text, problems)
    ):
        problems = [Problem(str(path), 1, "(file)", _PROMPTFOO_CONFIG.format(path=path))]
    return suite, first_per_field(problems), load.checker.target_names


def _promptfoo_shaped(text: str, problems: list[Problem]) -> bool:
    """A promptfoo config by its shape: top-level `prompts` and `providers`, and tests without
    the `id` every AgentV test has."""
    unnamed = any(p.field == "tests[0].id" and p.message == "required field is missing" for p in problems)
    return unnamed and {m.group(1) for m in _TOP_KEY.finditer(text)} == {"prompts", "providers"}


@dataclass(frozen=True)
class _Context:
    """What reading a test needs to know of its suite."""

    suite_input: bool  # the suite gives an `input`
    prompts: object  # the AgentV v5 `prompts` the suite keeps (not only the identity prompt), or None
    plugins: object  # the suite's `plugins` (imported before its tests are read)
    input_files: object = None  # the suite's `input_files` (AgentV: attached to each test's string input)
    default_test: object = None  # AgentV v5's `default_test` (its vars, options, assert), or its file
    testbed: object = None  # AgentV v5's `environment` and `extensions` (each test's hooks get its context)
    checks: bool = False  # the suite gives assertions (its own, or `default_test`'s)
    assertions: object = None  # the suite's own assertions, as written

    @classmethod
    def of(cls, data: dict) -> _Context:
        default_test = data.get("default_test")
        testbed = {k: data[k] for k in ("environment", "extensions") if k in data}
        return cls(
            data.get("input") is not None,
            data["prompts"] if v5_prompts(data) else None,
            data.get("plugins"),
            data.get("input_files"),
            default_test,
            testbed or None,
            bool(data.get("assertions")) or (isinstance(default_test, dict) and bool(default_test.get("assert"))),
            data.get("assertions"),
        )


class _Again(Exception):
    """Read the file again: with the suite's context known (`context`), or whole (None)."""

    def __init__(self, context: _Context | None):
        self.context = context


_NO_TESTS: Final = object()  # the file has no `tests` key


class _SuiteLoad:
    """One eval file read into a Suite, test by test."""

    def __init__(self, path: Path, text: str, keep: bool):
        self.path = path
        self.file = str(path)
        self.text = text
        self.keep = keep
        self._reset()

    def _reset(self) -> None:
        """Start a reading of the file afresh."""
        self.problems: list[Problem] = []
        self.file_problems: list[Problem] = []  # of reading YAML and JSON (before the others at one place)
        self.lines = LineMap(self.file)
        self.normalizer = AgentvNormalizer(self.path, self.problems, self.lines)
        self.checker = Checker(self.problems, self.path.parent, self.lines)
        self.checker.agentv = self.normalizer.agentv
        self.tests: SuiteTests | None = None

    def run(self) -> tuple[Suite | None, list[Problem]]:
        try:
            return self._attempt(None, whole=False)
        except _Again as again:  # a second reading never asks for a third
            return self._attempt(again.context, whole=again.context is None)

    def _attempt(self, context: _Context | None, whole: bool) -> tuple[Suite | None, list[Problem]]:
        self._reset()
        reader = YamlReader(self.text, self.file, agentv_key)
        try:
            kind = reader.begin()
            if kind is None:
                return None, [Problem(self.file, 1, "(file)", "the file is empty")]
            if whole or kind != "mapping":
                data = reader.value((), self.lines)
                reader.end()
                if data is None:  # a document with nothing in it (`---`)
                    return None, [Problem(self.file, 1, "(file)", "the file is empty")]
                if not isinstance(data, dict):
                    message = "an eval file is a mapping with a `tests` list"
                    return None, [*reader.problems, self.lines.problem((), "(file)", message)]
                tests = self._whole_tests(data)
            else:
                data, tests = self._stream(reader, context)
                reader.end()
        except YamlFailure as failure:
            return None, reader.failure_problems(failure)
        finally:
            reader.close()
        self.file_problems[:0] = reader.problems
        return self._finish(data, tests)

    # -- reading ------------------------------------------------------------------------
    def _stream(self, reader: YamlReader, preset: _Context | None) -> tuple[dict[Key, object], object]:
        """The suite's keys (without `tests`), and its tests (read here when they are a list):
        a SuiteTests, _NO_TESTS, or the value given (a file's name, or what is wrong)."""
        data: dict[Key, object] = {}
        tests: object = _NO_TESTS
        late = False
        for key in reader.entries(self.lines):
            if key is MERGE or (key == "tests" and tests is not _NO_TESTS):
                raise _Again(None)
            if key != "tests":
                data[key] = reader.value((key,), self.lines)
                late = late or (key in CONTEXT_KEYS and isinstance(self.tests, SuiteTests))
                continue
            if reader.next_kind() != "sequence":
                tests = reader.value(("tests",), self.lines)
                continue
            self.tests = self._new_tests(preset or _Context.of(data))
            for index, value, lines in reader.items(("tests",), self.lines, self._item_lines):
                self.tests.add(value, lines, index)
            tests = self.tests
        if late and preset is None:
            raise _Again(_Context.of(data))
        return data, tests

    def _whole_tests(self, data: dict[Key, object]) -> object:
        """The tests of a file read whole: its list, checked item by item (each freed once read)."""
        tests = data.pop("tests", _NO_TESTS)
        if not isinstance(tests, list):
            return tests
        items = self.lines.pop_items(("tests",))
        collector = self.tests = self._new_tests(_Context.of(data))
        for index in range(len(tests)):
            value, tests[index] = tests[index], None
            collector.add(value, items.pop(index) if index in items else self._item_lines(), index)
        return collector

    def _item_lines(self) -> LineMap:
        return LineMap(self.file, self.lines)

    def _new_tests(self, context: _Context) -> SuiteTests:
        _import_plugins(context.plugins, self.path.parent)
        self.normalizer.read_prompts(context.prompts)
        self.normalizer.suite_input = context.suite_input
        self.normalizer.suite_checks = context.checks
        self.normalizer.suite_input_files = context.input_files
        self.default_test(context)
        self.normalizer.suite_testbed(context.testbed)
        return SuiteTests(
            self.path.parent,
            self.normalizer,
            self.checker,
            self.problems,
            self.file_problems,
            suite_input=context.suite_input,
            keep=self.keep,
        )

    def default_test(self, context: _Context) -> None:
        """What each test takes of AgentV v5's `default_test` (its problems are the suite's):
        its `vars`, its `options`, and the suite's assertions (`default_test.assert` first)."""
        found = read_default_test(context.default_test, self.path.parent)[0] if context.default_test else None
        found = found or {}
        variables, extra, own = found.get("vars"), found.get("assert"), context.assertions
        self.normalizer.default_vars = variables if isinstance(variables, dict) else {}
        self.normalizer.default_options = read_options(found.get("options"), self.path.parent, lambda k, m: None)
        self.normalizer.default_asserts = [
            *(extra if isinstance(extra, list) else []),
            *(own if isinstance(own, list) else []),
        ]
        self.checker.suite_options = self.normalizer.default_options

    # -- the suite ----------------------------------------------------------------------
    def _finish(self, data: dict[Key, object], tests: object) -> tuple[Suite | None, list[Problem]]:
        """The suite's own keys checked, the checks across tests, the Suite model."""
        self._load_plugins(data)
        if isinstance(tests, str):
            self.tests = self._new_tests(_Context.of(data))
            self.tests.external(tests, self.lines)
            tests = self.tests
        self.normalizer.lines = self.checker.lines = self.lines
        data = self.normalizer.suite(data)
        if tests is _NO_TESTS:
            self.checker.add(("tests",), "required field is missing: an eval file needs a `tests` list")
            self.checker.check_suite(data)  # its own keys' problems too, its assertions read as what they are
        elif isinstance(tests, SuiteTests):
            if not tests.count:
                self.checker.add(("tests",), "must contain at least one test")
            self.checker.check_suite(data)
            tests.check_links(data.get("execution"))
            tests.check_domain(data.get("tools"))
            modes = {conversation for conversation in (False, True) if tests.modes[conversation]}
            self.checker.check_suite_assertion_levels(data, modes)
        inline = target_configs(self.normalizer.inline, self.path.parent, self.lines, self.problems, catalog=True)
        inline |= target_configs(self.normalizer.declared, self.path.parent, self.lines, self.problems, catalog=False)
        names = self.checker.target_names  # those the file declares itself need no targets file
        names[:] = [n for n in names if n.name not in inline]
        shown = {**data, "tests": [] if tests is _NO_TESTS or isinstance(tests, SuiteTests) else tests}
        suite = self.checker.validate(Suite, shown, ())
        for warning in dict.fromkeys(self.normalizer.warnings + self.checker.warnings):
            log.warning("%s", warning)
        problems = sorted(self.file_problems + self.problems, key=lambda p: (p.file, p.line, p.field))
        if suite is None or problems or not isinstance(tests, SuiteTests):
            return None, list(dict.fromkeys(problems))
        suite.tests = tests.models
        suite._path = self.path.resolve()
        suite._agentv = self.normalizer.agentv
        suite._target_names = tuple(self.checker.target_names)
        suite._inline_targets = inline
        return (suite if self.keep else None), []

    def _load_plugins(self, data: dict) -> None:
        """Import the suite's `plugins` (modules, or .py files relative to the suite) so that the
        assertion types they register validate; each one that fails is a problem."""
        plugins = data.get("plugins")
        if plugins is None:
            return
        if not isinstance(plugins, list) or not all(isinstance(p, str) for p in plugins):
            self.problems.append(self.lines.problem(("plugins",), "plugins", "a list of module names or .py files"))
            data.pop("plugins")
            return
        for i, plugin in enumerate(plugins):
            try:
                registry.load_plugin(plugin, base_dir=self.path.parent)
            except RegistryError as exc:
                self.problems.append(self.lines.problem(("plugins", i), f"plugins[{i}]", str(exc)))


def _import_plugins(plugins: object, base_dir: Path) -> None:
    """Import the plugins before the tests that use them are read (their problems are reported
    once the suite's keys are checked)."""
    if isinstance(plugins, list):
        for plugin in plugins:
            if isinstance(plugin, str):
                try:
                    registry.load_plugin(plugin, base_dir=base_dir)
                except RegistryError:
                    pass
