"""The arena: run suites on several targets (or take stored results), judge every pair of
conversations in both orders, rate the targets (ratings from `convoeval.rank`) and report.

Example:
    report = convoeval.arena("examples/arena/support.eval.yaml", targets=["polite-bot", "terse-bot"])
    print(report.to_json())
"""

from ..report import PLOT_FORMATS, plot_leaderboard
from ._api import ArenaOptions, aarena, arena
from ._judge import ArenaTest, PairJudgment, TestKey, group_results, judge_arena
from ._report import (
    ARENA_CSV_COLUMNS,
    CSV_COLUMNS,
    ArenaReport,
    TargetSummary,
    leaderboard_csv,
    leaderboard_json,
    leaderboard_table,
    summarise_target,
)

__all__ = [
    "ARENA_CSV_COLUMNS",
    "CSV_COLUMNS",
    "PLOT_FORMATS",
    "ArenaOptions",
    "ArenaReport",
    "ArenaTest",
    "PairJudgment",
    "TargetSummary",
    "TestKey",
    "aarena",
    "arena",
    "group_results",
    "judge_arena",
    "leaderboard_csv",
    "leaderboard_json",
    "leaderboard_table",
    "plot_leaderboard",
    "summarise_target",
]
