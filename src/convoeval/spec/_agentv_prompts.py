"""AgentV v5's top-level `prompts` (its `yaml-parser.ts` parsePromptDefinition and
expandPromptMatrix, v5.3.1 and main): each test is run once per prompt, the prompt rendered with
the test's `vars` as its input."""

from __future__ import annotations

import copy
import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path

from ._agentv_paths import find_attachment
from ._agentv_vars import fill_vars

#: Prompts AgentV gets by running a program: not run here.
_PROGRAMS = ("function_file", "function", "command")


@dataclass(frozen=True)
class Prompt:
    """One prompt: its id (which names a test's copy when there are several) and its template
    (a text, or a list of chat messages)."""

    id: str
    template: str | list


def _stable_id(value: object) -> str:
    """AgentV's `stablePromptId`: the first 12 hex digits of the SHA-256 of its JSON."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def _safe_id(value: str) -> str:
    """AgentV's `safePromptId`, the suffix of a test's id: `__prompt_<this>`."""
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "-", value.strip()).strip("-")
    return safe[:48] if safe else _stable_id(value)


def _is_chat(value: object) -> bool:
    return (
        isinstance(value, list)
        and bool(value)
        and all(isinstance(m, dict) and isinstance(m.get("role"), str) and "content" in m for m in value)
    )


def _file_text(ref: str, base: Path) -> tuple[str, str]:
    """(display path, text) of a prompt file, looked up as AgentV looks files up."""
    shown = ref.removeprefix("file://").lstrip("/\\")
    found = find_attachment(ref.removeprefix("file://"), base)
    if found is None:
        raise ValueError(f"prompt file not found: {shown}")
    return shown, found.read_text(encoding="utf-8").replace("\r\n", "\n")


def _prompt(raw: object, base: Path) -> Prompt:
    """One `prompts` entry (raises ValueError saying what is wrong)."""
    if isinstance(raw, str):
        if raw.startswith("file://"):
            shown, text = _file_text(raw, base)
            return Prompt(shown, text)
        return Prompt(f"prompt-{_stable_id(raw)}", raw)
    if _is_chat(raw):
        return Prompt(f"chat-{_stable_id(raw)}", raw)  # type: ignore[arg-type]
    if not isinstance(raw, dict):
        raise ValueError("a prompt is a text, a list of chat messages or a mapping")
    given = raw.get("id")
    own = given.strip() if isinstance(given, str) and given.strip() else None
    if program := next((k for k in _PROGRAMS if k in raw), None):
        raise ValueError(f"this AgentV form is not supported: `{program}` (a program writing the prompt)")
    if "file" in raw:
        if not isinstance(raw["file"], str) or not raw["file"]:
            raise ValueError("`file` must be a path")
        shown, text = _file_text(raw["file"], base)
        return Prompt(own or shown, text)
    if "messages" in raw:
        if not _is_chat(raw["messages"]):
            raise ValueError("`messages` must be a list of chat messages")
        return Prompt(own or f"chat-{_stable_id(raw['messages'])}", raw["messages"])
    if "prompt" in raw:
        value = raw["prompt"]
        if not isinstance(value, str) and not _is_chat(value):
            raise ValueError("`prompt` must be a text or a list of chat messages")
        return Prompt(own or f"{'chat' if isinstance(value, list) else 'string'}-{_stable_id(value)}", value)
    if "raw" in raw:
        if not isinstance(raw["raw"], str) or not raw["raw"]:
            raise ValueError("`raw` must be a text")
        return Prompt(own or f"string-{_stable_id(raw['raw'])}", raw["raw"])
    if isinstance(raw.get("role"), str) and "content" in raw:
        return Prompt(own or f"chat-{_stable_id(raw)}", [raw])
    raise ValueError("expected `prompt`, `messages`, `file` or `raw`")


def read_prompts(raw: object, base: Path) -> tuple[list[Prompt], list[tuple[int | None, str]]]:
    """The suite's prompts, and its problems as (index of the entry or None, message)."""
    entries = raw if isinstance(raw, list) and not _is_chat(raw) else [raw]
    prompts: list[Prompt] = []
    problems: list[tuple[int | None, str]] = []
    for i, entry in enumerate(entries):
        try:
            prompts.append(_prompt(entry, base))
        except (ValueError, OSError, UnicodeDecodeError) as exc:
            problems.append((i if entries is raw else None, str(exc)))
    return prompts, problems


def _as_messages(value: object) -> object:
    """A rendered prompt: a text holding a JSON list of chat messages is those messages
    (AgentV's `parseChatArrayPrompt`)."""
    if isinstance(value, str) and value.strip().startswith("["):
        try:
            parsed = json.loads(value)
        except ValueError:
            return value
        if _is_chat(parsed):
            return parsed
    return value


def with_prompts(test: dict, prompts: list[Prompt], default_vars: dict) -> list[dict]:
    """The test once per prompt: its `input` (if any) moved into `vars.input`, the prompt
    rendered with its vars as the input, the id and `depends_on` suffixed `__prompt_ID` when
    there are several prompts."""
    variables = test.get("vars")
    variables = {**default_vars, **(variables if isinstance(variables, dict) else {})}
    if "input" in test:
        variables["input"] = test["input"]
    context = {**variables, "vars": variables}
    found = []
    for prompt in prompts:
        item = {k: copy.deepcopy(v) for k, v in test.items() if k not in ("input", "input_files")}
        item["vars"] = copy.deepcopy(variables)
        item["input"] = _as_messages(copy.deepcopy(fill_vars(prompt.template, context)))
        if len(prompts) > 1:
            suffix = f"__prompt_{_safe_id(prompt.id)}"
            if isinstance(item.get("id"), str):
                item["id"] += suffix
            deps = item.get("depends_on")
            if isinstance(deps, list):
                item["depends_on"] = [d + suffix if isinstance(d, str) else d for d in deps]
        found.append(item)
    return found
