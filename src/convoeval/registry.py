"""One registry for everything a user can add: assertion types, providers, simulators, environments.

Built-ins and plugins take the same path: `register(kind, name, obj)`. A taken name is refused
unless `replace=True`, so a plugin cannot silently shadow `contains` or `openai`. Built-ins are
declared with `register_lazy(kind, name, module)`: their module is imported (and registers
them) when a name is first looked up, or when the names of a kind are listed, so a run loads
only the assertion types and providers it uses.

Plugins are found three ways, all ending in an import that calls `register` (usually through a
decorator such as `@assertion_type`, `@grader` or `@provider`):
- installed packages declaring an entry point in the group `convoeval` (loaded on the first
  lookup miss, or when the names of a kind are listed);
- a suite's `plugins: [module | path.py]` key;
- `convoeval run/validate --plugin MODULE`.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType
from typing import Any, Literal, TypeVar

from .errors import RegistryError

Kind = Literal["assertion", "provider", "simulator", "environment"]
KINDS: tuple[Kind, ...] = ("assertion", "provider", "simulator", "environment")
ENTRY_POINT_GROUP = "convoeval"

T = TypeVar("T")

_entries: dict[str, dict[str, Any]] = {kind: {} for kind in KINDS}
_lazy: dict[str, dict[str, str]] = {kind: {} for kind in KINDS}  # name -> module that registers it
_entry_points_loaded = False
_modules: dict[int, ModuleType | None] = {}  # id of a registered object -> its module when it registered


def _table(kind: str) -> dict[str, Any]:
    if kind not in _entries:
        raise RegistryError(f"unknown registry kind {kind!r} (known: {', '.join(KINDS)})")
    return _entries[kind]


def register(kind: Kind, name: str, obj: T, *, replace: bool = False) -> T:
    """Register `obj` as the `kind` called `name` and return it.

    Registering the same object under the same name again is a no-op. A module imported anew (a
    test harness that restores `sys.modules` after a run) registers its definitions again: the
    new objects replace those of the module object no longer imported.

    Raises:
        RegistryError: `name` is taken by another object (pass `replace=True` to override).
    """
    table = _table(kind)
    pending = _lazy[kind].get(name)
    if pending is not None and pending != getattr(obj, "__module__", None):
        _load_lazy(kind, name)  # the built-in holds the name: another object is refused below
    _lazy[kind].pop(name, None)
    current = table.get(name)
    if current is not None and current is not obj and not replace and not _imported_anew(current, obj):
        raise RegistryError(
            f"{kind} {name!r} is already registered (by {_describe(current)}); pick another name or pass replace=True"
        )
    table[name] = obj
    _modules[id(obj)] = sys.modules.get(getattr(obj, "__module__", "") or "")
    return obj


def _imported_anew(current: object, obj: object) -> bool:
    """`obj` is `current`'s definition run again by another import of its module."""
    module = sys.modules.get(getattr(obj, "__module__", "") or "")
    return _describe(current) == _describe(obj) and module is not _modules.get(id(current), module)


def register_lazy(kind: Kind, name: str, module: str) -> None:
    """Declare that importing `module` registers the `kind` called `name` (a built-in): the
    module is imported when `name` is first looked up or the names of `kind` are listed."""
    if name not in _table(kind):
        _lazy[kind][name] = module


def unregister(kind: Kind, name: str) -> None:
    """Forget a registered name (no error when it is not registered)."""
    _modules.pop(id(_table(kind).pop(name, None)), None)
    _lazy[kind].pop(name, None)


def lookup(kind: Kind, name: str) -> Any | None:
    """The object registered as `name`, or None; a miss first loads the entry-point plugins."""
    table = _table(kind)
    if name not in table and name in _lazy[kind]:
        _load_lazy(kind, name)
    if name not in table:
        load_entry_points()
    return table.get(name)


def names(kind: Kind) -> list[str]:
    """Every registered name of `kind`, sorted (built-ins and entry-point plugins included)."""
    return sorted(entries(kind))


def entries(kind: Kind) -> dict[str, Any]:
    """A copy of `name -> object` for `kind` (built-ins and entry-point plugins included)."""
    table = _table(kind)
    for name in list(_lazy[kind]):
        if name in _lazy[kind]:  # not registered yet by a module loaded for another name
            _load_lazy(kind, name)
    load_entry_points()
    return dict(table)


def registered_as(obj: object) -> tuple[Kind, str] | None:
    """The kind and name `obj` is registered as, or None (without loading anything)."""
    for kind in KINDS:
        for name, registered in _entries[kind].items():
            if registered is obj:
                return kind, name
    return None


