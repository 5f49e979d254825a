"""The HTML report: one self-contained file (inline CSS and JS, no network), and the pages of
`convoeval view`, rendered from Jinja2 templates with autoescape on.

Model output, suite text and evidence are always inserted as escaped text, never as HTML. The
target's replies are rendered as Markdown by markdown-it-py with raw HTML off (any `<tag>` in a
reply comes out as text), no images, and its own link check (no `javascript:`, `vbscript:`,
`file:` or `data:` links); the page's Content-Security-Policy blocks remote images and scripts
anyway. The arena plot is embedded as an `<img>` with a data URI (an SVG in an image never runs
scripts).
"""

from __future__ import annotations

import base64
import json
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict, Unpack

from ..rank import Battle, Leaderboard, leaderboard_from_battles, read_battles
from ..results import EvaluationResult, Message, ScoreEntry, TrialResult
from ..stats import Flaky, GroupRates, fmt_interval, group_rates, rates_by
from ._compare import Comparison, history_marks, significance_lines
from ._compare_view import pair_views
from ._groups import group_results, groups_html
from ._labels import SCALES, JudgedItem, Label, Scale
from ._overview import fmt_duration, fmt_rate, fmt_score, overview, suite_name
from ._panel import panel_agreement
from ._plot import plot_leaderboard

if TYPE_CHECKING:
    import jinja2
    from markdown_it import MarkdownIt
    from markupsafe import Markup

    from ._runs import RunInfo


@lru_cache(maxsize=1)
def _env() -> jinja2.Environment:
    """The page templates, loaded (with jinja2) when a page is first written."""
    from jinja2 import Environment, PackageLoader, StrictUndefined

    env = Environment(
        loader=PackageLoader("convoeval.report", "templates"),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(
        score=fmt_score,
        rate=fmt_rate,
        interval=fmt_interval,
        duration=fmt_duration,
        pretty=lambda value: json.dumps(value, indent=2, ensure_ascii=False, default=str),
        markdown=markdown_html,
    )
    return env


@lru_cache(maxsize=1)
def _markdown() -> MarkdownIt:
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False}).enable("table")
    return md.disable("image")  # a reply never makes the page load anything


def markdown_html(text: str) -> Markup:
    """`text` rendered as Markdown, as safe HTML (raw HTML in the text is escaped, links checked)."""
    from markupsafe import Markup

    return Markup(_markdown().render(text or ""))  # noqa: S704 (markdown-it escapes; html is off)


@dataclass
class ChatItem:
    """One block of a conversation: a message, or the graders of the turn that just ended."""

    message: Message | None = None
    entry: ScoreEntry | None = None


@dataclass
class TestView:
    """One result as the report shows it."""

    index: int
    result: EvaluationResult
    suite: str
    trials: list[tuple[TrialResult | None, list[ChatItem], ScoreEntry | None]]
    search: str
    labels: dict[tuple[str, str], list[JudgedItem]] = field(default_factory=dict)
    flaky_history: str | None = None


@dataclass
class BattleView:
    """One judged pair of conversations, shown side by side."""

    record: Mapping[str, object]
    a: TestView | None
    b: TestView | None


@dataclass
class ArenaView:
    """The arena: leaderboard, its plot (a data URI or None) and the battles."""

    leaderboard: Leaderboard
    plot: str | None
    battles: list[BattleView]
    note: str | None = None


def chat_items(messages: Sequence[Message], scores: Sequence[ScoreEntry]) -> tuple[list[ChatItem], ScoreEntry | None]:
    """The conversation with each turn's graders placed after the turn's last message; turns
    that were never sent come at the end. Returns the items and the conversation-level entry."""
    turns = {entry.name: entry for entry in scores if entry.type == "turn"}
    conversation = next((entry for entry in scores if entry.type == "conversation"), None)
    items: list[ChatItem] = []
    for position, message in enumerate(messages):
        items.append(ChatItem(message=message))
        following = messages[position + 1].turn if position + 1 < len(messages) else None
        if message.turn is not None and following != message.turn:
            entry = turns.pop(f"turn-{message.turn}", None)
            if entry is not None:
                items.append(ChatItem(entry=entry))
    items.extend(ChatItem(entry=entry) for entry in turns.values())
    return items, conversation


