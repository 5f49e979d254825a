"""Result files, at the bottom so that every layer can write and read them: JSONL written as
each test finishes, a JSON array (or a format `report` adds: HTML, JUnit XML, Markdown) written
at the end, chosen by suffix (`RESULT_FORMATS`); and the one reader of results files
(`read_results`: arena, agreement and reports all read through it)."""

from __future__ import annotations

import errno
import json
import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import IO

from pydantic import ValidationError

from ._jsonl import JsonlError, read_jsonl, read_problem
from .errors import ConfigError, first_problem
from .results import EvaluationResult

#: Writes results given as JSON texts to an open text file.
FormatWriter = Callable[[IO[str], Iterable[str]], None]


class ResultWriter:
    """Writes results to `path`: `.jsonl` one object a line, flushed per result; any other format
    of `RESULT_FORMATS` (`.json`, `.html`, `.xml`, `.md`) at `close()`."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.streaming = check_output_suffix(self.path) == ".jsonl"
        self._buffer: list[str] = []
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file: IO[str] | None = self.path.open("w", encoding="utf-8") if self.streaming else None
        except OSError as exc:
            raise write_error(self.path, exc) from None

    def write(self, result: EvaluationResult) -> None:
        self.write_json(result.model_dump_json())

    def write_json(self, data: str) -> None:
        """Write a result given as its JSON text (as `EvaluationResult.model_dump_json()` makes it);
        a full disk is a ConfigError (one line, exit 2), never a traceback."""
        if self._file is not None:
            try:
                self._file.write(data + "\n")
                self._file.flush()
            except OSError as exc:
                self._drop()
                raise write_error(self.path, exc) from None
        else:
            self._buffer.append(data)

    def _drop(self) -> None:
        """Close the file after a failed write, without flushing (which would fail again)."""
        file, self._file = self._file, None
        if file is not None:
            try:
                os.close(file.fileno())
            except OSError:
                pass
            try:
                file.close()
            except (OSError, ValueError):
                pass

    def close(self) -> None:
        if self._file is not None:
            try:
                self._file.close()
            except OSError as exc:
                self._file = None
                raise write_error(self.path, exc) from None
            self._file = None
        elif not self.streaming:
            export_results(self.path, self._buffer)
            self._buffer = []
            self.streaming = True  # written: a second close does nothing

    def __enter__(self) -> ResultWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def output_problem(path: str | Path) -> str | None:
    """Why results cannot be written to `path` (checked before a run starts), or None."""
    path = Path(path)
    try:
        os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return f"{path}: a symbolic link loop"
    if path.exists() and not path.is_file():
        return f"{path} is a folder; give a file name" if path.is_dir() else f"{path} is not a regular file"
    parent = path.parent
    for folder in (parent, *parent.parents):
        if folder.exists():
            if not folder.is_dir():
                return f"{folder} is a file, not a folder"
            if not os.access(folder, os.W_OK | os.X_OK):
                return f"cannot create files in {folder} (permission denied)"
            return None
    return None


def export_results(path: str | Path, results_json: Iterable[str]) -> None:
    """Write results given as JSON texts to `path` in the format its suffix names
    (`RESULT_FORMATS`), one at a time (nothing is held in memory), replacing the file atomically.

    Raises:
        ConfigError: the suffix names no known format.
    """
    path = Path(path)
    write = RESULT_FORMATS.get(check_output_suffix(path))
    assert write is not None
    partial = path.with_name(path.name + ".partial")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with partial.open("w", encoding="utf-8") as out:
            write(out, results_json)
        os.replace(partial, path)
    except OSError as exc:
        partial.unlink(missing_ok=True)
        raise write_error(path, exc) from None


def export_jsonl(path: str | Path, results_json: Iterable[bytes]) -> None:
    """`export_results` to a `.jsonl` file of results given as their JSON in UTF-8 bytes (as the
    run store holds them): the same file, without decoding each result and encoding it again
    (for 2,000 results of 13 KB, 50 ms of a run's end)."""
    path = Path(path)
    partial = path.with_name(path.name + ".partial")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with partial.open("wb") as out:
            for data in results_json:
                out.write(data)
                out.write(b"\n")
        os.replace(partial, path)
    except OSError as exc:
        partial.unlink(missing_ok=True)
        raise write_error(path, exc) from None


def write_error(path: Path, exc: OSError) -> ConfigError:
    """A results file that cannot be written (disk full, permission denied): one line."""
    return ConfigError(f"cannot write results to {path}: {exc.strerror or exc}")


def _write_jsonl(out: IO[str], results_json: Iterable[str]) -> None:
    for data in results_json:
        out.write(data + "\n")


def _write_json_array(out: IO[str], results_json: Iterable[str]) -> None:
    first = True
    out.write("[")
    for data in results_json:
        item = json.dumps(json.loads(data), indent=2).replace("\n", "\n  ")
        out.write(("\n  " if first else ",\n  ") + item)
        first = False
    out.write("\n]\n" if not first else "]\n")


#: Results file formats by suffix (`report` adds `.html`, `.xml` and `.md` when it loads).
RESULT_FORMATS: dict[str, FormatWriter] = {
    ".jsonl": _write_jsonl,
    ".json": _write_json_array,
}


def add_result_format(suffix: str, writer: FormatWriter) -> None:
    """Make `writer` write results files ending in `suffix` (`.html`...)."""
    RESULT_FORMATS[suffix] = writer


def check_output(path: Path) -> None:
    """Refuse a results file with an unknown suffix or in a place it cannot be written.

    Raises:
        ConfigError: `cannot write results to PATH: why`, or the suffix names no format.
    """
    if problem := output_problem(path):
        raise ConfigError(f"cannot write results to {path}: {problem}")
    check_output_suffix(path)


def check_output_suffix(path: str | Path) -> str:
    """The (lower-case) suffix of a results file, when a format is known for it.

    Raises:
        ConfigError: `path: unknown results format ...` naming the formats there are.
    """
    suffix = Path(path).suffix.lower()
    if suffix not in RESULT_FORMATS:
        known = ", ".join(RESULT_FORMATS)
        raise ConfigError(f"{path}: unknown results format {suffix or '(no suffix)'!r}; name a file ending in {known}")
    return suffix


def read_results(paths: str | Path | Sequence[str | Path], *, allow_empty: bool = False) -> list[EvaluationResult]:
    """EvaluationResults from `.jsonl` (one a line) or `.json` (an array) files, in order: the
    one reader of results files (arena, agreement, reports).

    Raises:
        ConfigError: `file:line: ...` for a missing or empty file or an item that is not a result.
    """
    if isinstance(paths, (str, Path)):
        paths = [paths]
    loaded: list[EvaluationResult] = []
    for path in map(Path, paths):
        items = _result_items(path)
        if not items and not allow_empty:
            raise ConfigError(f"{path}: no results in the file")
        for where, item in items:
            try:
                result = EvaluationResult.model_validate(item)
            except ValidationError as exc:
                raise ConfigError(
                    f"{where}: not a convoeval result ({first_problem(exc, '(result)')}); "
                    "give results files written by `convoeval run -o`"
                ) from None
            if problem := _score_problem(result):
                raise ConfigError(f"{where}: {problem}; give results files written by `convoeval run -o`")
            loaded.append(result)
    return loaded


def _score_problem(result: EvaluationResult) -> str | None:
    """`field: what is wrong` for a score of the result (its own, its trials', its turns') that
    is not from 0 to 1 (convoeval writes none; NaN or 1e308 would break the statistics)."""
    scored: list[tuple[str, float | None]] = [("score", result.score)]
    scored += [(f"scores[{i}].score", entry.score) for i, entry in enumerate(result.scores)]
    scored += [(f"trials[{i}].score", trial.score) for i, trial in enumerate(result.trials)]
    for field, score in scored:
        if score is not None and not 0 <= score <= 1:
            return f"{field}: must be from 0 to 1 (or null), got {score!r}"
    return None


def _result_items(path: Path) -> list[tuple[str, object]]:
    """(`file:line` or `file: item N`, parsed JSON) of each result in a file."""
    if path.suffix != ".json":
        try:
            return [(f"{path}:{number}", value) for number, value in read_jsonl(path)]
        except JsonlError as exc:
            raise ConfigError(str(exc)) from None
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(read_problem(path, exc)) from None
    if path.suffix == ".json":
        try:
            items = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{path}:{exc.lineno}: invalid JSON: {exc.msg}") from None
        if not isinstance(items, list):
            raise ConfigError(f"{path}: expected a JSON array of results")
    return [(f"{path}: item {i}", item) for i, item in enumerate(items, start=1)]
