"""promptfoo configurations (`promptfooconfig.yaml`) as convoeval suites.

The config is read as promptfoo reads it: YAML by the 1.2 core schema (js-yaml's: `Yes` and
`1:30` are text), each local `$ref` followed (`#/assertionTemplates/name`).

What becomes what:
- `prompts`: each prompt (inline text, a chat-message JSON/YAML list, or `file://` one of
  those; a `.txt` file's parts between `---` lines are prompts) is rendered with a test's `vars`. Its system messages become the test's `input`, its
  last user message the turn's input. promptfoo's `{% for ... in _conversation %}` history
  loop is dropped: convoeval sends the whole conversation to the target on every turn.
- `tests` sharing `metadata.conversationId` (or, when the prompt loops over `_conversation`,
  all tests without one) become one `mode: conversation` test, one turn per promptfoo test, in
  file order; other tests are single-turn tests. `defaultTest` (`vars`, `assert`, `provider`,
  `threshold`) applies to every test, as in promptfoo.
- A test (or `defaultTest`) whose `provider` is `promptfoo:simulated-user` becomes a
  `simulated_user` whose objective is its rendered `instructions` (`maxTurns` -> `max_turns`);
  its assertions judge the whole conversation.
- `providers` whose id convoeval reads (`openai:`, `anthropic:`...) become
  `execution.targets`; all are kept in `metadata.promptfoo_providers`. A provider's `config`
  and `label` (`apiBaseUrl`, `temperature`, ...) cannot be set on a target from an eval file:
  they are kept in `metadata.promptfoo_provider_settings` (without keys, tokens or headers)
  and named in a warning (set them in a targets file).
- a promptfoo test's `threshold` and `metadata` stay on the turn it becomes (its metadata).
- promptfoo's verdict on a test (`AssertionsResult.testResult`): with a `threshold`, the
  assertions' weighted mean score reaching it (the test's convoeval threshold; in a
  conversation, a `required` composite of the turn's checks with that `min_score`); without
  one, every assertion passing, whatever their mean (threshold 0, every check `required` at
  its own pass mark: its promptfoo threshold, else convoeval's default, as `min_score`).
- `assert`: see `_promptfoo_asserts`; unmapped types are kept as written (validation names
  each) and listed in one warning.
- a test's `description` is its id and `metadata.description`, not a criterion: a test with no
  `assert` passes when it runs, as in promptfoo.
"""

from __future__ import annotations

import glob
import itertools
import json
import re
import warnings
from collections import Counter, OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import JsonValue

from .._jsonl import as_int
from ..errors import DatasetError
from ..spec import DEFAULT_THRESHOLD
from ._chat_logs import text_of, unique
from ._common import (
    DatasetWarning,
    JsonObject,
    as_list,
    as_object,
    decode_json,
    is_file,
    load_yaml,
    mapping,
    parse_yaml,
    read_jsonl,
    read_text,
)
from ._log_formats import log_reader
from ._promptfoo_asserts import KNOWN_TYPES, Unmapped, inside, map_asserts, provider_spec, transformed
from ._promptfoo_csv import read_csv_tests
from ._promptfoo_results import read_promptfoo_results
from ._suite_types import Message, Suite, SuiteTest, Turn
from ._transcripts import import_transcripts

if TYPE_CHECKING:
    import jinja2.sandbox

SIMULATED_USER = "promptfoo:simulated-user"
_LOOP = re.compile(r"{%-?\s*for\s+\w+\s+in\s+_conversation\s*-?%}.*?{%-?\s*endfor\s*-?%}", re.DOTALL)
DEFAULT_MAX_TURNS = 10


@lru_cache(maxsize=1)
def _env() -> jinja2.sandbox.ImmutableSandboxedEnvironment:
    import jinja2.sandbox

    env = jinja2.sandbox.ImmutableSandboxedEnvironment(autoescape=False, keep_trailing_newline=False, finalize=_js_text)
    env.globals.clear()
    env.filters["dump"] = _dump  # Nunjucks' `dump` (JSON.stringify), which promptfoo's chat prompts use
    env.filters["truncate"] = _truncate
    return env


