"""`convoeval init [FOLDER]`: a first eval file to edit, which runs offline as written."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ._app import app
from ._fail import fail
from ._write import writing

FILE_NAME = "first.eval.yaml"

#: The eval file `init` writes: a live conversation and a one-turn test, with a deterministic
#: check and rubric criteria, commented for a first edit.
FIRST_SUITE = """\
# A first eval file, written by `convoeval init`: edit it freely.
#   convoeval validate first.eval.yaml      # errors as file:line: field: what is wrong
#   convoeval run first.eval.yaml           # no target given: the embedded model, offline
#   convoeval run first.eval.yaml --target openai:gpt-4o-mini --judge openai:gpt-4o
# The embedded model (SmolLM2-135M, the `local` extra) only shows that the pipeline works: point
# --target and --judge at real models (OPENAI_BASE_URL for vLLM, Ollama, llama.cpp...) to evaluate.
description: A support assistant that keeps the context of the conversation
execution:
  threshold: 0.6            # a test passes when its score reaches this

tests:
  - id: order-status
    mode: conversation      # the turns are sent live, each reply is graded as it comes
    criteria: The assistant helps with the order and remembers its number across turns
    input:
      - role: system
        content: You are the support assistant of an online shop. Answer briefly.
    turns:
      - input: Hi, my order 4512 has not arrived yet. Can you help?
        assertions:
          - type: icontains-any
            name: acknowledges the order
            value: ["4512", order, delivery]
      - input: What was my order number again?
        assertions:
          - type: contains
            value: "4512"
          - type: rubrics   # graded by the judge (--judge; the embedded model when none is given)
            criteria:
              - {id: number, outcome: Repeats the order number 4512, required: false}
              - {id: polite, outcome: Stays polite and helpful, required: false}

  - id: capital-of-france
    input: What is the capital of France? Answer with one word.
    assertions:
      - type: icontains
        value: Paris
"""


@app.command()
def init(
    folder: Annotated[
        Path, typer.Argument(help="Where to write first.eval.yaml (made if missing).", show_default=False)
    ] = Path("."),
) -> None:
    """Write a first eval file (a live conversation and a one-turn test) that runs offline as written."""
    path = folder / FILE_NAME
    if path.exists():
        raise fail(f"{path} exists; edit it, or give another folder: convoeval init FOLDER")
    if folder.exists() and not folder.is_dir():
        raise fail(f"{folder} is a file, not a folder")
    if folder.is_symlink() and not folder.exists():
        raise fail(f"{folder} is a link that leads nowhere (broken, or a loop), not a folder")
    with writing(path):
        folder.mkdir(parents=True, exist_ok=True)
        path.write_text(FIRST_SUITE, encoding="utf-8")
    typer.echo(f"wrote {path}\nnext: convoeval run {path}   (offline, on the embedded model)")
