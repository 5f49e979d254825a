"""MkDocs hook: the reference pages are generated from the code at build time (gen_reference.py)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

sys.path.insert(0, str(Path(__file__).resolve().parent))

import gen_reference  # noqa: E402 - found through the path set just above


def on_files(files: Files, config: Any) -> Files:
    for path, text in gen_reference.pages().items():
        files.append(File.generated(config, path, content=text))
    return files
