"""Minimal Python helpers for AgentV code-graders and eval authoring."""

from .evals import EvalDefinition, EvalTest, JsonlCase, render_eval_yaml, render_jsonl, run_agentv_eval, write_eval_yaml, write_jsonl
from .grader import Assertion, CodeGraderContext, CodeGraderResult, TargetClient, define_code_grader, emit_grader_result, load_grader_input, run_code_grader

__all__ = [
    "Assertion",
    "CodeGraderContext",
    "CodeGraderResult",
    "TargetClient",
    "define_code_grader",
    "emit_grader_result",
    "load_grader_input",
    "run_code_grader",
    "EvalDefinition",
    "EvalTest",
    "JsonlCase",
    "render_eval_yaml",
    "render_jsonl",
    "run_agentv_eval",
    "write_eval_yaml",
    "write_jsonl",
]