def _search_text(result: EvaluationResult) -> str:
    parts = [result.test_id, result.target, result.suite or "", result.error or ""]
    parts += [m.content[:2000] for m in result.output]
    return " ".join(parts).lower()[:20000]


ItemsOf = Callable[[EvaluationResult], list[JudgedItem]]


def test_views(results: Sequence[EvaluationResult], label_items: ItemsOf | None = None) -> list[TestView]:
    """The view of every result; with `label_items`, the labelable items of each grader too."""
    views = []
    for index, result in enumerate(results):
        trials: list[tuple[TrialResult | None, list[ChatItem], ScoreEntry | None]]
        if len(result.trials) > 1:
            trials = [(trial, *chat_items(trial.output, trial.scores)) for trial in result.trials]
        else:
            trials = [(result.trials[0] if result.trials else None, *chat_items(result.output, result.scores))]
        view = TestView(
            index=index, result=result, suite=suite_name(result), trials=trials, search=_search_text(result)
        )
        if label_items is not None:
            for item in label_items(result):
                view.labels.setdefault((item.entry, item.grader), []).append(item)
        views.append(view)
    return views


def read_battle_records(path: str | Path) -> list[dict[str, object]]:
    """The battles of `convoeval arena --output` (Chatbot Arena JSONL, with test ids and reasons).

    Raises:
        BattleFileError: `file:line: reason` (from `rank.read_battles`).
    """
    read_battles(path)  # validates every line with file:line errors
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def arena_view(
    records: Sequence[Mapping[str, object]], views: Sequence[TestView], *, bootstrap: int = 200, seed: int = 0
) -> ArenaView:
    """Leaderboard, plot and side-by-side battles from battle records and the runs' results."""
    battles = [Battle.from_dict(r) for r in records]
    board = leaderboard_from_battles(battles, bootstrap=bootstrap, seed=seed)
    by_key = {(v.result.test_id, v.result.target): v for v in views}

    def find(record: Mapping[str, object], side: str) -> TestView | None:
        test_id = str(record.get("test_id") or str(record.get("question_id", "")).rsplit("/", 1)[-1])
        return by_key.get((test_id, str(record[side])))

    plot, note = None, None
    try:
        with tempfile.TemporaryDirectory() as tmp:
            svg = plot_leaderboard(board, Path(tmp) / "ratings.svg").read_bytes()
        plot = "data:image/svg+xml;base64," + base64.b64encode(svg).decode("ascii")
    except RuntimeError as exc:  # matplotlib not installed
        note = str(exc)
    return ArenaView(
        leaderboard=board,
        plot=plot,
        note=note,
        battles=[BattleView(r, find(r, "model_a"), find(r, "model_b")) for r in records],
    )


class ReportRates(TypedDict):
    """The intervals the report shows (`report_rates`)."""

    all: GroupRates
    targets: dict[str, GroupRates]
    suites: list[GroupRates]
    trials: list[GroupRates]


def report_rates(results: Sequence[EvaluationResult]) -> ReportRates:
    """The intervals the report shows: the run's (`all`), per target and per suite, and the
    groups with trials (`trials`: the run, then targets and suites when there are several)."""
    overall = group_rates("all", results)
    targets = {g.name: g for g in rates_by(results, "target")}
    suites = rates_by(results, suite_name)
    groups = [overall, *(targets.values() if len(targets) > 1 else []), *(suites if len(suites) > 1 else [])]
    return ReportRates(
        all=overall,
        targets=targets,
        suites=suites if len(suites) > 1 else [],
        trials=[g for g in groups if g.trial_pass_rate is not None],
    )


