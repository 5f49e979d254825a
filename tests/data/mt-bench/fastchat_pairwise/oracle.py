"""FastChat 0e6d3e4b's own play_a_match_pair (fastchat/llm_judge/common.py, unchanged) on MT-Bench
questions 81, 82 and 119 for models x and y, against the loopback judge of server.py: prints each
match's result record (g1_winner, g2_winner, turn) as FastChat writes it."""
import json, sys
sys.path.insert(0, "/tmp/g3oracle/stubs")
from fastchat.llm_judge.common import load_judge_prompts, Judge, MatchPair, play_a_match_pair, load_questions
P = load_judge_prompts("tests/data/mt-bench/judge_prompts.jsonl")
qs = {q["question_id"]: q for q in load_questions("/work/shared/datasets/mt-bench/question.jsonl", None, None)}
refs = {}
for l in open("/work/shared/datasets/mt-bench/reference_answer_gpt-4.jsonl"):
    r = json.loads(l); refs[r["question_id"]] = r
def answers(model, q):
    a = {"x": ["x one GOOD", "x two"], "y": ["y one", "y two GOOD"]}[model][:]
    if model == "x" and "Benjamin" in q["turns"][0]:
        a[1] += " NOLABEL"
    return {"choices": [{"turns": a}]}
out = []
for qid in (81, 82, 119):
    math = qs[qid]["category"] in ("math", "reasoning", "coding")
    for mt in (False, True):
        name = ("pair-math-v1" if math else "pair-v2") + ("-multi-turn" if mt else "")
        j = Judge("gpt-4", P[name], ref_based=math, multi_turn=mt)
        r = play_a_match_pair(MatchPair(qs[qid], "x", "y", answers("x", qs[qid]), answers("y", qs[qid]), j,
                                        ref_answer=refs.get(qid) if math else None, multi_turn=mt), None)
        out.append({k: r[k] for k in ("question_id", "model_1", "model_2", "g1_winner", "g2_winner", "turn")})
json.dump(out, open(sys.argv[1], "w"), indent=1)  
