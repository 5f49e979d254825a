"""Ratings from battles: online Elo, Bradley-Terry with bootstrap intervals, the leaderboard.
(Judging pairs and printing the leaderboard live in `convoeval.arena`.)

Example:
    >>> from convoeval.rank import Battle, leaderboard_from_battles
    >>> battles = [Battle("a", "b", "model_a"), Battle("b", "a", "tie")]
    >>> battles.append(Battle("b", "a", "model_b"))
    >>> [row.target for row in leaderboard_from_battles(battles, bootstrap=0).rows]
    ['a', 'b']
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_attributes

if TYPE_CHECKING:
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
    from ._votes import TurnAgreement, Vote, read_votes, votes_agreement

# Everything loads when first used: `convoeval run` only names BattleFileError (`--battles`).
__getattr__ = lazy_attributes(
    __name__,
    {
        "._battle": ("TIE_SPELLINGS", "Battle", "BattleFileError", "Winner", "read_battles", "targets_of"),
        "._bt": (
            "BootstrapIntervals",
            "BradleyTerryResult",
            "bradley_terry",
            "bradley_terry_intervals",
            "fit_strengths",
            "win_matrix",
        ),
        "._elo": ("EloResult", "elo_history_interval", "online_elo"),
        "._leaderboard": ("Leaderboard", "LeaderboardRow", "leaderboard_from_battles"),
        "._votes": ("TurnAgreement", "Vote", "read_votes", "votes_agreement"),
    },
)

__all__ = [
    "TIE_SPELLINGS",
    "Battle",
    "BattleFileError",
    "BootstrapIntervals",
    "BradleyTerryResult",
    "EloResult",
    "Leaderboard",
    "LeaderboardRow",
    "TurnAgreement",
    "Vote",
    "Winner",
    "bradley_terry",
    "bradley_terry_intervals",
    "elo_history_interval",
    "fit_strengths",
    "leaderboard_from_battles",
    "online_elo",
    "read_battles",
    "read_votes",
    "targets_of",
    "votes_agreement",
    "win_matrix",
]