def plugin_modules() -> list[tuple[str, str | None]]:
    """The modules other than convoeval's that registered something, as (name, file): what a
    worker process (`--processes`) imports to know the same names."""
    found = {getattr(obj, "__module__", "") or "" for table in _entries.values() for obj in table.values()}
    modules = [(name, getattr(sys.modules.get(name), "__file__", None)) for name in sorted(found)]
    return [(name, file) for name, file in modules if name and name.split(".")[0] != "convoeval"]


def _load_lazy(kind: Kind, name: str) -> None:
    """Import the module declared for the built-in `name`. The declaration is dropped only once
    the import succeeded, so a module that fails to import fails every lookup the same way."""
    importlib.import_module(_lazy[kind][name])
    _lazy[kind].pop(name, None)  # the module registered it (or does not define it: not looked for again)


def load_entry_points() -> None:
    """Import every module of the `convoeval` entry-point group, once per process.

    Raises:
        RegistryError: a plugin failed to import (the message names it and the cause).
    """
    global _entry_points_loaded
    if _entry_points_loaded:
        return
    _entry_points_loaded = True
    from importlib.metadata import entry_points  # 20 ms to import: only when plugins are looked for

    for point in entry_points(group=ENTRY_POINT_GROUP):
        try:
            point.load()
        except RegistryError:
            raise
        except Exception as exc:
            raise RegistryError(
                f"plugin entry point {point.name!r} ({point.value}) failed to load: {type(exc).__name__}: {exc}"
            ) from exc


def load_plugin(spec: str, base_dir: Path | None = None) -> ModuleType:
    """Import a plugin: a module name (`my_graders`, found on the Python path, else as
    `my_graders.py` in `base_dir`) or a Python file (`plugins/graders.py`, relative to `base_dir`).
    Loading the same plugin twice imports it once.

    Raises:
        RegistryError: the module or file is missing, or importing it failed.
    """
    spec = spec.strip()
    if not spec:
        raise RegistryError("plugin name is empty")
    base = base_dir if base_dir is not None else Path.cwd()
    if spec.endswith(".py") or "/" in spec or "\\" in spec:
        return _load_file(base / spec)
    try:
        return importlib.import_module(spec)
    except ModuleNotFoundError as exc:
        if exc.name and spec.startswith(exc.name):
            local = base / (spec.replace(".", "/") + ".py")
            if os.path.isfile(local):  # False for a name too long, where Path.is_file raises
                return _load_file(local)
            raise RegistryError(f"plugin module {spec!r} not found on the Python path, nor as {local}") from None
        raise RegistryError(f"plugin {spec!r} failed to import: {type(exc).__name__}: {exc}") from exc
    except RegistryError:
        raise
    except (Exception, SystemExit) as exc:
        raise RegistryError(f"plugin {spec!r} failed to import: {_failure(exc)}") from exc


def _load_file(path: Path) -> ModuleType:
    path = path.resolve()
    if not path.is_file():
        raise RegistryError(f"plugin file {str(path)!r} not found")
    digest = hashlib.sha256(str(path).encode()).hexdigest()[:12]
    module_name = f"convoeval_plugin_{path.stem.replace('-', '_')}_{digest}"
    if module_name in sys.modules:
        return sys.modules[module_name]
    module_spec = importlib.util.spec_from_file_location(module_name, path)
    if module_spec is None or module_spec.loader is None:
        raise RegistryError(f"plugin file {str(path)!r} cannot be imported as Python")
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[module_name] = module
    try:
        module_spec.loader.exec_module(module)
    except BaseException as exc:
        del sys.modules[module_name]
        if isinstance(exc, RegistryError):
            raise
        if not isinstance(exc, Exception | SystemExit):  # Ctrl-C stops the command
            raise
        raise RegistryError(f"plugin file {str(path)!r} failed to import: {_failure(exc)}") from exc
    return module


def _failure(exc: BaseException) -> str:
    """What went wrong importing a plugin; `sys.exit()` in it is a failure too, not the command's
    exit (a `validate` that exited 0 would pass a CI gate having checked nothing)."""
    if isinstance(exc, SystemExit):
        return f"it called sys.exit({exc.code!r})"
    return f"{type(exc).__name__}: {exc}"


def _describe(obj: object) -> str:
    module = getattr(obj, "__module__", None) or type(obj).__module__
    qualname = getattr(obj, "__qualname__", None) or type(obj).__qualname__
    return f"{module}.{qualname}"
