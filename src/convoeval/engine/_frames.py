"""Frames between the driver and its worker processes (`--processes N`): a 4-byte big-endian
length, then a pickle. They travel only through the pipes of the two processes (never a file)."""

from __future__ import annotations

import asyncio
import pickle
import struct
from typing import Any

_HEADER = struct.Struct(">I")


def frame(message: object) -> bytes:
    """`message` as one frame."""
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    return _HEADER.pack(len(data)) + data


async def read_frame(reader: asyncio.StreamReader) -> Any:
    """The next message, or None once the other side has closed its end (or died)."""
    try:
        header = await reader.readexactly(_HEADER.size)
        return pickle.loads(await reader.readexactly(_HEADER.unpack(header)[0]))
    except asyncio.IncompleteReadError:
        return None
