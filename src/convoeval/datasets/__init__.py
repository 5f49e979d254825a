"""Importers: public datasets and recorded conversations as eval files.

`import_dataset(kind, source)` returns a suite as plain data; `write_suite` writes it as YAML.
`convoeval import KIND SOURCE -o suite.eval.yaml` is the command-line shell over both.

Kinds:
    mt-bench     FastChat's MT-Bench question.jsonl (+ GPT-4 references for the judge only)
    multiwoz     MultiWOZ 2.2 dialogues (JSON Lines): scripted user turns, backend results and a
                 policy per dialogue, TD-Eval's dimensions on every turn
    tau-bench    tau-bench results or tasks as simulated-user scenarios with a `tau-reward`
                 (or, recorded=True, their trajectories as transcripts)
    transcripts  recorded conversations (OpenAI messages JSONL, convoeval results, or any of
                 the logs below, told apart by content) as `transcript:` tests, graded
                 without calling a target (`convoeval grade`)
    promptfoo    a promptfooconfig.yaml: prompts, vars, asserts, conversations, simulated users
    deepeval     a DeepEval dataset (JSON/JSONL goldens or test cases, conversational or not)
    inspect | agentv-transcript | langfuse | otel
                 an Inspect eval log, AgentV transcript JSONL, a Langfuse export, or
                 OpenTelemetry GenAI spans, as `transcript:` tests
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from ..errors import DatasetError
from ._common import DatasetWarning, read_json, read_jsonl, suite_yaml, write_suite
from ._deepeval import import_deepeval
from ._mtbench import import_mt_bench
from ._multiwoz import import_multiwoz
from ._promptfoo import import_promptfoo
from ._regrade import Regrade, RegradeSuite, remove, stored_run, write_regrade
from ._taubench import import_tau_bench
from ._transcripts import grading_suite, import_transcripts

Importer = Callable[..., dict[str, Any]]

IMPORTERS: dict[str, Importer] = {
    "mt-bench": import_mt_bench,
    "multiwoz": import_multiwoz,
    "tau-bench": import_tau_bench,
    "transcripts": import_transcripts,
    "promptfoo": import_promptfoo,
    "deepeval": import_deepeval,
    "inspect": partial(import_transcripts, log_format="inspect"),
    "agentv-transcript": partial(import_transcripts, log_format="agentv"),
    "langfuse": partial(import_transcripts, log_format="langfuse"),
    "otel": partial(import_transcripts, log_format="otel"),
}


def import_dataset(kind: str, source: str | Path, **options: Any) -> dict[str, Any]:
    """The suite that `kind`'s importer makes of `source`.

    Raises:
        DatasetError: unknown kind, or a source problem (`file:line: what is wrong`).
    """
    importer = IMPORTERS.get(kind)
    if importer is None:
        raise DatasetError(f"unknown dataset kind {kind!r} (known: {', '.join(sorted(IMPORTERS))})")
    return importer(Path(source), **{k: v for k, v in options.items() if v is not None})


__all__ = [
    "IMPORTERS",
    "DatasetError",
    "DatasetWarning",
    "Regrade",
    "RegradeSuite",
    "remove",
    "stored_run",
    "write_regrade",
    "grading_suite",
    "import_dataset",
    "read_json",
    "read_jsonl",
    "suite_yaml",
    "write_suite",
]
