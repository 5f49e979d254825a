"""Which eval files a list of paths names (folders hold eval files), and loading them all."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ._errors import Problem, SpecError
from ._loader import load_suite, validate_paths
from ._models import Suite

#: Files in a folder that are never eval files (the targets file sits next to suites).
NOT_EVAL_FILES = frozenset({"targets.yaml", "targets.yml"})

PathsLike = str | Path | Sequence[str | Path]


def eval_files(paths: PathsLike) -> tuple[list[Path], list[Problem]]:
    """The eval files named by `paths`: files as given; a folder stands for the `*.eval.yaml`
    (`*.eval.yml`) files under it, or, when it has none, the `*.yaml`/`*.yml` files directly in
    it (never `targets.yaml`). A folder without any is a problem, not an empty run."""
    if isinstance(paths, (str, Path)):
        paths = [paths]
    files: list[Path] = []
    problems: list[Problem] = []
    for path in map(Path, paths):
        if not path.is_dir():
            files.append(path)
            continue
        found = sorted(p for pattern in ("*.eval.yaml", "*.eval.yml") for p in path.rglob(pattern) if p.is_file())
        if not found:
            found = sorted(
                p
                for pattern in ("*.yaml", "*.yml")
                for p in path.glob(pattern)
                if p.is_file() and p.name not in NOT_EVAL_FILES
            )
        if not found:
            problems.append(Problem(str(path), 1, "(folder)", "no eval files (*.eval.yaml or *.yaml) in this folder"))
        files.extend(found)
    return list(dict.fromkeys(files)), problems


def validate_eval_paths(paths: PathsLike, targets_file: str | Path | None = None) -> tuple[list[Path], list[Problem]]:
    """The eval files named by `paths` (folders expanded) and every problem of them (see
    `validate_paths`)."""
    files, problems = eval_files(paths)
    return files, problems + validate_paths(list(files), targets_file)


def load_suites(paths: PathsLike) -> list[Suite]:
    """Load eval files (folders expanded); raises SpecError with the problems of all of them."""
    files, problems = eval_files(paths)
    suites: list[Suite] = []
    for path in files:
        try:
            suites.append(load_suite(path))
        except SpecError as exc:
            problems.extend(exc.problems)
    if problems:
        raise SpecError(problems)
    return suites
