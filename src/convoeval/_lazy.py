"""Package attributes imported when first used (PEP 562), so a command loads only what it uses.

A package lists what it exports lazily and, for type checkers, imports the same names under
`TYPE_CHECKING`:

    if TYPE_CHECKING:
        from ._html import write_html
    __getattr__ = lazy_attributes(__name__, {"._html": ("write_html",)})
"""

from __future__ import annotations

import gc
import importlib
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any


def lazy_attributes(package: str, modules: Mapping[str, Iterable[str]]) -> Callable[[str], Any]:
    """A module `__getattr__` for `package`: `modules` maps each of its private modules
    (`"._html"`) to the names it exports, imported on first use and then kept as attributes."""
    if any(not module.startswith(".") or module.startswith("..") for module in modules):
        raise ValueError(f"{package}: lazy attributes come from the package's own modules ('._name')")
    where = {name: module for module, names in modules.items() for name in names}

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        with collector_paused():
            value = getattr(importlib.import_module(module, package), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__


@contextmanager
def collector_paused() -> Iterator[None]:
    """The cyclic garbage collector paused while modules are imported, then as it was.

    Importing makes objects that live as long as the process (modules, classes, functions,
    models): collecting while they are made walks them again and again, and walking them all
    at once when collecting resumes costs as much (together 2.4% of a one-test `convoeval
    run`). So what exists then is put straight into the oldest generation (a freeze and an
    unfreeze: no object is walked), which the collector looks at only in a full collection,
    unless objects were frozen before (someone else's choice, left as it is).
    """
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if not objects_frozen():
            gc.freeze()
            gc.unfreeze()
        if collecting:
            gc.enable()


_frozen_for_good = False


def freeze_for_good() -> None:
    """Freeze what exists now out of the collector's sight for the rest of the process (a program
    that keeps its modules and classes to the end: the `convoeval` command), and remember it."""
    global _frozen_for_good
    gc.freeze()
    _frozen_for_good = True


def objects_frozen() -> bool:
    """Whether objects are frozen: known without counting them after `freeze_for_good`
    (`gc.get_freeze_count` walks every frozen object: 3-7 ms once the command is loaded)."""
    return _frozen_for_good or gc.get_freeze_count() > 0


def frozen_for_good() -> bool:
    """Whether the process froze its objects for good (`freeze_for_good`): the `convoeval`
    command, which ends soon after its run."""
    return _frozen_for_good
