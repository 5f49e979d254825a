"""Running tests live: plans, the conversation loop as a pipeline of steps, trials and
dependencies."""

from ._conversation import Conversation, TrialContext, play, run_trial, turn_source
from ._grading import TurnRecord, aggregate, combine, conversation_context, simulator_context, turn_context
from ._jobs import GradedTurn, Job, JobEvents
from ._plan import TestPlan, TurnPlan
from ._planner import plan_test
from ._scheduler import CombinedTrial, TrialRunner, combine_trials, dependency_order, run_jobs
from ._steps import (
    BudgetStep,
    FidelityStep,
    ScenarioStep,
    SimulatedUserStep,
    StepFactory,
    TrialStep,
    VerifyStep,
    WorkspaceChangesStep,
    choose_steps,
)
from ._turns import ScriptedTurns, SingleShotTurns, TurnSource
from ._workspace import run_suite_hooks

__all__ = [
    "BudgetStep",
    "CombinedTrial",
    "Conversation",
    "FidelityStep",
    "GradedTurn",
    "Job",
    "JobEvents",
    "ScenarioStep",
    "ScriptedTurns",
    "SimulatedUserStep",
    "SingleShotTurns",
    "StepFactory",
    "TestPlan",
    "TrialContext",
    "TrialRunner",
    "TrialStep",
    "TurnPlan",
    "TurnRecord",
    "TurnSource",
    "VerifyStep",
    "WorkspaceChangesStep",
    "aggregate",
    "choose_steps",
    "combine",
    "combine_trials",
    "conversation_context",
    "dependency_order",
    "plan_test",
    "play",
    "run_jobs",
    "run_suite_hooks",
    "run_trial",
    "simulator_context",
    "turn_context",
    "turn_source",
]
