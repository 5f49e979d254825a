"""Importers: public datasets and recorded conversations as eval files.

`import_dataset(kind, source)` returns a suite as plain data; `write_suite` writes it as YAML.
`convoeval import KIND SOURCE -o suite.eval.yaml` is the command-line shell over both.

Kinds:
    mt-bench     FastChat's MT-Bench question.jsonl (+ GPT-4 references for the judge only)
    multiwoz     MultiWOZ 2.2 dialogues_*.json, 2.1 data.json or the HF rows (JSON Lines):
                 scripted user turns with the reference replies for the judges, backend
                 results and a policy per dialogue, TD-Eval's dimensions on every turn
    tau-bench    tau-bench results or tasks as simulated-user scenarios with a required
                 `tau-reward` (or, recorded=True, each task's recorded trajectories as the
                 trials of its test); tau2-bench's tasks.json with its domain policy
    tau2         tau2-bench's tasks.json as scenarios, or (recorded=True) a results file's
                 simulations as the trials of each task's test, graded to tau2's reward
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

import inspect
from collections.abc import Callable
from functools import partial
from pathlib import Path

from .._jsonl import read_problem
from ..errors import DatasetError
from ._common import DatasetWarning, read_json, read_jsonl, suite_yaml, write_suite
from ._deepeval import import_deepeval
from ._mtbench import import_mt_bench
from ._multiwoz import import_multiwoz
from ._promptfoo import import_promptfoo
from ._regrade import Regrade, RegradeSuite, remove, stored_run, write_regrade
from ._suite_types import GradingSuite, Suite
from ._tau2_results import import_tau2
from ._taubench import import_tau_bench
from ._transcripts import grading_suite, import_transcripts

#: An importer: `(source, **its options) -> suite`.
Importer = Callable[..., Suite]

IMPORTERS: dict[str, Importer] = {
    "mt-bench": import_mt_bench,
    "multiwoz": import_multiwoz,
    "tau-bench": import_tau_bench,
    "tau2": import_tau2,
    "transcripts": import_transcripts,
    "promptfoo": import_promptfoo,
    "deepeval": import_deepeval,
    "inspect": partial(import_transcripts, log_format="inspect"),
    "agentv-transcript": partial(import_transcripts, log_format="agentv"),
    "langfuse": partial(import_transcripts, log_format="langfuse"),
    "otel": partial(import_transcripts, log_format="otel"),
}


def import_dataset(kind: str, source: str | Path, **options: object) -> Suite:
    """The suite that `kind`'s importer makes of `source`.

    Raises:
        DatasetError: unknown kind, or a source problem (`file:line: what is wrong`).
    """
    importer = IMPORTERS.get(kind)
    if importer is None:
        raise DatasetError(f"unknown dataset kind {kind!r} (known: {', '.join(sorted(IMPORTERS))})")
    try:
        Path(source).stat()
    except FileNotFoundError:
        pass  # the importer says so
    except OSError as exc:  # a name too long to look up, say
        raise DatasetError(read_problem(Path(source), exc)) from None
    given = {k: v for k, v in options.items() if v is not None}
    accepted = inspect.signature(importer).parameters
    open_ended = any(p.kind is p.VAR_KEYWORD for p in accepted.values())
    wrong = [] if open_ended else [k for k in given if k not in accepted]
    if wrong:
        names = ", ".join("--" + k.replace("_", "-") for k in wrong)
        raise DatasetError(f"{names}: not an option of `import {kind}`")
    return importer(Path(source), **given)


__all__ = [
    "IMPORTERS",
    "DatasetError",
    "DatasetWarning",
    "GradingSuite",
    "Regrade",
    "RegradeSuite",
    "Suite",
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
