"""MultiWOZ's venue database queried as its standard evaluation queries it.

The rules are those of MultiWOZ_Evaluation (github.com/Tomiinek/MultiWOZ_Evaluation, the
inform/success scorer MultiWOZ's README points to; `mwzeval/database.py` `query` and
`mwzeval/normalization.py` `normalize_state_slot_value`):
- a belief value is normalized first: names, departures and destinations to the database's
  spelling (`&` -> `and`, the scorer's list of known misspellings), types (`guest house` ->
  `guesthouse`), foods, times to `HH:MM`, and `free` parking or internet to `yes`;
- `dontcare` (and its spellings) constrains nothing, nor does a database `?`;
- names (and restaurant foods, train departures and destinations) match fuzzily:
  fuzzywuzzy's `partial_ratio` of at least 90, so `cow pizza kitchen and bar` is `the cow pizza
  kitchen and bar`; other fields match exactly;
- `arriveby` keeps the trains arriving by that time, `leaveat` those leaving at it or later.
Domains the scorer does not query (taxi, police, hospital) match on equal fields.

Example:
    >>> rows = [{"name": "the cow pizza kitchen and bar", "area": "centre"}]
    >>> matches("restaurant", rows, {"name": "cow pizza kitchen & bar", "area": "dontcare"})
    [{'name': 'the cow pizza kitchen and bar', 'area': 'centre'}]
"""

from __future__ import annotations

import re
from difflib import SequenceMatcher
from functools import lru_cache

from ._common import JsonObject

#: Belief-state slots compared with database fields (others, like book slots, are not).
FIELDS = {"area", "food", "pricerange", "type", "stars", "parking", "internet", "name"}
FIELDS |= {"departure", "destination", "day", "arriveby", "leaveat"}
DONT_CARE = {"", "dontcare", "not mentioned", "don't care", "dont care", "do n't care", "do not care"}
FUZZY = {
    "hotel": {"name"},
    "attraction": {"name"},
    "restaurant": {"name", "food"},
    "train": {"departure", "destination"},
}
FUZZY_RATIO = 90
#: The database column of a time slot (MultiWOZ's train_db.json), and whether a row's time
#: must be at most (arrive by) or at least (leave at) the wanted one.
TIMES = {"arriveby": ("arriveBy", True), "leaveat": ("leaveAt", False)}

_NAMES = {  # normalization.py name_to_canonical (every domain's list: it is called without one)
    "hotel du vin bistro": "hotel du vin and bistro",
    "the river bar and grill": "the river bar steakhouse and grill",
    "nando's": "nandos",
    "city center b and b": "city center north b and b",
    "acorn house": "acorn guest house",
    "caffee uno": "caffe uno",
    "cafe uno": "caffe uno",
    "rosa's": "rosas bed and breakfast",
    "restaurant called two two": "restaurant two two",
    "restaurant 2 two": "restaurant two two",
    "restaurant two 2": "restaurant two two",
    "restaurant 2 2": "restaurant two two",
    "restaurant 1 7": "restaurant one seven",
    "restaurant 17": "restaurant one seven",
    "lime house": "limehouse",
    "cityrooms": "cityroomz",
    "whale of time": "whale of a time",
    "huntingdon hotel": "huntingdon marriott hotel",
    "holiday inn exlpress, cambridge": "express by holiday inn cambridge",
    "university hotel": "university arms hotel",
    "arbury guesthouse and lodge": "arbury lodge guesthouse",
    "bridge house": "bridge guest house",
    "arbury guesthouse": "arbury lodge guesthouse",
    "nandos in the city centre": "nandos city centre",
    "broughton gallery": "broughton house gallery",
    "scudamores punt co": "scudamores punting co",
    "cambridge botanic gardens": "cambridge university botanic gardens",
    "the junction": "junction theatre",
    "trinity street college": "trinity college",
    "christ college": "christ's college",
    "christs": "christ's college",
    "history of science museum": "whipple museum of the history of science",
    "parkside pools": "parkside swimming pool",
    "the botanical gardens at cambridge university": "cambridge university botanic gardens",
    "cafe jello museum": "cafe jello gallery",
}
_TYPES = {
    "swimming pool": "swimmingpool",
    "mutliple sports": "multiple sports",
    "night club": "nightclub",
    "guest house": "guesthouse",
}
_FOODS = {
    "eriterean": "mediterranean",
    "brazilian": "portuguese",
    "sea food": "seafood",
    "portugese": "portuguese",
    "modern american": "north american",
    "americas": "north american",
    "intalian": "italian",
    "italain": "italian",
    "asian or oriental": "asian",
    "english": "british",
    "australasian": "australian",
    "gastropod": "gastropub",
    "brutish": "british",
    "bristish": "british",
    "europeon": "european",
}
_SPOKEN_TIMES = {
    "afternoon": "13:00",
    "lunch": "12:00",
    "noon": "12:00",
    "mid-day": "12:00",
    "around lunch time": "12:00",
    "morning": "08:00",
    "seven o'clock tomorrow evening": "07:00",
    "three forty five p.m": "15:45",
    "one thirty p.m.": "13:30",
    "six fourty five": "06:45",
    "eight thirty": "08:30",
}
_CLOCK = re.compile(r"[0-9][0-9]:[0-9][0-9]")


