"""`convoeval agreement --votes`: pairwise votes compared as FastChat's compute_agreement.py
compares them (per turn, with and without ties). The expected numbers are what FastChat's own
`compute_agreement.py --judges gpt4-pair human` (and `human human`) printed on these files."""

from __future__ import annotations

import json
from pathlib import Path

from .conftest import write

JUDGE = [
    {"question_id": 81, "model_a": "x", "model_b": "y", "winner": "model_a", "judge": ["gpt-4", "pair-v2"], "turn": 1},
    {"question_id": 82, "model_a": "y", "model_b": "x", "winner": "model_a", "judge": ["gpt-4", "pair-v2"], "turn": 1},
    {"question_id": 83, "model_a": "x", "model_b": "z", "winner": "tie (inconsistent)", "turn": 1},
    {"question_id": 81, "model_a": "x", "model_b": "y", "winner": "model_b", "turn": 2},
    {"question_id": 84, "model_a": "x", "model_b": "y", "winner": "model_b", "turn": 2},
]
HUMAN = [
    {"question_id": 81, "model_a": "y", "model_b": "x", "winner": "model_b", "judge": "expert_0", "turn": 1},
    {"question_id": 81, "model_a": "x", "model_b": "y", "winner": "tie", "judge": "expert_1", "turn": 1},
    {"question_id": 82, "model_a": "x", "model_b": "y", "winner": "model_b", "judge": "expert_0", "turn": 1},
    {"question_id": 82, "model_a": "x", "model_b": "y", "winner": "model_a", "judge": "expert_2", "turn": 1},
    {"question_id": 83, "model_a": "z", "model_b": "x", "winner": "tie (bothbad)", "judge": "expert_0", "turn": 1},
    {"question_id": 81, "model_a": "y", "model_b": "x", "winner": "model_a", "judge": "expert_0", "turn": 2},
    {"question_id": 84, "model_a": "x", "model_b": "y", "winner": "model_a", "judge": "expert_1", "turn": 2},
    {"question_id": 84, "model_a": "y", "model_b": "x", "winner": "model_b", "judge": "expert_2", "turn": 2},
]


def _counts(out: str) -> list[tuple[int, int, int, int, int]]:
    """(turn, agree, total with ties, agree, total without ties) of each turn."""
    turns = json.loads(out)["turns"]
    return [(t["turn"], *(t[k][n] for k in ("with_ties", "without_ties") for n in ("agree", "total"))) for t in turns]


def test_votes_agree_as_fastchat_compute_agreement_counts_with_and_without_ties(cli, tmp_path: Path) -> None:
    judge = write(tmp_path / "gpt4_pair.json", json.dumps(JUDGE))  # a JSON list, as MT-Bench's files
    human = write(tmp_path / "human.jsonl", "".join(json.dumps(v) + "\n" for v in HUMAN))
    code, out, err = cli("agreement", "--votes", judge, human, "--format", "json")
    assert code == 0, err
    # FastChat: turn 1 with tie 3/5, without 2/3; turn 2 with tie 1/3, without 1/3.
    assert _counts(out) == [(1, 3, 5, 2, 3), (2, 1, 3, 1, 3)]
    code, out, err = cli("agreement", "--votes", human, "--format", "json")
    assert code == 0, err
    # FastChat's human-human: turn 1 with tie 0/2, without 0/1; turn 2 1/1 and 1/1.
    assert _counts(out) == [(1, 0, 2, 0, 1), (2, 1, 1, 1, 1)]
    code, out, err = cli("agreement", "--votes", judge, human)
    assert code == 0 and "without" in out and "0.667" in out, err


def test_a_vote_that_is_no_vote_is_named_by_its_line(cli, tmp_path: Path) -> None:
    bad = write(tmp_path / "v.jsonl", json.dumps(HUMAN[0]) + "\n" + json.dumps({**HUMAN[1], "winner": "x"}) + "\n")
    code, out, err = cli("agreement", "--votes", bad)
    assert code == 2 and f"{bad}:2: winner must be model_a, model_b or a tie" in err
    code, out, err = cli("agreement", "--votes", bad, bad, bad)
    assert code == 2 and "one or two vote files" in err


AUTHORS = [  # MT-Bench's human judgments hold its authors' votes beside the experts'
    {"question_id": 81, "model_a": "x", "model_b": "y", "winner": "model_a", "judge": "author_0", "turn": 1},
    {"question_id": 82, "model_a": "y", "model_b": "x", "winner": "model_a", "judge": "author_1", "turn": 1},
    {"question_id": 84, "model_a": "x", "model_b": "y", "winner": "model_b", "judge": "author_0", "turn": 2},
]


def test_the_authors_votes_are_left_out_as_compute_agreement_counts_only_experts(cli, tmp_path: Path) -> None:
    """FastChat's `get_judge_name` files `author_*` votes under "author", never "human": its
    `--judges gpt4-pair human` and `human human` printed the same counts with these three author
    votes added as without them (the judge file's votes all given judge ["gpt-4", "pair-v2"])."""
    judge = write(tmp_path / "gpt4_pair.json", json.dumps(JUDGE))
    human = write(tmp_path / "human.json", json.dumps(HUMAN + AUTHORS))
    code, out, err = cli("agreement", "--votes", judge, human, "--format", "json")
    assert code == 0, err
    assert _counts(out) == [(1, 3, 5, 2, 3), (2, 1, 3, 1, 3)]
    assert "3 vote(s) of MT-Bench's authors" in err
    code, out, err = cli("agreement", "--votes", human, "--format", "json")
    assert code == 0, err
    assert _counts(out) == [(1, 0, 2, 0, 1), (2, 1, 1, 1, 1)]