def _js_text(value: object) -> object:
    """A value as Nunjucks prints it (JavaScript's `String()`): `true`/`false`, `2` for 2.0, a
    list's items joined by commas, `[object Object]` for a mapping, nothing for null."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, list | tuple):
        return ",".join(str(_js_text(item)) for item in value)
    if isinstance(value, dict):
        return "[object Object]"
    return value


def _truncate(value: object, length: int = 255, killwords: bool = False, end: str | None = "...") -> str:
    """Nunjucks' `truncate`: cut at the last space before `length` (at `length` with `killwords`),
    then `end`; Jinja's keeps a leeway of 5 characters and counts `end` in the length."""
    text, length = "" if value is None else str(value), length or 255
    if len(text) <= length:
        return text
    cut = length if killwords else text.rfind(" ", 0, length + 1)
    return text[: length if cut == -1 else cut] + ("..." if end is None else end)


def _dump(value: object, indent: int | str | None = None) -> str:
    """Nunjucks' `dump` filter: the value as JSON, as JavaScript's `JSON.stringify` writes it (an
    unknown variable: nothing, or `null` inside a list or mapping; what JSON has no form for: its text)."""
    import jinja2

    if isinstance(value, jinja2.Undefined):
        return ""
    if indent is None or indent == "" or indent == 0:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=_not_json)
    return json.dumps(value, ensure_ascii=False, indent=indent, default=_not_json)


def _not_json(value: object) -> str | None:
    import jinja2

    return None if isinstance(value, jinja2.Undefined) else str(value)


def render(text: str, variables: JsonObject) -> str:
    """`text` with promptfoo's Nunjucks `{{ var }}` filled (an unknown variable is empty, as in promptfoo)."""
    if "{{" not in text and "{%" not in text:
        return text
    import jinja2

    try:
        return str(_env().from_string(text).render(**variables))
    except jinja2.TemplateError as exc:
        raise DatasetError(f"cannot render the template {text[:60]!r}: {exc}") from None


class Prompt:
    """One promptfoo prompt: chat messages (role, template) and whether it loops over `_conversation`."""

    def __init__(self, label: str, messages: list[tuple[str, str]], uses_history: bool, template: str | None = None):
        self.label, self.messages, self.uses_history = label, messages, uses_history
        self.template = template  # a chat prompt that is JSON only once rendered (`{{ var | dump }}`)

    def rendered(self, variables: JsonObject) -> tuple[list[Message], str]:
        """(the messages before the last user message: system, few-shot examples; the last user
        message) for these vars."""
        if self.template is not None:
            return _split(_chat(render(self.template, variables)) or [("user", render(self.template, variables))])
        last = max((n for n, (role, _) in enumerate(self.messages) if role == "user"), default=None)
        before = self.messages if last is None else self.messages[:last]
        initial = [(r, render(t, variables)) for r, t in before]
        user = render(self.messages[last][1], variables) if last is not None else ""
        return [{"role": r, "content": text} for r, text in initial if text.strip()], user


def _split(messages: list[tuple[str, str]]) -> tuple[list[Message], str]:
    """Rendered chat messages as (those before the last user message, its text)."""
    last = max((n for n, (role, _) in enumerate(messages) if role == "user"), default=None)
    before = messages if last is None else messages[:last]
    user = messages[last][1] if last is not None else ""
    return [{"role": r, "content": text} for r, text in before if text.strip()], user


def _chat(text: str) -> list[tuple[str, str]] | None:
    """The (role, content) pairs of a chat prompt written as a JSON list of messages, else None."""
    try:
        messages = decode_json(text)
    except ValueError:
        return None
    if isinstance(messages, list) and messages and all(isinstance(m, dict) and "role" in m for m in messages):
        return [(str(m["role"]), text_of(m.get("content"))) for m in messages if isinstance(m, dict)]
    return None


