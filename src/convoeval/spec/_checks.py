"""The checks of a test as stored with its result, so that `convoeval grade` can judge the
stored conversation again with the run's own checks (and nothing else)."""

from __future__ import annotations

from ._models import Suite, Test

#: The layout of `EvaluationResult.checks` (raised when it changes).
CHECKS_VERSION = 1


def stored_checks(suite: Suite, test: Test, of_suite: dict[str, object] | None = None) -> dict[str, object]:
    """`{"version", "file", "suite", "test"}`: the eval file's path, the suite's own keys
    (assertions, turn_assertions, policy, input, execution... not its tests) and the test,
    as data the eval-file loader reads back (only what the file set).

    Args:
        of_suite: `suite_checks(suite)`, when the caller keeps it for the suite's tests.
    """
    return {
        **(of_suite if of_suite is not None else suite_checks(suite)),
        "test": test.model_dump(mode="json", exclude_unset=True, exclude_none=True),
    }


def suite_checks(suite: Suite) -> dict[str, object]:
    """The part of `stored_checks` that every test of `suite` shares."""
    return {
        "version": CHECKS_VERSION,
        "file": str(suite.path.resolve()) if suite.path else None,
        "suite": suite.model_dump(mode="json", exclude={"tests"}, exclude_unset=True, exclude_none=True),
    }
