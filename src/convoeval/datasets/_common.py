"""What every importer shares: reading JSON Lines with line numbers, writing a suite as YAML."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, cast

import yaml

from .. import _jsonl as jsonl
from .._jsonl import JsonlError
from ..errors import DatasetError


class DatasetWarning(UserWarning):
    """Something an importer could not carry over (issued with `warnings.warn`; the CLI prints it)."""


def read_jsonl(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """`(line number, object)` of each non-blank line (the project's one JSONL reader).

    Raises:
        DatasetError: the file is missing, or a line is not a JSON object.
    """
    if not path.is_file():
        raise DatasetError(f"{path}:1: no such file")
    try:
        return [(number, cast(dict[str, Any], value)) for number, value in jsonl.read_jsonl(path, objects=True)]
    except JsonlError as exc:
        raise DatasetError(str(exc)) from None


def read_json(path: Path) -> Any:
    """A whole JSON document (raises DatasetError naming the file and line)."""
    if not path.is_file():
        raise DatasetError(f"{path}:1: no such file")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise DatasetError(f"{path}:{exc.lineno}: not JSON ({exc.msg})") from None


class _Dumper(yaml.SafeDumper):
    """Multi-line strings as `|` blocks, so prompts and dialogues stay readable."""


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    style = "|" if "\n" in value and not any(c in value for c in "\r\t") and value == value.rstrip(" ") else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


def suite_yaml(suite: dict[str, Any]) -> str:
    """A suite dict as eval-file YAML (keys in the order given)."""
    return yaml.dump(suite, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100)


def write_suite(suite: dict[str, Any], path: Path, header: str = "") -> Path:
    """Write a suite as YAML, with `header` as leading comment lines."""
    comment = "".join(f"# {line}\n".replace("# \n", "#\n") for line in header.splitlines())
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(comment + suite_yaml(suite), encoding="utf-8")
    return path
