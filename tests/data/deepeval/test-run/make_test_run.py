import os
os.environ["DEEPEVAL_TELEMETRY_OPT_OUT"] = "YES"
from deepeval import assert_test
from deepeval.metrics import BaseMetric, BaseConversationalMetric
from deepeval.test_case import LLMTestCase, ConversationalTestCase, Turn, ToolCall
from deepeval.evaluate.configs import AsyncConfig, DisplayConfig

class Contains(BaseMetric):
    def __init__(self, word, threshold=0.5):
        self.word, self.threshold = word, threshold
    def measure(self, tc, *a, **k):
        self.score = 1.0 if self.word in tc.actual_output else 0.0
        self.reason = f"looked for {self.word!r} — ünï"
        self.success = self.score >= self.threshold
        return self.score
    async def a_measure(self, tc, *a, **k):
        return self.measure(tc)
    def is_successful(self):
        return self.success
    @property
    def __name__(self):
        return "Contains"

class Polite(BaseConversationalMetric):
    def __init__(self, threshold=0.5):
        self.threshold = threshold
    def measure(self, tc, *a, **k):
        said = [t.content for t in tc.turns if t.role == "assistant"]
        self.score = sum("please" in s.lower() or "merci" in s.lower() for s in said) / max(len(said), 1)
        self.reason = f"{len(said)} replies checked"
        self.success = self.score >= self.threshold
        return self.score
    async def a_measure(self, tc, *a, **k):
        return self.measure(tc)
    def is_successful(self):
        return self.success
    @property
    def __name__(self):
        return "Polite"

single = LLMTestCase(input="Capital of France?", actual_output="Paris, merci.", expected_output="Paris",
    tools_called=[ToolCall(name="lookup", input_parameters={"q": "France"}, output="Paris")], name="capital",
    additional_metadata={"k": [1, 2]}, token_cost=0.0012, completion_time=0.5)
conv = ConversationalTestCase(name="booking-é", scenario="Book a table", chatbot_role="a polite waiter",
    turns=[Turn(role="user", content="Une table pour deux ?"),
           Turn(role="assistant", content="Oui, à quelle heure ? Merci.", tools_called=[ToolCall(name="check", input_parameters={"n": 2}, output={"free": True})]),
           Turn(role="user", content="20h"),
           Turn(role="assistant", content="C'est noté.")],
    additional_metadata={"src": "test"})


def test_single():
    assert_test(single, [Contains("Paris")])

def test_conv():
    assert_test(conv, [Polite()])

def test_single_fails():
    assert_test(LLMTestCase(input="2+2?", actual_output="5", expected_output="4", name="maths"), [Contains("4")])
