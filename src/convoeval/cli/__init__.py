"""The `convoeval` command line: thin shells over the Python API."""

from ._app import app
from . import _core  # noqa: F401  (registers run, validate, schema)


def main() -> None:
    """Entry point of the `convoeval` script."""
    app()


__all__ = ["app", "main"]
