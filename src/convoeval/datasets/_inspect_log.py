"""Inspect AI eval logs (`.eval` zip or `.json`) as recorded conversations.

Read from Inspect's documented log format: a `.json` log is one `EvalLog` document (`eval`,
`samples[]`); a `.eval` log is a zip holding `header.json` and one
`samples/<id>_epoch_<n>.json` per sample. Recent Inspect versions compress `.eval` members with
zstd, which Python's zipfile reads only with help: such logs are read with Inspect's own
`read_eval_log` (the `inspect` extra); `.json` logs and deflate-compressed `.eval` logs need
nothing. Each sample's `messages` (`ChatMessage`:
`role`, `content` as text or content blocks, assistant `tool_calls` `{id, function,
arguments}`, tool results with `tool_call_id`) become a `transcript:` test named after the
sample (`-epoch-N` added for a sample the log ran in several epochs). The sample's `metadata`, `target`,
`input`, Inspect's own `scores` (value, answer, explanation, metadata) and the sample's `error`
(a sample Inspect could not finish) are kept as test metadata. A sample without both a user
and an assistant message (one that failed before the model answered) cannot be graded: it is
left out and named in a warning.
"""

from __future__ import annotations

import json
import warnings
import zipfile
import zlib
from pathlib import Path

from pydantic import JsonValue

from ..errors import DatasetError
from ._chat_logs import ROLES, LoggedMessage, LoggedTest, arguments_of, has_dialogue, slug, text_of, unique
from ._common import DatasetWarning, JsonObject, as_list, as_object, decode_json, objects, read_text
from ._suite_types import RecordedCall

#: An eval log's header (`eval`: task, model, ...) and its samples (`id`, `epoch`, `messages`,
#: `metadata`, `target`, `scores`), as the log holds them.
Log = tuple[JsonObject, list[JsonObject]]


def is_inspect_log(path: Path, head: str) -> bool:
    """An Inspect `.eval` zip, or a JSON log with `eval` and `samples`/`status`."""
    if path.suffix == ".eval" or head.startswith("PK"):
        return zipfile.is_zipfile(path)
    return head.lstrip().startswith("{") and '"eval"' in head and ('"samples"' in head or '"status"' in head)


def _read_with_inspect(path: Path) -> Log | None:
    try:
        from inspect_ai.log import read_eval_log
    except ImportError:
        return None
    try:
        log: JsonObject = read_eval_log(str(path)).model_dump(mode="json", exclude_none=True)
    except Exception as exc:  # noqa: BLE001 - any reader failure is a bad file for the user
        raise DatasetError(f"{path}:1: Inspect cannot read this log ({type(exc).__name__}: {exc})") from None
    return log, _samples(as_list(log.get("samples")), path)


def _read_zip(path: Path) -> Log:
    try:
        with zipfile.ZipFile(path) as archive:
            names = archive.namelist()
            header = decode_json(archive.read("header.json")) if "header.json" in names else {}
            if not header and "_journal/start.json" in names:
                header = decode_json(archive.read("_journal/start.json"))
            samples = [
                decode_json(archive.read(name))
                for name in sorted(names)
                if name.startswith("samples/") and name.endswith(".json")
            ]
    except NotImplementedError:
        read = _read_with_inspect(path)
        if read is None:
            raise DatasetError(
                f"{path}:1: this .eval log is zstd-compressed: install the inspect extra "
                "(pip install 'convoeval[inspect]') or convert it with `inspect log convert --to json`"
            ) from None
        return read
    except (zipfile.BadZipFile, KeyError, ValueError, OSError, EOFError, zlib.error) as exc:
        # OSError: an entry's offset before the file's start; zlib.error, EOFError: broken compressed data
        raise DatasetError(f"{path}:1: not a readable Inspect .eval log ({exc})") from None
    return _header(header, path), _samples(samples, path)


def _header(header: JsonValue, path: Path) -> JsonObject:
    if not isinstance(header, dict):
        raise DatasetError(f"{path}:1: header.json: expected a JSON object (the eval log's header)")
    return header


def _samples(samples: list[JsonValue], path: Path) -> list[JsonObject]:
    for sample in samples:
        if not isinstance(sample, dict):
            raise DatasetError(f"{path}:1: samples: expected JSON objects (Inspect's EvalSample), got {sample!r:.60}")
    return [sample for sample in samples if isinstance(sample, dict)]


