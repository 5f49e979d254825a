"""The checks of a test as stored with its result, so that `convoeval grade` can judge the
stored conversation again with the run's own checks (and nothing else)."""

from __future__ import annotations

from ._models import Suite, Test

#: The layout of `EvaluationResult.checks` (raised when it changes).
CHECKS_VERSION = 1


def stored_checks(suite: Suite, test: Test) -> dict[str, object]:
    """`{"version", "file", "suite", "test"}`: the eval file's path, the suite's own keys
    (assertions, turn_assertions, policy, input, execution... not its tests) and the test,
    as data the eval-file loader reads back (only what the file set)."""
    return {
        "version": CHECKS_VERSION,
        "file": str(suite.path.resolve()) if suite.path else None,
        "suite": suite.model_dump(mode="json", exclude={"tests"}, exclude_unset=True, exclude_none=True),
        "test": test.model_dump(mode="json", exclude_unset=True, exclude_none=True),
    }
