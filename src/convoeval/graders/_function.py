"""`@grader("name")`: a plain or async function as an assertion type (next to the class form).

    @grader("mentions-price")
    def mentions_price(ctx: GradeContext) -> bool:
        return "$" in ctx.output

The function takes the GradeContext and returns a Grade, a score in [0, 1] or a bool (True is
1.0, False is 0.0). In YAML the type takes the common fields only (`weight`, `required`,
`min_score`, `negate`, `name`); a grader with settings of its own is an `Assertion` subclass.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Awaitable, Callable
from typing import Literal, TypeVar

from ..errors import GraderError
from ..judging import GradingLevel
from ._base import Assertion, Grade, GradeContext, assertion_type

GradeFunction = Callable[[GradeContext], Grade | float | bool | Awaitable[Grade | float | bool]]
F = TypeVar("F", bound=GradeFunction)


def grader(
    name: str, *, levels: tuple[GradingLevel, ...] = ("turn", "conversation"), uses_judge: bool = False
) -> Callable[[F], F]:
    """Register `function(ctx)` as the assertion type `name`; the function is returned unchanged.

    Args:
        name: the YAML `type`.
        levels: where it may appear (`turn`, `conversation`).
        uses_judge: the function calls `ctx.judge` (the run then needs a judge).

    Raises:
        RegistryError: `name` is already registered.
    """

    def register(function: F) -> F:
        async def grade(self: Assertion, ctx: GradeContext) -> Grade:
            value = function(ctx)
            if inspect.isawaitable(value):
                value = await value
            return as_grade(value, name)

        namespace: dict[str, object] = {
            "__annotations__": {"type": Literal[name]},
            "type": name,
            "grade": grade,
            "levels": levels,
            "uses_judge": uses_judge,
            "__module__": function.__module__,
            "__doc__": inspect.getdoc(function) or f"The function grader {name!r}.",
        }
        class_name = "".join(part.capitalize() for part in name.replace("_", "-").split("-")) or "Function"
        assertion_type(type(f"{class_name}Grader", (Assertion,), namespace))
        return function

    return register


def as_grade(value: object, name: str) -> Grade:
    """A function grader's return value as a Grade; anything else cannot decide (GraderError)."""
    if isinstance(value, Grade):
        return value
    if isinstance(value, bool):
        return Grade(score=1.0 if value else 0.0)
    if isinstance(value, int | float) and math.isfinite(value):
        return Grade(score=float(value))
    raise GraderError(f"grader {name!r} returned {value!r}; expected a Grade, a number in [0, 1] or a bool")