def import_promptfoo(source: Path) -> Suite:
    """The suite a promptfoo config file makes (see the module docstring); a results file
    (`promptfoo eval -o results.json` or `.jsonl`) is its recorded conversations (`_promptfoo_results`)."""
    if source.suffix in (".json", ".jsonl") and log_reader(source) is read_promptfoo_results:
        return import_transcripts(source, log_format="promptfoo")
    config = _dereferenced(load_yaml(source, core=True), source)
    if not isinstance(config, dict):
        raise DatasetError(f"{source}:1: expected a promptfoo config (a mapping with prompts and tests)")
    base = source.parent
    prompts = _prompts(config.get("prompts"), base, source)
    default: JsonValue = config.get("defaultTest") or {}
    if isinstance(default, str):
        default = load_yaml(inside(base, base / default.removeprefix("file://"), f"{source}:1: defaultTest"), core=True)
    if not isinstance(default, dict):
        raise DatasetError(f"{source}:1: defaultTest: expected a mapping")
    mapping(default.get("vars"), f"{source}:1: defaultTest: vars")
    expand = not (as_object(default.get("options")) or {}).get("disableVarExpansion")
    raw_tests = _tests(config.get("tests"), base, source, expand)
    head, head_warning = _provider_transform(config.get("providers"))
    unmapped = Unmapped()
    tests: list[SuiteTest] = []
    for prompt in prompts:
        suffix = f"@{_slug(prompt.label)}" if len(prompts) > 1 else ""
        tests.extend(_prompt_tests(prompt, raw_tests, default, source, unmapped, suffix, head))
    if not tests:
        raise DatasetError(f"{source}:1: tests: no tests to import")
    seen: set[str] = set()
    for test in tests:
        test["id"] = unique(test["id"], seen)
    suite: Suite = {
        "name": str(config.get("description") or source.parent.name or source.stem),
        "description": f"Imported from promptfoo's {source.name}",
    }
    providers = _providers(config.get("providers"))
    targets = [spec for spec in map(provider_spec, providers) if spec]
    if targets:
        suite["execution"] = {"target": targets[0]} if len(targets) == 1 else {"targets": [*targets]}
    if providers:
        suite["metadata"] = {"promptfoo_providers": providers}
    settings, settings_warning = _provider_settings(config.get("providers"))
    if settings:
        suite.setdefault("metadata", {})["promptfoo_provider_settings"] = settings
    suite["tests"] = tests
    left_out = _ignored(config, default, raw_tests, unmapped.settings)
    for warning in (unmapped.warning(), left_out, settings_warning, head_warning):
        if warning:
            warnings.warn(warning, DatasetWarning, stacklevel=2)
    return suite


def _dereferenced(value: JsonValue, source: Path, root: JsonValue = None, seen: tuple[str, ...] = ()) -> JsonValue:
    """The config with each local `$ref` (`{$ref: '#/assertionTemplates/name'}`) replaced by
    what it points to (its other keys added over it), as promptfoo's ref parser does."""
    root = value if root is None else root
    if isinstance(value, list):
        return [_dereferenced(v, source, root, seen) for v in value]
    if not isinstance(value, dict):
        return value
    ref = value.get("$ref")
    if not (isinstance(ref, str) and ref.startswith("#")):
        return {k: _dereferenced(v, source, root, seen) for k, v in value.items()}
    if ref in seen:
        raise DatasetError(f"{source}:1: $ref {ref!r}: refers to itself")
    target = root
    for part in ref[1:].split("/")[1:]:
        key = part.replace("~1", "/").replace("~0", "~")
        if isinstance(target, list) and key.isdigit() and int(key) < len(target):
            target = target[int(key)]
        else:
            target = target.get(key) if isinstance(target, dict) else None
        if target is None:
            raise DatasetError(f"{source}:1: $ref {ref!r}: no such place in the config")
    resolved = _dereferenced(target, source, root, (*seen, ref))
    siblings = {k: _dereferenced(v, source, root, seen) for k, v in value.items() if k != "$ref"}
    return {**resolved, **siblings} if isinstance(resolved, dict) else resolved


_READ_TOP = {
    "description",
    "prompts",
    "providers",
    "tests",
    "defaultTest",
    "outputPath",
    "env",
    "sharing",
    "assertionTemplates",
}
_READ_TEST = {"vars", "assert", "description", "metadata", "provider", "threshold"}
#: A test's (and `defaultTest`'s) `options` applied: the output transform (`postprocess`: its old
#: name) and the grader of its judged checks (`provider`, when convoeval reads its id).
_READ_OPTIONS = {"transform", "postprocess", "provider"}


def _ignored(config: JsonObject, default: JsonObject, tests: list[JsonObject], asserts: Counter[str]) -> str | None:
    """The promptfoo settings the suite leaves out, with how often each was met."""
    ignored = Counter(k for k in config if k not in _READ_TOP)
    ignored.update(f"defaultTest.{k}" for k in default if k not in _READ_TEST | {"options"})
    options = as_object(default.get("options")) or {}
    ignored.update(f"defaultTest.options.{k}" for k in options if k not in {*_READ_OPTIONS, "disableVarExpansion"})
    ignored.update(f"tests[].{k}" for t in tests for k in t if k not in {*_READ_TEST, "options"})
    ignored.update(
        f"tests[].options.{k}" for t in tests for k in as_object(t.get("options")) or {} if k not in _READ_OPTIONS
    )
    ignored.update(asserts)
    if not ignored:
        return None
    listed = ", ".join(f"{k} ({n})" if n > 1 else k for k, n in sorted(ignored.items()))
    return f"promptfoo settings not imported: {listed}"


