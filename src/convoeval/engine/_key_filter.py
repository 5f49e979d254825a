"""Which keys a response cache may hold, in memory: a lookup of a key it cannot hold (every
call of a first run) is answered without reading the file.

While a run writes its cache, each of the writer's commits empties the reading connection's
page cache, so a lookup that found nothing cost 16 us instead of 5 and most of what the cache
cost a run (W-large: 0.49 ms of CPU per call with the cache, 0.42 with nothing committed until
the end, 0.41 without the cache).

The filter is one bit per slot of `hash(key)` (1 MiB: a key the file does not hold is let
through to a read about once in 60 with 150,000 keys), set for every key stored through this
cache and, once it has been asked `START_AFTER` times (a run of a few tests, a Ray trial never
pays for it), for every key in the file (read by a background thread, for files up to
`MAX_FILE_BYTES`). A key another process stores after that is not in it: that call is made
again. Used from one thread (the event loop's); the loading thread fills a bitmap of its own.
"""

from __future__ import annotations

import sqlite3
import threading
from contextlib import closing
from pathlib import Path

#: Cache files up to this size get a filter (about 150,000 replies; reading their keys takes
#: a background thread about 0.1 s of CPU). Larger ones are read at every lookup.
MAX_FILE_BYTES = 64 * 2**20
#: Lookups read the file until this many were asked; then the keys are loaded.
START_AFTER = 256
_BITS = 1 << 23
_MASK = _BITS - 1


class KeyFilter:
    """May the cache at `path` hold a key?

    Args:
        path: the cache file (already created, with its `responses` table).
    """

    def __init__(self, path: Path):
        self.path = path
        self.active = True  # False: every key may be held (no filter)
        self._asked = 0  # lookups before the keys are loaded
        self._ready: bytearray | None = None  # the file's keys and ours, once loaded
        self._loaded: bytearray | None = None  # the file's keys, set by the loading thread
        self._added: set[str] = set()  # keys added before the file's keys were loaded
        self._stop = False

    def may_hold(self, key: str) -> bool:
        """False only if `add` was not given `key` and the file did not hold it when loaded."""
        bits = self._ready
        if bits is None:
            if self._loaded is None or not self.active:
                self._asked += 1
                if self._asked == START_AFTER:
                    self._start()
                return True
            bits = self._ready = self._loaded
            for added in self._added:  # what this cache stored while the file's keys loaded
                slot = hash(added) & _MASK
                bits[slot >> 3] |= 1 << (slot & 7)
            self._loaded, self._added = None, set()
        slot = hash(key) & _MASK
        return bool(bits[slot >> 3] >> (slot & 7) & 1)

    def add(self, key: str) -> None:
        """A key stored from now on."""
        bits = self._ready
        if bits is None:
            if self.active:  # the file's keys are not loaded yet
                self._added.add(key)
            return
        slot = hash(key) & _MASK
        bits[slot >> 3] |= 1 << (slot & 7)

    def _start(self) -> None:
        """Load the file's keys in the background (files up to `MAX_FILE_BYTES`)."""
        try:
            self.active = self.path.stat().st_size <= MAX_FILE_BYTES
        except OSError:
            self.active = False
        if not self.active:
            self._added = set()
        else:
            threading.Thread(target=self._load, name="convoeval-cache-keys", daemon=True).start()

    def _load(self) -> None:
        """On its own thread: the file's keys, as a bitmap of their own."""
        bits = bytearray(_BITS // 8)
        try:
            with closing(sqlite3.connect(self.path, timeout=1.0)) as conn:
                for count, (key,) in enumerate(conn.execute("SELECT key FROM responses")):
                    slot = hash(key) & _MASK
                    bits[slot >> 3] |= 1 << (slot & 7)
                    if count % 1024 == 0 and self._stop:
                        return
        except sqlite3.Error:
            self.active = False  # unreadable: lookups read the file, which only costs model calls
            return
        self._loaded = bits

    def close(self) -> None:
        self._stop = True
