"""The extension path cannot be half right: every built-in that registers is in the lazy index
(`graders.BUILTIN_TYPES`, `targets.BUILTIN_PROVIDERS`), and a grader's unit test can build what
the run gives a grader (`convoeval.testing.grade_context`, `grade`)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from convoeval.errors import ConfigError
from convoeval.results import Message, ToolCall
from convoeval.targets import ChatReply
from convoeval.testing import agrade, assertion, grade, grade_context

#: In a fresh interpreter: import EVERY module of graders and targets (not only the indexed
#: ones), then list what registered from them next to what the index declares.
_UNINDEXED = """
import importlib, json, pkgutil
from convoeval import graders, registry, targets
EXTRA
for package in (graders, targets):
    for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
        importlib.import_module(info.name)
missing = []
for kind, package, index in (("assertion", graders, graders.BUILTIN_TYPES), ("provider", targets, targets.BUILTIN_PROVIDERS)):
    declared = {(f"{package.__name__}.{module}", name) for module, names in index.items() for name in names}
    for name, obj in registry.entries(kind).items():
        module = getattr(obj, "__module__", "")
        if module.startswith(package.__name__ + ".") and (module, name) not in declared:
            missing.append(f"{kind} {name!r} of {module}")
print(json.dumps(missing))
"""

#: CONTRIBUTING's own example, as if added to graders/ without its index entry.
_MAX_WORDS = """
from typing import Literal
from convoeval import Assertion, Grade, GradeContext, assertion_type

class MaxWords(Assertion):
    type: Literal["max-words"]
    limit: int

    async def grade(self, ctx: GradeContext) -> Grade:
        return Grade(score=1.0 if len(ctx.output.split()) <= self.limit else 0.0)

MaxWords.__module__ = "convoeval.graders._max_words"
assertion_type(MaxWords)
"""


def _unindexed(extra: str = "") -> list[str]:
    code = _UNINDEXED.replace("EXTRA", extra)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return list(json.loads(done.stdout))


def test_every_builtin_that_registers_is_in_the_lazy_index() -> None:
    assert _unindexed() == []


def test_a_builtin_grader_without_its_index_entry_is_caught() -> None:
    assert _unindexed(_MAX_WORDS) == ["assertion 'max-words' of convoeval.graders._max_words"]


def test_grade_context_is_what_a_turn_grader_sees() -> None:
    ctx = grade_context("Paris, of course.", history="Capital of France?", variables={"city": "Paris"})
    assert ctx.level == "turn" and ctx.turn == 1 and ctx.reply is not None and ctx.reply.text == "Paris, of course."
    assert [m.content for m in ctx.transcript] == ["Capital of France?", "Paris, of course."]
    assert ctx.template_vars()["input"].endswith("Capital of France?")
    assert grade({"type": "contains", "value": "{{ city }}"}, ctx).verdict == "pass"
    assert grade({"type": "contains", "value": "Rome"}, ctx).verdict == "fail"
    failed = grade({"type": "contains", "value": "Rome", "negate": True}, output="Paris.")
    assert failed.verdict == "pass" and failed.score == 1.0


def test_grade_context_at_conversation_level_joins_the_target_messages() -> None:
    transcript = [
        Message(role="user", content="Hi", source="user", turn=1),
        Message(role="assistant", content="Hello!", source="target", turn=1),
        Message(role="user", content="Bye", source="user", turn=2),
        Message(role="assistant", content="Goodbye!", source="target", turn=2),
    ]
    ctx = grade_context(level="conversation", transcript=transcript)
    assert ctx.output == "Hello!\n\nGoodbye!" and ctx.reply is None and ctx.history == transcript


async def test_agrade_runs_a_tool_check_on_the_reply_it_is_given() -> None:
    reply = ChatReply(text="Booked.", tool_calls=[ToolCall(name="book_flight", arguments={"to": "LIS"})])
    score = await agrade({"type": "tool-called", "tool": "book_flight"}, grade_context("Booked.", reply=reply))
    assert score.verdict == "pass"
    score = await agrade({"type": "tool-called", "tool": "cancel"}, grade_context("Booked.", reply=reply))
    assert score.verdict == "fail"


def test_an_unknown_type_is_a_clear_error() -> None:
    with pytest.raises(ConfigError, match="unknown assertion type 'max-words'"):
        assertion({"type": "max-words", "limit": 3})