def _slug(text: str) -> str:
    return re.sub(r"[^\w.-]+", "-", text).strip("-")[:60] or "test"


# -- prompts and providers ----------------------------------------------------------------


def _prompts(raw: JsonValue, base: Path, source: Path) -> list[Prompt]:
    if raw is None:
        return [Prompt("prompt", [("user", "{{ prompt }}")], False)]
    items = raw if isinstance(raw, list) else [raw]
    prompts = []
    for n, item in enumerate(items, start=1):
        label = f"prompt-{n}"
        text = item
        if isinstance(item, dict):
            label = str(item.get("label") or item.get("id") or label)
            text = item.get("raw") or item.get("id")
        if not isinstance(text, str):
            raise DatasetError(f"{source}:1: prompts[{n - 1}]: expected text, file://..., or {{id, label}}")
        if not text.startswith("file://"):
            prompts.append(_parse_prompt(label, text))
            continue
        for path in _matching(base, text, f"{source}:1: prompts[{n - 1}]"):
            own = label if isinstance(item, dict) and item.get("label") else path.name
            texts = _prompt_file(path, source, n)
            for k, part in enumerate(texts, start=1):
                prompts.append(_parse_prompt(f"{own}-{k}" if len(texts) > 1 else own, part))
    return prompts


def _matching(base: Path, reference: str, where: str) -> list[Path]:
    """The file a `file://` reference names, or the files its glob matches (sorted), each in the
    config's folder, its repository or `--root` (`_inside`)."""
    path = base / reference.removeprefix("file://")
    if not any(c in reference for c in "*?["):
        return [inside(base, path, where)]
    paths = [inside(base, Path(found), where) for found in sorted(glob.glob(str(path), recursive=True))]
    if not paths:
        raise DatasetError(f"{where}: {reference}: no file matches")
    return paths


def _prompt_file(path: Path, source: Path, n: int) -> list[str]:
    """A prompt file's prompts: a `.txt` file's parts between `---` lines (promptfoo's
    `processTxtFile`), any other file whole."""
    if path.suffix in (".py", ".js", ".ts", ".mjs", ".cjs"):
        raise DatasetError(f"{source}:1: prompts[{n - 1}]: prompt functions ({path.name}) cannot be imported")
    if not is_file(path):
        raise DatasetError(f"{source}:1: prompts[{n - 1}]: {path}: no such file")
    text = read_text(path)
    if path.suffix in (".yaml", ".yml"):
        return [json.dumps(parse_yaml(text, path, core=True))]
    if path.suffix == ".txt":
        parts = re.split(r"^[ \t]*---[ \t]*$", text, flags=re.MULTILINE)
        return [part.strip() for part in parts if part.strip()] or [text]
    return [text]


def _parse_prompt(label: str, text: str) -> Prompt:
    uses_history = "_conversation" in text
    stripped = _LOOP.sub("", text)
    chat = _chat(stripped)
    if chat is not None:
        return Prompt(label, chat, uses_history)
    if stripped.lstrip().startswith("[") and "{{" in stripped:  # e.g. `{"content": {{ question | dump }}}`
        return Prompt(label, [], uses_history, template=stripped)
    return Prompt(label, [("user", stripped.strip())], uses_history)


def _providers(raw: JsonValue) -> list[str]:
    items = raw if isinstance(raw, list) else [raw] if raw else []
    out = []
    for item in items:
        provider = item.get("id") if isinstance(item, dict) else item
        if isinstance(provider, str):
            out.append(provider)
    return out


def _provider_transform(raw: JsonValue) -> tuple[list[str], str | None]:
    """The providers' output `transform` (it runs before a test's), and the warning when it
    differs between providers: the targets of a suite share its checks."""
    items = raw if isinstance(raw, list) else [raw] if raw else []
    transforms = {str(item.get("transform") or "").strip() if isinstance(item, dict) else "" for item in items}
    if transforms <= {""}:
        return [], None
    if len(transforms) == 1:
        return [transforms.pop()], None
    return [], "promptfoo provider transforms not applied: they differ between the providers"


