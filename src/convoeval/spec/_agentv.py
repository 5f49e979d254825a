"""AgentV spellings and conveniences, turned into the one shape the models validate.

Applied to the raw data of an eval file before validation, keeping every value's line:
legacy key names (`evaluators`, `eval_cases`, v5 `assert`, `metric`), v5 `vars` (its other
forms in `_agentv_v5.py`),
metadata-only fields, `${{ VAR }}` references (unset: empty, with a warning), `input_files`
(the test's own, else the suite's), `type: file` content blocks (looked up as AgentV does, in
`_agentv_paths.py`), v4.42 `vars` (`_agentv_vars.py`), workspace forms
(`_agentv_workspace.py`), custom assertion types, and a top-level `target` (`file://` test
includes are read with the tests, in `_tests.py`). What AgentV adds when it sends a test (its
default system prompt) is in `_agentv_defaults.py`.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from ._agentv_env import agentv_config_problems, substitute_env
from ._agentv_environment import Testbed, agentv_testbed
from ._agentv_options import OPTIONS_KEY, TestOptions, read_options
from ._agentv_paths import find_attachment, is_agentv_file, search_roots
from ._agentv_prompts import Prompt, read_prompts, with_prompts
from ._agentv_templates import expand_templates
from ._agentv_v5 import WeightedCriteria, v5_assertion, v5_run, v5_suite
from ._agentv_vars import fill_test_vars, fill_vars
from ._agentv_workspace import agentv_workspace
from ._errors import Problem, field_path
from ._lines import DataPath, Key, LineMap

#: Fields AgentV's validator knows that change nothing at run time: kept under `metadata`.
SUITE_METADATA = frozenset(
    {
        "tags",
        "version",
        "governance",
        "$schema",
        "author",
        "license",
        "requires",
        "note",
        "suite",
        "conversation_id",
        "dataset",  # AgentV v4's older name of the suite
        "evaluator",  # AgentV v4.15 reads no suite-level `evaluator` (its yaml-parser ignores it)
        "preprocessors",  # convert files an agent writes; convoeval's targets return text only
    }
)
#: AgentV v4's `preprocessors` (the suite's, a grader's): `llm-grader.ts` converts the file blocks
#: of a reply for its judge with them (`content-preprocessor.ts`); convoeval does not.
PREPROCESSORS_IGNORED = (
    "ignored: this AgentV form is not supported (AgentV converts a reply's file blocks with these programs "
    "before an llm-grader's judge reads them; convoeval's judge gets the reply as the target gave it)"
)
TEST_METADATA = frozenset({"tags", "conversation_id", "governance", "note", "version", "author", "description"})

#: AgentV v5 (promptfoo-style) fields that convoeval does not read.
V5_FIELDS = frozenset(
    {
        "vars",
        "prompts",
        "providers",
        "default_test",
        "evaluate_options",
        "options",
        "scenarios",
        "defaultTest",
        "derivedMetrics",
    }
)

#: What AgentV v5.3.1 refuses in a target object of an eval file's `targets` (its
#: `parseEvalTargetRef`, `rejectSingleTargetTestbedFields`), and its `hooks`, which convoeval's
#: targets do not have.
_TARGET_REFUSED = {
    "name": "target field 'name' has been removed. Use 'id' instead (as AgentV says)",
    "label": "target field 'label' has been removed. Use 'id' instead (as AgentV says)",
    "environment": "not supported here: author `environment` at suite or test scope, not under targets (as AgentV says)",
    "container": "not supported: use an environment recipe for testbed setup (as AgentV says)",
    "install": "not supported: use `environment.setup` (as AgentV says)",
    "hooks": "this AgentV form is not supported: a target's own `hooks`; use the suite's `extensions` or `workspace` hooks",
}

_IDENTITY_PROMPT = re.compile(r"\s*\{\{\s*input\s*\}\}\s*")
#: AgentV v5's task prompt file of a test without `input` (`prompt-md-fallback.ts`).
PROMPT_MD = "PROMPT.md"
_IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".gif", ".webp")
#: A grader prompt file AgentV accepts names one of these (`validation/prompt-validator.ts`, v4.15.0 to
#: v5.3.1-next.1; `output_text` and `expected_output_text` are v4.15's aliases); else it skips the test.
_PROMPT_NEEDS = frozenset({"output", "expected_output", "output_text", "expected_output_text"})
_PROMPT_VARIABLE = re.compile(r"\{\{\s*([a-zA-Z0-9_]+)\s*\}\}")
_JUDGED_TYPES = ("llm-rubric", "llm-grader", "llm_grader", "llm-judge", "llm_judge")  # a tuple: `type` may be a list
#: Attachments larger than this are refused (they would be sent in every call).
MAX_ATTACHMENT_BYTES = 1_000_000


def agentv_key(path: DataPath, key: Key) -> Key:
    """The name a key of an eval file is stored under: `assert`/`evaluators` -> `assertions`
    (on a suite, test, turn or nested assertion), `eval_cases` -> `tests`."""
    if key in ("assert", "evaluators"):
        if not path or (len(path) >= 2 and path[-2] in ("tests", "turns", "assertions")):
            return "assertions"
    elif key == "eval_cases" and not path:
        return "tests"
    return key


#: Assertion types AgentV renamed (judge -> grader); the old names still load.
LEGACY_TYPES = {
    "llm_judge": "llm-grader",
    "llm-judge": "llm-grader",
    "code_judge": "code-grader",
    "code-judge": "code-grader",
}
#: AgentV's names of metric limits (`grader-parser.ts`: token-usage and cost), as convoeval's.
AGENTV_FIELDS = {
    "token-usage": {
        "max_total": "max_tokens",
        "maxTotal": "max_tokens",
        "max_input": "max_input_tokens",
        "maxInput": "max_input_tokens",
        "max_output": "max_output_tokens",
        "maxOutput": "max_output_tokens",
    },
    "cost": {"budget": "max_usd"},
}


def legacy_assertion(item: dict) -> dict:
    """`type: code_judge` with `script: [...]` -> `type: code-grader` with `command: [...]`."""
    if "metric" in item and "name" not in item:  # v5 (promptfoo) name of an assertion
        item = {**item, "name": item["metric"]}
        del item["metric"]
    if "id" in item and "name" not in item and isinstance(item["id"], str):  # AgentV v4.42: a label
        item = {**item, "name": item["id"]}
        del item["id"]
    kind = item.get("type")
    renamed = AGENTV_FIELDS.get(kind) if isinstance(kind, str) else None
    if renamed and any(key in item for key in renamed):
        item = {renamed.get(key, key): value for key, value in item.items()}
    v5 = v5_assertion(item, kind)
    if v5 is not None:
        return v5
    new_type = LEGACY_TYPES.get(kind) if isinstance(kind, str) else None
    if new_type is None:
        return item
    item = {**item, "type": new_type}
    if new_type == "code-grader" and "script" in item and "command" not in item:
        item["command"] = item.pop("script")
    return item


_SCRIPT_SUFFIXES = (".ts", ".js", ".mts", ".mjs")


def custom_assertion(item: dict, base: Path) -> dict | None:
    """AgentV's custom assertion types: `type: NAME` with a `.agentv/assertions/NAME.ts` (or
    .js, .mts, .mjs) in the eval file's folder or one above it runs that file as a
    code-grader with `bun run`, read and fed as AgentV's code-graders (AgentV's
    `assertion-discovery.ts`); None when there is none."""
    name = item.get("type")
    if not isinstance(name, str) or not name or "/" in name or name.startswith("."):
        return None
    folder = base.resolve()
    for candidate in (folder, *folder.parents):
        for suffix in _SCRIPT_SUFFIXES:
            script = candidate / ".agentv" / "assertions" / f"{name}{suffix}"
            if os.path.isfile(script):  # False for a name too long, where Path.is_file raises
                return {
                    **item,
                    "type": "code-grader",
                    "command": ["bun", "run", str(script)],
                    "name": item.get("name") or name,
                    "agentv_protocol": True,
                }
    return None


def v5_message(key: str) -> str:
    return (
        f"this AgentV form is not supported: `{key}` (AgentV v5, promptfoo-style); convoeval reads AgentV v4 "
        "files and v5's `vars`, `assert`, `default_test`, `providers`, `evaluate_options`, `environment` and "
        "`extensions` under the prompt `{{ input }}`: see docs/guides/agentv.md"
    )


class AgentvNormalizer:
    """Rewrites an eval file's raw data in place: the suite's own keys (`suite`), then each
    test (`test`); problems go to `problems`, located with `lines` (the loader sets it to the
    map of the part being rewritten: a test's own lines, whose parent holds the suite's)."""

    def __init__(self, path: Path, problems: list[Problem], lines: LineMap | None = None):
        self.path = path
        self.base = path.parent
        self.problems = problems
        self.lines = lines if lines is not None else LineMap()
        self.inline: list[tuple[DataPath, dict]] = []  # targets the eval file declares (AgentV main)
        self.declared: list[tuple[DataPath, dict]] = []  # those it declares in `targets` (v5.3.1)
        self.prompts: list[Prompt] | None = None  # the suite's v5 `prompts` (not only the identity prompt)
        self.warnings: list[str] = []  # logged by the loader once the file is read
        self.agentv = is_agentv_file(path)
        self.suite_input = False  # the suite gives an `input` (set by the loader)
        self.suite_checks = False  # the suite gives assertions (set by the loader)
        self.suite_input_files: object = None  # the suite's `input_files` (set by the loader)
        self.default_vars: dict = {}  # AgentV v5's `default_test.vars` (set by the loader)
        self.found: list[str] = []  # the attachments read since it was last emptied (absolute paths)
        self.suite_found: list[str] = []  # those of the suite's `input`
        self.testbed: Testbed | None = None  # AgentV v5's `environment` and `extensions` of the suite
        self.suite_asserts: list[object] = []  # the suite's assertions, as written (set by `suite`)
        self.default_options = TestOptions()  # AgentV v5's `default_test.options` (set by the loader)
        self.default_asserts: list[object] = []  # the suite's assertions as the tests see them (the loader's)

    def add(self, where: DataPath, message: str, field: DataPath | None = None) -> None:
        self.problems.append(self.lines.problem(where, field_path(field or where), message))

    def suite(self, data: dict) -> dict:
        """The suite's keys other than its list of tests, rewritten (and returned)."""
        if self.agentv:
            self.problems += agentv_config_problems(self.path)
        providers = data.get("providers")
        if self.agentv and isinstance(providers, list) and any(isinstance(p, dict) for p in providers):
            data["providers"] = self.inline_providers(providers)  # before `{{ env.NAME }}` is filled
        if "targets" in data:
            self.suite_targets(data)
        if isinstance(data.get("target"), dict):
            self.suite_target(data)
        if self.agentv and "env" in data:  # AgentV (v5.3, main) knows the key and reads nothing of it
            self.warn(("env",), "ignored, as AgentV ignores it (a setup's variables go in `environment.env`)")
            del data["env"]  # never filled in nor kept: it names secrets
        if self.agentv and "preprocessors" in data:  # kept in metadata (SUITE_METADATA), said once
            self.warn(("preprocessors",), PREPROCESSORS_IGNORED)
        if self.agentv and "graders" in data:  # v5.3.1's validator knows it, and nothing reads it
            self.warn(("graders",), "ignored, as AgentV v5.3.1 ignores it in an eval file (main refuses it)")
            del data["graders"]
        data = substitute_env(data, (), self.lines, self.problems, warnings=self.warnings)
        chosen = self.main_defaults(data)
        _move_metadata(data, SUITE_METADATA)
        if "prompts" in data and not is_identity_prompt(prompts := data.pop("prompts")):  # read with the tests
            for i, message in read_prompts(prompts, self.base)[1]:
                self.add(("prompts",) if i is None else ("prompts", i), message)
        v5_suite(data, self)
        self.templates(data, ())
        asserts = data.get("assertions")
        self.suite_asserts = asserts if isinstance(asserts, list) else []
        if "target" in data and isinstance(data.get("target"), str):
            execution = data.setdefault("execution", {}) if data.get("execution") is not None else None
            if execution is None:
                execution = data["execution"] = {}
            if isinstance(execution, dict):
                if "target" not in execution:
                    self.lines.add(("execution", "target"), *self.lines.locate(("target",)))
                execution.setdefault("target", data.pop("target"))
        if chosen:  # AgentV main: `defaults: {provider, grader}` (after the suite's own targets and judge)
            if data.get("execution") is None:
                data["execution"] = {}
            execution = data["execution"]
            for key, field in (("provider", "target"), ("grader", "judge")):
                if not isinstance(execution, dict) or key not in chosen or execution.get(field):
                    continue
                if not (field == "target" and execution.get("targets")):
                    execution[field] = chosen[key]
                    self.lines.add(("execution", field), *self.lines.locate(("defaults", key)))
        self.inline_targets(data.get("execution"))
        self.fail_on_error(data.get("execution"))
        files = data.pop("input_files", None)  # suite-level: attached to each test's input (see `test`)
        if files is not None and (not isinstance(files, list) or not all(isinstance(f, str) for f in files)):
            self.add(("input_files",), "must be a list of file paths")
        self.found = []
        self.messages(data.get("input"), ("input",), "user")
        self.suite_found = self.found
        self.workspace(data, ())
        self.environment(data, ())
        return data

    def inline_targets(self, execution: object) -> None:
        """AgentV v4.42's targets written inline in `execution.targets`: refused, saying why."""
        targets = execution.get("targets") if isinstance(execution, dict) else None
        if not isinstance(targets, list):
            return
        for i, target in enumerate(targets):
            if isinstance(target, dict):
                self.add(
                    ("execution", "targets", i),
                    "this AgentV form is not supported: a target written inline in `execution.targets` (with its "
                    "own `use_target` and hooks); define it in the targets file and name it here",
                )
                targets[i] = str(target.get("name", ""))

    def fail_on_error(self, execution: object) -> None:
        """AgentV's `execution.fail_on_error` (v4.44, `config-loader.ts`): `false` is the
        default; `true` halts AgentV's run at the first execution error and marks the tests not
        yet run as errors, which convoeval does not do (it runs every test): refused."""
        if not isinstance(execution, dict) or "fail_on_error" not in execution:
            return
        if execution["fail_on_error"] is True:
            self.add(
                ("execution", "fail_on_error"),
                "this AgentV form is not supported: `fail_on_error: true` (AgentV stops at the first execution "
                "error and fails the tests not yet run; convoeval runs every test and marks only the failing "
                "one `execution_error`); remove it or set it to false",
            )
        del execution["fail_on_error"]

    def workspace(self, data: dict, path: DataPath) -> None:
        """AgentV's workspace forms (a shared file, list commands, `repo:`...) as convoeval's."""
        if "workspace" not in data:
            return
        where = (*path, "workspace")

        def report(sub: tuple[str | int, ...], message: str) -> None:
            self.add((*where, *sub), message)

        value = agentv_workspace(
            data["workspace"], self.base, report, self.agentv, lambda v: substitute_env(v, where, self.lines, [])
        )
        if value is None:
            del data["workspace"]
        else:
            data["workspace"] = value

    def suite_testbed(self, raw: object) -> None:
        """The suite's testbed, read before its tests (its problems are reported with the suite's keys)."""
        if isinstance(raw, dict):
            data = substitute_env(dict(raw), (), LineMap(), [])
            self.testbed = agentv_testbed(data, self.base, lambda sub, message: None, lambda v: v)

    def environment(self, data: dict, path: DataPath) -> None:
        """AgentV v5's `environment` recipe and the suite's `extensions`, as a `workspace`: the
        suite's (kept in `testbed`), and each test's with its own id, input and metadata."""

        def report(sub: tuple[str | int, ...], message: str) -> None:
            self.add((*path, *sub), message)

        where = (*path, "environment")
        testbed = agentv_testbed(
            data, self.base, report, lambda v: substitute_env(v, where, self.lines, []), self.testbed if path else None
        )
        if testbed is not None:
            data["workspace"] = testbed.workspace(self.base, data if path else None)

    def inline_providers(self, entries: list) -> list[object]:
        """AgentV main's providers declared in the eval file (`{id: PROVIDER, label: NAME, ...}`,
        config-loader.ts parseInlineProviderRefs) are targets of this suite: kept as written in
        `inline` (where, entry), read by the loader as a providers file's entries; the list names
        them (by label, else id)."""
        self.inline = [(("providers", i), e) for i, e in enumerate(entries) if isinstance(e, dict)]
        return [str(e.get("label") or e.get("id") or "") if isinstance(e, dict) else e for e in entries]

    def templates(self, data: dict, path: DataPath) -> None:
        """AgentV's assertion templates (`{include: NAME}` items) in the suite's or a test's
        assertions, expanded (`_agentv_templates`)."""
        found = data.get("assertions")
        if isinstance(found, list):
            data["assertions"] = expand_templates(found, (*path, "assertions"), self.base, self.lines, self.add)

    def suite_targets(self, data: dict) -> None:
        """AgentV v5.3.1's top-level `targets` (its `config-loader.ts` `parseEvalTargetRef`; main
        renamed it `providers`): target names, or definitions `{id, provider, ...}` written as in
        a targets file (kept in `declared`, read by the loader), each named by its `id`.
        The list becomes `providers`' list of names; what AgentV refuses, and target `hooks`,
        are problems."""
        entries = data.pop("targets")
        where = ("targets",)
        if "providers" in data:
            self.add(where, "give the targets once: `targets` or `providers`")
            return
        entries = entries if isinstance(entries, list) else [entries]
        names: list[object] = []
        for i, entry in enumerate(entries):
            self.lines.add(("providers", i), *self.lines.locate((*where, i)))
            if isinstance(entry, str) and entry.startswith("file://"):
                self.add((*where, i), "a `file://` list of targets is a project config's (.agentv/config.yaml), "
                         "not an eval file's: name the targets, or declare them, here")  # fmt: skip
                continue
            if isinstance(entry, str) and entry.strip():
                names.append(entry.strip())
                continue
            if not isinstance(entry, dict):
                self.add((*where, i), "use a target name or a target object {id, provider, ...} (as AgentV says)")
                continue
            name, refused = entry.get("id"), self.refused((*where, i), entry)
            if isinstance(name, str) and name.strip():
                names.append(self.declare((*where, i), entry, name.strip()))
            elif not refused:
                self.add((*where, i), "a target object requires an 'id' field")
        if names:
            self.lines.add(("providers",), *self.lines.locate(where))
            data["providers"] = names

    def suite_target(self, data: dict) -> None:
        """AgentV v5.3.1's top-level `target` written as a mapping (its README's quickstart;
        `yaml-parser.ts` `parseEvalTargetSpec`): a target of this suite named by its `id` (else
        its `extends`, else `eval-local-target`), and the suite's target. `extends` (a target over another's
        settings) and what AgentV refuses are problems."""
        entry = data["target"]
        given = [v.strip() for v in (entry.get("id"), entry.get("extends")) if isinstance(v, str) and v.strip()]
        name = (given or ["eval-local-target"])[0]
        if "extends" in entry:
            self.add(("target", "extends"), "this AgentV form is not supported: `extends` (a target over another "
                     "target's settings); write the whole target here, or define it in the targets file")  # fmt: skip
        self.refused(("target",), entry)
        data["target"] = self.declare(("target",), entry, name)

    def refused(self, where: DataPath, entry: dict) -> bool:
        """Whether a target written in the eval file has what AgentV refuses, or `hooks` (each a problem)."""
        found = [key for key in _TARGET_REFUSED if key in entry]
        for key in found:
            self.add((*where, key), _TARGET_REFUSED[key])
        return bool(found)

    def declare(self, where: DataPath, entry: dict, name: str) -> str:
        """A target written in the eval file (v5.3.1's `targets` item or `target` mapping): kept
        in `declared` when it defines one (`provider` or `use_target`); its name."""
        if "provider" in entry or "use_target" in entry:
            if not self.agentv:
                self.add(where, "targets declared inline are read in an AgentV project only (see `providers`)")
            self.declared.append((where, {**entry, "id": name}))
        return name

    def main_defaults(self, data: dict) -> dict[str, str]:
        """An AgentV file's `defaults` (removed from `data`): on AgentV's main branch
        `{provider, grader}`, the suite's default target and grader (`yaml-parser.ts`
        readSuiteDefaults), returned; anything else is ignored with a warning, as AgentV v4 and
        v5.3 ignore it (a place for YAML anchors), v5.3.1's `{target, grader}` (its documented
        eval-definition graph, which main refuses: "defaults.target has been removed") among them."""
        if not self.agentv or "defaults" not in data:
            return {}
        found = data["defaults"]
        chosen = {}
        if isinstance(found, dict) and "target" not in found:
            chosen = {k: v.strip() for k in ("provider", "grader") if isinstance(v := found.get(k), str) and v.strip()}
        if not chosen:
            self.warn(("defaults",), "ignored, as AgentV ignores it (a place for YAML anchors)")
        del data["defaults"]
        return chosen

    def read_prompts(self, raw: object) -> None:
        """The suite's v5 `prompts` (None: only the identity prompt, or none), before its tests."""
        self.prompts = (
            None if raw is None else read_prompts(substitute_env(raw, ("prompts",), LineMap(), []), self.base)[0]
        )

    def with_prompts(self, test: object) -> list[object]:
        """The test once per v5 prompt of the suite (itself when the suite has none)."""
        if not self.prompts or not isinstance(test, dict):
            return [test]
        return list(with_prompts(test, self.prompts, self.default_vars))

    def test(self, test: dict, path: DataPath) -> None:
        _move_metadata(test, TEST_METADATA)
        if "run" in test:
            v5_run(test, path, self)
        variables = test.get("vars")
        if self.default_vars and (variables is None or isinstance(variables, dict)):  # v5 `default_test.vars`
            variables = test["vars"] = {**self.default_vars, **(variables or {})}
        v5 = isinstance(variables, dict) and (
            self.prompts is not None or ("input" in variables and "input" not in test)
        )
        if v5:  # v5: `vars: {input, expected_output, ...}` under the identity prompt, or its prompts
            self.v5_vars(test, variables, path)  # type: ignore[arg-type]  # a dict: `v5`
        elif isinstance(variables, dict):  # AgentV v4.42: per-test templating
            fill_test_vars(test, variables)
        if "reference_answer" in test and "expected_output" not in test:  # AgentV's older name
            test["expected_output"] = test.pop("reference_answer")
            self.lines.add((*path, "expected_output"), *self.lines.locate((*path, "reference_answer")))
        self.templates(test, path)
        self.test_options(test, path)
        suite_files = self.suite_input_files
        if self.agentv and "input" not in test and "turns" not in test and "transcript" not in test:
            suite_files = self.prompt_md(test, path)
        files = test.pop("input_files", None)
        if files is not None:
            self.input_files(test, files, path)
        elif (suite_files := self._suite_files(test, suite_files)) is not None:  # AgentV: with the test's own text
            self.input_files(test, suite_files, path, ("input_files",))
        self.found = []
        self.messages(test.get("input"), (*path, "input"), "user")
        self.attachments(test)
        if self.agentv:
            self.incomplete(test, path, v5)
            self.unusable_prompt(test, path)
        if self.agentv and not self.suite_input and test.get("mode") != "conversation":
            _flatten_single_message(test.get("input"))
            if "input" in test:
                test["input"] = agentv_prompt_messages(test["input"])
        self.messages(test.get("expected_output"), (*path, "expected_output"), "assistant")
        self.workspace(test, path)
        self.environment(test, path)
        turns = test.get("turns")
        for j, turn in enumerate(turns if isinstance(turns, list) else []):
            if isinstance(turn, dict):
                self.messages(turn.get("input"), (*path, "turns", j, "input"), "user")
                self.messages(turn.get("expected_output"), (*path, "turns", j, "expected_output"), "assistant")

    def test_options(self, test: dict, path: DataPath) -> None:
        """AgentV v5's `options` of a test, over `default_test.options` (`_agentv_options.py`),
        handed to the checker; a test whose options differ from the suite's grades the suite's
        assertions as its own. A test's `providers` is ignored, as AgentV's runner ignores it."""
        for key in ("providers", "provider"):
            if key in test:
                self.warn((*path, key), "ignored, as AgentV ignores it: a test does not choose its targets")
                del test[key]
        where = (*path, "options")
        own = read_options(test.pop("options", None), self.base, lambda k, m: self.add((*where, k) if k else where, m))
        options = self.default_options.under(own)
        if not (options.judge or options.transform):
            return
        execution = test.get("execution") or {}
        if (
            options != self.default_options
            and self.default_asserts
            and isinstance(execution, dict)  # else a problem of its own
            and execution.get("skip_defaults") is not True
        ):
            listed = test.get("assertions")
            listed = listed if isinstance(listed, list) else []
            test["assertions"] = type(listed)([*listed, *self.default_asserts])
            test["execution"] = {**execution, "skip_defaults": True}
        judge_at = (*where, "provider") if own.judge else ("default_test", "options", "provider")
        context = {"vars": test.get("vars") or {}, "metadata": test.get("metadata")}
        test[OPTIONS_KEY] = (options, judge_at, context)

    def unusable_prompt(self, test: dict, path: DataPath) -> None:
        """AgentV skips a test one of whose llm-rubric / llm-grader prompts is a `file://` file
        naming neither `{{ output }}` nor `{{ expected_output }}` (`prompt-validator.ts`, thrown
        from `grader-parser.ts` `parsePromptField`, caught by `yaml-parser.ts`: "Skipping test"),
        the suite's assertions included: so does convoeval, with that reason and a warning."""
        execution = test.get("execution")
        skips = isinstance(execution, dict) and execution.get("skip_defaults") is True
        own = test.get("assertions")
        listed = [*(own if isinstance(own, list) else []), *([] if skips else self.suite_asserts)]
        found = _prompt_without_output(listed, self.base)
        if found is not None:
            why = (
                f"AgentV skips this test: the grader prompt {found} names neither {{{{ output }}}} nor "
                '{{ expected_output }} ("Missing required fields", its prompt-validator.ts)'
            )
            self.warn((*path, "id"), why)
            test.setdefault("skip", why)

    def incomplete(self, test: dict, path: DataPath, v5: bool) -> None:
        """A warning for a test AgentV v4.42.4 skips as incomplete (`yaml-parser.ts` lines
        517-528: no input of its own, or none of criteria, expected_output, assertions, turns);
        convoeval runs it, unless it has no input at all (nor the suite): then it is skipped, as
        AgentV skips it (main's "Skipping incomplete test"). In a v5 test the suite's own
        assertions count too (v5.1 to v5.3.1: `hasExplicitRootGraders`, unless the test skips them)."""
        given = test.get("input")
        checks = any(test.get(k) not in (None, "", []) for k in ("criteria", "expected_output", "turns"))
        execution = test.get("execution")
        skips = isinstance(execution, dict) and execution.get("skip_defaults") is True
        checks = checks or (v5 and self.suite_checks and not skips)
        if given in (None, "", []) and not self.suite_input and not any(k in test for k in ("turns", "transcript")):
            why = 'AgentV skips this test: it has no input ("Missing required fields: id, input or PROMPT.md, ...")'
            self.warn(path, why)
            test.setdefault("skip", why)
        elif given in (None, "", []) or not (checks or any(k in test for k in ("assertions", "assert", "evaluators"))):
            self.warn(
                path,
                'AgentV skips this test ("Missing required fields: id, input, and at least one of '
                'criteria/expected_output/assertions/turns"); convoeval runs it',
            )

    def attachments(self, test: dict) -> None:
        """The files attached to the test's input (the suite's `input`'s first, unless it skips
        them), as absolute paths in `attachments`: AgentV's `file_paths`, its `cli` target's
        `{FILES}` (`yaml-parser.ts` `collectResolvedInputFilePaths`)."""
        execution = test.get("execution")
        skips = isinstance(execution, dict) and execution.get("skip_defaults") is True
        found = list(dict.fromkeys([*([] if skips else self.suite_found), *self.found]))
        if found:
            test["attachments"] = found

    def v5_vars(self, test: dict, variables: dict, path: DataPath) -> None:
        """AgentV v5's row data under the identity prompt `{{ input }}`: `vars.input` is the
        test's input, `vars.expected_output` its reference answer, and every `{{ name }}` of
        `vars` is filled in the test's fields and its assertions (AgentV's
        `interpolateRawEvalCase`, v5.3.1)."""
        others = {k: v for k, v in variables.items() if k not in ("input", "expected_output")}
        for key in ("input", "expected_output"):
            if key in variables and key not in test:
                test[key] = variables[key]
                self.lines.add((*path, key), *self.lines.locate((*path, "vars", key)))
        context = {**variables, "vars": variables}  # `{{ vars.NAME }}` too (AgentV's interpolateTemplateVars)
        fill_test_vars(test, {**others, "vars": variables})
        if "assertions" in test:
            filled = fill_vars(test["assertions"], context)
            test["assertions"] = WeightedCriteria(filled) if isinstance(filled, list) else filled
        if others:
            test["vars"] = others
        else:
            del test["vars"]

    def prompt_md(self, test: dict, path: DataPath) -> object:
        """AgentV v5's task prompt of a test without `input` (its `prompt-md-fallback.ts`): the
        `PROMPT.md` its `input_files` list (else the suite's), which then attaches the others
        only; else a `PROMPT.md` beside the eval file. Returns the suite's `input_files` as
        this test takes them."""
        own, suite = test.get("input_files"), self.suite_input_files
        execution = test.get("execution")
        skips = isinstance(execution, dict) and execution.get("skip_defaults") is True  # no suite files then
        listed, where = (
            (own, (*path, "input_files")) if isinstance(own, list) else (None if skips else suite, ("input_files",))
        )
        names = [f for f in listed if isinstance(f, str)] if isinstance(listed, list) else []
        named = next((f for f in names if f.replace("\\", "/").rsplit("/", 1)[-1] == PROMPT_MD), None)
        try:
            prompt = find_attachment(named, self.base) if named is not None else None
        except ValueError as exc:
            self.add(where, str(exc))
            return suite
        if prompt is None:
            sibling = self.base / PROMPT_MD
            if not sibling.is_file():
                return suite
            prompt, named, where = sibling, None, (*path, "id")
        try:
            test["input"] = prompt.read_text(encoding="utf-8").replace("\r\n", "\n")
        except (OSError, UnicodeDecodeError) as exc:
            self.add(where, f"cannot read the task prompt {prompt}: {exc}")
            return suite
        self.lines.add((*path, "input"), *self.lines.locate(where))
        if named is None:
            return suite
        others = [f for f in names if f != named]
        if listed is own:
            if others:
                test["input_files"] = others
            else:
                del test["input_files"]
            return None  # the test's own files replace the suite's
        return others or None

    def _suite_files(self, test: dict, files: object) -> list[str] | None:
        """The suite's `input_files` when they go with this test (a string input, no skip_defaults)."""
        execution = test.get("execution")
        skips = isinstance(execution, dict) and execution.get("skip_defaults") is True
        if not isinstance(files, list) or not files or skips or not isinstance(test.get("input"), str):
            return None
        names = [f for f in files if isinstance(f, str)]
        return names if len(names) == len(files) else None

    def input_files(self, test: dict, files: object, path: DataPath, where: DataPath | None = None) -> None:
        """`input_files: [a.csv]` + a string `input` -> one user message: file blocks, then the
        text (AgentV's shorthand). `where`: the files' place, when not the test's own."""
        where = where or (*path, "input_files")
        if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
            self.add(where, "must be a list of file paths")
            return
        if not isinstance(test.get("input"), str):
            self.add(where, "`input_files` needs a string `input` (with a message list, use `type: file` blocks)")
            return
        content = [{"type": "file", "value": f} for f in files] + [{"type": "text", "value": test["input"]}]
        test["input"] = [{"role": "user", "content": content}]
        for k in range(len(files)):
            self.lines.add((*path, "input", 0, "content", k), *self.lines.locate((*where, k)))

    def messages(self, value: object, path: DataPath, role: str) -> None:
        """Resolve `type: file` blocks; JSON-object content becomes JSON text."""
        if isinstance(value, dict) and "role" not in value:  # object shorthand: one message of JSON
            return
        if not isinstance(value, list):
            return
        for m, message in enumerate(value):
            if not isinstance(message, dict):
                continue
            content = message.get("content")
            if isinstance(content, list):
                kept = [
                    part
                    for k, part in enumerate(content)
                    if not (isinstance(part, dict) and part.get("type") == "file")
                    or self.attach(part, (*path, m, "content", k))
                ]
                if len(kept) != len(content):  # missing attachments dropped (lines of later blocks move up)
                    message["content"] = kept

    def attach(self, part: dict, where: DataPath) -> bool:
        """Read a `type: file` block into its `text`, looked up as AgentV does (each folder from
        the eval file's up to the repository root, then the working folder; a leading `/` is
        stripped). A file that is not found is a warning and the block is dropped (False)."""
        ref = part.get("value", part.get("path"))
        if not isinstance(ref, str) or not ref.strip():
            self.add(where, "a `type: file` block needs `value: PATH`", (*where, "value"))
            return True
        shown = ref.strip().lstrip("/\\") or ref.strip()
        try:
            file = find_attachment(ref.strip(), self.base)
        except ValueError as exc:
            self.add(where, str(exc), (*where, "value"))
            return True
        if file is None:
            tried = ", ".join(str(root) for root in search_roots(self.base))
            self.warn(where, f"file not found: {shown} (looked in {tried}); the block is left out, as AgentV does")
            return False
        if file.suffix.lower() in _IMAGE_SUFFIXES:
            self.add(where, f"{ref}: image attachments are not supported yet (text files only)", (*where, "value"))
            return True
        if file.stat().st_size > MAX_ATTACHMENT_BYTES:
            self.add(where, f"{ref} is larger than {MAX_ATTACHMENT_BYTES} bytes", (*where, "value"))
            return True
        try:
            text = file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            self.add(where, f"cannot read {ref} as UTF-8 text: {exc}", (*where, "value"))
            return True
        part["value"] = shown  # AgentV's display path: shown in `<file path="...">`
        self.found.append(str(file))
        part["text"] = text.replace("\r\n", "\n").strip()
        return True

    def warn(self, where: DataPath, message: str) -> None:
        place = self.lines.problem(where, field_path(where), "")
        self.warnings.append(f"warning: {place.file}:{place.line}: {place.field}: {message}")


