"""Running tests live: plans, the conversation loop, trials and dependencies."""

from ._conversation import TrialContext, aggregate, combine, run_trial
from ._plan import TestPlan, TurnPlan, plan_test
from ._scheduler import Job, combine_trials, dependency_order, run_jobs

__all__ = [
    "Job",
    "TestPlan",
    "TrialContext",
    "TurnPlan",
    "aggregate",
    "combine",
    "combine_trials",
    "dependency_order",
    "plan_test",
    "run_jobs",
    "run_trial",
]
