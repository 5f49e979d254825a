"""Arena ratings: online Elo, Bradley-Terry with bootstrap intervals, the leaderboard, and the
arena runner (`judge_arena`: every pair of targets judged in both orders).

Example:
    >>> from convoeval.rank import Battle, leaderboard_from_battles
    >>> battles = [Battle("a", "b", "model_a"), Battle("b", "a", "tie")]
    >>> battles.append(Battle("b", "a", "model_b"))
    >>> [row.target for row in leaderboard_from_battles(battles, bootstrap=0).rows]
    ['a', 'b']
"""

from ._arena import (
    ARENA_CSV_COLUMNS,
    ArenaReport,
    ArenaTest,
    PairJudgment,
    TargetSummary,
    judge_arena,
    summarise_target,
)
from ._battle import TIE_SPELLINGS, Battle, BattleFileError, Winner, read_battles, targets_of
from ._bt import (
    BootstrapIntervals,
    BradleyTerryResult,
    bradley_terry,
    bradley_terry_intervals,
    fit_strengths,
    win_matrix,
)
from ._elo import EloResult, elo_history_interval, online_elo
from ._leaderboard import Leaderboard, LeaderboardRow, leaderboard_from_battles
from ._output import CSV_COLUMNS, leaderboard_csv, leaderboard_json, leaderboard_table
from ._plot import PLOT_FORMATS, plot_leaderboard

__all__ = [
    "ARENA_CSV_COLUMNS",
    "ArenaReport",
    "ArenaTest",
    "PairJudgment",
    "TargetSummary",
    "CSV_COLUMNS",
    "PLOT_FORMATS",
    "TIE_SPELLINGS",
    "Battle",
    "BattleFileError",
    "BootstrapIntervals",
    "BradleyTerryResult",
    "EloResult",
    "Leaderboard",
    "LeaderboardRow",
    "Winner",
    "bradley_terry",
    "bradley_terry_intervals",
    "elo_history_interval",
    "fit_strengths",
    "judge_arena",
    "leaderboard_csv",
    "leaderboard_from_battles",
    "leaderboard_json",
    "leaderboard_table",
    "online_elo",
    "plot_leaderboard",
    "read_battles",
    "summarise_target",
    "targets_of",
    "win_matrix",
]
