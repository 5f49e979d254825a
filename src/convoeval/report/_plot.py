"""A picture of the leaderboard: ratings with their intervals."""

from __future__ import annotations

from pathlib import Path

from ..rank import Leaderboard

PLOT_FORMATS = (".svg", ".png", ".pdf")


def plot_leaderboard(board: Leaderboard, path: str | Path) -> Path:
    """Draw Bradley-Terry ratings with their intervals (and Elo as a hollow mark).

    Args:
        board: the leaderboard.
        path: where to write; the suffix picks the format (.svg, .png or .pdf).

    Raises:
        ValueError: for another suffix.
        RuntimeError: when matplotlib is not installed.
    """
    path = Path(path)
    if path.suffix.lower() not in PLOT_FORMATS:
        raise ValueError(f"{path}: plot format must be one of {', '.join(PLOT_FORMATS)}")
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise RuntimeError("plotting needs matplotlib: pip install 'convoeval[plot]'") from None

    rows = list(reversed(board.rows))  # best at the top
    positions = list(range(len(rows)))
    figure = Figure(figsize=(7, 1.6 + 0.45 * len(rows)), layout="constrained")
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    intervals = [
        (position, row.bt, row.ci_low, row.ci_high)
        for position, row in zip(positions, rows, strict=True)
        if row.ci_low is not None and row.ci_high is not None
    ]
    if intervals:
        axes.errorbar(
            [bt for _, bt, _, _ in intervals],
            [position for position, _, _, _ in intervals],
            xerr=[
                [bt - low for _, bt, low, _ in intervals],
                [high - bt for _, bt, _, high in intervals],
            ],
            fmt="none",
            ecolor="tab:blue",
            capsize=4,
            label=f"{board.confidence:.0%} bootstrap interval",
        )
    axes.plot([r.bt for r in rows], positions, "o", color="tab:blue", label="Bradley-Terry")
    axes.plot([r.elo for r in rows], positions, "D", mfc="none", color="tab:orange", label="online Elo")
    axes.set_yticks(positions, [f"{r.rank}. {r.target}" for r in rows])
    axes.set_xlabel("rating (400 points = 10:1 odds)")
    axes.set_title(f"Arena leaderboard ({board.battles} battles)")
    axes.grid(axis="x", alpha=0.3)
    axes.set_ylim(-0.6, len(rows) - 0.4)
    figure.legend(loc="outside lower center", ncols=3, fontsize="small", frameon=False)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path)
    return path
