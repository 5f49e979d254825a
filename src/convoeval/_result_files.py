"""Result files, at the bottom so that every layer can write and read them: JSONL written as
each test finishes, a JSON array (or a format `report` adds: HTML, JUnit XML, Markdown) written
at the end, chosen by suffix (`RESULT_FORMATS`); and the one reader of results files
(`read_results`: arena, agreement and reports all read through it).

A results file is never written through a link: a suite's hook may write the eval folder, and
convoeval often runs as root. Its folder is the one its path led to when the run started
(`resolve_output`), reached when written without following a link; the file is made there
exclusively, under a name no one can guess, then renamed onto its name: a link (or a hard link)
standing there, yours or planted, is replaced, never followed.
"""

from __future__ import annotations

import errno
import json
import os
import secrets
import shutil
import stat
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import IO, Any

from pydantic import ValidationError

from ._jsonl import JsonlError, loads, read_jsonl, read_problem
from .errors import ConfigError, first_problem
from .results import EvaluationResult

#: Writes results given as JSON texts to an open text file.
FormatWriter = Callable[[IO[str], Iterable[str]], None]


class ResultWriter:
    """Writes results to `path`: `.jsonl` one object a line, flushed per result; any other format
    of `RESULT_FORMATS` (`.json`, `.html`, `.xml`, `.md`) at `close()`."""

    def __init__(self, path: str | Path, *, resolved: Path | None = None):
        """`resolved`: `resolve_output(path)` as the run started, else taken now."""
        self.path = Path(path)
        self.resolved = resolved or resolve_output(self.path)
        self.streaming = check_output_suffix(self.path) == ".jsonl"
        self._buffer: list[str] = []
        self._file: IO[str] | None = None
        if self.streaming:  # an empty file in its place at once, filled as results come
            try:
                new = _NewFile(self.resolved, "w")
                try:
                    new.place()
                finally:
                    new.release()
            except OSError as exc:
                raise write_error(self.path, exc) from None
            self._file = new.file

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
            export_results(self.path, self._buffer, resolved=self.resolved)
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
                why = "a read-only file system" if os.statvfs(folder).f_flag & os.ST_RDONLY else "permission denied"
                return f"cannot create files in {folder} ({why})"
            return None
    return None


def export_results(path: str | Path, results_json: Iterable[str], *, resolved: Path | None = None) -> None:
    """Write results given as JSON texts to `path` in the format its suffix names
    (`RESULT_FORMATS`), one at a time (nothing is held in memory), replacing the file atomically
    (`resolved`: `resolve_output(path)` as the run started, else taken now).

    Raises:
        ConfigError: the suffix names no known format, or the file cannot be written.
    """
    path = Path(path)
    write = RESULT_FORMATS.get(check_output_suffix(path))
    assert write is not None
    try:
        with replacing(resolved or resolve_output(path), "w") as out:
            write(out, results_json)
    except OSError as exc:
        raise write_error(path, exc) from None


def export_jsonl(path: str | Path, results_json: Iterable[bytes], *, resolved: Path | None = None) -> None:
    """`export_results` to a `.jsonl` file of results given as their JSON in UTF-8 bytes (as the
    run store holds them): the same file, without decoding each result and encoding it again
    (for 2,000 results of 13 KB, 50 ms of a run's end)."""
    try:
        with replacing(resolved or resolve_output(path), "wb") as out:
            for data in results_json:
                out.write(data)
                out.write(b"\n")
    except OSError as exc:
        raise write_error(Path(path), exc) from None


def resolve_output(path: str | Path) -> Path:
    """The results file `path` names, absolute, its folder's links resolved now (a run takes this
    when it starts, before any hook runs). A link standing at the file's own name is not: the
    results replace it (an earlier run's hook may have made it)."""
    path = Path(path)
    return Path(os.path.realpath(path.parent)) / path.name


_FOLDER_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_NEW_FILE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def _open_folder(folder: Path) -> int:
    """A descriptor of the absolute `folder`, each folder on the way made if missing and opened
    without following a link (one found there, made since the path was resolved, is an error)."""
    fd = os.open("/", _FOLDER_FLAGS)
    try:
        for part in folder.parts[1:]:
            try:
                inner = os.open(part, _FOLDER_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                with suppress(FileExistsError):
                    os.mkdir(part, dir_fd=fd)
                inner = os.open(part, _FOLDER_FLAGS, dir_fd=fd)
            except NotADirectoryError:
                if not stat.S_ISLNK(os.stat(part, dir_fd=fd, follow_symlinks=False).st_mode):
                    raise
                raise OSError(errno.ELOOP, f"{part} became a symbolic link, not followed") from None
            os.close(fd)
            fd = inner
    except BaseException:
        os.close(fd)
        raise
    return fd


class _NewFile:
    """A file to take the place of the absolute `path`: made in its folder (`_open_folder`)
    exclusively under a name no one can guess (so never through a link), with the mode `open`
    gives a new file (0o666 less the umask); `place` renames it onto `path`, replacing what
    stands there, a link too, without following it; `release` lets the folder go (and removes
    the file, closed, unless it was placed)."""

    def __init__(self, path: Path, mode: str):
        self.name = path.name
        self._folder = _open_folder(path.parent)
        self._temp: str | None = None
        try:
            while self._temp is None:
                name = f".{path.name[:100]}.{secrets.token_hex(8)}.partial"
                with suppress(FileExistsError):
                    fd = os.open(name, _NEW_FILE_FLAGS, 0o666, dir_fd=self._folder)
                    self._temp = name
        except BaseException:
            os.close(self._folder)
            raise
        self.file: IO[Any] = open(fd, mode, encoding=None if "b" in mode else "utf-8")  # noqa: SIM115

    def place(self) -> None:
        assert self._temp is not None
        os.replace(self._temp, self.name, src_dir_fd=self._folder, dst_dir_fd=self._folder)
        self._temp = None

    def release(self) -> None:
        if self._temp is not None:
            with suppress(OSError):
                self.file.close()
            with suppress(OSError):
                os.unlink(self._temp, dir_fd=self._folder)
        os.close(self._folder)


@contextmanager
def replacing(path: Path, mode: str) -> Iterator[IO[Any]]:
    """A new file to write in the block, renamed onto `path` whole when it ends (`_NewFile`); on
    an error or an interrupt it is removed, `path` left as it was."""
    new = _NewFile(path, mode)
    try:
        with new.file:
            yield new.file
        new.place()
    finally:
        new.release()


def place_copy(source: Path, path: Path) -> None:
    """Copy the file `source` onto the absolute `path` as the results file is written (`replacing`):
    its folder reached without following a link made since `path` was resolved, a link at its
    name replaced, never followed."""
    with source.open("rb") as data, replacing(path, "wb") as out:
        shutil.copyfileobj(data, out)


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
            items = loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{path}:{exc.lineno}: invalid JSON: {exc.msg}") from None
        if not isinstance(items, list):
            raise ConfigError(f"{path}: expected a JSON array of results")
    return [(f"{path}: item {i}", item) for i, item in enumerate(items, start=1)]