#: Provider settings never copied into the eval file (they may hold secrets).
_SECRET = re.compile(r"key|secret|password|auth|header|cookie|^(access_?|bearer_?|api_?)?token$", re.IGNORECASE)


def _provider_settings(raw: JsonValue) -> tuple[JsonObject, str | None]:
    """Each provider's `label` and `config` (secret-looking keys left out), and the warning
    that names what no target gets."""
    settings: JsonObject = {}
    named: list[str] = []
    for item in raw if isinstance(raw, list) else [raw]:
        if not isinstance(item, dict) or not isinstance(item.get("id"), str):
            continue
        config = as_object(item.get("config")) or {}
        kept: JsonObject = {k: v for k, v in config.items() if not _SECRET.search(k)}
        if item.get("label"):
            kept["label"] = item["label"]
        if kept:
            settings[str(item["id"])] = kept
        if config or item.get("label"):
            named.append(f"{item['id']} ({', '.join(['label'] * bool(item.get('label')) + sorted(config))})")
    if not named:
        return settings, None
    return settings, (
        "promptfoo provider settings not applied to the targets (an eval file names targets only): "
        + "; ".join(named)
        + ". Put them in a targets file (base_url, temperature, max_tokens, ...) and run with --targets"
    )


# -- tests -----------------------------------------------------------------------------------


def _tests(raw: JsonValue, base: Path, source: Path, expand: bool = True) -> list[JsonObject]:
    """The test list; a var given as a list makes one test per value (promptfoo's var
    expansion, off with `defaultTest.options.disableVarExpansion`)."""
    raw = [raw] if isinstance(raw, str) else raw
    if isinstance(raw, list):
        raw = [t for item in raw for t in (_test_file(item, base, source) if isinstance(item, str) else [item])]
    tests = [t for t in as_list(raw) if isinstance(t, dict)]
    if not isinstance(raw, list) or len(tests) != len(raw):
        raise DatasetError(f"{source}:1: tests: expected a list of tests (or file:// a YAML/JSON/CSV file of them)")
    for n, test in enumerate(tests):
        for key in ("vars", "metadata"):
            mapping(test.get(key), f"{source}:1: tests[{n}]: {key}")
    if not expand:
        return tests
    out: list[JsonObject] = []
    for test in tests:
        variables = as_object(test.get("vars")) or {}
        lists = {k: v for k, v in variables.items() if isinstance(v, list) and v}
        if not lists:
            out.append(test)
            continue
        for values in itertools.product(*lists.values()):
            out.append({**test, "vars": {**variables, **dict(zip(lists, values, strict=True))}})
    return out


def _test_file(item: str, base: Path, source: Path) -> list[JsonValue]:
    """The tests a `tests:` entry names: a CSV, JSONL, YAML or JSON file, or a glob of them."""
    tests: list[JsonValue] = []
    for found in _matching(base, item, f"{source}:1: tests"):
        if found.suffix == ".csv":
            tests.extend(read_csv_tests(found, KNOWN_TYPES))
        elif found.suffix == ".jsonl":
            tests.extend(record for _, record in read_jsonl(found))
        else:
            loaded = load_yaml(found, core=True)
            tests.extend(loaded if isinstance(loaded, list) else [loaded])
    return tests


_VAR_REFERENCE = re.compile(r"\{\{\s*(\w+)\s*\}\}")


def _vars(default: JsonObject, test: JsonObject, base: Path) -> JsonObject:
    """A test's vars over `defaultTest`'s, as promptfoo hands them to a prompt: a `file://` value
    read (`_file_var`), one trailing newline of a text value dropped (a YAML `|` block's), and
    `{{ other }}` in a value replaced by that var (up to five passes)."""
    variables: JsonObject = {**(as_object(default.get("vars")) or {}), **(as_object(test.get("vars")) or {})}
    for key, value in variables.items():
        if isinstance(value, str) and value.startswith("file://"):
            variables[key] = _file_var(key, value, base)
        elif isinstance(value, str) and value.endswith("\n"):
            variables[key] = value[:-1]
    for _ in range(5):
        changed = False
        for key, value in variables.items():
            match = _VAR_REFERENCE.search(value) if isinstance(value, str) else None
            if isinstance(value, str) and match and match.group(1) in variables:
                variables[key] = value.replace(match.group(0), str(variables[match.group(1)]), 1)
                changed = True
        if not changed:
            break
    return variables


