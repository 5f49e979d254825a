"""MultiWOZ dialogues, as distributed, as TD-Eval suites.

Read: MultiWOZ 2.2's `dialogues_*.json` (a list of dialogues with USER/SYSTEM turns and
frames), MultiWOZ 2.1's `data.json` (dialogue id -> `{goal, log}`, user and system turns
alternating, the belief state in each system turn's `metadata`), and the Hugging Face
`multi_woz_v22` rows (JSON Lines). Each dialogue becomes a conversation test: every user
utterance a scripted turn; the turn's `context` (what the judges see as the backend result)
holds the belief state after that user turn, the database matches for it (with `db=` a folder
of MultiWOZ's `<domain>_db.json`), and the reference system's dialogue acts; the reference
system reply is the turn's `expected_output` (judges only: the agent never sees it). With a
database the matches are also given to the agent, as a system message before the user's
words, as TD-Eval's agents got them. The test's policy is the dialogue's domains (slots and
rules), and TD-Eval's three dimensions grade every turn.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pydantic import JsonValue

from ..errors import DatasetError
from ._common import JsonObject, as_list, as_object, objects, read_json, read_jsonl, text
from ._multiwoz_db import matches as db_matches
from ._suite_types import Acts, BackendContext, Matches, Message, Suite, SuiteTest, Turn

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
MAX_MATCHES = 3


def import_multiwoz(source: Path, *, db: Path | None = None) -> Suite:
    """The MultiWOZ suite of `source` (2.2 dialogues_*.json, 2.1 data.json, or HF JSON Lines).

    Args:
        db: a folder holding `<domain>_db.json` files (default: `db/` beside `source`, if any).
    """
    folder = db if db is not None else (source.parent / "db" if (source.parent / "db").is_dir() else None)
    databases = _databases(folder) if folder is not None else {}
    dialogues, version = _read(source)
    tests = [_test(dialogue, databases, source) for dialogue in dialogues]
    if not tests:
        raise DatasetError(f"{source}:1: no dialogues in the file")
    return {
        "name": "multiwoz",
        "description": f"MultiWOZ {version} dialogues: the user's turns scripted, graded on TD-Eval's three dimensions",
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
        "tests": tests,
    }


@dataclass
class UserTurn:
    """One user turn of a dialogue, with what the reference system did next."""

    utterance: str
    belief: dict[str, dict[str, str]]
    reference_acts: Acts | None = None
    reference_reply: str | None = None


@dataclass
class Dialogue:
    name: str
    services: list[str]
    turns: list[UserTurn]


def _read(source: Path) -> tuple[list[Dialogue], str]:
    """The dialogues of `source` in any of the three formats, and the format's name."""
    if source.suffix == ".jsonl":
        return [_hf_dialogue(record, source, line) for line, record in read_jsonl(source)], "2.2"
    data = read_json(source)
    if isinstance(data, dict) and data and all(isinstance(v, dict) and "log" in v for v in data.values()):
        return [_v21_dialogue(name, value, source) for name, value in data.items() if isinstance(value, dict)], "2.1"
    if isinstance(data, list) and data and all(isinstance(d, dict) and isinstance(d.get("turns"), list) for d in data):
        acts = _v22_acts(source)
        return [_v22_dialogue(d, source, i, acts) for i, d in enumerate(data) if isinstance(d, dict)], "2.2"
    raise DatasetError(
        f"{source}:1: not a MultiWOZ file: expected MultiWOZ 2.2's dialogues_*.json (a list of dialogues "
        "with turns), MultiWOZ 2.1's data.json (dialogue id -> goal and log), or JSON Lines in the "
        "Hugging Face multi_woz_v22 schema (.jsonl)"
    )


def _databases(folder: Path) -> dict[str, list[JsonObject]]:
    if not folder.is_dir():
        raise DatasetError(f"{folder}:1: no such folder (expected MultiWOZ's <domain>_db.json files)")
    found = {}
    for domain in DOMAIN_SLOTS:
        path = folder / f"{domain}_db.json"
        if path.is_file():
            data = read_json(path)
            if isinstance(data, list):
                found[domain] = objects(data)
    return found


_HF_TURNS = ("speaker", "utterance", "frames", "dialogue_acts")