def _prompt_without_output(assertions: list[object], base: Path) -> str | None:
    """The `file://` prompt of an llm-rubric / llm-grader among `assertions` (composites' members
    too) that names neither output variable AgentV requires; None when there is none."""
    for item in assertions:
        if not isinstance(item, dict):
            continue
        members = item.get("assertions", item.get("assert"))
        if isinstance(members, list) and (found := _prompt_without_output(members, base)) is not None:
            return found
        kind, prompt = item.get("type"), item.get("prompt")
        if kind not in _JUDGED_TYPES or not isinstance(prompt, str) or not prompt.startswith("file://"):
            continue
        try:
            file = find_attachment(prompt.removeprefix("file://"), base)
            text = file.read_text(encoding="utf-8") if file is not None else None
        except (OSError, UnicodeDecodeError, ValueError):
            text = None  # the grader's own check says what is wrong with it
        if text is not None and not _PROMPT_NEEDS.intersection(_PROMPT_VARIABLE.findall(text)):
            return prompt
    return None


def _flatten_single_message(value: object) -> None:
    """AgentV sends a test whose input is one message of several blocks as one text: each
    block trimmed, files as `<file path="...">`, joined by blank lines (`buildPromptInputs`'
    flat format); convoeval's own join (one newline, untrimmed) is for the other cases."""
    if not isinstance(value, list) or len(value) != 1 or not isinstance(value[0], dict):
        return
    content = value[0].get("content")
    if not isinstance(content, list) or len(content) < 2:
        return
    texts = []
    for part in content:
        if not isinstance(part, dict) or part.get("type", "text") not in ("text", "file"):
            return
        if part.get("type") == "file":
            if not isinstance(part.get("text"), str):
                return
            texts.append(f'<file path="{part.get("value")}">\n{part["text"]}\n</file>')
        else:
            text = part.get("value", part.get("text"))
            if not isinstance(text, str):
                return
            texts.append(text.strip())
    value[0]["content"] = "\n\n".join(t for t in texts if t)


