"""Checks of an eval file's raw data: assertions, rules that span fields, then the models."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from .. import graders, registry
from .._templates import GRADER_VARIABLES
from ..errors import suggest
from ..graders import (
    Assertion,
    assertion_type_names,
    canonical_type_name,
    lookup_assertion_type,
)
from ._agentv import PREPROCESSORS_IGNORED, custom_assertion, legacy_assertion
from ._agentv_meaning import agentv_assertion, skipped_by_agentv, skipped_composite, skipped_metric
from ._agentv_options import OPTIONS_KEY, TestOptions, read_options, with_options
from ._agentv_paths import find_attachment
from ._agentv_v5 import AgentvFormError, WeightedCriteria
from ._errors import Problem, field_path
from ._lines import DataPath, LineMap
from ._models import SIMULATED_USER_KEYS, TargetName, TargetRole
from ._validation_messages import validation_problems

M = TypeVar("M", bound=BaseModel)


#: AgentV assertion fields convoeval chooses not to support, and why.
UNSUPPORTED_AGENTV_FIELDS = {
    "script": {
        "postprocess": "a grader's `postprocess` (AgentV v5 rewrites the grader's result)",
        "preprocessors": "a grader's `preprocessors` (AgentV converts files before grading them)",
    },
}
#: An llm-grader's `max_steps`: AgentV reads it only when the grader provider is its own `agentv`
#: (`llm-grader.ts` evaluateBuiltIn, a judge with file tools), which convoeval has not.
_MAX_STEPS = (
    "ignored, as AgentV ignores it for every grader but its own `agentv` provider (a judge with file tools, "
    "which convoeval does not have): the judge grades the conversation"
)
#: AgentV's names of a judged check's own `judge`: an llm-grader's `target` (AgentV v4 and v5.3),
#: `provider` (AgentV v5 after 5.3, promptfoo), each the name of a target.
AGENTV_JUDGE_FIELDS = ("target", "provider")

_IMPORTED = "`convoeval import promptfoo CONFIG` converts it"
#: Other tools' assertion types, and what to write instead (said when a type is unknown).
PEER_TYPES = {
    "g-eval": "DeepEval's G-Eval is `llm-grader` with `criteria` (or `rubrics`)",
    "geval": "DeepEval's G-Eval is `llm-grader` with `criteria` (or `rubrics`)",
    "python": f"promptfoo's `python` is a `code-grader` ({_IMPORTED})",
    "javascript": f"promptfoo's `javascript` is a `code-grader` ({_IMPORTED})",
    "factuality": f"promptfoo's `factuality` is an `llm-grader` with `expected_output` ({_IMPORTED})",
    "model-graded-closedqa": f"promptfoo's `model-graded-closedqa` is an `llm-grader` ({_IMPORTED})",
}

#: AgentV v5 assertion types convoeval refuses, and why.
REFUSED_AGENTV_TYPES = {
    "agent-rubric": "`agent-rubric` (AgentV v5: a judge that reads the workspace with file tools); convoeval's "
    "judge has no tools: use `llm-rubric`, or a `script` that reads file_changes",
    **{
        f"{no}trajectory:step-count": "`trajectory:step-count` (it counts every step of AgentV's trace: "
        "messages, tool results, spans, which convoeval's transcript does not hold); count tool calls with "
        "`trajectory:tool-used` and `{name, min, max}`"
        for no in ("", "not-")
    },
    **{
        f"{no}trajectory:goal-success": "`trajectory:goal-success` (a judge reading AgentV's trace summary); "
        "use `llm-rubric` with the goal as its criteria"
        for no in ("", "not-")
    },
}

#: Validated assertions remembered per file (equal built-in assertions share one object).
_ASSERTION_CACHE = 10_000


#: What AgentV ignores on a composite's member, with the end of the warning saying so.
_MEMBER_FIELDS = {
    "weight": ": give `aggregator.weights` by name",
    "negate": " on a composite's member",
    "required": " on a composite's member",
}


class Checker:
    """Checks an eval file's raw data: the suite's keys (`check_suite`), each test alone
    (`check_test`), assertions, and the pydantic models (`validate`).

    `lines` locates problems: the loader sets it to the map of the part being checked (a
    test's own lines, whose parent holds the suite's). Warnings are kept in `warnings` until
    the loader logs them (a file read twice warns once).
    """

    def __init__(self, problems: list[Problem], base_dir: Path, lines: LineMap | None = None):
        self.base_dir = base_dir
        self.lines = lines if lines is not None else LineMap()
        self.problems = problems
        self.warnings: list[str] = []
        self.known: frozenset[str] = GRADER_VARIABLES  # template variables assertions may use here
        self._validated: dict[str, tuple[str, Assertion | list[tuple[DataPath, str]]]] = {}
        self.agentv = False  # an AgentV file: its text assertions keep AgentV's meaning (set by the loader)
        self.target_names: list[TargetName] = []  # checked against the targets files once they are known
        self.suite_options = TestOptions()  # AgentV v5's `default_test.options` (set by the loader)
        self.transform_context: dict[str, object] = {}  # an assertion's own transform's (the test's vars)

    def add(self, path: DataPath, message: str, line_at: DataPath | None = None) -> None:
        """A problem with the field at `path`, reported at the line of `line_at` (or `path`)."""
        self.problems.append(self.lines.problem(line_at or path, field_path(path), message))

    def name_target(self, name: object, path: DataPath, role: TargetRole) -> None:
        """Remember the target named at `path` (when it is a name)."""
        if isinstance(name, str) and name.strip():
            self.target_names.append(TargetName(name, role, self.lines.problem(path, field_path(path), "")))

    def warn(self, path: DataPath, field: str, message: str) -> None:
        where = self.lines.problem(path, field, "")
        self.warnings.append(f"warning: {where.file}:{where.line}: {field}: {message}")

    # -- rules that span fields ---------------------------------------------------------
    def check_suite(self, data: dict) -> None:
        """The suite's own keys (not its tests): its policy and assertions."""
        self.transform_context = {}
        self.load_policy(data, ())
        if isinstance(execution := data.get("execution"), dict):
            self.name_execution_targets(execution)
        if data.get("tools") is not None or data.get("backend") is not None:  # the backends load only then
            for key, message in graders.domain_file_problems(data.get("tools"), data.get("backend"), self.base_dir):
                self.add((key,), message)
        data["assertions"] = [
            with_options(a, self.suite_options, {})
            for a in self.parse_assertions(data.get("assertions"), ("assertions",), None)
        ]
        if "turn_assertions" in data:
            data["turn_assertions"] = self.parse_assertions(data.get("turn_assertions"), ("turn_assertions",), "turn")

    def name_execution_targets(self, execution: dict) -> None:
        """The suite's targets (`execution.target(s)`) and judges (`judge`, `judge.target`, `judges`)."""
        for key in ("target", "targets", "judge", "judges"):
            value = execution.get(key)
            path: DataPath = ("execution", key)
            if isinstance(value, dict):  # judge: {target, repeats, temperature}
                value, path = value.get("target"), (*path, "target")
            role: TargetRole = "judge" if key.startswith("judge") else "target"
            if isinstance(value, list):
                for i, name in enumerate(value):
                    self.name_target(name, (*path, i), role)
            else:
                self.name_target(value, path, role)

    def check_test(self, test: dict, path: DataPath, suite_input: bool) -> None:
        simulated = [key for key in SIMULATED_USER_KEYS if key in test]
        for key in simulated[1:]:
            self.add((*path, key), f"give the simulated user once (`{simulated[0]}` is already given)")
            del test[key]  # reported once, not again as an unknown field
        recorded = test.get("transcript", test.get("transcripts"))
        conversation = test.get("mode") == "conversation" or bool(simulated) or recorded is not None
        if recorded is not None:
            self.check_transcript(test, path, bool(simulated))
        for key in ("error", "budget_hit"):
            if key in test and recorded is None:
                self.add((*path, key), f"`{key}` says how a recorded conversation ended: give it with `transcript`")
        config = test.get(simulated[0]) if simulated else None
        if isinstance(config, dict):
            self.name_target(config.get("model"), (*path, simulated[0], "model"), "simulator")
        if isinstance(config, dict) and isinstance(config.get("type"), str):
            known = registry.names("simulator")
            if known and config["type"] not in known:
                self.add(
                    (*path, simulated[0], "type"), f"unknown simulator {config['type']!r} (known: {', '.join(known)})"
                )
        turns = test.get("turns")
        for key in ("success", "failure"):
            items = test.get(key)
            for k, item in enumerate(items if isinstance(items, list) else []):
                if isinstance(item, str) and not item.strip():
                    self.add((*path, key, k), "a scenario criterion must not be blank")
        if conversation and not simulated and recorded is None and (not isinstance(turns, list) or not turns):
            line_at = (*path, "turns") if "turns" in test else (*path, "mode")
            self.add((*path, "turns"), "mode: conversation needs a non-empty `turns` list", line_at)
        if turns is not None and not conversation:
            self.add((*path, "turns"), "`turns` needs `mode: conversation`")
        if conversation and test.get("expected_output") is not None and self.agentv:
            where = (*path, "expected_output")  # AgentV grades the conversation with `expected_output: []`
            self.warn(where, field_path(where), "ignored in conversation mode, as AgentV ignores it")
            del test["expected_output"]
        elif conversation and test.get("expected_output") is not None:
            self.add(
                (*path, "expected_output"),
                "not allowed at test level in conversation mode; give each turn its own expected_output",
            )
        for key in ("aggregation", "on_turn_failure", "window_size"):
            if key in test and not conversation:
                self.add((*path, key), f"`{key}` needs `mode: conversation`")
        if test.get("hints") and test.get("verify") is None:  # they were never sent
            self.add((*path, "hints"), "hints are sent after a failed `verify`: give the test a `verify` command")
        if (
            not conversation
            and turns is None
            and test.get("input") is None
            and not suite_input
            and "vars" not in test
            and "skip" not in test  # one AgentV skips, saying why
        ):
            self.add((*path, "input"), "required field is missing: a single-turn test needs `input`")
        execution = test.get("execution")
        if isinstance(execution, dict):
            for key, flag in (
                ("judge", "--judge"),
                ("judges", "--judge"),
                ("panel_rule", "--panel-rule"),
                ("workers", "--concurrency"),
                ("budget_usd", "--max-cost"),
            ):
                if key in execution:
                    self.add(
                        (*path, "execution", key),
                        f"`{key}` is a suite-level setting (suite `execution.{key}` or {flag}); "
                        "a test's execution takes target(s), threshold, trials, skip_defaults, temperature and max_tokens",
                    )
        self.warn_budget(test, path, len(turns) if isinstance(turns, list) else None)
        level = "conversation" if conversation else "turn"
        captured = _captured_names(turns)
        self.known = GRADER_VARIABLES | {name for names in captured for name in names}
        self.transform_context = {"vars": test.get("vars") or {}, "metadata": test.get("metadata")}
        test["assertions"] = self.parse_assertions(test.get("assertions"), (*path, "assertions"), level)
        if OPTIONS_KEY in test:  # AgentV v5's `options` (the normalizer's)
            options, judge_at, context = test.pop(OPTIONS_KEY)
            self.name_target(options.judge, judge_at, "check")
            test["assertions"] = [with_options(a, options, context) for a in test["assertions"]]
        if "turn_assertions" in test:
            test["turn_assertions"] = self.parse_assertions(
                test.get("turn_assertions"), (*path, "turn_assertions"), "turn"
            )
        if isinstance(turns, list):
            for j, turn in enumerate(turns):
                if not isinstance(turn, dict):
                    continue
                turn_path = (*path, "turns", j)
                if _is_blank(turn.get("input")) and "input" in turn:
                    self.add((*turn_path, "input"), "a turn's input must not be blank")
                # A turn's assertions may use what this turn and the turns before it captured.
                self.known = GRADER_VARIABLES | {name for names in captured[: j + 1] for name in names}
                turn["assertions"] = self.parse_assertions(
                    turn.get("assertions"), (*turn_path, "assertions"), "turn", plain_required=not self.agentv
                )
        self.known = GRADER_VARIABLES

    def warn_budget(self, test: dict, path: DataPath, turns: int | None) -> None:
        """Warn (a budget is the user's call, not an error) when a per-turn budget cannot be
        reached, or the conversation's cannot cover the turns at their per-turn budget."""
        budget = test.get("budget")
        per_turn = budget.get("turn") if isinstance(budget, dict) else None
        whole = budget.get("conversation") if isinstance(budget, dict) else None
        if not isinstance(per_turn, dict) or not isinstance(whole, dict):
            return
        for name in ("tool_calls", "seconds", "tokens", "cost_usd"):
            each, total = _number(per_turn.get(name)), _number(whole.get(name))
            if each is None or total is None:
                continue
            if each > total:
                message = f"turn {name}={each:g} is never reached: the conversation's {name}={total:g} ends first"
            elif turns and each * turns > total:
                message = (
                    f"conversation {name}={total:g} cannot cover {turns} turns at up to {each:g} each "
                    f"({each * turns:g}); the last turns may be cut short"
                )
            else:
                continue
            self.warn((*path, "budget", "conversation", name), field_path((*path, "budget")), message)

    def load_policy(self, holder: dict, path: DataPath) -> None:
        """`policy: text`, `policy: file://policy.md` or `text: file://...` in a policy mapping:
        the text (a file relative to the eval file) becomes the policy's `text`."""
        policy = holder.get("policy")
        if isinstance(policy, str):
            policy = holder["policy"] = {"text": policy}
            where: DataPath = (*path, "policy")
        else:
            where = (*path, "policy", "text")
        if not isinstance(policy, dict) or not isinstance(policy.get("text"), str):
            return
        ref = policy["text"].strip()
        if not ref.startswith("file://"):
            return
        file = self.base_dir / ref.removeprefix("file://").strip()
        if not file.is_file():
            self.add(where, f"policy file not found: {file}")
            policy["text"] = ""
            return
        policy["text"] = file.read_text(encoding="utf-8")

    def check_transcript(self, test: dict, path: DataPath, simulated: bool) -> None:
        """A `transcript:` (or `transcripts:`, one per trial) replaces live turns: each needs a
        user and an assistant message."""
        key = "transcript" if "transcript" in test else "transcripts"
        if key == "transcript" and "transcripts" in test:
            self.add((*path, "transcripts"), "give `transcript` (one conversation) or `transcripts` (one per trial)")
        for other in ("turns", "input"):
            if other in test:
                self.add(
                    (*path, other), f"`{other}` cannot be combined with `{key}` (the transcript is the conversation)"
                )
        if simulated:
            self.add((*path, key), f"a test with `{key}` cannot also have a simulated user")
        recorded = test[key]
        if not isinstance(recorded, list):
            return  # the model check reports the type
        if key == "transcripts":
            if not recorded:
                self.add((*path, key), "give at least one recorded conversation")
            for k, one in enumerate(recorded):
                if isinstance(one, list):
                    self._check_roles(one, (*path, key, k))
        else:
            self._check_roles(recorded, (*path, key))

    def _check_roles(self, recorded: list[object], path: DataPath) -> None:
        roles = [m.get("role") for m in recorded if isinstance(m, dict)]
        if "user" not in roles or "assistant" not in roles:
            self.add(path, "a transcript needs at least one user and one assistant message")

    def check_suite_assertion_levels(self, data: dict, modes: set[bool]) -> None:
        """Suite assertions apply to every test: each must grade the kinds of test there are
        (`modes`: True for a conversation test, False for a single-turn one)."""
        for k, assertion in enumerate(data.get("assertions") or []):
            for conversation in modes:
                level = "conversation" if conversation else "turn"
                if level not in assertion.levels:
                    self.add(
                        ("assertions", k),
                        f"{assertion.type!r} cannot grade a {'conversation' if conversation else 'single-turn'} test, and suite assertions apply to every test",
                    )

    # -- assertions ---------------------------------------------------------------------
    def parse_assertions(
        self, items: object, path: DataPath, level: str | None, plain_required: bool = True
    ) -> list[Assertion]:
        """The assertions of a list; its plain-text criteria make one rubric, required ones
        unless `plain_required` is false (an AgentV turn's: `orchestrator.ts` `buildTurnAssertions`);
        invalid ones are dropped, their problems added."""
        if items is None:
            return []
        if not isinstance(items, list):
            self.add(path, "must be a list of assertions")
            return []
        parsed: list[Assertion] = []
        criteria = [item for item in items if isinstance(item, str)]
        for k, item in enumerate(items):
            if isinstance(item, str):
                if item is criteria[0]:  # all plain criteria of a list: one rubric judge call
                    rubric_item: dict[str, object] = {"type": "rubrics", "criteria": criteria}
                    if not plain_required:
                        rubric_item["criteria"] = [{"outcome": c, "required": False} for c in criteria]
                    if isinstance(items, WeightedCriteria) or (self.agentv and plain_required):
                        rubric_item["weight"] = len([c for c in criteria if c.strip()])
                    rubric = self.parse_one(rubric_item, (*path, k), level)
                    if rubric is not None:
                        parsed.append(rubric)
                if not item.strip():
                    self.add((*path, k), "a rubric criterion must not be blank")
                continue
            assertion = self.parse_one(item, (*path, k), level)
            if assertion is not None:
                parsed.append(assertion)
        return parsed

    def _agentv_prompt_file(self, item: dict) -> dict:
        """An llm-grader's `prompt: file://PATH` found as AgentV finds it (`grader-parser.ts`
        `resolveFileReference`: the eval file's folder, each one above it up to the repository,
        the working folder), as an absolute `file://`; as written when it is beside the eval file
        or found nowhere (the grader's own check says so)."""
        prompt = item.get("prompt")
        if not isinstance(prompt, str) or not prompt.startswith("file://"):
            return item
        ref = prompt.removeprefix("file://")
        if os.path.isabs(ref) or os.path.isfile(self.base_dir / ref):  # never raises (a name too long)
            return item
        try:
            found = find_attachment(ref, self.base_dir)
        except ValueError:  # found only outside the suite's folder and repository: said by the grader
            return item
        return item if found is None else {**item, "prompt": f"file://{found}"}

    def _agentv_judge(self, item: dict, path: DataPath) -> None:
        """An llm-grader's `target` or `provider` (AgentV) as its `judge`, in place."""
        for field in AGENTV_JUDGE_FIELDS:
            if field not in item:
                continue
            name = item.pop(field)
            if not isinstance(name, str) or not name.strip():
                self.add((*path, field), "the name of the target that grades this check (a non-empty string)")
            elif "judge" in item:
                self.add((*path, field), "name this check's judge once (`judge`, `target` or `provider`)")
            else:
                item["judge"] = name.strip()

    def parse_one(self, item: object, path: DataPath, level: str | None) -> Assertion | None:
        if not isinstance(item, dict):
            self.add(path, "an assertion is a string (a rubric criterion) or a mapping with a `type`")
            return None
        own_transform = None
        if isinstance(item.get("transform"), str):  # AgentV v5: this check grades its transform's output
            where = (*path, "transform")
            own_transform = read_options(
                {"transform": item["transform"]}, self.base_dir, lambda _, m: self.add(where, m)
            )
            if own_transform.transform is None:
                return None
            item = {k: v for k, v in item.items() if k != "transform"}
        written = item  # as the file gives it (`item` is rewritten below)
        key = repr(item)
        cached = self._validated.get(key)
        if cached is not None:  # an equal built-in assertion was read before: the same object
            type_name, validated = cached
        else:
            try:
                if self.agentv and (why := skipped_metric(item) or skipped_composite(item)) is not None:
                    self.warn(path, field_path(path), f"skipped, as AgentV skips it: {why}")
                    return None
                item = legacy_assertion(item)
                if self.agentv and skipped_by_agentv(item):
                    self.warn(
                        path, field_path(path), "skipped, as AgentV skips it: its `value` is not a non-empty string"
                    )
                    return None
                if self.agentv:
                    item = agentv_assertion(item)
            except AgentvFormError as exc:
                self.add((*path, exc.field), str(exc))
                return None
            given = item.get("type")
            if not isinstance(given, str):
                only = next(iter(item), None) if len(item) == 1 else None  # `- contains: x` for `{type: contains, ...}`
                hint = (
                    f": write `{{type: {only}, value: ...}}`"
                    if isinstance(only, str) and canonical_type_name(only)
                    else ""
                )
                self.add(path, f"an assertion mapping needs a `type`{hint}")
                return None
            type_name = given
            if type_name in REFUSED_AGENTV_TYPES:
                self.add((*path, "type"), f"this AgentV form is not supported: {REFUSED_AGENTV_TYPES[type_name]}")
                return None
            canonical = canonical_type_name(type_name)
            if canonical is None and (custom := custom_assertion(item, self.base_dir)) is not None:
                item, type_name, canonical = custom, "code-grader", "code-grader"
            if canonical is None:
                peer = PEER_TYPES.get(type_name)
                known = f": {peer}" if peer else suggest(type_name, assertion_type_names())
                self.add((*path, "type"), f"unknown assertion type {type_name!r}{known}")
                return None
            cls = lookup_assertion_type(canonical)
            assert cls is not None
            item = dict(item)
            for field, why in UNSUPPORTED_AGENTV_FIELDS.get(canonical, {}).items():
                if field in item:
                    self.add((*path, field), f"this AgentV form is not supported: {why}")
                    del item[field]
            if self.agentv and "preprocessors" in item and canonical in ("llm-grader", "code-grader"):
                self.warn((*path, "preprocessors"), field_path((*path, "preprocessors")), PREPROCESSORS_IGNORED)
                del item["preprocessors"]  # AgentV v4.42.4 reads it on these two (`grader-parser.ts`)
            if canonical in ("llm-grader", "rubrics"):
                self._agentv_judge(item, path)
                if "max_steps" in item:
                    self.warn((*path, "max_steps"), field_path((*path, "max_steps")), _MAX_STEPS)
                    del item["max_steps"]
            if self.agentv and canonical == "llm-grader":
                item = self._agentv_prompt_file(item)
            if self.agentv and canonical == "tool-trajectory" and isinstance(item.get("expected"), list):
                item["expected"] = self._agentv_expected(item["expected"], path)
            if "assertions" in cls.model_fields and "assertions" in item:  # composite: nested list
                if self.agentv:
                    item["assertions"] = self._agentv_members(item["assertions"], path)
                item["assertions"] = self.parse_assertions(item["assertions"], (*path, "assertions"), level)
                validated = self._validate_assertion(cls, item)
            else:
                validated = self._validate_assertion(cls, item)
                if cls.__module__.startswith("convoeval."):  # built-in, so stateless: equal ones can share
                    if len(self._validated) >= _ASSERTION_CACHE:
                        self._validated.clear()
                    self._validated[key] = (type_name, validated)
        if isinstance(validated, list):
            for where, message in validated:
                self.add((*path, *where), message)
            return None
        assertion = validated
        if isinstance(own := getattr(assertion, "judge", None), str):  # at the field the file names it with
            field = next((f for f in ("judge", *AGENTV_JUDGE_FIELDS) if f in written), "judge")
            self.name_target(own, (*path, field), "check")
        if level is not None and level not in assertion.levels:
            allowed = " or ".join(assertion.levels)
            self.add((*path, "type"), f"{type_name!r} grades at {allowed} level, not at {level} level")
        for field_name, message in assertion.template_problems(self.known):
            self.add((*path, field_name), message)
        for field_name, message in assertion.file_problems(self.base_dir):
            self.add((*path, *field_name.split(".")), message)
        looks_like_path = getattr(type(assertion), "path_like_prompt", None)
        if looks_like_path is not None and looks_like_path(assertion, self.base_dir):
            prompt = getattr(assertion, "prompt", "")
            self.warn(
                (*path, "prompt"),
                field_path((*path, "prompt")),
                f"{prompt!r} names a file but is sent as inline criteria text (as AgentV >= 4.6 does); "
                f"write `file://{prompt}` to use the file's content",
            )
        if own_transform is not None:  # run after the test's (AgentV's `transformEvaluationContextForGrader`)
            return with_options(assertion, own_transform, self.transform_context)
        return assertion

    def _agentv_expected(self, calls: list, path: DataPath) -> list:
        """An AgentV trajectory's expected calls without `input` (with a warning): AgentV reads
        only `args` there (`grader-parser.ts`), so `input` checks nothing."""
        kept: list[object] = []
        for k, call in enumerate(calls):
            if isinstance(call, dict) and "input" in call and "args" not in call:
                where = (*path, "expected", k, "input")
                self.warn(where, field_path(where), "ignored, as AgentV ignores it: write `args` to check arguments")
                call = {key: value for key, value in call.items() if key != "input"}
            kept.append(call)
        return kept

    def _agentv_members(self, members: object, path: DataPath) -> object:
        """An AgentV composite's members without their own `weight`, `negate` and `required`:
        AgentV weighs them by the aggregator's `weights` only (`composite.ts`: `weights?.[member.id]
        ?? 1.0`) and applies negation and the required gate to top-level checks only."""
        if not isinstance(members, list):
            return members
        kept: list[object] = []
        for k, member in enumerate(members):
            for field, why in _MEMBER_FIELDS.items():
                if isinstance(member, dict) and field in member:
                    where = (*path, "assertions", k, field)
                    self.warn(where, field_path(where), f"ignored, as AgentV ignores it{why}")
                    member = {key: value for key, value in member.items() if key != field}
            kept.append(member)
        return kept

    @staticmethod
    def _validate_assertion(cls: type[Assertion], item: dict) -> Assertion | list[tuple[DataPath, str]]:
        """The assertion, or its problems as (path under the assertion, message)."""
        try:
            return cls.model_validate(item)
        except ValidationError as exc:
            return validation_problems(exc, item, (), cls)

    # -- pydantic models ----------------------------------------------------------------
    def validate(self, model: type[M], data: object, prefix: DataPath) -> M | None:
        """`data` (found at `prefix`) as a `model`, or None with its problems added."""
        try:
            return model.model_validate(data)
        except ValidationError as exc:
            self.add_validation_errors(exc, data, prefix, model)
            return None

    def add_validation_errors(
        self, exc: ValidationError, data: object, prefix: DataPath, model: type[BaseModel]
    ) -> None:
        for path, message in validation_problems(exc, data, prefix, model):
            self.add(path, message)


def _captured_names(turns: object) -> list[set[str]]:
    """The variable names each turn's `capture` sets (one set per turn)."""
    names: list[set[str]] = []
    for turn in turns if isinstance(turns, list) else []:
        rules = turn.get("capture") if isinstance(turn, dict) else None
        rules = [rules] if isinstance(rules, dict) else rules if isinstance(rules, list) else []
        names.append({r["name"] for r in rules if isinstance(r, dict) and isinstance(r.get("name"), str)})
    return names


def _is_blank(value: object) -> bool:
    if value is None:
        return True
    if isinstance(value, str):
        return not value.strip()
    if isinstance(value, list):
        return not value or all(
            isinstance(m, dict) and isinstance(m.get("content"), str) and not m["content"].strip() for m in value
        )
    return False


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None