def _hf_dialogue(record: JsonObject, source: Path, line: int) -> Dialogue:
    """A row of the Hugging Face `multi_woz_v22` dataset (turns as parallel lists). A turn's
    frames hold only the services active in it; the others keep their last state, as every
    frame of 2.2's own files (and TD-Eval's dialogue state) does."""
    turns = as_object(record.get("turns"))
    if turns is None or "dialogue_id" not in record or any(k not in turns for k in _HF_TURNS):
        raise DatasetError(
            f"{source}:{line}: expected dialogue_id and turns{{speaker, utterance, frames, "
            "dialogue_acts}} (the Hugging Face multi_woz_v22 schema)"
        )
    name = str(record["dialogue_id"]).removesuffix(".json")
    if any(not isinstance(turns[k], list) for k in _HF_TURNS):
        raise DatasetError(f"{source}:{line}: turns: {', '.join(_HF_TURNS)}: expected lists, one item a turn")
    speakers, utterances, frames, acts = (as_list(turns[k]) for k in _HF_TURNS)
    where = f"{source}:{line}: turns"
    user_turns = []
    known: dict[str, dict[str, str]] = {}
    for i, speaker in enumerate(speakers):
        if speaker != 0:
            continue
        system = i + 1 < len(speakers) and speakers[i + 1] == 1
        utterance = text(_nth(utterances, i, "utterance", where), f"{where}.utterance[{i}]")
        reply = text(_nth(utterances, i + 1, "utterance", where), f"{where}.utterance[{i + 1}]") if system else None
        known |= _belief(_nth(frames, i, "frames", where))
        user_turns.append(
            UserTurn(
                utterance, dict(known), _acts(_nth(acts, i + 1, "dialogue_acts", where)) if system else None, reply
            )
        )
    return Dialogue(name, [str(s) for s in as_list(record.get("services"))], user_turns)


def _nth(items: list[JsonValue], index: int, field: str, where: str) -> JsonValue:
    """`items[index]` of a list of turns (DatasetError when the list is too short)."""
    if index >= len(items):
        raise DatasetError(f"{where}.{field}: {len(items)} item(s), none for turn {index} (one item a turn)")
    return items[index]


def _v22_acts(source: Path) -> JsonObject | None:
    """MultiWOZ 2.2's `dialog_acts.json` (dialogue id -> turn id -> `dialog_act`), which 2.2
    ships beside its train/, dev/ and test/ folders: looked for beside `source`, then one folder up."""
    for folder in (source.parent, source.parent.parent):
        if (path := folder / "dialog_acts.json").is_file():
            acts = as_object(read_json(path))
            if acts is None:
                raise DatasetError(
                    f"{path}:1: expected MultiWOZ 2.2's dialogue acts: dialogue id -> turn id -> dialog_act"
                )
            return acts
    return None


def _v22_dialogue(record: JsonObject, source: Path, index: int, acts: JsonObject | None) -> Dialogue:
    """A dialogue of MultiWOZ 2.2's dialogues_*.json (turns with speaker USER/SYSTEM and frames);
    the system turns' acts from `dialog_acts.json` when there is one."""
    name = str(record.get("dialogue_id", index)).removesuffix(".json")
    turn_acts = (as_object(acts.get(str(record.get("dialogue_id")))) or {}) if acts is not None else None
    turns = as_list(record.get("turns"))
    user_turns = []
    known: dict[str, dict[str, str]] = {}  # services absent from a turn's frames keep their state
    for i, turn in enumerate(turns):
        utterance = turn.get("utterance") if isinstance(turn, dict) else None
        if not isinstance(turn, dict) or not isinstance(utterance, str):
            raise DatasetError(f"{source}:1: dialogue {name}: turn {i}: expected speaker and utterance")
        if turn.get("speaker") != "USER":
            continue
        belief: dict[str, dict[str, str]] = {}
        for frame in objects(turn.get("frames")):
            state = as_object(frame.get("state")) or {}
            for slot, values in (as_object(state.get("slot_values")) or {}).items():
                domain, _, slot_name = slot.partition("-")
                if values:
                    belief.setdefault(domain, {})[slot_name] = str(_first(values))
        known |= belief
        following = as_object(turns[i + 1]) if i + 1 < len(turns) else None
        system = following if following is not None and following.get("speaker") == "SYSTEM" else None
        reply = system.get("utterance") if system is not None else None
        reference = None
        if system is not None and turn_acts is not None:
            reference = _pair_acts((as_object(turn_acts.get(str(system.get("turn_id")))) or {}).get("dialog_act"))
        user_turns.append(UserTurn(utterance, dict(known), reference, reply if isinstance(reply, str) else None))
    return Dialogue(name, [str(s) for s in as_list(record.get("services"))], user_turns)


def _first(values: JsonValue) -> JsonValue:
    """The first of a slot's values (a value given alone is its own first)."""
    return values[0] if isinstance(values, list) else values


