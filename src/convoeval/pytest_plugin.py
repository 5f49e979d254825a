"""A pytest plugin (entry point `pytest11`): eval files as test items, one per test and target.

Opt-in, so that installing convoeval changes no other pytest run: pass `--convoeval`, or set
the ini option `convoeval_files` (glob patterns; default `*.eval.yaml`) in pytest.ini /
pyproject.toml. Each file runs once (through `convoeval.run`, with the response cache and the
run store) when its first item runs; an item fails with the test's failed turns and checks.
As in convoeval's JUnit XML, a test that could not be run or decided (an execution error such as
an HTTP 500, or a grader error) is a pytest error, not a failure, and a skipped test is skipped.

    [tool.pytest.ini_options]
    convoeval_files = ["*.eval.yaml"]
    convoeval_target = "openai:gpt-4o-mini"     # or --convoeval-target (repeatable)
    convoeval_judge = "openai:gpt-4o"           # or --convoeval-judge

pytest loads this module in every session of an environment where convoeval is installed, so
it loads nothing of convoeval until an eval file is collected: importing the engine here added
0.3-0.5 s to each pytest run, eval files or not.
"""

from __future__ import annotations

from collections.abc import Iterator
from fnmatch import fnmatch
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from .api import RunReport
    from .results import EvaluationResult

DEFAULT_GLOB = "*.eval.yaml"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("convoeval", "convoeval eval files")
    group.addoption(
        "--convoeval",
        action="store_true",
        help=f"Collect eval files (convoeval_files, default {DEFAULT_GLOB}) as tests, one item per test and target.",
    )
    group.addoption(
        "--convoeval-target",
        action="append",
        default=None,
        metavar="SPEC",
        help="Target(s) to run eval files against (default: each suite's own).",
    )
    group.addoption("--convoeval-judge", default=None, metavar="SPEC", help="Judge for LLM graders.")
    parser.addini(
        "convoeval_files",
        "Glob patterns of eval files to collect (setting it turns collection on).",
        type="args",
        default=None,
    )
    parser.addini("convoeval_target", "Target spec for eval files (default: each suite's own).", default="")
    parser.addini("convoeval_judge", "Judge spec for LLM graders.", default="")


def _patterns(config: pytest.Config) -> list[str] | None:
    """The eval-file globs when collection is on, else None."""
    configured = config.getini("convoeval_files")
    if configured:
        return list(configured)
    return [DEFAULT_GLOB] if config.getoption("convoeval") else None


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> EvalFile | None:
    patterns = _patterns(parent.config)
    if patterns and any(fnmatch(file_path.name, pattern) for pattern in patterns):
        return EvalFile.from_parent(parent, path=file_path)
    return None


class EvalFailure(Exception):
    """A test of an eval file did not pass; the message lists its failed turns and checks."""


class EvalFile(pytest.File):
    """One eval file: its tests are the items; the file runs once, on the first item."""

    report: RunReport | None = None
    error: str | None = None
    _test_ids: tuple[str, ...] = ()  # every test of the file, once collected

    def _targets(self) -> list[str] | None:
        given = self.config.getoption("convoeval_target") or []
        ini = self.config.getini("convoeval_target")
        return list(given) or ([ini] if ini else None)

    def collect(self) -> Iterator[EvalItem]:
        from .spec import SpecError, load_suite

        try:
            suite = load_suite(self.path)
        except SpecError as exc:
            raise self.CollectError("\n".join(str(p) for p in exc.problems)) from None
        given = self._targets()
        targets: list[str | None] = list(given) if given else [None]
        self._test_ids = tuple(test.id for test in suite.tests)
        for test in suite.tests:
            for target in targets:
                name = test.id if len(targets) == 1 else f"{test.id}[{target}]"
                yield EvalItem.from_parent(self, name=name, test_id=test.id, target=target)

    def results(self) -> list[EvaluationResult]:
        """Run the file (once) and return its results; an error of the run (the configuration,
        the store) fails every item. Only the tests and targets of the items pytest runs are run
        (`-k`, `--lf` and `--deselect` leave the others uncalled)."""
        if self.report is None and self.error is None:
            from .api import run
            from .errors import ConvoevalError

            judge = self.config.getoption("convoeval_judge") or self.config.getini("convoeval_judge") or None
            mine = [item for item in self.session.items if isinstance(item, EvalItem) and item.parent is self]
            targets = [item.target for item in mine if item.target is not None]
            test_ids = list(dict.fromkeys(item.test_id for item in mine))
            try:
                self.report = run(
                    self.path,
                    target=list(dict.fromkeys(targets)) or self._targets(),
                    judge=judge,
                    test_ids=test_ids if len(test_ids) < len(self._test_ids) else [],
                )
            except ConvoevalError as exc:
                self.error = str(exc)
        if self.error is not None:
            raise EvalFailure(f"{self.path.name}: {self.error}")
        assert self.report is not None
        return list(self.report.results)


class EvalItem(pytest.Item):
    """One test of an eval file against one target."""

    def __init__(self, *, test_id: str, target: str | None, **kwargs: Any):
        super().__init__(**kwargs)
        self.test_id = test_id
        self.target = target

    def _mine(self) -> list[EvaluationResult]:
        parent = self.parent
        assert isinstance(parent, EvalFile)
        mine = [
            r
            for r in parent.results()
            if r.test_id == self.test_id and (self.target is None or r.target == self.target)
        ]
        if not mine:
            raise EvalFailure(f"{self.test_id}: no result (was the test run?)")
        return mine

    def setup(self) -> None:
        """Errors and skips are decided here, as JUnit's `error` and `skipped` are: a failure
        raised during setup is what pytest reports as an error."""
        from .report import failure_lines, junit_kind

        try:
            mine = self._mine()
        except EvalFailure:
            return  # reported by runtest, as before
        kinds = [junit_kind(r) for r in mine]
        errors = [r for r, kind in zip(mine, kinds, strict=True) if kind == "error"]
        if errors:
            pytest.fail("\n".join(line for r in errors for line in failure_lines(r)), pytrace=False)
        if kinds and all(kind == "skipped" for kind in kinds):
            pytest.skip("; ".join(f"{r.test_id}: {r.execution_status}" for r in mine))

    def runtest(self) -> None:
        from .report import failure_lines

        mine = self._mine()
        failed = [r for r in mine if r.verdict != "pass"]
        if failed:
            raise EvalFailure("\n".join(line for r in failed for line in failure_lines(r)))

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        if isinstance(excinfo.value, EvalFailure):
            return str(excinfo.value)
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, f"{self.test_id}" + (f" @ {self.target}" if self.target else "")
