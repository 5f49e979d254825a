"""Result files: JSONL written as each test finishes; a JSON array, an HTML report, JUnit XML or
a Markdown summary written at the end (the format chosen by suffix, `RESULT_FORMATS`); and the
one reader of results files (arena, agreement and reports all read through `read_results`)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import IO, Any

from pydantic import ValidationError

from ..errors import ConfigError
from ..results import EvaluationResult


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


def _parsed(results_json: Iterable[str]) -> list[EvaluationResult]:
    return [EvaluationResult.model_validate_json(data) for data in results_json]


# The report writers load when a results file asks for them (tests/test_layers.py, LAZY).
def _write_html(out: IO[str], results_json: Iterable[str]) -> None:
    from ._html import render_report

    out.write(render_report(_parsed(results_json)))


def _write_junit(out: IO[str], results_json: Iterable[str]) -> None:
    from ._junit import junit_xml

    out.write(junit_xml(_parsed(results_json)))


def _write_markdown(out: IO[str], results_json: Iterable[str]) -> None:
    from ._markdown import markdown_summary

    out.write(markdown_summary(_parsed(results_json)))


#: Results file formats by suffix: each writes results given as JSON texts to an open text file.
RESULT_FORMATS: dict[str, Callable[[IO[str], Iterable[str]], None]] = {
    ".jsonl": _write_jsonl,
    ".json": _write_json_array,
    ".html": _write_html,
    ".xml": _write_junit,
    ".md": _write_markdown,
}


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
                loaded.append(EvaluationResult.model_validate(item))
            except ValidationError as exc:
                first = exc.errors(include_url=False)[0]
                field = ".".join(str(p) for p in first["loc"]) or "(result)"
                raise ConfigError(
                    f"{where}: not a convoeval result ({field}: {first['msg']}); "
                    "give results files written by `convoeval run -o`"
                ) from None
    return loaded


def _result_items(path: Path) -> list[tuple[str, Any]]:
    """(`file:line` or `file: item N`, parsed JSON) of each result in a file."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{path}: file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read: {exc}") from None
    if path.suffix == ".json":
        try:
            items = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{path}:{exc.lineno}: invalid JSON: {exc.msg}") from None
        if not isinstance(items, list):
            raise ConfigError(f"{path}: expected a JSON array of results")
        return [(f"{path}: item {i}", item) for i, item in enumerate(items, start=1)]
    lines: list[tuple[str, Any]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            lines.append((f"{path}:{number}", json.loads(line)))
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{path}:{number}: invalid JSON: {exc.msg}") from None
    return lines