def matches(domain: str, rows: list[JsonObject], belief: dict[str, str]) -> list[JsonObject]:
    """The rows of `domain`'s database that the belief state (`{slot: value}`; 2.1's `leaveAt`
    as 2.2's `leaveat`) allows."""
    slots = {s.lower(): v for s, v in belief.items()}
    wanted = {s: normalize(s, v) for s, v in slots.items() if s in FIELDS and v.strip().lower() not in DONT_CARE}
    fuzzy = FUZZY.get(domain, set())
    checks = sorted(wanted.items(), key=lambda item: item[0] in fuzzy)  # the cheap exact checks first
    return [row for row in rows if all(_allows(row, s, v, s in fuzzy) for s, v in checks)]


def _allows(row: JsonObject, slot: str, value: str, fuzzy: bool) -> bool:
    column, by = TIMES.get(slot, (slot, False))
    have = row.get(column)
    if have is None or have == "?":
        return True  # a field the row does not have (or does not know) constrains nothing
    if slot in TIMES:
        minutes, wanted = _minutes(str(have)), _minutes(value)
        return minutes <= wanted if by else minutes >= wanted
    if fuzzy:
        return partial_ratio(str(have).lower(), value) >= FUZZY_RATIO
    return str(have).lower() == value


def normalize(slot: str, value: str) -> str:
    """A belief value in the database's spelling (normalize_state_slot_value)."""
    value = value.strip().lower()
    if slot in ("name", "departure", "destination"):
        value = value.replace(" & ", " and ").replace("&", " and ").replace(" '", "'")
        return _NAMES.get(value, value)
    if slot == "type":
        return _TYPES.get(value, value)
    if slot == "food":
        return _FOODS.get(value, value)
    if slot in TIMES:
        return clock(value)
    if slot in ("parking", "internet"):
        return "yes" if value == "free" else value
    return value


def clock(time: str) -> str:
    """A spoken or written time as `HH:MM` where it can be read (normalization.py time_to_canonical)."""
    time = time.strip().lower()
    if time in _SPOKEN_TIMES:
        return _SPOKEN_TIMES[time]
    if time.startswith("one o'clock p.m"):
        return "13:00"
    if time.startswith("ten o'clock a.m"):
        return "10:00"
    time = time[3:] if time.startswith("by") else time
    time = time[5:].strip() if time.startswith("after") else time
    time = time[4:].strip() if time.startswith("afer") else time
    time = time[:-2].strip() if time.endswith("am") else time
    time = time[:-4].strip() if time.endswith("a.m.") else time
    if time.endswith("pm") or time.endswith("p.m."):
        time = time[:-2].strip() if time.endswith("pm") else time[:-4].strip()
        tokens = time.split(":")
        if len(tokens) == 2 and tokens[0].isdigit():
            return f"{int(tokens[0]) + 12}:{tokens[1]}"
        if len(tokens) == 1 and tokens[0].isdigit():
            return f"{int(tokens[0]) + 12}:00"
    if not time:
        return "00:00"
    time = time[:-1] if time[-1] in ".,?" else time
    if time.isdigit():
        return f"{time[:2]}:{time[2:]}" if len(time) == 4 else f"{time.zfill(2)}:00"
    time = "".join(time.split(" ")) if ":" in time else time
    if len(time) == 4 and time[1] == ":":
        return f"{time[0].zfill(2)}:{time[2:]}"
    return time


def _minutes(time: str) -> int:
    """Minutes since midnight of `HH:MM` (0 for anything else, as time_str_to_minutes)."""
    if not _CLOCK.match(time):
        return 0
    return int(time[:2]) * 60 + int(time[3:5])


@lru_cache(maxsize=65536)  # a dialogue asks about the same few names and stations turn after turn
def partial_ratio(first: str, second: str) -> int:
    """fuzzywuzzy 0.18's `fuzz.partial_ratio` (its difflib implementation): the best
    `SequenceMatcher.ratio` of the shorter text against each equally long window of the longer
    one where a matching block starts, as an integer percentage."""
    if first == second:
        return 100
    if not first or not second:
        return 0
    shorter, longer = (first, second) if len(first) <= len(second) else (second, first)
    scores = []
    for block in SequenceMatcher(None, shorter, longer).get_matching_blocks():
        start = max(block[1] - block[0], 0)
        ratio = SequenceMatcher(None, shorter, longer[start : start + len(shorter)]).ratio()
        if ratio > 0.995:
            return 100
        scores.append(ratio)
    return int(round(100 * max(scores)))
