"""AgentV v5's eval-file forms (promptfoo-style, read from AgentV's `packages/core/src/evaluation/`
at v5.3.1-next.1 and its main branch of July 2026: `yaml-parser.ts`, `loaders/grader-parser.ts`,
`graders/promptfoo-assertions.ts`) as convoeval's: the suite's keys (`v5_suite`) and the
assertion types (`v5_assertion`). A test's `vars` are read by the normalizer (`_agentv.py`); the
`script` grader is `graders/_agentv_script.py`, the `trajectory:*` and `skill-used` graders
`graders/_agentv_trajectory.py`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from .._unseen import hide_from_models
from ._agentv_options import read_options
from ._yaml import load_yaml_file

if TYPE_CHECKING:
    from ._agentv import AgentvNormalizer
    from ._lines import DataPath


class AgentvFormError(ValueError):
    """An AgentV assertion convoeval cannot honour: (field, why)."""

    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field = field


def v5_assert_set(item: dict) -> dict:
    """AgentV v5's `assert-set` (its `promptfoo-assertions.ts`: the weighted mean of its
    assertions, passing at `threshold`) as a `composite` whose `min_score` is that threshold.
    Without a threshold AgentV passes when every assertion passes, which a composite does not
    express: refused."""
    item = dict(item)
    threshold = item.pop("threshold", None)
    if not isinstance(threshold, (int, float)) or isinstance(threshold, bool) or not 0 <= threshold <= 1:
        raise AgentvFormError(
            "threshold",
            "this AgentV form is not supported: an `assert-set` needs a `threshold` from 0 to 1 here "
            "(without one AgentV passes it when each assertion passes)",
        )
    if "config" in item:
        raise AgentvFormError("config", "this AgentV form is not supported: an `assert-set`'s shared `config`")
    return {**item, "type": "composite", "min_score": threshold}


def v5_rubric(item: dict) -> dict:
    """AgentV v5's `llm-rubric` (its `grader-parser.ts`): `value` is the criteria (a text, a
    list of texts, or a list of `{id, outcome, weight, required, ...}`), `prompt` an optional
    judge prompt. Without a prompt, a list is convoeval's `rubrics` (one judge call, a verdict
    per criterion); otherwise an `llm-grader` with the texts as its criteria (rubric items under a
    prompt of its own are refused, as an AgentV v4 llm-grader's `rubrics` with a `prompt` are)."""
    item = dict(item)
    value = item.pop("value", None)
    if "prompt" not in item and isinstance(value, list) and value:
        return {**item, "type": "rubrics", "criteria": value}
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        value = "\n".join(f"- {v}" for v in value)
    elif isinstance(value, list) and any(isinstance(v, dict) for v in value):  # AgentV: `{{ rubrics }}` in it
        raise AgentvFormError(
            "prompt",
            "this AgentV form is not supported: an llm-rubric's own prompt for its rubric items "
            "(without `prompt` they are judged as a `rubrics` check)",
        )
    if value is not None:
        item["criteria"] = value
    return {**item, "type": "llm-grader"}


class WeightedCriteria(list):
    """A test's assertions whose plain-text criteria weigh as many as they are: AgentV's rule
    since v4.20 (`grader-parser.ts`: the strings become one rubric of weight N; v4.15 gave it
    weight 1), applied to AgentV v5 tests and to the lists of v4 files found as AgentV's (the
    checker's `agentv`), as the real `agentv` 4.42.4 CLI weighs them."""


def v5_suite(data: dict, normalizer: AgentvNormalizer) -> None:
    """AgentV v5's suite keys (its `yaml-parser.ts`, v5.3.1): `providers: [label, ...]` names
    the targets (as `execution.target(s)`); `default_test` gives every test its `vars` (read
    with the tests) and `assert` (the suite's assertions); `evaluate_options.max_concurrency`
    is kept in metadata (the run's --concurrency decides). What convoeval cannot honour is a
    problem naming it."""
    threshold = data.get("threshold")
    execution = data.get("execution", {})
    if isinstance(threshold, (int, float)) and isinstance(execution, dict) and "threshold" not in execution:
        data.setdefault("execution", {})["threshold"] = data.pop("threshold")  # v5: the suite's pass mark
        normalizer.lines.add(("execution", "threshold"), *normalizer.lines.locate(("threshold",)))
    if "providers" in data:
        providers = data.pop("providers")
        names = [providers] if isinstance(providers, str) else providers
        if isinstance(names, list) and any(isinstance(n, dict) for n in names) and not normalizer.agentv:
            normalizer.add(
                ("providers",),
                "providers declared inline are read in an AgentV project only: a `.agentv/` folder in this "
                "file's folder or one above it (up to the repository root); or define them in a targets file",
            )
        elif not isinstance(names, list) or not names or not all(isinstance(n, str) and n for n in names):
            normalizer.add(
                ("providers",),
                "this AgentV form is not supported: providers declared inline; define them in the targets file "
                "(.agentv/targets.yaml) and list their names here",
            )
        elif (
            not isinstance(data.get("execution", {}), dict)
            or "target" in data
            or "targets" in data.get("execution", {})
        ):
            normalizer.add(("providers",), "give the targets once: `providers` or `target`/`execution.targets`")
        else:
            execution = data.setdefault("execution", {})
            key = "target" if len(names) == 1 else "targets"
            if key not in execution:
                execution[key] = names[0] if key == "target" else names
                normalizer.lines.add(("execution", key), *normalizer.lines.locate(("providers",)))
    if "default_test" in data:
        _default_test(data, normalizer)
    if "timeout_seconds" in data:
        normalizer.add(("timeout_seconds",), _RUN_REFUSED["timeout_seconds"])
        del data["timeout_seconds"]
    options = data.get("evaluate_options")
    if isinstance(options, dict):
        _evaluate_options(data, dict(options), normalizer)
    elif options is not None:
        normalizer.add(("evaluate_options",), "must be a mapping (max_concurrency, repeat, budget_usd)")
        del data["evaluate_options"]


#: AgentV's repeat strategies (its `trials.ts`) as convoeval's: `pass_any` passes when a trial
#: passes (AgentV scores it with the best trial, convoeval with the mean); `mean` and
#: `confidence_interval` pass on the mean score.
_STRATEGIES = {"pass_any": "pass_at_k", "mean": "mean", "confidence_interval": "mean"}


def _evaluate_options(data: dict, options: dict, normalizer: AgentvNormalizer) -> None:
    """AgentV v5's `evaluate_options` (its `experiment.ts` `readRepeat`, v5.3.1): `repeat` (a
    count, or `{count, strategy, early_exit, cost_limit_usd}`) is `execution.trials`;
    `max_concurrency` is kept in metadata; `budget_usd` is `execution.budget_usd`."""
    del data["evaluate_options"]
    repeat = options.pop("repeat", None)
    if repeat is not None:
        trials = _repeat(repeat, normalizer)
        execution = data.setdefault("execution", {})
        if trials is not None and isinstance(execution, dict):
            execution["trials"] = trials
            normalizer.lines.add(("execution", "trials"), *normalizer.lines.locate(("evaluate_options", "repeat")))
    if "budget_usd" in options:
        execution = data.setdefault("execution", {})
        if isinstance(execution, dict):
            execution["budget_usd"] = options["budget_usd"]
            where = normalizer.lines.locate(("evaluate_options", "budget_usd"))
            normalizer.lines.add(("execution", "budget_usd"), *where)
        del options["budget_usd"]
    for key in set(options) - {"max_concurrency"}:
        normalizer.add(
            ("evaluate_options", key), f"unknown evaluate option {key!r} (max_concurrency, repeat, budget_usd)"
        )
        del options[key]
    if options:
        metadata = data.setdefault("metadata", {})
        if isinstance(metadata, dict):
            metadata.setdefault("evaluate_options", options)


def _repeat(
    repeat: object,
    normalizer: AgentvNormalizer,
    where: DataPath = ("evaluate_options", "repeat"),
    into: DataPath = ("execution", "trials"),
) -> dict | None:
    """A `repeat` (`evaluate_options.repeat`, or a test's `run.repeat` at `where`) as convoeval's
    `trials` mapping at `into` (None: refused)."""
    if isinstance(repeat, int) and not isinstance(repeat, bool):
        repeat = {"count": repeat}
    if not isinstance(repeat, dict):
        normalizer.add(where, "must be a count or {count, strategy, early_exit, cost_limit_usd}")
        return None
    unknown = set(repeat) - {"count", "strategy", "early_exit", "cost_limit_usd"}
    if unknown:
        normalizer.add(
            (*where, sorted(unknown, key=str)[0]), "unknown field (count, strategy, early_exit, cost_limit_usd)"
        )
        return None
    strategy = repeat.get("strategy", "pass_any")
    if not isinstance(strategy, str) or strategy not in _STRATEGIES:
        normalizer.add(
            (*where, "strategy"),
            f"this AgentV form is not supported: strategy {strategy!r} (pass_any, mean and confidence_interval "
            "are; `pass_all` is not: convoeval passes a test on its mean score or, with pass_any, on one trial)",
        )
        return None
    # early_exit: AgentV stops pass_any trials at the first pass, which decides the same verdict.
    trials = {"count": repeat.get("count"), "strategy": _STRATEGIES[strategy]}
    if "cost_limit_usd" in repeat:
        trials["cost_limit_usd"] = repeat["cost_limit_usd"]
    for key in trials:
        normalizer.lines.add((*into, key), *normalizer.lines.locate((*where, key)))
    return trials


#: Run controls AgentV v5.3.1 reads that convoeval cannot honour: the agent's timeout per call
#: (run-eval.ts `agentTimeoutSeconds`) and a budget for the tests sharing a test's run policy.
_RUN_REFUSED = {
    "timeout_seconds": "this AgentV form is not supported: `timeout_seconds` (AgentV's time limit on each call of "
    "the target); set `timeout_seconds` on the target in the targets file",
    "budget_usd": "this AgentV form is not supported: a test's own `budget_usd` (AgentV's budget for the tests "
    "sharing its run settings); use the suite's `evaluate_options.budget_usd`, or the test's `budget:`",
}
_RUN_REFUSED["timeoutSeconds"], _RUN_REFUSED["budgetUsd"] = _RUN_REFUSED["timeout_seconds"], _RUN_REFUSED["budget_usd"]


def v5_run(test: dict, path: DataPath, normalizer: AgentvNormalizer) -> None:
    """A test's `run:` (AgentV v5.3.1 `experiment.ts` `normalizeExperimentRunOverride`, applied
    over the suite's settings by run-eval.ts `resolveEffectiveRunPolicy`): `threshold` is the
    test's `execution.threshold` and `repeat` its `execution.trials`; `timeout_seconds` and
    `budget_usd` are refused (`_RUN_REFUSED`), any other key as AgentV refuses it."""
    run, where = test.pop("run"), (*path, "run")
    execution = test.setdefault("execution", {})
    if not isinstance(run, dict) or not isinstance(execution, dict):
        normalizer.add(where, "must be a mapping (threshold, repeat, timeout_seconds, budget_usd)")
        return
    for key, value in run.items():
        if key in _RUN_REFUSED:
            normalizer.add((*where, key), _RUN_REFUSED[key])
        elif key == "threshold":
            execution["threshold"] = value
            normalizer.lines.add((*path, "execution", "threshold"), *normalizer.lines.locate((*where, key)))
        elif key == "repeat":
            trials = _repeat(value, normalizer, (*where, key), (*path, "execution", "trials"))
            if trials is not None:
                execution["trials"] = trials
        else:
            normalizer.add(
                (*where, key),
                f"Invalid run override field {key!r}: AgentV reads only threshold, repeat, timeout_seconds and "
                "budget_usd here",
            )


def read_default_test(value: object, base: Path) -> tuple[dict | None, str | None]:
    """AgentV v5's `default_test` (its `yaml-parser.ts` `resolveDefaultTestValue`, v5.3.1): a
    mapping, or `file://PATH` (relative to the eval file) holding one without `description`
    or `assertions`. (mapping, None) or (None, what is wrong)."""
    if isinstance(value, dict):
        return value, None
    if not isinstance(value, str) or not value.startswith("file://"):
        return None, "must be a mapping (vars, assert, threshold, options) or a `file://` reference to one"
    file = (base / value.removeprefix("file://")).resolve()
    hide_from_models([file])  # its `assert` holds answers
    try:
        loaded = load_yaml_file(file)
    except ValueError as exc:
        return None, f"cannot read the default_test file {value} ({file}): {exc}"
    if not isinstance(loaded, dict):
        return None, f"the default_test file {file} must hold a mapping"
    for key, why in (("description", "must not define `description`"), ("assertions", "must use `assert`")):
        if key in loaded:
            return None, f"the default_test file {file} {why} (AgentV refuses it)"
    return loaded, None


def _default_test(data: dict, normalizer: AgentvNormalizer) -> None:
    """AgentV v5's `default_test`: its `vars` were given to each test; its `assert` comes
    before the suite's own assertions (`combineInheritedAssertions`, v5.3.1); its `threshold`
    is the suite's pass mark (AgentV's run-eval.ts prefers it to the top-level one);
    `options.rubric_prompt` is kept in metadata, its `provider` and `transform` apply to each
    test (`_agentv_options.py`); anything else is refused."""
    default_test, problem = read_default_test(data.pop("default_test"), normalizer.base)
    if default_test is None:
        normalizer.add(("default_test",), problem or "")
        return
    for key in default_test:
        if key not in ("vars", "assert", "threshold", "options"):
            normalizer.add(
                ("default_test", key),
                f"this AgentV form is not supported: `default_test.{key}` (vars, assert, threshold, options)",
            )
    _default_options(default_test.get("options"), data, normalizer)
    threshold = default_test.get("threshold")
    if threshold is not None:
        execution = data.setdefault("execution", {})
        if isinstance(execution, dict):
            execution["threshold"] = threshold
            normalizer.lines.add(("execution", "threshold"), *normalizer.lines.locate(("default_test", "threshold")))
    extra = default_test.get("assert")
    if extra is None:
        return
    if not isinstance(extra, list):
        normalizer.add(("default_test", "assert"), "must be a list of assertions")
        return
    own = data.get("assertions")
    own = own if isinstance(own, list) else []
    places = [normalizer.lines.locate(("default_test", "assert", j)) for j in range(len(extra))]
    places += [normalizer.lines.locate(("assertions", k)) for k in range(len(own))]
    for k, place in enumerate(places):
        normalizer.lines.add(("assertions", k), *place)
    data["assertions"] = [*extra, *own]


def _default_options(options: object, data: dict, normalizer: AgentvNormalizer) -> None:
    where = ("default_test", "options")
    read_options(options, normalizer.base, lambda k, m: normalizer.add((*where, k) if k else where, m))
    if isinstance(options, dict) and "rubric_prompt" in options:
        metadata = data.setdefault("metadata", {})
        if isinstance(metadata, dict):
            metadata.setdefault("rubric_prompt", options["rubric_prompt"])


def v5_assertion(item: dict, kind: object) -> dict | None:
    """An AgentV v5 assertion type as convoeval's (None: not one of v5's)."""
    if kind == "llm-rubric":
        return v5_rubric(item)
    if kind == "assert-set":
        return v5_assert_set(item)
    return None
