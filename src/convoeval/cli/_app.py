"""The typer application that every CLI command module registers on, and `.env` loading."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from .._paths import ROOT_ENV

app = typer.Typer(
    name="convoeval",
    help="Evaluate multi-turn conversations with LLMs and agents.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def load_env_file(folder: Path) -> None:
    """Load `folder/.env` into the environment; variables already set win (values never printed)."""
    path = folder / ".env"
    if path.is_file():
        from dotenv import load_dotenv  # python-dotenv loads only where there is a .env

        load_dotenv(path, override=False)


def _use_root(value: Path | None) -> Path | None:
    if value is not None:
        if not value.is_dir():
            raise typer.BadParameter(f"{value} is not a folder")
        os.environ[ROOT_ENV] = str(value.resolve())
    return value


Root = Annotated[
    Path | None,
    typer.Option(
        "--root",
        metavar="DIR",
        envvar=ROOT_ENV,
        callback=_use_root,
        help="A folder the files a suite names may also lie in, besides the suite's own folder.",
    ),
]


@app.callback()
def _settings() -> None:
    """Evaluate multi-turn conversations with LLMs and agents."""
    load_env_file(Path.cwd())  # before a command's options are read, so CONVOEVAL_* there apply
