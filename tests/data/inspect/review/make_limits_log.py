"""Real Inspect run usable with old and new Inspect: custom model provider, ToolError,
parallel tool calls, limits, score value types, odd sample ids."""
import sys
from inspect_ai import Task, task, eval
from inspect_ai.dataset import Sample
from inspect_ai.model import ModelOutput, ModelAPI, ChatMessageUser, ChatMessageAssistant, ChatCompletionChoice, modelapi, get_model
from inspect_ai.tool import tool, ToolError, ToolCall
from inspect_ai.solver import solver, use_tools
from inspect_ai.scorer import scorer, Score, mean, includes


def respond(input, tools):
    last = input[-1]
    text = last.text
    if last.role == "tool":
        return ModelOutput.from_content("fake", f"tool said: {text}")
    if "parallel" in text and tools:
        msg = ChatMessageAssistant(content="calling two", source="generate", tool_calls=[
            ToolCall(id="p1", function="lookup", arguments={"key": "a"}, type="function"),
            ToolCall(id="p2", function="lookup", arguments={"key": "b|c"}, type="function"),
        ])
        return ModelOutput(model="fake", choices=[ChatCompletionChoice(message=msg, stop_reason="tool_calls")])
    if "toolerr" in text and tools:
        return ModelOutput.for_tool_call("fake", "fails", {"what": "x"}, tool_call_id="e1")
    if "badtool" in text and tools:
        return ModelOutput.for_tool_call("fake", "nonexistent_tool", {"q": 1}, tool_call_id="n1")
    return ModelOutput.from_content("fake", f"reply to: {text[:40]}")


@modelapi(name="fake")
def fake():
    class Fake(ModelAPI):
        async def generate(self, input, tools, tool_choice, config):
            return respond(input, tools)
    return Fake


@tool
def lookup():
    async def execute(key: str):
        """Look up.

        Args:
          key: the key
        """
        return f"value-of-{key}"
    return execute


@tool
def fails():
    async def execute(what: str):
        """Fails with a ToolError.

        Args:
          what: anything
        """
        raise ToolError("no such record | <b>bold</b>")
    return execute


@solver
def loop():
    async def solve(state, generate_fn):
        state = await generate_fn(state)  # generate loops over tool calls
        for follow in state.metadata.get("followups", []):
            state.messages.append(ChatMessageUser(content=follow))
            state = await generate_fn(state)
        return state
    return solve


@scorer(metrics=[mean()])
def intscore():
    async def score(state, target):
        return Score(value=1 if "reply" in state.output.completion else 0, answer="")
    return score


@scorer(metrics=[mean()])
def boolscore():
    async def score(state, target):
        return Score(value=False, explanation="")
    return score


@scorer(metrics=[mean()])
def listscore():
    async def score(state, target):
        return Score(value=[1, "x", 0.5])
    return score


samples = [
    Sample(id="a b", input="hello A", target="reply", metadata={"followups": ["again A"]}),
    Sample(id="a-b", input="hello B", target="reply"),
    Sample(id="x/y", input="slash id", target="reply"),
    Sample(id="par", input="parallel please", target="value"),
    Sample(id="terr", input="toolerr now", target="x"),
    Sample(id="badtool", input="badtool now", target="x"),
    Sample(id="limited", input="hello limited", target="reply", metadata={"followups": ["two", "three", "four", "five"]}),
    Sample(id=7, input="int id", target="reply"),
]


@task
def t2():
    return Task(dataset=samples, solver=[use_tools([lookup(), fails()]), loop()],
                scorer=[includes(), intscore(), boolscore(), listscore()], message_limit=6)


if __name__ == "__main__":
    try:
        import inspect_ai.model._model as _mm
        _mm.count_text_tokens = lambda t: len(t) // 4
    except Exception:
        pass
    fmt = sys.argv[1]
    logs = eval(t2(), model="fake/x", log_dir=sys.argv[2], log_format=fmt, fail_on_error=False, display="none")
    print(logs[0].location, logs[0].status)
