"""Inspect AI eval logs (`.eval` zip or `.json`) as recorded conversations.

Read from Inspect's documented log format: a `.json` log is one `EvalLog` document (`eval`,
`samples[]`); a `.eval` log is a zip holding `header.json` and one
`samples/<id>_epoch_<n>.json` per sample. Recent Inspect versions compress `.eval` members with
zstd, which Python's zipfile reads only with help: such logs are read with Inspect's own
`read_eval_log` (the `inspect` extra); `.json` logs and deflate-compressed `.eval` logs need
nothing. Each sample's `messages` (`ChatMessage`:
`role`, `content` as text or content blocks, assistant `tool_calls` `{id, function,
arguments}`, tool results with `tool_call_id`) become a `transcript:` test named after the
sample (`test_id`: its id unchanged when it is a valid test id, else percent-encoded; `-epoch-N`
added for a sample the log ran in several epochs). A sample that ended in an error is an
`execution_error` (the test's `error`), the messages of the sample's input before its last user
message (a multishot history) are the conversation's input (`source: input`), one that ran into one of Inspect's limits is
`budget_exhausted` (`budget_hit`, such as `message_limit=6 (...)`). The sample's id and epoch
(`inspect_sample_id`, `inspect_epoch`: convoeval's Inspect export writes the sample back under
them), `metadata`, `target`, Inspect's own `scores` (value, answer, explanation, metadata), error,
token usage per model and times are kept as test metadata (`inspect_sample_id`, `sample`,
`inspect_target`, `inspect_scores`, `inspect_error`, `inspect_model_usage`, `inspect_times`:
`started_at`, `completed_at`, `total_time`, `working_time`). Content with no text (images, reasoning) is left out and named in a warning;
so is a sample without both a user and an assistant message (one that failed before the model
answered), which cannot be graded, and a run that did not finish (`status` other than `success`:
only the samples it logged are in it).
"""

from __future__ import annotations

import json
import warnings
import zipfile
import zlib
from collections import Counter
from pathlib import Path
from urllib.parse import quote

from pydantic import JsonValue

from ..errors import DatasetError
from ._chat_logs import ROLES, LoggedMessage, LoggedTest, has_dialogue, slug, text_of, tool_call_of, unique
from ._common import DatasetWarning, JsonObject, as_list, as_object, decode_json, objects, read_text

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
    _warn_unfinished(header, eval_info, len(samples), path)
    epochs = Counter(str(sample.get("id")) for sample in samples)
    tests: list[LoggedTest] = []
    left_out: list[str] = []
    dropped: Counter[str] = Counter()
    seen: set[str] = set()
    for sample in samples:
        messages = sample.get("messages") or []
        if not isinstance(messages, list):
            raise DatasetError(f"{path}:1: sample {sample.get('id')!r}: messages: expected a list of messages")
        transcript = [_message(m, path, dropped) for m in messages]
        _mark_history(messages, transcript)
        name = test_id(sample.get("id", len(tests) + 1))
        if epochs[str(sample.get("id"))] > 1:
            name += f"-epoch-{sample.get('epoch', 1)}"
        if not has_dialogue(transcript):
            left_out.append(f"{name} ({_error_text(sample) or 'no assistant reply'})")
            continue
        test: LoggedTest = {"id": unique(name, seen), "transcript": transcript}
        if error := _error_text(sample):
            test["error"] = f"the Inspect sample ended in an error: {error}"
        if limit := _limit(sample):
            test["budget_hit"] = limit
        test["metadata"] = _metadata(sample, eval_info)
        tests.append(test)
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
    if dropped:
        listed = ", ".join(f"{kind} ({n})" for kind, n in sorted(dropped.items()))
        warnings.warn(
            f"{path}: message content with no text left out of the transcripts: {listed}",
            DatasetWarning,
            stacklevel=2,
        )
    return tests


def _warn_unfinished(header: JsonObject, eval_info: JsonObject, logged: int, path: Path) -> None:
    """Warns when the run did not finish (Inspect's `status`: `started` when it was stopped before
    it wrote its results, `cancelled`, `error`): the log holds only the samples it got to."""
    status = header.get("status") or "started"  # an unfinished .eval has only its journal
    if status == "success":
        return
    dataset = as_object(eval_info.get("dataset")) or {}
    of = f" (the dataset has {dataset['samples']})" if isinstance(dataset.get("samples"), int) else ""
    error = as_object(header.get("error")) or {}
    why = f": {error['message']}" if error.get("message") else ""
    warnings.warn(
        f"{path}: the Inspect run did not finish (status {status}{why}); imported only the {logged} sample "
        f"run(s) it logged{of}",
        DatasetWarning,
        stacklevel=3,
    )