def _file_var(name: str, value: str, base: Path) -> str:
    """A `file://` var as promptfoo's `renderPrompt` loads it: YAML as its JSON text, any other
    file's text stripped; scripts (var functions) and media cannot be imported."""
    path = base / value.removeprefix("file://")
    if path.suffix in (".py", ".js", ".ts", ".mjs", ".cjs"):
        raise DatasetError(f"vars.{name}: {value}: var functions ({path.name}) cannot be imported")
    path = inside(base, path, f"vars.{name}")
    if path.suffix in (".yaml", ".yml"):
        return json.dumps(load_yaml(path, core=True), ensure_ascii=False, separators=(",", ":"))
    return read_text(path).strip()


def _provider_id(test: JsonObject, default: JsonObject) -> tuple[str | None, JsonObject]:
    provider = test.get("provider") or default.get("provider")
    if isinstance(provider, dict):
        provider_id = provider.get("id")
        return (provider_id if isinstance(provider_id, str) else None), as_object(provider.get("config")) or {}
    return (provider if isinstance(provider, str) else None), {}


def _prompt_tests(
    prompt: Prompt,
    raw_tests: list[JsonObject],
    default: JsonObject,
    source: Path,
    unmapped: Unmapped,
    suffix: str,
    head: list[str],
) -> list[SuiteTest]:
    """One prompt's tests: conversations grouped by conversationId, the rest one by one (`head`:
    the provider's transform, which runs before a test's)."""
    base = source.parent
    groups: OrderedDict[str, list[JsonObject]] = OrderedDict()
    out: list[SuiteTest] = []
    for n, test in enumerate(raw_tests, start=1):
        conversation = (as_object(test.get("metadata")) or {}).get("conversationId")
        with _located(source, f"tests[{n - 1}]"):
            if _provider_id(test, default)[0] == SIMULATED_USER:
                out.append(_simulated(prompt, test, default, source, unmapped, n, suffix, head))
            elif conversation is not None or prompt.uses_history:
                groups.setdefault(str(conversation or "conversation"), []).append(test)
            else:
                out.append(_single(prompt, test, default, base, unmapped, n, suffix, head))
    for name, tests in groups.items():
        with _located(source, f"conversation {name!r}"):
            out.append(_conversation(prompt, name, tests, default, base, unmapped, suffix, head))
    return out


@contextmanager
def _located(source: Path, where: str) -> Iterator[None]:
    """A `DatasetError` of one test (its checks' values) says which file and test it is about."""
    try:
        yield
    except DatasetError as exc:
        if str(exc).startswith(str(source)):
            raise
        raise DatasetError(f"{source}:1: {where}: {exc}") from None


def _asserts(
    test: JsonObject, default: JsonObject, base: Path, unmapped: Unmapped, head: list[str], turn: bool = False
) -> list[JsonObject]:
    """The test's checks (`defaultTest`'s first), set to decide as promptfoo does: without a
    threshold each `required` at its own pass mark (the test's threshold is 0); with one, a
    single-test's threshold is the test's, a conversation turn's a required `composite` of them
    (their weighted mean, promptfoo's score, must reach it; the conversation's threshold is 0).
    Each grades what the transforms make of the reply (`transformed`): `head` (the provider's),
    the test's, its own."""
    variables = _vars(default, test, base)
    raw: list[JsonValue] = [*_listed(default.get("assert")), *_listed(test.get("assert"))]
    options = {**(as_object(default.get("options")) or {}), **(as_object(test.get("options")) or {})}
    test_transform = options.get("transform") or options.get("postprocess")
    mapped = [
        (a, [*head, *(t for t in (test_transform, own) if isinstance(t, str) and t.strip())])
        for a, own in map_asserts(raw, render, variables, base, unmapped, provider_spec(options.get("provider")))
    ]
    threshold = _threshold(test, default)
    if threshold is not None and not turn:
        return [transformed(a, chain, variables, base) for a, chain in mapped]
    marked = [({**a, "min_score": a.get("min_score", DEFAULT_THRESHOLD)}, chain) for a, chain in mapped]
    if threshold is None:  # each at its own pass mark, not the test's 0; weight 0 never fails
        return [transformed({**a, "required": a.get("weight") != 0}, chain, variables, base) for a, chain in marked]
    nested: list[JsonValue] = [transformed(a, chain, variables, base) for a, chain in marked]
    composite: JsonObject = {"type": "composite", "name": "promptfoo threshold", "assertions": nested}
    return [{**composite, "min_score": threshold, "required": True}] if nested else []


