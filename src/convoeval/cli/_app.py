"""The typer application that every CLI command module registers on."""

import typer

app = typer.Typer(
    name="convoeval",
    help="Evaluate multi-turn conversations with LLMs and agents.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
