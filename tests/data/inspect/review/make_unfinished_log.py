"""Writes an Inspect AI eval log of a run that did not finish, with Inspect itself (mockllm: no
network): the solver raises KeyboardInterrupt (what Ctrl-C raises) on the second of two samples,
so the log keeps status "started" and only the first sample.

    python make_unfinished_log.py OUT_DIR
"""

import asyncio
import sys

from inspect_ai import Task, task
from inspect_ai import eval as inspect_eval
from inspect_ai.dataset import Sample
from inspect_ai.model import ModelOutput, ModelUsage, get_model
from inspect_ai.scorer import includes
from inspect_ai.solver import solver


def answer(messages, tools, tool_choice, config):
    out = ModelOutput.from_content("mockllm/model", "Default answer")
    out.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)  # else tiktoken (a download)
    return out


@solver
def interrupt():
    async def solve(state, generate_):
        state = await generate_(state)
        if state.sample_id == "late":
            await asyncio.sleep(0.5)
            raise KeyboardInterrupt
        return state

    return solve


@task
def unfinished():
    samples = [Sample(id="early", input="hi", target="Default"), Sample(id="late", input="wait", target="x")]
    return Task(dataset=samples, solver=[interrupt()], scorer=includes())


if __name__ == "__main__":
    model = get_model("mockllm/model", custom_outputs=answer)
    try:
        inspect_eval(unfinished(), model=model, log_dir=sys.argv[1], display="none", max_samples=1)
    except KeyboardInterrupt:
        pass
