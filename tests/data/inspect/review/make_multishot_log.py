"""Writes an Inspect AI eval log with Inspect itself (mockllm: no network) whose sample input is a
multishot history: a system message, a user question, an assistant answer written in the dataset,
then the question the model answers.

    python make_multishot_log.py OUT_DIR
"""

import sys

from inspect_ai import Task, task
from inspect_ai import eval as inspect_eval
from inspect_ai.dataset import Sample
from inspect_ai.model import (
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageUser,
    ModelOutput,
    ModelUsage,
    get_model,
)
from inspect_ai.scorer import includes


def answer(messages, tools, tool_choice, config):
    out = ModelOutput.from_content("mockllm/model", f"Model: {messages[-1].text}")
    out.usage = ModelUsage(input_tokens=10, output_tokens=5, total_tokens=15)  # else tiktoken (a download)
    return out


@task
def multishot():
    history = [
        ChatMessageSystem(content="Answer in one word."),
        ChatMessageUser(content="Capital of Italy?"),
        ChatMessageAssistant(content="Dataset: Rome"),
        ChatMessageUser(content="Capital of France?"),
    ]
    return Task(dataset=[Sample(id="shots", input=history, target="Paris")], scorer=includes())


if __name__ == "__main__":
    model = get_model("mockllm/model", custom_outputs=answer)
    inspect_eval(multishot(), model=model, log_dir=sys.argv[1], display="none")
