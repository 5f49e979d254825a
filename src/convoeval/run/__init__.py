"""Running tests live: plans, the conversation loop, trials and dependencies."""

from ._conversation import Conversation, TrialContext, run_trial, turn_source
from ._grading import aggregate, combine
from ._plan import TestPlan, TurnPlan, plan_test
from ._scheduler import Job, combine_trials, dependency_order, run_jobs
from ._turns import ScriptedTurns, SingleShotTurns, TurnSource
from ._workspace import run_suite_hooks

__all__ = [
    "Conversation",
    "Job",
    "ScriptedTurns",
    "SingleShotTurns",
    "TestPlan",
    "TrialContext",
    "TurnPlan",
    "TurnSource",
    "aggregate",
    "combine",
    "combine_trials",
    "dependency_order",
    "plan_test",
    "run_jobs",
    "run_suite_hooks",
    "run_trial",
    "turn_source",
]