def _read_json(path: Path) -> Log:
    try:
        log: JsonValue = decode_json(read_text(path))
    except json.JSONDecodeError as exc:
        raise DatasetError(f"{path}:{exc.lineno}: not JSON ({exc.msg})") from None
    if not isinstance(log, dict) or not isinstance(log.get("eval"), dict):
        raise DatasetError(f"{path}:1: not an Inspect eval log (no `eval` header)")
    samples = log.get("samples") or []
    if not isinstance(samples, list):
        raise DatasetError(f"{path}:1: samples: expected a list of samples")
    return log, _samples(samples, path)


def read_inspect_log(path: Path) -> list[LoggedTest]:
    """One `transcript:` test per sample (and epoch) of the log."""
    header, samples = _read_zip(path) if zipfile.is_zipfile(path) else _read_json(path)
    if not samples:
        raise DatasetError(f"{path}:1: the Inspect log has no samples (was it written with samples?)")
    eval_info = as_object(header.get("eval")) or {}
    epochs: dict[str, int] = {}
    for sample in samples:
        epochs[str(sample.get("id"))] = epochs.get(str(sample.get("id")), 0) + 1
    tests: list[LoggedTest] = []
    left_out: list[str] = []
    seen: set[str] = set()
    for sample in samples:
        messages = sample.get("messages") or []
        if not isinstance(messages, list):
            raise DatasetError(f"{path}:1: sample {sample.get('id')!r}: messages: expected a list of messages")
        transcript = [_message(m, path) for m in messages]
        name = slug(str(sample.get("id", len(tests) + 1)))
        if epochs[str(sample.get("id"))] > 1:
            name += f"-epoch-{sample.get('epoch', 1)}"
        if not has_dialogue(transcript):
            left_out.append(f"{name} ({_error_text(sample) or 'no assistant reply'})")
            continue
        tests.append({"id": unique(name, seen), "transcript": transcript, "metadata": _metadata(sample, eval_info)})
    if not tests:
        raise DatasetError(
            f"{path}:1: no sample of the Inspect log has a user and an assistant message"
            + (f" (left out: {'; '.join(left_out)})" if left_out else "")
        )
    if left_out:
        warnings.warn(
            f"{path}: {len(left_out)} sample(s) without a user and an assistant message left out: {'; '.join(left_out)}",
            DatasetWarning,
            stacklevel=2,
        )
    return tests


def _error_text(sample: JsonObject) -> str | None:
    """The message of the sample's `error` (Inspect's EvalError), if it has one."""
    error = sample.get("error")
    if isinstance(error, dict) and error.get("message"):
        return str(error["message"])
    return str(error) if isinstance(error, str) and error else None


def _message(raw: JsonValue, path: Path) -> LoggedMessage:
    role = raw.get("role") if isinstance(raw, dict) else None
    if not isinstance(raw, dict) or not isinstance(role, str) or role not in ROLES:
        raise DatasetError(f"{path}:1: an Inspect message needs a role (system, user, assistant or tool)")
    message: LoggedMessage = {"role": role, "content": text_of(raw.get("content"))}
    calls: list[RecordedCall] = [
        {"name": str(c.get("function", "tool")), "arguments": arguments_of(c.get("arguments")), "id": c.get("id")}
        for c in objects(raw.get("tool_calls"))
    ]
    if calls:
        message["tool_calls"] = calls
    if role == "tool":
        if raw.get("tool_call_id"):
            message["tool_call_id"] = raw["tool_call_id"]
        if raw.get("function"):
            message["name"] = raw["function"]
        error = raw.get("error")
        if isinstance(error, dict) and error.get("message") and not message["content"]:
            message["content"] = f"error: {error['message']}"
    return message


#: What a test keeps of each of Inspect's `Score`s (not its `history` of edits).
_SCORE_FIELDS = ("value", "answer", "explanation", "metadata")


def _metadata(sample: JsonObject, eval_info: JsonObject) -> JsonObject:
    metadata: JsonObject = {"inspect_task": eval_info.get("task"), "inspect_model": eval_info.get("model")}
    if sample.get("metadata"):
        metadata["sample"] = sample["metadata"]
    if sample.get("target") not in (None, "", []):
        metadata["target"] = sample["target"]
    if error := _error_text(sample):
        metadata["inspect_error"] = error
    scores = as_object(sample.get("scores")) or {}
    if scores:
        metadata["inspect_scores"] = {
            name: {k: v for k, v in score.items() if k in _SCORE_FIELDS and v not in (None, {}, [])}
            for name, score in scores.items()
            if isinstance(score, dict)
        }
    return {k: v for k, v in metadata.items() if v is not None}
