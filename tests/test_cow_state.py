"""Copy-on-write backend views: tools change their view in place, the initial document never
changes, a fork is independent, and comparison matches the JSON documents'."""

from __future__ import annotations

import copy
import json

from convoeval.graders._cow import CowDict, cow, fork, same_document


def initial() -> dict:
    return {"flights": {"F1": {"seats": 3, "dates": ["d1", "d2"]}}, "users": [{"id": "u1", "cards": [{"n": 1}]}]}


def test_changes_stay_in_the_view_and_the_original_never_changes() -> None:
    original = initial()
    before = json.dumps(original)
    view = cow(original)
    view["flights"]["F1"]["seats"] -= 1
    view["flights"]["F1"]["dates"].append("d3")
    for user in view["users"]:
        user["cards"][0]["n"] = 9
    view.setdefault("new", {})["x"] = 1
    plain = dict(view["flights"])  # a plain copy reads through the view: still no way to the original
    plain["F1"]["extra"] = True
    {**view}["users"][0]["id"] = "changed"
    view["users"][0].pop("cards")
    assert json.dumps(original) == before
    assert view == {
        "flights": {"F1": {"seats": 2, "dates": ["d1", "d2", "d3"], "extra": True}},
        "users": [{"id": "changed"}],
        "new": {"x": 1},
    }
    assert json.loads(json.dumps(view)) == view and copy.deepcopy(view) == view
    assert type(copy.deepcopy(view)) is dict


def test_a_fork_is_independent_both_ways() -> None:
    view = cow(initial())
    view["flights"]["F1"]["seats"] = 2
    snapshot = fork(view)
    view["flights"]["F1"]["seats"] = 1
    snapshot["users"][0]["id"] = "other"
    assert snapshot["flights"]["F1"]["seats"] == 2 and view["users"][0]["id"] == "u1"
    assert isinstance(view.copy(), CowDict) and view.copy() == view


def test_same_document_is_json_equality() -> None:
    original = initial()
    a, b = cow(original), cow(original)
    a["flights"]["F1"]["seats"] = 2
    b["flights"]["F1"]["seats"] = 2
    assert same_document(a, b) and same_document(a, json.loads(json.dumps(a)))
    b["users"][0]["cards"].append({"n": 2})
    assert not same_document(a, b)
    assert not same_document({"n": 1}, {"n": 1.0}) and not same_document({"n": 1}, {"n": True})
    assert not same_document({"a": 1}, {"b": 1}) and not same_document([1], [1, 2])
