"""The `convoeval` command line: thin shells over the Python API.

Each command lives in a module that registers it on the typer app when imported. `main` imports
only the module of the command a command line names (all of them for `--help` or a name it does
not know), so `convoeval run` does not load the arena, the viewer or the importers; `app`, as an
attribute of this package, is the app with every command.
"""

from __future__ import annotations

import atexit
import gc
import importlib
import os
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from .._lazy import collector_paused, freeze_for_good
from .._secrets import keep_environment_private
from ._pipe import survive_closed_stdout

if TYPE_CHECKING:
    import typer

    app: typer.Typer

#: The module that defines each command, in the order `convoeval --help` lists them.
COMMANDS = {
    "agreement": "_agreement",
    "arena": "_arena",
    "report": "_reports",
    "compare": "_reports",
    "view": "_reports",
    "init": "_init",
    "validate": "_core",
    "schema": "_core",
    "run": "_core",
    "import": "_datasets",
    "grade": "_datasets",
    "runs": "_housekeeping",
    "cache": "_housekeeping",
}


def command_name(argv: Sequence[str] | None) -> str | None:
    """The command `argv` names: its first word that is not an option."""
    return next((arg for arg in argv or () if not arg.startswith("-")), None)


def import_quietly(module: str) -> None:
    """Import `module` ahead of its use; a failure is left for the import that needs it to report."""
    try:
        importlib.import_module(module)
    except Exception:  # noqa: BLE001, S110 - reported by the import that needs the module
        pass


def the_app() -> typer.Typer:
    """The typer app, before its commands are registered (`load_commands`)."""
    with collector_paused():
        from ._app import app

    return app


def load_commands(argv: Sequence[str] | None = None) -> None:
    """Register the command `argv` names (its first word that is not an option), or every
    command when it names none that exists."""
    name = command_name(argv)
    if name is None and "--version" in (argv or ()):
        return  # answered by the app itself
    modules = [COMMANDS[name]] if name in COMMANDS else dict.fromkeys(COMMANDS.values())
    for module in modules:
        importlib.import_module(f"{__name__}.{module}")


#: Options whose value may be left out: `--rerun-failed` alone means `--rerun-failed last`.
OPTIONAL_VALUES = {"--rerun-failed": "last", "--resume": "last"}


def with_optional_values(argv: Sequence[str]) -> list[str]:
    """`argv` with the default value inserted after an option of `OPTIONAL_VALUES` written bare
    (last on the line, or followed by another option). typer has no optional option values."""
    out: list[str] = []
    for index, arg in enumerate(argv):
        out.append(arg)
        following = argv[index + 1] if index + 1 < len(argv) else None
        if arg in OPTIONAL_VALUES and (following is None or following.startswith("-")):
            out.append(OPTIONAL_VALUES[arg])
    return out


def load_env_files(argv: Sequence[str]) -> None:
    """Load the `.env` of the working directory, then of each folder holding a file the command
    line names, before the options are read: so `CONVOEVAL_*` settings there apply as well as
    provider keys (variables already set win; the first file to set one wins)."""
    from ._app import load_env_file  # loaded with the app (`the_app`)

    load_env_file(Path.cwd())
    for arg in argv:
        if not arg.startswith("-") and (path := Path(arg)).suffix in (".yaml", ".yml", ".jsonl", ".json"):
            if os.path.isfile(path):  # False for a name too long: the command says what is wrong with it
                load_env_file(path.resolve().parent)


def main() -> None:
    """Entry point of the `convoeval` script. An error the command did not report itself (a
    broken installed plugin, say) is still one line and exit code 2, never a traceback.

    The objects that exist once the command is loaded (modules, classes, models) live as long
    as the process: they are frozen out of the garbage collector's sight, which spares the
    collections during the run and at exit from walking them again (58 ms of every exit).

    Ctrl-C while the command loads exits 130 without a traceback, as typer does once the command
    runs (`convoeval run` also says how to resume: `_interrupt`); SIGTERM exits 143 the same way.
    """
    try:
        _main(with_optional_values(sys.argv[1:]))
    except KeyboardInterrupt:
        from ._stop import exit_code

        exit_now(exit_code())


def _main(argv: list[str]) -> None:
    survive_closed_stdout()
    if command_name(argv) == "run":
        pause_collector_for_run()
        # Its HTTP client loads on another thread while convoeval loads and the run reads its
        # suites: most of aiohttp's import is loading the system's certificates, which runs
        # without the GIL. So nothing of convoeval's own is imported before this point.
        threading.Thread(target=import_quietly, args=("aiohttp",), daemon=True).start()
    keep_environment_private()  # the commands it starts cannot read its keys in /proc/<pid>/environ
    from ..errors import ConvoevalError  # after the thread started (errors loads pydantic)
    from ._stop import stop_on_sigterm, stopped_code

    stop_on_sigterm()

    app = the_app()
    load_env_files(argv)
    with collector_paused():
        load_commands(argv)
    freeze_for_good()
    try:
        app(args=argv, prog_name="convoeval")
    except ConvoevalError as exc:
        from ._fail import fail

        exit_now(fail(str(exc)).exit_code)
    except SystemExit as done:  # every command ends here (click exits with the command's code)
        exit_now(stopped_code(done.code))
    finally:
        freeze_for_good()


_collector_paused_for_run = False


def pause_collector_for_run() -> None:
    """Pause the cyclic garbage collector until the run's calls start (`resume_collector`).

    Until then a run makes what lasts as long as it: the HTTP client's modules (loading on
    another thread), the suites, the plans, the targets; each collection walks all of it again
    (16-23 ms of W's start), and the run freezes it out of the collector's sight once planned.
    """
    global _collector_paused_for_run
    if gc.isenabled():
        gc.disable()
        _collector_paused_for_run = True


def resume_collector() -> None:
    """Enable the collector again if `pause_collector_for_run` paused it (once; idempotent).
    What exists then is frozen first, as the run would (else the first collection walks it all,
    18 ms after W is planned)."""
    global _collector_paused_for_run
    if _collector_paused_for_run:
        _collector_paused_for_run = False
        gc.freeze()
        gc.enable()


def exit_now(code: object) -> NoReturn:
    """End the process with `code` (a `SystemExit` code) without tearing the interpreter down.

    A command's files, stores and caches are closed by then; what the interpreter would still
    do at exit that matters is done here: the `atexit` handlers run (they kill the process
    groups of commands left running, shut Ray down), then stdout and stderr are flushed (a
    flush that fails exits with 120, as Python does). What is skipped is freeing every module
    and object one by one, which costs tens of milliseconds after a large run. While a thread
    that is not a daemon still runs, the process exits the usual way, which waits for it.
    """
    if any(t.is_alive() and not t.daemon for t in threading.enumerate() if t is not threading.current_thread()):
        raise SystemExit(code)
    if code is None:
        status = 0
    elif isinstance(code, int):
        status = code
    else:  # `sys.exit("message")`: Python prints it to stderr and exits with 1
        print(code, file=sys.stderr)
        status = 1
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):  # a closed pipe or stream
            status = 120
    os._exit(status & 0xFF)


def __getattr__(name: str) -> typer.Typer:
    if name == "app":
        app = the_app()
        load_commands()
        return app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "COMMANDS",
    "OPTIONAL_VALUES",
    "app",
    "load_commands",
    "main",
    "pause_collector_for_run",
    "resume_collector",
    "with_optional_values",
]
