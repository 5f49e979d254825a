"""The tests of one eval file, read one at a time: each is normalized, checked and validated
alone, then only its model is kept (none when only validating), with the few facts the checks
across tests need (ids, `depends_on`, own targets) and no raw data or lines."""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass, field
from pathlib import Path

from .._paths import confined_file, confined_folder
from ..errors import suggest
from ._agentv import AgentvNormalizer, agentv_key
from ._agentv_env import substitute_env
from ._checker import Checker
from ._errors import Problem, field_path
from ._lines import DataPath, LineMap
from ._models import SIMULATED_USER_KEYS, Test
from ._yaml import CaseFolder, ItemsFile

#: A path AgentV reads as a glob (fast-glob's magic characters its `isGlobPattern` looks for).
_GLOB = re.compile(r"[*?\[]")


@dataclass
class _Links:
    """What the checks across tests need of one test that depends on others or picks targets."""

    index: int
    id: str | None
    deps: list[tuple[str, Problem]] = field(default_factory=list)  # (test id, where it is named)
    deps_at: Problem | None = None  # where `depends_on` is
    targets: list[str] | None = None
    targets_at: Problem | None = None  # where `execution.target(s)` is


class SuiteTests:
    """Collects the tests of one eval file as they are read (`add`), in file order.

    Args:
        base_dir: the eval file's folder (includes and attachments are relative to it).
        normalizer, checker: the file's AgentV normalizer and checker (their `lines` are set
            to each test's own line map while it is checked).
        problems: where problems go; `file_problems`: those of reading the files of tests
            (YAML or JSON: they come first among problems at one place, as before).
        suite_input: whether the suite gives an `input` (a single-turn test may then omit it).
        keep: keep each test's model (False when only validating).
    """

    def __init__(
        self,
        base_dir: Path,
        normalizer: AgentvNormalizer,
        checker: Checker,
        problems: list[Problem],
        file_problems: list[Problem],
        *,
        suite_input: bool,
        keep: bool,
    ):
        self.base_dir = base_dir
        self.normalizer = normalizer
        self.checker = checker
        self.problems = problems
        self.file_problems = file_problems
        self.suite_input = suite_input
        self.keep = keep
        self.models: list[Test] = []
        self.count = 0  # tests in the list (with the ones that are not valid)
        self.ids: dict[str, tuple[int, int, str]] = {}  # test id -> (index, line and file of its id)
        self.links: list[_Links] = []
        self.modes: list[int] = [0, 0]  # tests that are single-turn, conversations
        self.set_up: list[tuple[int, Problem]] = []  # (index, where) of each test's `initial_actions`
        self.importing: tuple[list[str], dict] | None = None  # an `include:` entry's (select, run)

    # -- reading ------------------------------------------------------------------------
    def add(self, value: object, lines: LineMap, index: int, *, includes: bool = True) -> None:
        """One item of a `tests` list, found at `index` of its list, its lines in `lines`
        (under `("tests", index)`). A string includes a file of tests when `includes`."""
        path: DataPath = ("tests", index)
        value = substitute_env(value, path, lines, self.problems, warnings=self.normalizer.warnings)
        if includes and isinstance(value, str):
            self.include(value, path, lines)
            return
        if includes and isinstance(value, dict) and isinstance(value.get("include"), str):
            self.legacy_include(value, path, lines)
            return
        if self.importing is not None and isinstance(value, dict):
            select, run = self.importing
            if select and not any(fnmatch.fnmatchcase(str(value.get("id", "")), p) for p in select):
                return
            if run:  # the test's own `run` settings win (AgentV's mergeRunOverrides)
                value["run"] = {**run, **value["run"]} if isinstance(value.get("run"), dict) else run
        variants = self.normalizer.with_prompts(value)  # AgentV v5: the test once per prompt
        for n, variant in enumerate(variants):
            i = self.count
            self.count += 1
            own = lines if n == len(variants) - 1 else lines.copy()
            if i != index:
                own.renumber(("tests",), {index: i})
            self.check(variant, ("tests", i), own)

    def include(self, item: str, path: DataPath, lines: LineMap) -> None:
        """`file://cases.yaml` in a tests list: the tests of that file, in its place. As AgentV
        (`expandInlineTestEntries`): the path may be a glob (`cases/*.cases.yaml`, the matches in
        order), or given without `file://` (then it may also be a folder of cases)."""
        ref = item.removeprefix("file://").strip()
        bare = not item.startswith("file://")
        refs = self._glob(ref, lines, path, bare=bare) if _GLOB.search(ref) else [ref]
        for one in refs:
            if bare and (self.base_dir / one).is_dir():
                self._folder(one, path, lines)
            else:
                self._include_file(one, path, lines, hint=bare)

    def legacy_include(self, entry: dict, path: DataPath, lines: LineMap) -> None:
        """AgentV's deprecated `{include: PATH, type: tests, select, run}` entry (v5.3.1 and main,
        `yaml-parser.ts` `normalizeLegacyIncludeEntry`): the tests of that file (or glob) whose id
        matches `select` (a glob or a list of globs), with `run` under each one's own `run`. A
        warning says it is deprecated, as AgentV's does; `type: suite` (another eval file's tests
        with that file's settings) and a `select` mapping are refused."""
        ref, kind, select = entry["include"].strip(), entry.get("type"), entry.get("select", [])
        unknown = set(entry) - {"include", "type", "select", "run"}
        select = [select] if isinstance(select, str) else select
        if kind not in ("tests", "suite"):
            self._add(lines, (*path, "type"), f"include {ref!r} needs `type: tests` or `type: suite` (as AgentV says)")
        elif kind == "suite":
            self._add(lines, (*path, "type"), "this AgentV form is not supported: `type: suite` (deprecated in AgentV: "
                      "run that eval file itself, or include its cases with `type: tests`)")  # fmt: skip
        elif unknown:
            self._add(lines, (*path, sorted(unknown)[0]), "unknown field (include, type, select, run)")
        elif not isinstance(entry.get("run", {}), dict):
            self._add(lines, (*path, "run"), "must be a mapping (threshold, repeat, timeout_seconds, budget_usd)")
        elif not isinstance(select, list) or not all(isinstance(p, str) for p in select):
            self._add(lines, (*path, "select"), "this AgentV form is not supported here: `select` other than a glob of "
                      "test ids or a list of them")  # fmt: skip
        else:
            place = lines.problem(path, field_path(path), "")
            self.normalizer.warnings.append(
                f"warning: {place.file}:{place.line}: {place.field}: `include` is deprecated in AgentV; "
                f"write `file://{ref.removeprefix('file://')}` instead"
            )
            self.importing = (select, entry.get("run", {}))
            try:
                self.include(ref if ref.startswith("file://") else f"file://{ref}", path, lines)
            finally:
                self.importing = None

    def _glob(self, pattern: str, lines: LineMap, path: DataPath, *, bare: bool) -> list[str]:
        """The files a glob names, relative to the eval file's folder, in order (searched only
        under its fixed leading folder, which must lie inside). None found is a warning, as
        AgentV's `resolveFileReference`; for a path without `file://`, a problem."""
        parts = Path(pattern).parts
        fixed = next(i for i, part in enumerate(parts) if _GLOB.search(part))
        try:
            folder = confined_folder(str(Path(*parts[:fixed])) if fixed else ".", self.base_dir, "the glob's folder")
            found = sorted(str(p) for p in folder.glob(str(Path(*parts[fixed:]))) if p.is_file())
        except (NotImplementedError, ValueError) as exc:  # outside, or an absolute pattern
            self._add(lines, path, f"{pattern}: {exc}")
            return []
        if not found and bare:
            self._add(
                lines, path, f"tests file not found: {pattern} (a test is a mapping; a string names a file of tests)"
            )
        elif not found:
            place = lines.problem(path, field_path(path), "")
            self.normalizer.warnings.append(
                f"warning: {place.file}:{place.line}: {place.field}: {pattern} matches no file"
            )
        return found

    def _folder(self, ref: str, path: DataPath, lines: LineMap) -> None:
        """A folder of cases (AgentV's `loadCasesFromDirectory`: a subfolder's `case.yaml` is a test)."""
        try:
            folder = confined_folder(ref, self.base_dir, "tests folder")
        except ValueError as exc:
            self._add(lines, path, str(exc))
            return
        before = self.count
        self.read(CaseFolder(folder, agentv_key, lines.parent), includes=False)
        if self.count == before:
            self._add(lines, path, f"{ref} is a folder without cases (subfolders with a case.yaml)")

    def _include_file(self, ref: str, path: DataPath, lines: LineMap, *, hint: bool) -> None:
        try:
            file = confined_file(ref, self.base_dir)
        except ValueError as exc:  # outside the suite's folder and repository, a link loop, missing
            missing = str(exc).endswith("no such file")
            why = " (a test is a mapping; a string names a file of tests)" if hint else ""
            self._add(
                lines,
                path,
                f"tests file not found: {ref} (paths are relative to the eval file's folder){why}"
                if missing
                else str(exc),
            )
            return
        if file.suffix not in (".jsonl", ".yaml", ".yml", ".csv"):
            self._add(lines, path, f"{ref}: tests can be included from .yaml, .yml, .jsonl or .csv (AgentV's) files")
        elif self.read(ItemsFile(file, agentv_key, lines.parent), includes=False):
            self._add(lines, path, f"{ref} must hold a list of tests")

    def external(self, ref: str, lines: LineMap) -> None:
        """`tests: cases.jsonl` (or `.yaml`): the tests of that file; `tests: ./cases/` (AgentV
        v4.42): one test per subfolder's `case.yaml`; a glob: the files it matches, in order."""
        refs = [ref]
        if _GLOB.search(ref):
            refs = self._glob(ref.removeprefix("file://").strip(), lines, ("tests",), bare=True)
        for one in refs:
            self._external_file(one, lines)

    def _external_file(self, ref: str, lines: LineMap) -> None:
        try:
            file = confined_file(ref, self.base_dir)
        except ValueError as exc:
            folder = (self.base_dir / ref).resolve() if str(exc).endswith("is not a regular file") else None
            if folder is not None and folder.is_dir():  # inside the allowed roots
                before = self.count
                self.read(CaseFolder(folder, agentv_key, lines), includes=False)
                if self.count == before:
                    self._add(lines, ("tests",), f"{exc}, nor a folder of cases (subfolders with a case.yaml)")
                return
            message = f"tests file not found: {ref}" if str(exc).endswith("no such file") else str(exc)
            self._add(lines, ("tests",), message)
            return
        if self.read(ItemsFile(file, agentv_key, lines), includes=True):
            self._add(lines, ("tests",), f"{ref} must hold a list of tests")

    def read(self, source: ItemsFile | CaseFolder, *, includes: bool) -> bool:
        """Add the tests of a file; when it cannot be read, none of them count. True when it
        holds something other than a list."""
        mark = self._checkpoint()
        for index, value, lines in source.items():
            self.add(value, lines, index, includes=includes)
        if source.failed:
            self._rollback(mark)
        self.file_problems.extend(source.problems)
        return source.not_a_list

    # -- one test -----------------------------------------------------------------------
    def check(self, value: object, path: DataPath, lines: LineMap) -> None:
        """Normalize, check and validate the test at `path` (its index in the whole list)."""
        self.normalizer.lines = self.checker.lines = lines
        if isinstance(value, dict):
            self.normalizer.test(value, path)
            self.checker.load_policy(value, path)
            self.checker.check_test(value, path, self.suite_input)
            self._note(value, path, lines)
        model = self.checker.validate(Test, value, path)
        if model is not None and self.keep:
            self.models.append(model)

    def _note(self, test: dict, path: DataPath, lines: LineMap) -> None:
        """Remember what the checks across tests need: its id, dependencies, targets, kind."""
        index = path[1]
        assert isinstance(index, int)
        conversation = (
            test.get("mode") == "conversation"
            or "transcript" in test
            or "transcripts" in test
            or any(k in test for k in SIMULATED_USER_KEYS)
        )
        self.modes[conversation] += 1
        if test.get("initial_actions"):
            self.set_up.append(
                (index, lines.problem((*path, "initial_actions"), field_path((*path, "initial_actions")), ""))
            )
        test_id = test.get("id")
        if isinstance(test_id, str) and test_id:
            id_file, line = lines.locate((*path, "id"))
            if test_id in self.ids:
                _, first_line, first_file = self.ids[test_id]
                first_at = f"line {first_line}" if first_file == id_file else f"{first_file}:{first_line}"
                self._add(lines, (*path, "id"), f"duplicate test id {test_id!r} (first at {first_at})")
            else:
                self.ids[test_id] = (index, line, id_file)
        links = _Links(index, test_id if isinstance(test_id, str) else None)
        given = test.get("depends_on")
        deps = [given] if isinstance(given, str) else given
        if isinstance(deps, list):
            links.deps_at = lines.problem((*path, "depends_on"), field_path((*path, "depends_on")), "")
            for k, dep in enumerate(deps):
                where = (*path, "depends_on") if isinstance(given, str) else (*path, "depends_on", k)
                if isinstance(dep, str):
                    links.deps.append((dep, lines.problem(where, field_path(where), "")))
        execution = test.get("execution")
        names = targets_of(execution) if isinstance(execution, dict) else None
        if names is not None and isinstance(execution, dict):
            key = "targets" if "targets" in execution else "target"
            links.targets = names
            links.targets_at = lines.problem((*path, "execution", key), field_path((*path, "execution", key)), "")
        if links.deps or links.targets is not None:
            self.links.append(links)

    def _add(self, lines: LineMap, path: DataPath, message: str) -> None:
        self.problems.append(lines.problem(path, field_path(path), message))

    def _checkpoint(self) -> tuple[int, int, int, int, list[int]]:
        return (self.count, len(self.models), len(self.links), len(self.problems), list(self.modes))

    def _rollback(self, mark: tuple[int, int, int, int, list[int]]) -> None:
        """Forget the tests added since `mark` (a file that failed half-way through)."""
        count, models, links, problems, modes = mark
        self.count = count
        del self.models[models:]
        del self.links[links:]
        del self.problems[problems:]
        self.modes = modes
        self.set_up = [(index, where) for index, where in self.set_up if index < count]
        self.ids = {k: v for k, v in self.ids.items() if v[0] < count}

    # -- across tests -------------------------------------------------------------------
    def check_links(self, suite_execution: object) -> None:
        """`depends_on` names known tests without a cycle; a test's own targets are among the
        suite's, and it depends only on tests that run where it runs (AgentV's matrix)."""
        graph: dict[str, list[str]] = {}
        for links in self.links:
            if links.deps_at is None:
                continue
            for dep, where in links.deps:
                if dep == links.id:
                    self._at(where, "a test cannot depend on itself")
                elif dep not in self.ids:
                    self._at(where, f"unknown test id {dep!r}{suggest(dep, self.ids)}")
            if links.id is not None:
                graph[links.id] = [d for d, _ in links.deps if d in self.ids and d != links.id]
        cycle = find_cycle(graph)
        if cycle:
            first = next(x for x in self.links if x.id == cycle[0] and x.deps_at is not None)
            assert first.deps_at is not None
            self._at(first.deps_at, "dependency cycle: " + " -> ".join(cycle))
        self._check_targets(suite_execution)

    def check_domain(self, suite_tools: object) -> None:
        """A test's `initial_actions` set up the suite's domain: the suite must declare one."""
        if suite_tools is None:
            for _, where in self.set_up:
                self._at(where, "needs the suite's `tools:` (and `backend:`): the domain whose backend they set up")

    def _check_targets(self, suite_execution: object) -> None:
        suite_targets = targets_of(suite_execution) if isinstance(suite_execution, dict) else None
        suite_targets = suite_targets if suite_targets and len(suite_targets) > 1 else None
        own: dict[str, list[str]] = {}
        for links in self.links:
            if links.targets is None:
                continue
            if links.id is not None:
                own[links.id] = links.targets
            for name in links.targets:
                if suite_targets and name not in suite_targets and links.targets_at is not None:
                    self._at(
                        links.targets_at,
                        f"{name!r} is not one of the suite's targets ({', '.join(suite_targets)}); "
                        "a test's own targets choose among them",
                    )
        for links in self.links:
            for dep, _ in links.deps:
                if dep not in own or links.id is None or links.deps_at is None:
                    continue
                mine = own.get(links.id)
                if mine is None or not set(mine) <= set(own[dep]):
                    self._at(
                        links.deps_at,
                        f"depends on {dep!r}, which runs only on {', '.join(own[dep])}; "
                        "give this test the same `execution.targets` (or a subset)",
                    )

    def _at(self, where: Problem, message: str) -> None:
        self.problems.append(Problem(where.file, where.line, where.field, message))


def targets_of(execution: dict) -> list[str] | None:
    """`execution.targets` or `[execution.target]` when they are (lists of) strings."""
    targets = execution.get("targets")
    if isinstance(targets, list) and all(isinstance(t, str) for t in targets):
        return list(targets)
    target = execution.get("target")
    return [target] if isinstance(target, str) else None


def find_cycle(graph: dict[str, list[str]]) -> list[str] | None:
    """One dependency cycle as `[a, b, ..., a]`, or None (iterative: chains may be long)."""
    state: dict[str, int] = {}  # 1 on the current path, 2 done
    for root in graph:
        if root in state:
            continue
        path = [root]
        state[root] = 1
        todo = [iter(graph.get(root, []))]
        while todo:
            for dep in todo[-1]:
                if state.get(dep) == 1:
                    return [*path[path.index(dep) :], dep]
                if dep not in state:
                    state[dep] = 1
                    path.append(dep)
                    todo.append(iter(graph.get(dep, [])))
                    break
            else:
                state[path.pop()] = 2
                todo.pop()
    return None
