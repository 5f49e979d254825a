"""Judge consistency: how much a grader's score moves when the same judgement is repeated."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ._data import AgreementInputError, is_missing


@dataclass(frozen=True)
class Consistency:
    """Mean and standard deviation of one grader's repeated scores.

    Attributes:
        mean: mean of the scores that were produced.
        std: standard deviation (ddof as requested); None with too few scores.
        n: scores used (missing ones, e.g. grader errors, are skipped).
        missing: how many runs produced no score.
    """

    mean: float
    std: float | None
    n: int
    missing: int = 0


def judge_consistency(scores: Mapping[str, Sequence[float | None]], *, ddof: int = 1) -> dict[str, Consistency]:
    """Mean and standard deviation of each grader's repeated runs on the same input.

    Args:
        scores: grader name -> the scores of its repeated runs; None or NaN marks
            a run that produced no score and is skipped.
        ddof: delta degrees of freedom of the standard deviation; 1 (default) is the
            sample standard deviation, 0 the population one.

    Example:
        >>> judge_consistency({"judge": [4, 5, 4, 4]})["judge"].mean
        4.25
    """
    report: dict[str, Consistency] = {}
    for grader, runs in scores.items():
        values: list[float] = []
        for run, score in enumerate(runs, start=1):
            if is_missing(score):
                continue
            if isinstance(score, bool) or not isinstance(score, (int, float)):
                raise AgreementInputError(f"{grader}: run {run}: score must be a number, got {score!r}")
            values.append(float(score))
        if not values:
            raise AgreementInputError(f"{grader}: no scores among {len(runs)} runs")
        mean = math.fsum(values) / len(values)
        std = None
        if len(values) > ddof:
            squares = math.fsum((v - mean) ** 2 for v in values)
            std = math.sqrt(squares / (len(values) - ddof))
        report[grader] = Consistency(mean=mean, std=std, n=len(values), missing=len(runs) - len(values))
    return report
