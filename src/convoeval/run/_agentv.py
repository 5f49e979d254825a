"""AgentV's conversation mode, for eval files found as AgentV's (`TestPlan.agentv`).

Read from AgentV v4.42.4 `packages/core/src/evaluation/orchestrator.ts`
(`evaluateConversationCase`): a turn without assertions and without `expected_output` scores
1.0 (lines 3066-3076) and a turn skipped after a failed one (`on_turn_failure: stop`) scores 0
(lines 3006-3016), both counted in the test's score; the conversation-level assertions grade
the transcript written as `role: text` blocks (`spec.agentv_transcript`, lines 3154-3160).
convoeval's own suites leave such turns out of the score and grade the replies. With
`window_size`, AgentV sends the target its window too (lines 3025-3027, `buildWindowedHistory`).
"""

from __future__ import annotations

from ..results import ScoreEntry
from ._grading import NOT_GRADED, UNWEIGHTED
from ._turns import SINGLE_SHOT_NOTE

#: The note of a turn AgentV scores 1.0 for having nothing to check.
BARE_TURN = "a turn without checks scores 1.0, as in AgentV"


def agentv_window(messages: list[dict[str, str]], window_size: int) -> list[dict[str, str]]:
    """What AgentV sends the target of a `window_size` conversation: the system messages, then
    the last 2 x `window_size` others (`buildWindowedHistory`)."""
    others = [m for m in messages if m.get("role") != "system"]
    return [m for m in messages if m.get("role") == "system"] + others[-2 * window_size :]


def agentv_turn_scores(entries: list[ScoreEntry]) -> None:
    """Give the turns AgentV scores and convoeval leaves out their AgentV scores, in place."""
    for entry in entries:
        if entry.type != "turn" or entry.verdict != "skip" or entry.note == SINGLE_SHOT_NOTE:
            continue
        if entry.note in (NOT_GRADED, UNWEIGHTED):
            entry.score, entry.verdict, entry.note = 1.0, "pass", BARE_TURN
        elif not entry.graders:  # not sent: the conversation stopped before it
            entry.score = 0.0
