"""What no command convoeval sandboxes may see: the files that hold keys or answers.

A model's commands would read its answers or convoeval's keys there, and a suite's own commands
(`verify`, hooks, code-graders in a workspace) run code the model wrote, which would copy them
into the workspace for the model's next turn. So each such file is added here as convoeval
reads or names it (`hide_from_models`): every eval file and file of tests (`spec`), every `.env`
(`cli`) and targets file (`spec`), the run store, the cache and the results file (`engine`);
every bubblewrap sandbox covers them (`_sandbox`), also in worker processes and on Ray nodes
(`hidden_from_models`)."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

_unseen: dict[str, None] = {}


def hide_from_models(paths: Iterable[Path | str | None]) -> None:
    """Keep `paths` out of sight of every sandboxed command for the rest of the process, even
    where a folder shown to it holds them (the eval folder, a command tool's folder)."""
    _unseen.update((os.path.realpath(p), None) for p in paths if p)  # a link loop too (resolve raises)


def hidden_from_models() -> list[str]:
    """The paths `hide_from_models` was given so far (resolved), for worker processes to hide too."""
    return list(_unseen)
