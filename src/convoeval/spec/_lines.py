"""Where each value of an eval file came from: data path -> (file, line)."""

from __future__ import annotations

from ._errors import Problem

Key = str | int | float | bool
"""A mapping key as read (other keys become text), or a list index."""
DataPath = tuple[Key, ...]
"""Where a value is: the keys and indexes from the root, e.g. `("tests", 0, "turns")`."""


class LineMap:
    """Data path -> (file, line), for `file:line` problems.

    A loader keeps one small map per test (the lines of that test only) whose `parent` holds
    the lines of the rest of the file, so a big file never keeps the line of every value.
    Lines of the map's own `file` are stored as bare numbers.
    """

    def __init__(self, file: str | None = None, parent: LineMap | None = None) -> None:
        self.file = file
        self.parent = parent
        self._lines: dict[DataPath, int | tuple[str, int]] = {}

    def add(self, path: DataPath, file: str, line: int) -> None:
        if path not in self._lines:
            self._lines[path] = line if file == self.file else (file, line)

    def forget(self, path: DataPath) -> None:
        self._lines.pop(path, None)

    def get(self, path: DataPath) -> tuple[str, int] | None:
        """The file and line recorded for exactly `path` here (not in the parent), or None."""
        found = self._lines.get(path)
        if found is None:
            return None
        return (self.file or "?", found) if isinstance(found, int) else found

    def copy(self) -> LineMap:
        """A map of the same lines (and parent), to change apart."""
        found = LineMap(self.file, self.parent)
        found._lines = dict(self._lines)
        return found

    def renumber(self, prefix: DataPath, moves: dict[int, int]) -> None:
        """Items of the list at `prefix` moved (old index -> new); items not in `moves` are gone."""
        n = len(prefix)
        lines: dict[DataPath, int | tuple[str, int]] = {}
        for path, where in self._lines.items():
            index = path[n] if len(path) > n and path[:n] == prefix else None
            if isinstance(index, int):
                if index not in moves:
                    continue
                path = (*prefix, moves[index], *path[n + 1 :])
            lines[path] = where
        self._lines = lines

    def pop_items(self, prefix: DataPath) -> dict[int, LineMap]:
        """Move the lines of each item of the list at `prefix` to a map of its own (whose
        parent is this map): item index -> its map."""
        n = len(prefix)
        items: dict[int, LineMap] = {}
        for path in [p for p in self._lines if len(p) > n and p[:n] == prefix and isinstance(p[n], int)]:
            index = path[n]
            assert isinstance(index, int)
            items.setdefault(index, LineMap(self.file, self))._lines[path] = self._lines.pop(path)
        return items

    def copy_under(self, other: LineMap, prefix: DataPath, keys: set[Key]) -> None:
        """Add `other`'s lines of the entries `keys` of the mapping at `prefix`."""
        n = len(prefix)
        for path in other._lines:
            if len(path) > n and path[n] in keys and path[:n] == prefix:
                where = other.get(path)
                if where is not None:
                    self.add(path, *where)

    def locate(self, path: DataPath) -> tuple[str, int]:
        """The file and line of `path`, or of its closest recorded ancestor."""
        for end in range(len(path), -1, -1):
            found = self._find(path[:end])
            if found:
                return found
        return ("?", 1)

    def _find(self, path: DataPath) -> tuple[str, int] | None:
        here: LineMap | None = self
        while here is not None:
            found = here.get(path)
            if found:
                return found
            here = here.parent
        return None

    def problem(self, path: DataPath, field: str, message: str) -> Problem:
        file, line = self.locate(path)
        return Problem(file, line, field, message)
