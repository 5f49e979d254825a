"""Writes a real Inspect AI eval log with Inspect itself (mockllm model: no network, no key).

    python make_log.py OUT_DIR        # writes OUT_DIR/<timestamp>_two-turn_<id>.eval

Three samples: two two-turn conversations (a follow-up user message after the first reply) and
one with a tool call that Inspect executes. Used by tests/test_interop_export.py, and to make
the copies in this folder (see SOURCE.txt).
"""

import itertools
import sys

from inspect_ai import Task, task
from inspect_ai import eval as inspect_eval
from inspect_ai.dataset import Sample
from inspect_ai.model import ChatMessageUser, ModelOutput, ModelUsage, get_model
from inspect_ai.scorer import includes
from inspect_ai.solver import solver, system_message, use_tools
from inspect_ai.tool import tool


@tool
def add():
    async def execute(x: int, y: int):
        """Add two numbers.

        Args:
            x: First number.
            y: Second number.
        """
        return x + y

    return execute


def outputs():
    usage = ModelUsage(input_tokens=10, output_tokens=5, total_tokens=15)
    script = [
        ModelOutput.from_content(model="mockllm/model", content="The capital of France is **Paris**."),
        ModelOutput.from_content(model="mockllm/model", content="Paris."),
        ModelOutput.from_content(model="mockllm/model", content="Red is a primary colour."),
        ModelOutput.from_content(model="mockllm/model", content="Red."),
        ModelOutput.for_tool_call(model="mockllm/model", tool_name="add", tool_arguments={"x": 2, "y": 3}),
        ModelOutput.from_content(model="mockllm/model", content="2 + 3 = 5"),
    ]
    for out in itertools.cycle(script):
        out.usage = usage
        yield out


@solver
def follow_up():
    async def solve(state, generate_):
        state = await generate_(state)
        if state.metadata.get("follow_up"):
            state.messages.append(ChatMessageUser(content=state.metadata["follow_up"]))
            state = await generate_(state)
        return state

    return solve


@task
def two_turn():
    return Task(
        dataset=[
            Sample(
                id="capital",
                input="What is the capital of France?",
                target="Paris",
                metadata={"topic": "geo", "follow_up": "And in one word?"},
            ),
            Sample(
                id="colour", input="Name a primary colour.", target="red", metadata={"follow_up": "And in one word?"}
            ),
            Sample(id="sum", input="What is 2 + 3? Use the tool.", target="5"),
        ],
        solver=[system_message("You are terse."), use_tools(add()), follow_up()],
        scorer=includes(),
    )


if __name__ == "__main__":
    model = get_model("mockllm/model", custom_outputs=outputs())
    logs = inspect_eval(two_turn(), model=model, log_dir=sys.argv[1], display="none", max_samples=1)
    print(logs[0].location)
    sys.exit(0 if logs[0].status == "success" else 1)
