"""Turning a ratings matrix (items x raters) into category codes.

Every statistic works on the same prepared form: a matrix of category indices
(-1 = missing) and the declared categories in their declared order.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeGuard

import numpy as np

Category = int | float | str
"""One declared category: a number (1..5 scores) or a label ("yes", "no")."""

Matrix = Sequence[Sequence[object]] | np.ndarray
"""Items x raters; None or NaN marks a missing rating (any other value must be a declared category)."""


class AgreementInputError(ValueError):
    """The ratings or the declared categories cannot be used; the message says why."""


@dataclass(frozen=True)
class Ratings:
    """A validated ratings matrix.

    Attributes:
        codes: items x raters, the index of each rating in `categories`, -1 when missing.
            Items without any rating are dropped.
        categories: the declared categories, in the declared order.
    """

    codes: np.ndarray
    categories: tuple[Category, ...]

    @property
    def n_items(self) -> int:
        return int(self.codes.shape[0])

    @property
    def n_raters(self) -> int:
        return int(self.codes.shape[1])

    @property
    def q(self) -> int:
        """Number of declared categories."""
        return len(self.categories)

    def counts(self) -> np.ndarray:
        """items x categories: how many raters put each item in each category."""
        counts = np.zeros((self.n_items, self.q), dtype=float)
        for rater in range(self.n_raters):
            column = self.codes[:, rater]
            rated = column >= 0
            np.add.at(counts, (np.nonzero(rated)[0], column[rated]), 1.0)
        return counts

    def numeric_values(self) -> np.ndarray:
        """The declared categories as floats; raises when a category is not a number."""
        if not all(_is_number(c) for c in self.categories):
            raise AgreementInputError(
                "interval statistics need numeric categories, got " + ", ".join(repr(c) for c in self.categories)
            )
        return np.array([float(c) for c in self.categories])


def is_missing(value: object) -> bool:
    """True for None and NaN, the two spellings of a missing rating."""
    return value is None or (isinstance(value, float) and math.isnan(value))


def _is_number(value: object) -> TypeGuard[int | float | np.integer | np.floating]:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)


def _key(value: object) -> tuple[str, object]:
    """Lookup key: numbers compare by value (4 == 4.0), everything else as is."""
    if _is_number(value):
        return ("num", float(value))
    return ("other", value)


#: The most categories a scale may have: the estimators hold arrays of categories squared (times
#: the bootstrap's resamples), and no rating scale has more.
MAX_CATEGORIES = 100


def check_categories(categories: Sequence[Category]) -> tuple[Category, ...]:
    """Validate the declared categories: two to `MAX_CATEGORIES`, none missing, no duplicates."""
    declared = tuple(c.item() if isinstance(c, np.generic) else c for c in categories)
    if len(declared) < 2:
        raise AgreementInputError(f"declare at least two categories, got {list(declared)}")
    if len(declared) > MAX_CATEGORIES:
        raise AgreementInputError(f"declare at most {MAX_CATEGORIES} categories, got {len(declared)}")
    if any(is_missing(c) or isinstance(c, bool) for c in declared):
        raise AgreementInputError(f"categories must be numbers or labels, got {list(declared)}")
    keys = [_key(c) for c in declared]
    if len(set(keys)) != len(keys):
        raise AgreementInputError(f"categories contain duplicates: {list(declared)}")
    return declared


def prepare(matrix: Matrix, categories: Sequence[Category]) -> Ratings:
    """Validate `matrix` against the declared `categories` and code it.

    Args:
        matrix: items x raters; None or NaN marks a missing rating.
        categories: every category a rater could use, in order (e.g. `[1, 2, 3, 4, 5]`).

    Raises:
        AgreementInputError: ragged rows, a value outside the categories, no ratings.
    """
    declared = check_categories(categories)
    index = {_key(c): i for i, c in enumerate(declared)}
    rows = [list(row) for row in (matrix.tolist() if isinstance(matrix, np.ndarray) else matrix)]
    if not rows:
        raise AgreementInputError("the ratings matrix has no items")
    n_raters = len(rows[0])
    if n_raters < 2:
        raise AgreementInputError("agreement needs at least two raters (columns)")
    codes = np.full((len(rows), n_raters), -1, dtype=int)
    for i, row in enumerate(rows):
        if len(row) != n_raters:
            raise AgreementInputError(f"item {i + 1} has {len(row)} ratings, expected {n_raters} (one per rater)")
        for j, value in enumerate(row):
            if is_missing(value):
                continue
            code = index.get(_key(value))
            if code is None:
                shown = ", ".join(str(c) for c in declared)
                raise AgreementInputError(
                    f"item {i + 1}, rater {j + 1}: {value!r} is not one of the declared categories ({shown})"
                )
            codes[i, j] = code
    codes = codes[(codes >= 0).any(axis=1)]
    if codes.shape[0] == 0:
        raise AgreementInputError("the ratings matrix has no ratings at all")
    return Ratings(codes=codes, categories=declared)


def two_raters(ratings: Ratings, statistic: str) -> tuple[np.ndarray, np.ndarray]:
    """The codes of the items both raters rated, for two-rater statistics."""
    if ratings.n_raters != 2:
        raise AgreementInputError(f"{statistic} compares exactly two raters, got {ratings.n_raters}")
    both = (ratings.codes >= 0).all(axis=1)
    if both.sum() < 2:
        raise AgreementInputError(f"{statistic} needs at least two items rated by both raters")
    return ratings.codes[both, 0], ratings.codes[both, 1]
