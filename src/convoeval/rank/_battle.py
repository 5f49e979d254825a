"""Battles between two targets, and Chatbot Arena's battle JSONL."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from .._jsonl import JsonlError, loads, read_jsonl, read_problem

Winner = Literal["model_a", "model_b", "tie"]

TIE_SPELLINGS = frozenset({"tie", "tie (bothbad)", "tie (inconsistent)"})
"""Chatbot Arena writes a tie as "tie" or, when both answers were bad, "tie (bothbad)"; MT-Bench's
GPT-4 pairwise judgments write orders that disagreed as "tie (inconsistent)"."""


class BattleFileError(ValueError):
    """A battles file cannot be used; the message starts with file:line."""


@dataclass(frozen=True)
class Battle:
    """One judged comparison of two targets.

    Attributes:
        model_a: the target shown first.
        model_b: the target shown second.
        winner: "model_a", "model_b" or "tie".

    Example:
        >>> Battle("gpt", "llama", "model_a").score_a
        1.0
    """

    model_a: str
    model_b: str
    winner: Winner

    def __post_init__(self) -> None:
        for side in ("model_a", "model_b"):
            name = getattr(self, side)
            if not isinstance(name, str) or not name.strip():
                raise ValueError(f"{side} must be a non-empty string, got {name!r}")
        if self.model_a == self.model_b:
            raise ValueError(f"a battle needs two different targets, got {self.model_a!r} twice")
        if self.winner not in ("model_a", "model_b", "tie"):
            raise ValueError(f"winner must be model_a, model_b or tie, got {self.winner!r}")

    @property
    def score_a(self) -> float:
        """model_a's score: 1 for a win, 0.5 for a tie, 0 for a loss."""
        return {"model_a": 1.0, "model_b": 0.0, "tie": 0.5}[self.winner]

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> Battle:
        """A Battle from a Chatbot Arena record (each of `TIE_SPELLINGS` counts as a tie).

        Other fields of the record (question_id, judge, turn...) are ignored.
        """
        missing = [key for key in ("model_a", "model_b", "winner") if key not in data]
        if missing:
            raise ValueError(f"missing field {', '.join(missing)}")
        given = data["winner"]
        winner: Winner
        if isinstance(given, str) and given in TIE_SPELLINGS:  # an object or a list is no key of a set
            winner = "tie"
        elif given == "model_a" or given == "model_b":
            winner = given
        else:
            raise ValueError(
                f"winner must be model_a, model_b or a tie ({', '.join(sorted(TIE_SPELLINGS))}), got {given!r}"
            )
        return cls(model_a=_name(data, "model_a"), model_b=_name(data, "model_b"), winner=winner)


def _name(data: Mapping[str, object], side: str) -> str:
    name = data[side]
    if not isinstance(name, str):
        raise ValueError(f"{side} must be a non-empty string, got {name!r}")
    return name


def read_records(path: Path, noun: str) -> list[tuple[str, object]]:
    """The records of a JSON Lines file, or of a JSON file holding one list, each with where it
    is: `file:line`, or `file: <noun> <index>` in a list.

    Raises:
        BattleFileError: `file[:line]: reason` when the file cannot be read or parsed.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise BattleFileError(read_problem(path, exc)) from None
    if text.lstrip().startswith("["):
        try:
            records = loads(text)
        except json.JSONDecodeError as exc:
            raise BattleFileError(f"{path}:{exc.lineno}: invalid JSON: {exc.msg}") from None
        return [(f"{path}: {noun} {i}", record) for i, record in enumerate(records)]
    try:
        return [(f"{path}:{n}", record) for n, record in read_jsonl(path)]
    except JsonlError as error:
        raise BattleFileError(str(error)) from None


def read_battles(path: str | Path) -> list[Battle]:
    """Read battles from JSONL (one `{"model_a", "model_b", "winner"}` object a line; blank lines
    are skipped) or from a JSON list of such objects, as MT-Bench's judgments are written.

    Args:
        path: the file.

    Raises:
        BattleFileError: `file:line: reason` (`file: battle N: reason` in a JSON list) for the
            first unusable record, or when the file is missing or holds no battle.

    Example:
        >>> battles = read_battles("examples/arena/battles.jsonl")  # doctest: +SKIP
    """
    path = Path(path)
    battles: list[Battle] = []
    for where, record in read_records(path, "battle"):
        try:
            if not isinstance(record, dict):
                raise ValueError(f"expected a JSON object, got {record!r:.60}")
            battles.append(Battle.from_dict(record))
        except ValueError as error:
            raise BattleFileError(f"{where}: {error}") from None
    if not battles:
        raise BattleFileError(f"{path}: no battles in the file")
    return battles


def targets_of(battles: Iterable[Battle]) -> list[str]:
    """The targets in order of first appearance."""
    seen: dict[str, None] = {}
    for battle in battles:
        seen.setdefault(battle.model_a)
        seen.setdefault(battle.model_b)
    return list(seen)
