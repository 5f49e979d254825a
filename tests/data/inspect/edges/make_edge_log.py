"""Writes an Inspect AI eval log full of edge cases with Inspect itself (mockllm: no network).

    python make_edge_log.py OUT_DIR [json|eval]

Samples: a system prompt and a three-turn chat in non-ASCII text; an empty assistant reply; a
very long user message; a tool call that succeeds and one whose tool raises ToolError; a
reply with a reasoning block; a sample whose solver raises before the model answers and one
that raises after the first reply (the samples' `error`, run with fail_on_error=False); two epochs; two scorers, one with a dict value and metadata.
"""

import sys

from inspect_ai import Task, task
from inspect_ai import eval as inspect_eval
from inspect_ai.dataset import Sample
from inspect_ai.model import ChatMessageUser, ContentReasoning, ContentText, ModelOutput, ModelUsage, get_model
from inspect_ai.scorer import Score, includes, mean, scorer
from inspect_ai.solver import solver, system_message, use_tools
from inspect_ai.tool import ToolError, tool

LONG = "Ünïcödé lorem ipsum — " * 300


@tool
def lookup():
    async def execute(city: str):
        """Look a city up.

        Args:
            city: The city.
        """
        if city == "Atlantis":
            raise ToolError("no such city: Atlantis")
        return f"{city}: population 2,1 M — Île-de-France"

    return execute


def answer(messages, tools, tool_choice, config):
    out = _answer(messages)
    out.usage = ModelUsage(
        input_tokens=10, output_tokens=5, total_tokens=15
    )  # else mockllm counts with tiktoken (a download)
    return out


def _answer(messages):
    """The scripted reply to a conversation, chosen from its first user message and progress."""
    m = "mockllm/model"
    first = next(x.text for x in messages if x.role == "user")
    users = sum(1 for x in messages if x.role == "user")
    tool_results = sum(1 for x in messages if x.role == "tool")
    if first.startswith("Salut,"):
        return ModelOutput.from_content(m, "Oui, et toi ?")
    if first.startswith("Salut"):
        return ModelOutput.from_content(
            m, ["Bonjour ! Je m'appelle Zoë. 你好 👋", "", "Ça va très bien, merci."][users - 1]
        )
    if first.startswith("Ünï"):
        return ModelOutput.from_content(m, "Received " + str(len(first)) + " characters.")
    if first.startswith("Population"):
        if tool_results == 0:
            return ModelOutput.for_tool_call(m, tool_name="lookup", tool_arguments={"city": "Paris"})
        if tool_results == 1:
            return ModelOutput.for_tool_call(m, tool_name="lookup", tool_arguments={"city": "Atlantis"})
        return ModelOutput.from_content(m, "Paris has 2.1 M people; Atlantis does not exist.")
    return ModelOutput.from_content(m, [ContentReasoning(reasoning="The user wants 6*7=42."), ContentText(text="42")])


@solver
def scripted():
    async def solve(state, generate_):
        sid = str(state.sample_id)
        if sid == "boom":
            raise RuntimeError("solver exploded on purpose")
        if sid == "late-boom":
            state = await generate_(state)
            raise RuntimeError("solver exploded after the first reply")
        follow = list(state.metadata.get("follow_ups", []))
        state = await generate_(state)
        while state.output.message.tool_calls:
            state = await generate_(state)
        for text in follow:
            state.messages.append(ChatMessageUser(content=text))
            state = await generate_(state)
        return state

    return solve


@scorer(metrics=[mean()])
def detail():
    async def score(state, target):
        return Score(
            value={
                "correct": 1.0 if target.text in state.output.completion else 0.0,
                "length": len(state.output.completion),
            },
            answer=state.output.completion[:50],
            explanation="dict-valued score — ünïcode",
            metadata={"checked_by": "detail", "tags": ["a", "b"]},
        )

    return score


@task
def edges():
    return Task(
        dataset=[
            Sample(
                id="chat",
                input="Salut ! Comment t'appelles-tu ?",
                target="Zoë",
                metadata={"lang": "fr", "follow_ups": ["", "Et ça va ?"]},
            ),
            Sample(id="long", input=LONG, target="characters"),
            Sample(id=7, input="Population of Paris and Atlantis?", target="2.1", metadata={"kind": "tools"}),
            Sample(id="reasoning", input="What is 6*7?", target="42"),
            Sample(id="boom", input="This sample fails.", target="x"),
            Sample(id="late-boom", input="Salut, ça va ?", target="x"),
        ],
        solver=[system_message("Tu es un assistant poli. Réponds en français."), use_tools(lookup()), scripted()],
        scorer=[includes(), detail()],
        epochs=2,
    )


if __name__ == "__main__":
    fmt = sys.argv[2] if len(sys.argv) > 2 else "eval"
    model = get_model("mockllm/model", custom_outputs=answer)
    logs = inspect_eval(
        edges(), model=model, log_dir=sys.argv[1], display="none", max_samples=1, fail_on_error=False, log_format=fmt
    )
    print(logs[0].location, logs[0].status)
