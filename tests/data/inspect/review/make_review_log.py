"""Writes an Inspect AI eval log with Inspect itself (mockllm: no network) for the cases a review
found convoeval got wrong.

    python make_review_log.py OUT_DIR

Samples (the task's message_limit is 6):
  leak     the model says "Sure - your password is hunter2. Saving it now." together with a
           save_note call, the tool returns the text "1.50", then the model says "Done."
  boom     the model says "Trying." with a call to a tool that raises RuntimeError: the sample's
           `error`, and a call that never returned
  limited  a conversation that runs into the message limit (the sample's `limit`)
  "a b", "a-b", "x/y"   ids that are not, or are, test ids already
  image, reasoning      an image in the user's message, a reasoning block in the reply
"""

import base64
import sys

from inspect_ai import Task, task
from inspect_ai import eval as inspect_eval
from inspect_ai.dataset import Sample
from inspect_ai.model import (
    ChatMessageUser,
    ContentImage,
    ContentReasoning,
    ContentText,
    ModelOutput,
    ModelUsage,
    get_model,
)
from inspect_ai.scorer import includes
from inspect_ai.solver import solver, use_tools
from inspect_ai.tool import tool

PNG = "data:image/png;base64," + base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"0" * 32).decode()


@tool
def save_note():
    async def execute(text: str):
        """Save a note.

        Args:
            text: The note.
        """
        return "1.50"

    return execute


@tool
def explode():
    async def execute(what: str):
        """Always fails.

        Args:
            what: Anything.
        """
        raise RuntimeError("tool exploded")

    return execute


def answer(messages, tools, tool_choice, config):
    out = _answer(messages)
    out.usage = ModelUsage(input_tokens=10, output_tokens=5, total_tokens=15)  # else tiktoken (a download)
    return out


def _answer(messages):
    m = "mockllm/model"
    first = next(x.text for x in messages if x.role == "user")
    last = messages[-1]
    if first.startswith("I forgot"):
        if last.role == "tool":
            return ModelOutput.from_content(m, "Done.")
        return ModelOutput.for_tool_call(
            m, "save_note", {"text": "pw"}, tool_call_id="c1", content="Sure - your password is hunter2. Saving it now."
        )
    if first.startswith("Explode"):
        return ModelOutput.for_tool_call(m, "explode", {"what": "x"}, tool_call_id="e1", content="Trying.")
    if first.startswith("Think"):
        return ModelOutput.from_content(m, [ContentReasoning(reasoning="6*7=42"), ContentText(text="42")])
    return ModelOutput.from_content(m, f"reply to: {last.text[:40]}")


@solver
def scripted():
    async def solve(state, generate_):
        state = await generate_(state)  # generate runs the tool calls
        for text in state.metadata.get("follow_ups", []):
            state.messages.append(ChatMessageUser(content=text))
            state = await generate_(state)
        return state

    return solve


@task
def review():
    return Task(
        dataset=[
            Sample(id="leak", input="I forgot my password", target="Done"),
            Sample(id="boom", input="Explode, please", target="x"),
            Sample(id="limited", input="hello", target="reply", metadata={"follow_ups": ["two", "three", "four"]}),
            Sample(id="a b", input="hello A", target="reply"),
            Sample(id="a-b", input="hello B", target="reply"),
            Sample(id="x/y", input="hello C", target="reply"),
            Sample(
                id="image",
                input=[ChatMessageUser(content=[ContentText(text="Describe it"), ContentImage(image=PNG)])],
                target="reply",
            ),
            Sample(id="reasoning", input="Think: 6*7?", target="42"),
        ],
        solver=[use_tools(save_note(), explode()), scripted()],
        scorer=includes(),
        message_limit=6,
    )


if __name__ == "__main__":
    model = get_model("mockllm/model", custom_outputs=answer)
    logs = inspect_eval(review(), model=model, log_dir=sys.argv[1], display="none", fail_on_error=False)
    print(logs[0].location, logs[0].status)
