"""Result files: JSONL written as each test finishes, or a JSON array at the end."""

from __future__ import annotations

import json
from pathlib import Path
from typing import IO

from ..results import EvaluationResult


class ResultWriter:
    """Writes results to `path`: `.jsonl` one object a line, flushed per result; `.json` an array."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.as_array = self.path.suffix == ".json"
        self._buffer: list[dict] = []
        self._file: IO[str] | None = None if self.as_array else self.path.open("w", encoding="utf-8")

    def write(self, result: EvaluationResult) -> None:
        if self._file is not None:
            self._file.write(result.model_dump_json() + "\n")
            self._file.flush()
        else:
            self._buffer.append(result.model_dump(mode="json"))

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
        elif self.as_array:
            self.path.write_text(json.dumps(self._buffer, indent=2) + "\n", encoding="utf-8")

    def __enter__(self) -> ResultWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_results(path: str | Path) -> list[EvaluationResult]:
    """Results from a `.jsonl` or `.json` file written by ResultWriter."""
    text = Path(path).read_text(encoding="utf-8")
    if Path(path).suffix == ".json":
        return [EvaluationResult.model_validate(item) for item in json.loads(text)]
    return [EvaluationResult.model_validate_json(line) for line in text.splitlines() if line.strip()]
