"""Where the user side of a conversation comes from: turn sources.

A turn source hands the loop one `TurnPlan` at a time (the user messages to send and how to
grade the reply) and says when the conversation is over. `ScriptedTurns` plays a test's
`turns`; `SingleShotTurns` folds them into one prompt for a target that cannot resume a
session. A simulated user, hints or a verify-driven stop are further sources (or wrappers of
one): see `TurnSource`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from ..results import Message
from ._plan import TurnPlan

if TYPE_CHECKING:
    from ._conversation import Conversation

#: Why the turns of a single-shot fallback have no score of their own.
SINGLE_SHOT_NOTE = (
    "not applicable: the target cannot resume a session, so all turns went in one prompt (fallback: single_shot)"
)


class TurnSource(Protocol):
    """The user side of a conversation.

    `next_turn` is awaited before each turn with the conversation so far (transcript,
    replies, captured variables, the last turn's score once graded when the loop waits for
    it); it returns the next turn, or None to end the conversation. Messages a source makes
    up itself carry their own `source` (`simulator`, `hint`). `unsent` lists the planned turns
    that were never sent (recorded as skipped); a source with no plan returns [].
    """

    async def next_turn(self, convo: Conversation) -> TurnPlan | None: ...

    def unsent(self) -> list[TurnPlan]: ...


class ScriptedTurns:
    """The test's scripted `turns`, in order."""

    def __init__(self, turns: list[TurnPlan]):
        self.turns = list(turns)
        self.sent = 0

    async def next_turn(self, convo: Conversation) -> TurnPlan | None:
        if self.sent >= len(self.turns):
            return None
        self.sent += 1
        return self.turns[self.sent - 1]

    def unsent(self) -> list[TurnPlan]:
        return self.turns[self.sent :]


class SingleShotTurns(ScriptedTurns):
    """All scripted turns as one prompt (skill-up's fallback for agents without resume).

    The one turn is graded by no per-turn assertion: those need a reply per turn and are
    reported as not applicable; the conversation assertions grade the single reply.
    """

    def __init__(self, turns: list[TurnPlan]):
        parts = [m.content for turn in turns for m in turn.messages if m.role == "user"]
        others = [m for turn in turns for m in turn.messages if m.role != "user"]
        prompt = "\n\n".join(f"Turn {i}: {text}" for i, text in enumerate(parts, start=1))
        merged = TurnPlan(messages=[*others, Message(role="user", content=prompt, source="user")], assertions=[])
        super().__init__([merged])
        self.planned = len(turns)


def is_multi_turn(source: TurnSource) -> bool:
    """Whether the source plays more than one scripted turn (what single-shot would fold)."""
    return type(source) is ScriptedTurns and len(source.turns) > 1
