"""A target that replays recorded replies: how stored conversations are graded without a model."""

from __future__ import annotations

from pathlib import Path

from ..errors import TargetError
from ..results import EvaluationResult, TrialResult
from ._base import ChatReply, ChatRequest, TargetConfig, provider


class RecordedReplies:
    """Answers the n-th call with the n-th recorded reply (one object per conversation).

    Args:
        replies: the assistant's recorded replies, in order (with their tool calls).
        name: the name results show for the target.
    """

    cacheable = False

    def __init__(self, replies: list[ChatReply], name: str = "recorded"):
        self.replies = list(replies)
        self.name = name
        self.calls = 0

    async def chat(self, request: ChatRequest) -> ChatReply:
        if self.calls >= len(self.replies):
            raise TargetError(f"{self.name}: the transcript has no reply for turn {self.calls + 1}")
        reply = self.replies[self.calls]
        self.calls += 1
        return ChatReply(text=reply.text, usage=reply.usage, tool_calls=list(reply.tool_calls), latency_ms=0.0)

    async def aclose(self) -> None:
        return None


@provider("recorded")
def recorded_target(config: TargetConfig) -> RecordedReplies:
    """`--target recorded:<label>`: the target of `convoeval grade`; tests with a `transcript:`
    replay their replies, any other test finds none (an execution error)."""
    return RecordedReplies([], config.name)


class StoredRun:
    """Replays the replies of a stored run: the n-th call for (test id, trial) gets the reply
    that turn got in the run, with its tool calls and latency (`convoeval grade` of a results
    file, with the run's own checks).

    Args:
        name: the target's name in the run (only its results are replayed).
        turns: the replies by (test id, trial), in turn order.
    """

    cacheable = False

    def __init__(self, name: str, turns: dict[tuple[str, int], list[ChatReply]]):
        self.name = name
        self.turns = turns
        self.sent: dict[tuple[str, int], int] = {}

    @classmethod
    def from_file(cls, name: str, path: Path) -> StoredRun:
        """The replies of target `name` in a results file (`convoeval run -o run.jsonl`)."""
        turns: dict[tuple[str, int], list[ChatReply]] = {}
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except OSError as exc:
            raise TargetError(f"{name}: cannot read the stored run {path}: {exc.strerror or exc}") from None
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                result = EvaluationResult.model_validate_json(line)
            except ValueError:
                raise TargetError(f"{path}:{number}: not a convoeval result") from None
            if result.target != name:
                continue
            trials = result.trial_results()
            for trial in trials:
                turns[(result.test_id, trial.trial)] = stored_replies(trial)
        return cls(name, turns)

    async def chat(self, request: ChatRequest) -> ChatReply:
        key = (request.test_id, request.trial)
        replies = self.turns.get(key)
        if replies is None:
            raise TargetError(f"{self.name}: the stored run has no trial {request.trial} of test {request.test_id!r}")
        n = self.sent.get(key, 0)
        if n >= len(replies):
            raise TargetError(f"{self.name}: the stored run has no reply for turn {n + 1} of {request.test_id!r}")
        self.sent[key] = n + 1
        reply = replies[n]
        return ChatReply(text=reply.text, tool_calls=list(reply.tool_calls), latency_ms=reply.latency_ms)

    async def aclose(self) -> None:
        return None


def stored_replies(trial: TrialResult) -> list[ChatReply]:
    """The target's reply of each turn of a stored trial: the turn's last assistant message,
    the turn's tool calls and latency (from its score entry)."""
    entries = {e.name: e for e in trial.scores if e.type == "turn"}
    texts: dict[int, str] = {}
    for message in trial.output:
        if message.role == "assistant" and message.source == "target" and message.turn is not None:
            texts[message.turn] = message.content
    replies = []
    for turn in sorted(texts):
        entry = entries.get(f"turn-{turn}")
        replies.append(
            ChatReply(
                text=texts[turn],
                tool_calls=list(entry.tool_calls) if entry else [],
                latency_ms=(entry.latency_ms or 0.0) if entry else 0.0,
            )
        )
    return replies


@provider("replay")
def replay_target(config: TargetConfig) -> StoredRun:
    """`{name: TARGET, provider: replay, model: run.jsonl}`: the replies TARGET gave in a stored
    run, replayed turn by turn (the target of `convoeval grade run.jsonl`)."""
    if not config.model:
        raise TargetError(f"{config.name}: replay needs the results file as its model")
    return StoredRun.from_file(config.name, Path(config.model))