def render_report(
    results: Sequence[EvaluationResult],
    *,
    title: str = "convoeval report",
    subtitle: str = "",
    arena: Sequence[Mapping[str, object]] | None = None,
    viewer: Mapping[str, object] | None = None,
    scale: Scale | None = None,
    labels: Sequence[Label] = (),
    label_items: ItemsOf | None = None,
    flaky: Sequence[Flaky] = (),
    by: str | None = None,
) -> str:
    """The report page: summary, filters, every test as a chat with its graders, the arena.

    Args:
        arena: battle records (`read_battle_records`) to show the leaderboard and battles.
        viewer: set by `convoeval view`: `{"run_id": ..., "scale": ...}` turns labelling on.
        scale: the labelling scale (viewer only).
        labels: labels already given (viewer only), shown in their forms.
        label_items: the labelable items of a result (viewer only).
        flaky: tests whose verdict varied across stored runs (`stats.flaky_in_store`), marked.
        by: a metadata field: a table of the results grouped by its values (`report --by`).
    """
    views = test_views(results, label_items)
    marks = history_marks(flaky)
    for view in views:
        view.flaky_history = marks.get((view.suite, view.result.test_id, view.result.target))
    given: dict[tuple[str, str, str, str, str], list[Label]] = {}
    for label in labels:
        given.setdefault((label.suite, label.test_id, label.target, label.entry, label.item), []).append(label)
    page = _env().get_template("report.html.j2")
    return page.render(
        title=title,
        subtitle=subtitle,
        overview=overview(results),
        rates=report_rates(results),
        tests=views,
        arena=arena_view(arena, views) if arena else None,
        agreement=panel_agreement(results),
        viewer=viewer,
        categories=[str(c) for c in SCALES[scale]] if scale else [],
        given=given,
        verdicts=("pass", "fail", "error", "skip"),
        targets=list(dict.fromkeys(r.target for r in results)),
        suites=list(dict.fromkeys(v.suite for v in views)),
        groups=groups_html(group_results(results, by), by) if by else "",
    )


class ReportOptions(TypedDict, total=False):
    """The keyword arguments of `render_report`, for `write_html`."""

    title: str
    subtitle: str
    arena: Sequence[Mapping[str, object]] | None
    viewer: Mapping[str, object] | None
    scale: Scale | None
    labels: Sequence[Label]
    label_items: ItemsOf | None
    flaky: Sequence[Flaky]
    by: str | None


def write_html(results: Sequence[EvaluationResult], path: str | Path, **options: Unpack[ReportOptions]) -> Path:
    """Write `render_report(results, **options)` to `path` (a self-contained HTML file)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_report(results, **options), encoding="utf-8")
    return path


def render_runs(runs: Sequence[RunInfo], *, store: str, battles: Sequence[str] = ()) -> str:
    """The viewer's home page: every run of the store, a form to compare two, the arenas."""
    page = _env().get_template("runs.html.j2")
    return page.render(title="convoeval runs", subtitle=store, runs=runs, battles=battles, viewer={})


#: Up to this many tests, the compare page shows every test side by side; above, ties whose
#: turns all kept their verdicts are left out.
MAX_TIES_SIDE_BY_SIDE = 200


def render_comparison(
    comparison: Comparison,
    *,
    viewer: Mapping[str, object] | None = None,
    results_a: Sequence[EvaluationResult] | None = None,
    results_b: Sequence[EvaluationResult] | None = None,
) -> str:
    """Two runs compared: counts, then every test, regressions first; with both runs' results,
    each test's two conversations side by side, turn by turn, the first divergence and every
    turn whose verdict changed marked."""
    page = _env().get_template("compare.html.j2")
    pairs = pair_views(comparison, results_a, results_b) if results_a is not None and results_b is not None else []
    hidden = 0
    if len(pairs) > MAX_TIES_SIDE_BY_SIDE:  # a big run: the ties' conversations would swamp the page
        shown = [p for p in pairs if p.pair.outcome != "tie" or p.changed_turns]
        hidden, pairs = len(pairs) - len(shown), shown
    return page.render(
        hidden_ties=hidden,
        title=f"{comparison.name_b} vs {comparison.name_a}",
        subtitle=f"tolerance {comparison.tolerance:g}",
        comparison=comparison,
        significance_lines=significance_lines(comparison),
        pairs=pairs,
        viewer=viewer,
        given={},
    )


def write_comparison(
    comparison: Comparison,
    results_a: Sequence[EvaluationResult],
    results_b: Sequence[EvaluationResult],
    path: str | Path,
) -> Path:
    """Write the compare page (self-contained HTML, transcripts side by side) to `path`."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_comparison(comparison, results_a=results_a, results_b=results_b), encoding="utf-8")
    return path
