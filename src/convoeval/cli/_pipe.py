"""Standard output that outlives its reader: `convoeval run ... | head -1` goes on with the run
(results stored, `-o` written, the exit code the tests give) once the pipe closes, instead of
ending on the next line printed (click's exit 1 on EPIPE, the run left interrupted)."""

from __future__ import annotations

import os
import sys
from typing import TextIO


class _AfterThePipeCloses:
    """`stream`, whose writes go to /dev/null once its reader is gone."""

    def __init__(self, stream: TextIO):
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            self._to_nowhere()
            return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            self._to_nowhere()

    def _to_nowhere(self) -> None:
        """Point the stream's file descriptor at /dev/null (what it still buffers goes there)."""
        nowhere = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(nowhere, self._stream.fileno())
        finally:
            os.close(nowhere)

    def __getattr__(self, name: str) -> object:
        return getattr(self._stream, name)


def survive_closed_stdout() -> None:
    """Wrap `sys.stdout` (once, before anything holds it) so that a closed pipe is not fatal."""
    if sys.stdout is not None and not isinstance(sys.stdout, _AfterThePipeCloses):
        try:
            sys.stdout.fileno()
        except (AttributeError, OSError, ValueError):  # no file behind it (a test's capture)
            return
        sys.stdout = _AfterThePipeCloses(sys.stdout)
