"""Removing a folder that a sandboxed command wrote, however it is nested."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path


def remove_tree(path: Path | str) -> None:
    """Remove the folder `path` with all it holds, links removed, never followed; errors are
    ignored. `shutil.rmtree` recurses once per level, and a model's `mkdir` of 1,500 nested
    folders raised RecursionError through it (the workspace stayed, and the sweep of stale ones
    failed in every later run): `rm -rf` finishes what it left, at any depth."""
    try:
        shutil.rmtree(path, ignore_errors=True)
    except RecursionError:
        pass
    if os.path.lexists(path):
        subprocess.run(["rm", "-rf", "--", os.fspath(path)], capture_output=True, check=False)
