"""Reading human/judge labels from CSV and parsing a declared category set."""

from __future__ import annotations

import csv
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from .._jsonl import read_problem
from ._data import MAX_CATEGORIES, AgreementInputError, Category, check_categories

MISSING_CELLS = frozenset({"", "na", "n/a", "nan", "null", "none"})
"""Cells (case-insensitive, stripped) that mean "no rating"."""

ID_COLUMNS = frozenset({"item", "id"})
"""Columns that name the item and are never treated as raters."""

_RANGE = re.compile(r"^\s*(-?\d+)\s*(?:-|\.\.)\s*(-?\d+)\s*$")


class RatingsFileError(AgreementInputError):
    """A labels file cannot be read; the message starts with file:line."""


@dataclass(frozen=True)
class RatingsTable:
    """Labels read from a CSV file.

    Attributes:
        raters: the rater columns used, in order.
        items: the item id of each row (its line number when there is no id column).
        matrix: items x raters, each cell a declared category or None (missing).
    """

    raters: list[str]
    items: list[str]
    matrix: list[list[Category | None]]


def parse_categories(text: str) -> list[Category]:
    """Parse a declared category set: a range "1-5" (or "1..5") or a list "a,b,c".

    List entries that look like integers become ints, like decimals floats, else labels.

    Example:
        >>> parse_categories("1-5")
        [1, 2, 3, 4, 5]
        >>> parse_categories("bad, ok, good")
        ['bad', 'ok', 'good']
    """
    match = _RANGE.match(text)
    if match:
        low, high = int(match.group(1)), int(match.group(2))
        if high <= low:
            raise AgreementInputError(f"category range {text!r} must go from low to high")
        if high - low >= MAX_CATEGORIES:  # before a list of a billion is made
            raise AgreementInputError(f"category range {text!r}: at most {MAX_CATEGORIES} categories")
        return list(range(low, high + 1))
    parts = [part.strip() for part in text.split(",")]
    if any(not part for part in parts):
        raise AgreementInputError(f"empty category in {text!r}; use e.g. 1-5 or a,b,c")
    return list(check_categories([_number_or_label(part) for part in parts]))


def _number_or_label(text: str) -> Category:
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def _cell_to_category(cell: str, categories: Sequence[Category]) -> Category | None:
    """The declared category a cell names, or None when it names none."""
    for category in categories:
        if cell == str(category):
            return category
    try:
        number = float(cell)
    except ValueError:
        return None
    for category in categories:
        if isinstance(category, (int, float)) and float(category) == number:
            return category
    return None


def read_ratings_csv(
    path: str | Path, categories: Sequence[Category], columns: Sequence[str] | None = None
) -> RatingsTable:
    """Read one row per item and one column per rater, checking every cell.

    Args:
        path: a CSV file with a header row; an `item` or `id` column is kept as the
            item name, never as a rater.
        categories: the declared categories; any other value is an error.
        columns: the rater columns to compare (two or more); default all others.

    Raises:
        RatingsFileError: with `file:line:` first, for any unreadable file, header or cell.

    Example:
        >>> table = read_ratings_csv("labels.csv", [1, 2, 3], ["human", "judge"])  # doctest: +SKIP
    """
    path = Path(path)
    declared = check_categories(categories)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as error:
        raise RatingsFileError(read_problem(path, error)) from None
    reader = csv.reader(text.splitlines())
    try:
        header = [name.strip() for name in next(reader)]
    except StopIteration:
        raise RatingsFileError(f"{path}:1: the file is empty; expected a header row") from None
    except csv.Error as error:
        raise RatingsFileError(f"{path}:1: {error}") from None
    duplicates = sorted({name for name in header if header.count(name) > 1})
    if duplicates or any(not name for name in header):
        problem = f"duplicate columns {duplicates}" if duplicates else "a column without a name"
        raise RatingsFileError(f"{path}:1: header has {problem}")
    id_column = next((i for i, name in enumerate(header) if name.lower() in ID_COLUMNS), None)
    available = [name for i, name in enumerate(header) if i != id_column]
    chosen = list(columns) if columns else available
    unknown = [name for name in chosen if name not in available]
    if unknown:
        raise RatingsFileError(
            f"{path}:1: no rater column {', '.join(map(repr, unknown))}; the rater columns are {', '.join(available)}"
        )
    if len(chosen) < 2 or len(set(chosen)) != len(chosen):
        raise RatingsFileError(f"{path}:1: pick two or more different rater columns, got {chosen}")
    positions = [header.index(name) for name in chosen]
    shown = ", ".join(str(c) for c in declared)
    items: list[str] = []
    matrix: list[list[Category | None]] = []
    try:
        for row in reader:
            line = reader.line_num
            if not any(cell.strip() for cell in row):
                continue
            if len(row) != len(header):
                raise RatingsFileError(f"{path}:{line}: {len(row)} fields, expected {len(header)} like the header")
            values: list[Category | None] = []
            for name, position in zip(chosen, positions, strict=True):
                cell = row[position].strip()
                if cell.lower() in MISSING_CELLS:
                    values.append(None)
                    continue
                category = _cell_to_category(cell, declared)
                if category is None:
                    raise RatingsFileError(
                        f"{path}:{line}: column {name}: {cell!r} is not one of the categories {shown}"
                    )
                values.append(category)
            items.append(row[id_column].strip() if id_column is not None else str(line))
            matrix.append(values)
    except csv.Error as error:
        raise RatingsFileError(f"{path}:{reader.line_num}: {error}") from None
    if not matrix:
        raise RatingsFileError(f"{path}: no items below the header")
    return RatingsTable(raters=chosen, items=items, matrix=matrix)
