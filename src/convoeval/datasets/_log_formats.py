"""Which reader a recorded-conversation file needs, told from its first bytes.

`log_reader(path)` returns the reader of an Inspect eval log, a promptfoo results file, an AgentV
transcript JSONL, an OpenTelemetry span export or a Langfuse export, or None for the formats `_transcripts` reads
itself (OpenAI `messages` JSONL, convoeval results).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ..errors import DatasetError
from ._agentv_transcript import is_agentv_transcript, read_agentv_transcript
from ._chat_logs import LoggedTest
from ._common import check_file
from ._inspect_log import is_inspect_log, read_inspect_log
from ._langfuse import is_langfuse_export, read_langfuse
from ._otel import is_otel_spans, read_otel
from ._promptfoo_results import is_promptfoo_results, read_promptfoo_results

Reader = Callable[[Path], list[LoggedTest]]

#: (format name, does this file look like it, its reader), tried in this order.
LOG_FORMATS: list[tuple[str, Callable[[Path, str], bool], Reader]] = [
    ("inspect", is_inspect_log, read_inspect_log),
    ("promptfoo", is_promptfoo_results, read_promptfoo_results),
    ("agentv", is_agentv_transcript, read_agentv_transcript),
    ("otel", is_otel_spans, read_otel),
    ("langfuse", is_langfuse_export, read_langfuse),
]
_HEAD = 8192


def _head(path: Path) -> str:
    check_file(path)
    with path.open("rb") as handle:
        return handle.read(_HEAD).decode("utf-8", errors="replace")


def log_reader(path: Path, fmt: str | None = None) -> Reader | None:
    """The reader for `path` (the named format's, or the first whose sniff matches)."""
    head = _head(path)
    if fmt is not None:
        for name, _, reader in LOG_FORMATS:
            if name == fmt:
                return reader
        raise DatasetError(f"unknown log format {fmt!r} (known: {', '.join(n for n, _, _ in LOG_FORMATS)})")
    for _, looks_like, reader in LOG_FORMATS:
        if looks_like(path, head):
            return reader
    return None
