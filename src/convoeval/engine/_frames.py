"""Frames between the driver and its worker processes (`--processes N`): a 4-byte big-endian
length, then a pickle. They travel only through the pipes of the two processes (never a file)."""

from __future__ import annotations

import asyncio
import io
import pickle
import struct
import sys
from typing import Any

from .. import registry

_HEADER = struct.Struct(">I")


def frame(message: object) -> bytes:
    """`message` as one frame."""
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    return _HEADER.pack(len(data)) + data


def registry_dumps(value: object) -> bytes:
    """`value` (a suite) pickled so that a class its module does not hold by name (a plugin's
    `@grader` function makes one) travels as its registered kind and name: the worker has loaded
    the same plugins (`registry.plugin_modules`)."""
    buffer = io.BytesIO()
    _RegistryPickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(value)
    return buffer.getvalue()


class _RegistryPickler(pickle.Pickler):
    def reducer_override(self, obj: object) -> Any:
        if isinstance(obj, type) and not _importable(obj) and (known := registry.registered_as(obj)) is not None:
            return registry.lookup, known
        return NotImplemented


def _importable(cls: type) -> bool:
    found: object = sys.modules.get(cls.__module__)
    for part in cls.__qualname__.split("."):
        found = getattr(found, part, None)
    return found is cls


async def read_frame(reader: asyncio.StreamReader) -> Any:
    """The next message, or None once the other side has closed its end (or died)."""
    try:
        header = await reader.readexactly(_HEADER.size)
        return pickle.loads(await reader.readexactly(_HEADER.unpack(header)[0]))
    except asyncio.IncompleteReadError:
        return None
