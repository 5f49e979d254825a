"""MultiWOZ 2.2 dialogues (the Hugging Face `multi_woz_v22` JSON schema) as TD-Eval suites.

Each dialogue becomes a conversation test: every user utterance a scripted turn; the turn's
`context` (what the judges see as the backend result) holds the belief state after that user
turn, the database matches for it (with `db=` a folder of MultiWOZ's `<domain>_db.json`), and
the reference system's dialogue acts. With a database the matches are also given to the agent,
as a system message before the user's words, as TD-Eval's agents got them. The test's policy is
the dialogue's domains (slots and rules), and TD-Eval's three dimensions grade every turn.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import DatasetError
from ._common import read_json, read_jsonl

#: Slots per domain: what the user may constrain (informable) or ask for.
DOMAIN_SLOTS: dict[str, list[str]] = {
    "restaurant": ["area", "food", "pricerange", "name", "bookpeople", "bookday", "booktime"],
    "hotel": [
        "area",
        "pricerange",
        "type",
        "stars",
        "parking",
        "internet",
        "name",
        "bookpeople",
        "bookday",
        "bookstay",
    ],
    "attraction": ["area", "type", "name"],
    "train": ["departure", "destination", "day", "leaveat", "arriveby", "bookpeople"],
    "taxi": ["departure", "destination", "leaveat", "arriveby"],
    "hospital": ["department"],
    "police": [],
}
RULES = [
    "Base every fact (names, counts, prices, times, addresses) on the backend results; never invent entities.",
    "When several entities match, say how many and offer a few or ask a question that narrows them down.",
    "When nothing matches, say so and suggest changing a constraint.",
    "Book only when every booking slot (people, day, time or stay) is known; ask for the missing ones.",
    "After booking, confirm the details and give the reference number.",
]
#: Belief-state slots compared with database fields (others, like book slots, are not).
_DB_FIELDS = {
    "area",
    "food",
    "pricerange",
    "type",
    "stars",
    "parking",
    "internet",
    "name",
    "departure",
    "destination",
    "day",
}
MAX_MATCHES = 3


def import_multiwoz(source: Path, *, db: Path | None = None) -> dict[str, Any]:
    """The MultiWOZ suite of `source` (JSON Lines, one dialogue a line).

    Args:
        db: a folder holding `<domain>_db.json` files (default: `db/` beside `source`, if any).
    """
    folder = db if db is not None else (source.parent / "db" if (source.parent / "db").is_dir() else None)
    databases = _databases(folder) if folder is not None else {}
    tests = [_dialogue(record, source, line, databases) for line, record in read_jsonl(source)]
    if not tests:
        raise DatasetError(f"{source}:1: no dialogues in the file")
    return {
        "name": "multiwoz",
        "description": "MultiWOZ 2.2 dialogues: the user's turns scripted, graded on TD-Eval's three dimensions",
        "metadata": {
            "source": source.name,
            "imported_by": "convoeval import multiwoz",
            "licence": "MIT (MultiWOZ)",
            "database": bool(databases),
        },
        "input": [
            {
                "role": "system",
                "content": "You are a Cambridge travel information and booking assistant "
                "(restaurants, hotels, attractions, trains, taxis).",
            }
        ],
        "turn_assertions": [{"type": "td-eval"}],
        "tests": tests,
    }


def _databases(folder: Path) -> dict[str, list[dict[str, Any]]]:
    if not folder.is_dir():
        raise DatasetError(f"{folder}:1: no such folder (expected MultiWOZ's <domain>_db.json files)")
    found = {}
    for domain in DOMAIN_SLOTS:
        path = folder / f"{domain}_db.json"
        if path.is_file():
            data = read_json(path)
            if isinstance(data, list):
                found[domain] = data
    return found


def _dialogue(
    record: dict[str, Any], source: Path, line: int, databases: dict[str, list[dict[str, Any]]]
) -> dict[str, Any]:
    try:
        turns = record["turns"]
        speakers, utterances = turns["speaker"], turns["utterance"]
        frames, acts = turns["frames"], turns["dialogue_acts"]
        name = str(record["dialogue_id"]).removesuffix(".json")
    except (KeyError, TypeError):
        raise DatasetError(
            f"{source}:{line}: expected dialogue_id and turns{{speaker, utterance, frames, "
            "dialogue_acts}} (MultiWOZ 2.2)"
        ) from None
    services = [str(s) for s in record.get("services") or []]
    scripted = []
    for i, speaker in enumerate(speakers):
        if speaker != 0:
            continue
        belief = _belief(frames[i])
        context: dict[str, Any] = {"belief_state": belief}
        matches = {d: _query(databases[d], slots) for d, slots in belief.items() if d in databases}
        if matches:
            context["db"] = matches
        if i + 1 < len(speakers) and speakers[i + 1] == 1:
            context["reference_acts"] = _acts(acts[i + 1])
        user = {"role": "user", "content": utterances[i]}
        entry: dict[str, Any] = {
            "input": [{"role": "system", "content": f"Backend results: {_brief(matches)}"}, user]
            if matches
            else utterances[i],
            "context": context,
        }
        scripted.append(entry)
    if not scripted:
        raise DatasetError(f"{source}:{line}: dialogue {name} has no user turn")
    domains = services or sorted({d for t in scripted for d in t["context"]["belief_state"]})
    slots = list(dict.fromkeys(f"{d}-{s}" for d in domains for s in DOMAIN_SLOTS.get(d, [])))
    return {
        "id": f"multiwoz-{name}",
        "mode": "conversation",
        "metadata": {"dialogue_id": name, "services": services},
        "policy": {"domain": "+".join(domains), "slots": slots, "rules": list(RULES)},
        "turns": scripted,
    }


def _belief(frame: dict[str, Any]) -> dict[str, dict[str, str]]:
    """`{domain: {slot: value}}` from a MultiWOZ 2.2 user frame."""
    belief: dict[str, dict[str, str]] = {}
    for state in frame.get("state") or []:
        values = state.get("slots_values") or {}
        names, lists = values.get("slots_values_name", []), values.get("slots_values_list", [])
        for slot, options in zip(names, lists, strict=False):
            domain, _, name = slot.partition("-")
            if options:
                belief.setdefault(domain, {})[name] = str(options[0])
    return belief


def _acts(turn_acts: dict[str, Any]) -> dict[str, dict[str, str]]:
    acts = turn_acts.get("dialog_act") or {}
    out: dict[str, dict[str, str]] = {}
    for act, slots in zip(acts.get("act_type", []), acts.get("act_slots", []), strict=False):
        out.setdefault(act, {}).update(zip(slots.get("slot_name", []), slots.get("slot_value", []), strict=False))
    return out


def _query(rows: list[dict[str, Any]], constraints: dict[str, str]) -> dict[str, Any]:
    """Entities matching the belief state (case-insensitive equality; `dontcare` matches all)."""
    wanted = {k: v.lower() for k, v in constraints.items() if k in _DB_FIELDS and v.lower() not in ("dontcare", "")}
    hits = [r for r in rows if all(str(r.get(k, "")).lower() == v for k, v in wanted.items() if k in r)]
    names = [str(r.get("name") or r.get("trainID") or r.get("id")) for r in hits[:MAX_MATCHES]]
    return {"count": len(hits), "matches": names}


def _brief(matches: dict[str, dict[str, Any]]) -> str:
    return "; ".join(
        f"{d}: {m['count']} match(es)" + (f" ({', '.join(m['matches'])})" if m["matches"] else "")
        for d, m in matches.items()
    )