def _listed(value: JsonValue) -> list[JsonValue]:
    """A list setting; one item given alone is a list of one (missing or empty: none)."""
    return value if isinstance(value, list) else [value] if value else []


def _common(test: JsonObject, default: JsonObject, test_id: str) -> SuiteTest:
    out: SuiteTest = {"id": test_id}
    if test.get("description"):
        out["metadata"] = {"description": str(test["description"])}
    threshold = _threshold(test, default)
    out["execution"] = {"threshold": 0 if threshold is None else threshold}
    return out


def _threshold(test: JsonObject, default: JsonObject) -> float | None:
    """The promptfoo test's `threshold` (or `defaultTest`'s); None: it passes when each check does."""
    threshold = test.get("threshold", default.get("threshold"))
    return threshold if isinstance(threshold, (int, float)) else None


def _single(
    prompt: Prompt,
    test: JsonObject,
    default: JsonObject,
    base: Path,
    unmapped: Unmapped,
    n: int,
    suffix: str,
    head: list[str],
) -> SuiteTest:
    system, user = prompt.rendered(_vars(default, test, base))
    out = _common(test, default, f"{_slug(str(test.get('description') or f'test-{n}'))}{suffix}")
    out["input"] = [*system, {"role": "user", "content": user}]
    out["assertions"] = _asserts(test, default, base, unmapped, head)
    metadata = as_object(test.get("metadata"))
    if metadata:
        out["metadata"] = {**out.get("metadata", {}), **metadata}
    return out


def _conversation(
    prompt: Prompt,
    name: str,
    tests: list[JsonObject],
    default: JsonObject,
    base: Path,
    unmapped: Unmapped,
    suffix: str,
    head: list[str],
) -> SuiteTest:
    system, _ = prompt.rendered(_vars(default, tests[0], base))
    out = _common(tests[0], default, f"{_slug(name)}{suffix}")
    out["execution"] = {"threshold": 0}  # each turn decides as its promptfoo test does (`_asserts`)
    if system:
        out["input"] = system
    out["mode"] = "conversation"
    turns: list[Turn] = []
    for test in tests:
        _, user = prompt.rendered(_vars(default, test, base))
        turn: Turn = {"input": user}
        assertions = _asserts(test, default, base, unmapped, head, turn=True)
        if assertions:
            turn["assertions"] = assertions
        metadata: JsonObject = {
            k: v for k, v in (as_object(test.get("metadata")) or {}).items() if k != "conversationId"
        }
        if test.get("description"):
            metadata["description"] = str(test["description"])
        threshold = _threshold(test, default)
        if threshold is not None:
            metadata["threshold"] = threshold
        if metadata:
            turn["metadata"] = metadata
        turns.append(turn)
    out["turns"] = turns
    out["metadata"] = {"conversationId": name}
    return out


def _simulated(
    prompt: Prompt,
    test: JsonObject,
    default: JsonObject,
    source: Path,
    unmapped: Unmapped,
    n: int,
    suffix: str,
    head: list[str],
) -> SuiteTest:
    variables = _vars(default, test, source.parent)
    _, config = _provider_id(test, default)
    instructions = render(str(config.get("instructions") or "{{ instructions }}"), variables).strip()
    if not instructions:
        instructions = "Get help from the assistant with your request."
    system, _ = prompt.rendered(variables)
    out = _common(test, default, f"{_slug(str(test.get('description') or f'simulated-{n}'))}{suffix}")
    if system:
        out["input"] = system
    elif prompt.messages:  # a text prompt is the agent's instructions, as promptfoo sends it
        out["input"] = [{"role": "system", "content": render(prompt.messages[0][1], variables)}]
    max_turns = as_int(config.get("maxTurns", DEFAULT_MAX_TURNS))
    if max_turns is None:
        where = f"{source}:1: {test.get('description') or f'tests[{n - 1}]'}: provider config: maxTurns"
        raise DatasetError(f"{where}: expected a whole number, got {config.get('maxTurns')!r:.60}")
    out["simulated_user"] = {"objective": instructions, "max_turns": max_turns}
    assertions = _asserts(test, default, source.parent, unmapped, head)
    if assertions:
        out["assertions"] = assertions
    return out
