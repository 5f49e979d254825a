"""Inter-judge agreement of a judge panel, per check type (what `convoeval run` prints and the
HTML report shows).

Each check a panel judged (one `GraderScore` with `panel` answers, in every trial) is an item;
each judge is a rater; a judge's rating is its verdict, `pass` or `fail` (a judge that failed
is a missing rating). Per check type (`rubrics`, `llm-grader`, `scenario`, ...): Krippendorff's
alpha (nominal) and Gwet's AC1 over the verdicts, with percent agreement, from
`convoeval.stats` (loaded only when a panel was used: it brings numpy).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypedDict

from ..results import EvaluationResult, GraderScore

if TYPE_CHECKING:
    from ..stats import Category

VERDICTS = ("fail", "pass")


@dataclass
class PanelRatings:
    """The verdicts of a panel's judges on the checks of one type (items x judges)."""

    check: str
    judges: list[str] = field(default_factory=list)
    items: list[dict[str, str | None]] = field(default_factory=list)
    rules: set[str] = field(default_factory=set)

    def matrix(self) -> list[list[str | None]]:
        return [[item.get(j) for j in self.judges] for item in self.items]


@dataclass(frozen=True)
class PanelAgreement:
    """Agreement of one check type's judges: alpha, AC1 and percent agreement (None when
    undefined, with `note` saying why)."""

    check: str
    judges: list[str]
    items: int
    rules: list[str]
    krippendorff_alpha: float | None
    gwet_ac1: float | None
    percent_agreement: float | None
    note: str | None = None

    def to_dict(self) -> dict[str, object]:
        return {
            "check": self.check,
            "judges": self.judges,
            "items": self.items,
            "rules": self.rules,
            "krippendorff_alpha": self.krippendorff_alpha,
            "gwet_ac1": self.gwet_ac1,
            "percent_agreement": self.percent_agreement,
            "note": self.note,
        }


def _graders(result: EvaluationResult) -> Iterator[GraderScore]:
    entries = [e for t in result.trials for e in t.scores] if result.trials else result.scores
    for entry in entries:
        yield from entry.graders


def panel_ratings(results: Iterable[EvaluationResult]) -> dict[str, PanelRatings]:
    """Every check a panel judged, by check type, in the order met."""
    by_check: dict[str, PanelRatings] = {}
    for result in results:
        for grader in _graders(result):
            if not grader.panel:
                continue
            ratings = by_check.setdefault(grader.type, PanelRatings(grader.type))
            for answer in grader.panel:
                if answer.judge not in ratings.judges:
                    ratings.judges.append(answer.judge)
            ratings.items.append({a.judge: a.verdict if a.verdict in VERDICTS else None for a in grader.panel})
            if grader.panel_rule:
                ratings.rules.add(grader.panel_rule)
    return by_check


def panel_agreement(results: Iterable[EvaluationResult]) -> list[PanelAgreement]:
    """Inter-judge agreement per check type (empty when no panel judged anything)."""
    rows = []
    for check, ratings in panel_ratings(results).items():
        matrix = ratings.matrix()
        figures = agreement_figures(matrix, VERDICTS)
        rows.append(
            PanelAgreement(
                check=check,
                judges=list(ratings.judges),
                items=len(matrix),
                rules=sorted(ratings.rules),
                krippendorff_alpha=figures["krippendorff_alpha"],
                gwet_ac1=figures["gwet_ac1"],
                percent_agreement=figures["percent_agreement"],
                note=figures["note"],
            )
        )
    return rows


class AgreementFigures(TypedDict):
    """How raters agree (each None when undefined; `note` says why)."""

    krippendorff_alpha: float | None
    gwet_ac1: float | None
    percent_agreement: float | None
    note: str | None


def agreement_figures(matrix: Sequence[Sequence[object]], categories: Sequence[Category]) -> AgreementFigures:
    """Krippendorff's alpha (nominal), Gwet's AC1 and percent agreement of an items x raters
    matrix (None = missing), each rounded to 4 places or None when undefined (`note` says why)."""
    from ..stats import AgreementInputError, gwet_ac1, krippendorff_alpha, percent_agreement  # numpy: only with a panel

    try:
        alpha = krippendorff_alpha(matrix, list(categories), "nominal", bootstrap=0)
    except AgreementInputError as exc:  # no judge gave a verdict (every one failed): nothing to compare
        return AgreementFigures(krippendorff_alpha=None, gwet_ac1=None, percent_agreement=None, note=str(exc))
    ac1 = gwet_ac1(matrix, list(categories))
    pa = percent_agreement(matrix, list(categories))
    notes = [e.note for e in (alpha, ac1, pa) if e.note]
    return AgreementFigures(
        krippendorff_alpha=_value(alpha.value),
        gwet_ac1=_value(ac1.value),
        percent_agreement=_value(pa.value),
        note=notes[0] if notes else None,
    )


def _value(value: float) -> float | None:
    return None if math.isnan(value) else round(value, 4)


def agreement_lines(rows: list[PanelAgreement]) -> list[str]:
    """The agreement as text lines, one per check type."""

    def show(value: float | None) -> str:
        return "undefined" if value is None else f"{value:.3f}"

    lines = []
    for row in rows:
        line = (
            f"{row.check}: {row.items} check(s) by {', '.join(row.judges)} ({'/'.join(row.rules) or 'rule ?'}): "
            f"Krippendorff's alpha {show(row.krippendorff_alpha)}, Gwet's AC1 {show(row.gwet_ac1)}, "
            f"agreement {show(row.percent_agreement)}"
        )
        if row.note and row.krippendorff_alpha is None:
            line += f" ({row.note})"
        lines.append(line)
    return lines