def _blank(message: object) -> bool:
    return isinstance(message, dict) and isinstance(message.get("content"), str) and not message["content"].strip()


def agentv_prompt_messages(value: object) -> object:
    """A test's input messages as AgentV sends them (`formatting/prompt-builder.ts`
    `buildPromptInputs`): messages without text are left out, leading system messages are one
    (joined by a blank line), and when a single message is left (no assistant or tool message)
    its text is trimmed, as AgentV's flat prompt is. Anything else stays as written."""
    if isinstance(value, str):
        return value.strip() or value
    if not isinstance(value, list) or not all(isinstance(m, dict) for m in value):
        return value
    kept = [m for m in value if not _blank(m)] or value
    lead = 0
    while lead < len(kept) and kept[lead].get("role") == "system" and isinstance(kept[lead].get("content"), str):
        lead += 1
    if lead > 1:
        kept = [{**kept[0], "content": "\n\n".join(m["content"] for m in kept[:lead])}, *kept[lead:]]
    if len(kept) == 1 and kept[0].get("role") == "user" and isinstance(kept[0].get("content"), str):
        kept = [{**kept[0], "content": kept[0]["content"].strip() or kept[0]["content"]}]
    return kept


def is_identity_prompt(prompts: object) -> bool:
    """`prompts: ["{{ input }}"]` (AgentV v5's identity prompt), which changes nothing."""
    return (
        isinstance(prompts, list)
        and len(prompts) == 1
        and isinstance(prompts[0], str)
        and _IDENTITY_PROMPT.fullmatch(prompts[0]) is not None
    )


def v5_prompts(data: dict) -> bool:
    """Whether a suite keeps v5 `prompts` once normalized (anything but the identity prompt)."""
    if "prompts" not in data:
        return False
    return not is_identity_prompt(substitute_env(data["prompts"], ("prompts",), LineMap(), []))


def _move_metadata(data: dict, keys: frozenset[str]) -> None:
    """Move `keys` under `metadata`, in the file's order (so a suite's fingerprint is the same
    in every process)."""
    found = [k for k in data if k in keys]
    if not found:
        return
    metadata = data.get("metadata")
    if metadata is None:
        metadata = data["metadata"] = {}
    if isinstance(metadata, dict):
        for key in found:
            metadata.setdefault(key, data.pop(key))


def json_text(value: object) -> str:
    """A JSON object or list given as message content, as the text sent to the model."""
    return json.dumps(value, ensure_ascii=False, indent=2)
