"""Prompt-prefix reuse for the local model: saved llama.cpp states, restored by longest prefix.

Every call of a conversation re-sends the whole history, and every judge call starts with the
same instructions, so most of each prompt was already evaluated by an earlier call. llama.cpp
keeps only the LAST call's KV state (reused by llama-cpp-python when the next prompt extends
it); target and judge calls alternate, so that alone rarely helps. This cache keeps the state
after each call, keyed by the tokens it holds, and before a call restores the one sharing the
longest prefix with the new prompt when that beats what is loaded.

llama-cpp-python's own `LlamaRAMCache` does the same but also copies the logits of the whole
batch with each state (512 x 49,152 floats = 100 MB for SmolLM2, uncounted by its budget),
which costs more than it saves; here only llama.cpp's state (KV cells in use) is kept.
"""

from __future__ import annotations

import ctypes
from collections import OrderedDict
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from llama_cpp import Llama


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """The length of the longest common prefix of two token sequences."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


class PrefixCache:
    """Saved model states keyed by their tokens; least recently used dropped past `capacity_bytes`."""

    def __init__(self, capacity_bytes: int):
        self.capacity_bytes = capacity_bytes
        self._states: OrderedDict[tuple[int, ...], bytes] = OrderedDict()
        self._size = 0
        self.restored_tokens = 0  # prompt tokens restored instead of evaluated, for reporting

    def __len__(self) -> int:
        return len(self._states)

    @property
    def size_bytes(self) -> int:
        return self._size

    def restore(self, llama: Llama, prompt: Sequence[int]) -> int:
        """Load the saved state sharing the longest prefix with `prompt` if it shares more
        than the loaded one; return the prefix length now usable."""
        import llama_cpp

        loaded = common_prefix(llama.input_ids[: llama.n_tokens].tolist(), prompt)
        best, best_len = None, loaded
        for key in self._states:
            length = common_prefix(key, prompt)
            if length > best_len:
                best, best_len = key, length
        if best is None:
            return loaded
        data = self._states[best]
        self._states.move_to_end(best)
        buffer = (ctypes.c_uint8 * len(data)).from_buffer_copy(data)
        if llama_cpp.llama_state_set_data(llama.ctx, buffer, len(data)) != len(data):
            llama.reset()  # a half-restored state must not be reused
            return 0
        llama.input_ids[: len(best)] = best
        llama.n_tokens = len(best)
        llama._requires_eval = True  # the logits are stale: llama-cpp-python re-evaluates one token
        self.restored_tokens += best_len - loaded
        return best_len

    def save(self, llama: Llama) -> None:
        """Remember the model's current state under the tokens it holds."""
        import llama_cpp

        key = tuple(llama.input_ids[: llama.n_tokens].tolist())
        if not key or key in self._states:
            return
        size = llama_cpp.llama_state_get_size(llama.ctx)
        if size > self.capacity_bytes:
            return
        buffer = (ctypes.c_uint8 * size)()
        written = llama_cpp.llama_state_get_data(llama.ctx, buffer, size)
        data = bytes(memoryview(buffer)[:written])
        self._states[key] = data
        self._size += len(data)
        while self._size > self.capacity_bytes and self._states:
            _, dropped = self._states.popitem(last=False)
            self._size -= len(dropped)