def _v21_dialogue(name: str, record: JsonObject, source: Path) -> Dialogue:
    """A dialogue of MultiWOZ 2.1's data.json: user and system turns alternate in `log`; the
    belief state after a user turn is in the next (system) turn's `metadata`."""
    log = as_list(record.get("log"))
    user_turns = []
    for i in range(0, len(log), 2):
        turn = as_object(log[i]) or {}
        said = text(turn.get("text"), f"{source}:1: dialogue {name}: log[{i}]")
        system = (as_object(log[i + 1]) if i + 1 < len(log) else None) or {}
        belief = {
            domain: {
                slot: str(v) for slot, v in (as_object(state.get("semi")) or {}).items() if v and v != "not mentioned"
            }
            | {
                f"book{slot}": str(v)
                for slot, v in (as_object(state.get("book")) or {}).items()
                if slot != "booked" and v and v != "not mentioned"
            }
            for domain, state in (as_object(system.get("metadata")) or {}).items()
            if isinstance(state, dict)
        }
        acts = _pair_acts(system.get("dialog_act"))
        reply = system.get("text")
        if reply is not None:
            reply = text(reply, f"{source}:1: dialogue {name}: log[{i + 1}]")
        user_turns.append(UserTurn(said, {d: b for d, b in belief.items() if b}, acts or None, reply))
    goal = as_object(record.get("goal")) or {}
    services = [d for d in DOMAIN_SLOTS if goal.get(d)]
    return Dialogue(name.removesuffix(".json"), services, user_turns)


def _pair_acts(dialog_act: JsonValue) -> Acts:
    """`{act: [[slot, value], ...]}` from MultiWOZ's `dialog_act` (2.1's log, 2.2's dialog_acts.json):
    each act with every one of its pairs, in order (a slot may come back with another value)."""
    return {
        act: [
            [str(pair[0]).lower(), str(pair[1])] for pair in as_list(pairs) if isinstance(pair, list) and len(pair) == 2
        ]
        for act, pairs in (as_object(dialog_act) or {}).items()
    }


def _test(dialogue: Dialogue, databases: dict[str, list[JsonObject]], source: Path) -> SuiteTest:
    scripted: list[Turn] = []
    for turn in dialogue.turns:
        context: BackendContext = {"belief_state": turn.belief}
        matches = {d: _query(d, databases[d], slots) for d, slots in turn.belief.items() if d in databases}
        if matches:
            context["db"] = matches
        if turn.reference_acts is not None:
            context["reference_acts"] = turn.reference_acts
        user: Message = {"role": "user", "content": turn.utterance}
        entry: Turn = {
            "input": [{"role": "system", "content": f"Backend results: {_brief(matches)}"}, user]
            if matches
            else turn.utterance,
            "context": context,
        }
        if turn.reference_reply is not None:
            entry["expected_output"] = turn.reference_reply  # judges only
        entry["assertions"] = [{"type": "td-eval"}]  # given here, so no implicit reference grader is added
        scripted.append(entry)
    if not scripted:
        raise DatasetError(f"{source}:1: dialogue {dialogue.name} has no user turn")
    domains = dialogue.services or sorted({d for t in dialogue.turns for d in t.belief})
    slots = list(dict.fromkeys(f"{d}-{s}" for d in domains for s in DOMAIN_SLOTS.get(d, [])))
    return {
        "id": f"multiwoz-{dialogue.name}",
        "mode": "conversation",
        "metadata": {"dialogue_id": dialogue.name, "services": [*dialogue.services]},
        "policy": {"domain": "+".join(domains), "slots": [*slots], "rules": [*RULES]},
        "turns": scripted,
    }


def _belief(frame: JsonValue) -> dict[str, dict[str, str]]:
    """`{domain: {slot: value}}` from a MultiWOZ 2.2 user frame."""
    belief: dict[str, dict[str, str]] = {}
    for state in objects((as_object(frame) or {}).get("state")):
        values = as_object(state.get("slots_values")) or {}
        names, lists = as_list(values.get("slots_values_name")), as_list(values.get("slots_values_list"))
        for slot, options in zip(names, lists, strict=False):
            domain, _, name = str(slot).partition("-")
            if options:
                belief.setdefault(domain, {})[name] = str(_first(options))
    return belief


def _acts(turn_acts: JsonValue) -> Acts:
    """`{act: [[slot, value], ...]}` from a Hugging Face row's `dialogue_acts` item (parallel lists)."""
    acts = as_object((as_object(turn_acts) or {}).get("dialog_act")) or {}
    out: Acts = {}
    for act, slots in zip(as_list(acts.get("act_type")), as_list(acts.get("act_slots")), strict=False):
        names_values = as_object(slots) or {}
        names, values = as_list(names_values.get("slot_name")), as_list(names_values.get("slot_value"))
        out.setdefault(str(act), []).extend([str(n), str(v)] for n, v in zip(names, values, strict=False))
    return out


def _query(domain: str, rows: list[JsonObject], constraints: dict[str, str]) -> Matches:
    """Entities matching the belief state, as MultiWOZ's evaluation queries them (`_multiwoz_db`)."""
    hits = db_matches(domain, rows, constraints)
    names = [str(r.get("name") or r.get("trainID") or r.get("id")) for r in hits[:MAX_MATCHES]]
    return {"count": len(hits), "matches": names}


def _brief(matches: dict[str, Matches]) -> str:
    return "; ".join(
        f"{d}: {m['count']} match(es)" + (f" ({', '.join(m['matches'])})" if m["matches"] else "")
        for d, m in matches.items()
    )