def test_id(sample_id: JsonValue) -> str:
    """A sample's id as a test id: unchanged when it is one already (letters, digits, `_.@:-`),
    else with each other character percent-encoded (`a b` -> `a%20b`, `x/y` -> `x%2Fy`): the
    same id always, and never another sample's."""
    text = str(sample_id)
    if text and slug(text) == text:
        return text
    return quote(text, safe="@:") or "sample"


def _limit(sample: JsonObject) -> str | None:
    """The limit the sample ran into (Inspect's `limit`: `{type, limit, reason?}`) as a
    budget: `message_limit=6 (Message limit exceeded. count: 7; limit: 6)`."""
    limit = as_object(sample.get("limit"))
    if not limit or not limit.get("type"):
        return None
    value = limit.get("limit")
    hit = f"{limit['type']}_limit" + (f"={value:g}" if isinstance(value, int | float) else "")
    reason = str(limit.get("reason") or "")
    if reason.startswith(hit):  # written by convoeval's export: the budget as it was
        return reason
    return f"{hit} ({reason})" if reason else hit


def _error_text(sample: JsonObject) -> str | None:
    """The message of the sample's `error` (Inspect's EvalError), if it has one."""
    error = sample.get("error")
    if isinstance(error, dict) and error.get("message"):
        return str(error["message"])
    return str(error) if isinstance(error, str) and error else None


def _mark_history(messages: list[JsonValue], transcript: list[LoggedMessage]) -> None:
    """Marks `source: input` the messages of the sample's input (Inspect's `source: "input"`)
    before its last user message, which the model answered: a multishot history's assistant
    answers are the dataset's, not the model's."""
    given = [i for i, m in enumerate(messages) if isinstance(m, dict) and m.get("source") == "input"]
    last_user = max((i for i in given if transcript[i]["role"] == "user"), default=-1)
    for i in given:
        if i < last_user:
            transcript[i]["source"] = "input"


def _message(raw: JsonValue, path: Path, dropped: Counter[str]) -> LoggedMessage:
    """An Inspect message; content with no text (images, reasoning) is counted in `dropped`."""
    role = raw.get("role") if isinstance(raw, dict) else None
    if not isinstance(raw, dict) or not isinstance(role, str) or role not in ROLES:
        raise DatasetError(f"{path}:1: an Inspect message needs a role (system, user, assistant or tool)")
    content = raw.get("content")
    dropped.update(str(b.get("type")) for b in objects(content) if b.get("type") not in ("text", None))
    message: LoggedMessage = {"role": role, "content": text_of(content)}
    calls = [tool_call_of(c) for c in objects(raw.get("tool_calls"))]
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
#: A sample's times (`inspect_times`).
_TIME_FIELDS = ("started_at", "completed_at", "total_time", "working_time")


def _metadata(sample: JsonObject, eval_info: JsonObject) -> JsonObject:
    metadata: JsonObject = {"inspect_task": eval_info.get("task"), "inspect_model": eval_info.get("model")}
    if sample.get("metadata"):
        metadata["sample"] = sample["metadata"]
    metadata["inspect_sample_id"] = sample.get("id")
    metadata["inspect_epoch"] = sample.get("epoch")
    if sample.get("target") not in (None, "", []):
        metadata["inspect_target"] = sample["target"]
    if error := _error_text(sample):
        metadata["inspect_error"] = error
    usage = as_object(sample.get("model_usage")) or {}
    if usage:  # tokens per model, as Inspect counted them
        metadata["inspect_model_usage"] = {
            model: {k: v for k, v in counts.items() if v is not None}
            for model, counts in usage.items()
            if isinstance(counts, dict)
        }
    times = {k: sample[k] for k in _TIME_FIELDS if sample.get(k) is not None}
    if times:
        metadata["inspect_times"] = times
    scores = as_object(sample.get("scores")) or {}
    if scores:
        metadata["inspect_scores"] = {
            name: {k: v for k, v in score.items() if k in _SCORE_FIELDS and (k == "value" or v not in (None, {}, []))}
            for name, score in scores.items()
            if isinstance(score, dict)
        }
    return {k: v for k, v in metadata.items() if v is not None}
