"""Which tests a run runs: `--test-id` (globs), `--tag`, `--limit N` and `--shard i/n`.

Tests are picked in suite and file order: those matching any `--test-id` glob and any `--tag`
(a test's `tags`, or its suite's), then the first `limit` of them, then everything they depend
on (`depends_on` must run in the same job). Shards split that set into `n` deterministic parts:
each group of tests linked by `depends_on` is one unit, unit k (in order) going to shard
k mod n + 1, so the shards of a suite partition it and every shard runs whole dependency groups.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Sequence

from ..errors import ConfigError
from ..spec import Suite, Test

_SHARD = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")


def parse_shard(text: str) -> tuple[int, int]:
    """`"2/4"` -> (2, 4). Raises ConfigError for anything else (i from 1 to n)."""
    match = _SHARD.match(text)
    if not match or not 1 <= int(match.group(1)) <= int(match.group(2)):
        raise ConfigError(f"shard {text!r}: give i/n with 1 <= i <= n, e.g. --shard 1/4")
    return int(match.group(1)), int(match.group(2))


def tags_of(test: Test, suite: Suite) -> set[str]:
    """A test's tags: its own `tags` and its suite's (kept under `metadata`)."""
    found: set[str] = set()
    for value in (test.metadata.get("tags"), suite.metadata.get("tags")):
        if isinstance(value, str):
            found.update(t.strip() for t in value.split(","))
        elif isinstance(value, Sequence):
            found.update(str(t) for t in value)
    return found


def select_tests(
    suites: list[Suite],
    *,
    test_ids: Sequence[str] = (),
    tags: Sequence[str] = (),
    limit: int | None = None,
    shard: str | None = None,
    note: Callable[[str], None] = lambda text: None,
    keep: Callable[[Suite, Test], bool] | None = None,
) -> list[Suite]:
    """The suites with only the selected tests (suites left without tests are dropped).
    `keep(suite, test)`: a further filter (a re-run keeps the tests that did not pass).

    Raises:
        ConfigError: nothing matches, or a bad shard.
    """
    if not test_ids and not tags and limit is None and shard is None and keep is None:
        return suites
    picked: list[tuple[int, str]] = []  # (suite index, test id), in run order
    for s, suite in enumerate(suites):
        for test in suite.tests:
            if test_ids and not any(_matches(test.id, pattern) for pattern in test_ids):
                continue
            if tags and not tags_of(test, suite) & set(tags):
                continue
            if keep is not None and not keep(suite, test):
                continue
            picked.append((s, test.id))
    if limit is not None:
        picked = picked[:limit]
    chosen = {(s, t) for s, t in picked}
    added = _add_dependencies(suites, chosen)
    if added:
        note(f"also running {added} test(s) that selected tests depend on")
    if shard is not None:
        index, count = parse_shard(shard)
        chosen = _shard(suites, chosen, index, count)
    selected = [
        suite.model_copy(update={"tests": [t for t in suite.tests if (s, t.id) in chosen]})
        for s, suite in enumerate(suites)
    ]
    selected = [suite for suite in selected if suite.tests]
    if not selected:
        raise ConfigError(_nothing(test_ids, tags, shard))
    return selected


def _matches(test_id: str, pattern: str) -> bool:
    """A test's own id selects it, even when it has glob characters (tau2's telecom ids hold
    `[...]`, which a glob reads as a set of characters); else the glob must match."""
    return test_id == pattern or fnmatch.fnmatchcase(test_id, pattern)


def _add_dependencies(suites: list[Suite], chosen: set[tuple[int, str]]) -> int:
    before = len(chosen)
    stack = list(chosen)
    while stack:
        s, test_id = stack.pop()
        test = next(t for t in suites[s].tests if t.id == test_id)
        for dep in test.depends_on:
            if (s, dep) not in chosen:
                chosen.add((s, dep))
                stack.append((s, dep))
    return len(chosen) - before


def _shard(suites: list[Suite], chosen: set[tuple[int, str]], index: int, count: int) -> set[tuple[int, str]]:
    """The chosen tests of shard `index` of `count`: dependency groups dealt out in order."""
    unit = 0
    kept: set[tuple[int, str]] = set()
    for s, suite in enumerate(suites):
        parent: dict[str, str] = {}
        ids = [t.id for t in suite.tests if (s, t.id) in chosen]
        for test in suite.tests:
            if (s, test.id) in chosen:
                for dep in test.depends_on:
                    parent[_root(parent, test.id)] = _root(parent, dep)
        units: dict[str, int] = {}
        for test_id in ids:
            root = _root(parent, test_id)
            if root not in units:
                units[root] = unit
                unit += 1
            if units[root] % count == index - 1:
                kept.add((s, test_id))
    return kept


def _root(parent: dict[str, str], x: str) -> str:
    """Union-find: the representative of x's group (path halving)."""
    while parent.setdefault(x, x) != x:
        parent[x] = parent[parent[x]]
        x = parent[x]
    return x


def _nothing(test_ids: Sequence[str], tags: Sequence[str], shard: str | None) -> str:
    asked = [
        f"--test-id {' '.join(test_ids)}" if test_ids else "",
        f"--tag {' '.join(tags)}" if tags else "",
        f"--shard {shard}" if shard else "",
    ]
    return f"no test selected by {' and '.join(a for a in asked if a) or 'the selection'}"


def own_targets(test: Test) -> list[str]:
    """The targets a test names itself (`execution.targets`, or `execution.target`)."""
    execution = test.execution
    if execution is None:
        return []
    return list(execution.targets or ([execution.target] if execution.target else []))


def tests_for_target(suite: Suite, target: str, targets: Sequence[str]) -> Suite:
    """The suite with the tests that run on `target`, one of the run's `targets` for it.

    As in AgentV, a test's own `execution.target(s)` choose among the run's targets when the
    suite runs on several (a matrix); on a single target every test runs.
    """
    if len(targets) < 2 or not any(own_targets(t) for t in suite.tests):
        return suite
    tests = [t for t in suite.tests if not own_targets(t) or target in own_targets(t)]
    return suite.model_copy(update={"tests": tests})


def tests_on_no_target(suite: Suite, targets: Sequence[str]) -> list[str]:
    """Ids of the tests whose own targets are none of the run's `targets` (they do not run)."""
    if len(targets) < 2:
        return []
    return [t.id for t in suite.tests if own_targets(t) and not set(own_targets(t)) & set(targets)]
