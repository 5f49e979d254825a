"""Executable prompt templates (AgentV): an `llm-grader` whose `prompt` is a program that writes
the grading prompt.

    - type: llm-grader
      prompt:
        command: [bun, run, ../prompts/custom-evaluator.ts]   # the last item: a file, relative
        config: {rubric: "- Must mention Promises"}           # to the eval file's folder

The program gets the grading context as JSON on stdin (what a `code-grader` of an AgentV file
gets, `_agentv_code.agentv_payload`, with `answer`, the check's `criteria` and expected output,
and the prompt's `config`), runs in its file's folder
with an environment without secrets, and prints the whole judge prompt on stdout. A missing
file is a load error; a failing program or an empty prompt is a grader error.
"""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path

from pydantic import AliasChoices, ConfigDict, Field, field_validator

from .._base_model import Model
from .._secrets import scrubbed_env
from .._text import shorten
from ._agentv_code import agentv_payload, grader_sdk
from ._base import GradeContext, GraderError
from ._code import grading_payload, run_program, stderr_note

_WHAT = "llm-grader prompt command"


class PromptCommand(Model):
    """`prompt: {command: [...], config: {...}}` of an `llm-grader`."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    command: list[str] = Field(
        validation_alias=AliasChoices("command", "script"),
        description="The program and its arguments; the last one is the template file, relative to the eval "
        "file's folder (`script` is AgentV's older name).",
    )
    config: dict[str, object] = Field(default_factory=dict, description="Passed to the program as `config` on stdin.")
    timeout_s: float = Field(30.0, gt=0, description="Seconds before the program is killed.")

    @field_validator("command")
    @classmethod
    def _not_empty(cls, command: list[str]) -> list[str]:
        if not command or any(not part.strip() for part in command):
            raise ValueError("the command is a non-empty list of non-blank strings")
        return command

    def template_file(self, base_dir: Path) -> Path:
        """The template file (the command's last item) relative to the eval file's folder."""
        return (base_dir / self.command[-1]).resolve()

    def missing_file(self, base_dir: Path) -> str | None:
        """A message when the template file does not exist (AgentV refuses such a file too)."""
        file = self.template_file(base_dir)
        return None if os.path.isfile(file) else f"prompt command file not found: {self.command[-1]} ({file})"

    async def render(self, ctx: GradeContext, criteria: str | None, expected: str | None) -> str:
        """Run the program and return the prompt it printed.

        Raises:
            GraderError: the file is gone, the program fails or times out, or prints nothing.
        """
        if (missing := self.missing_file(Path(ctx.base_dir))) is not None:
            raise GraderError(missing)
        file = self.template_file(Path(ctx.base_dir))
        argv = [*self.command[:-1], str(file)]
        shown = shorten(shlex.join(self.command), 120)
        env = scrubbed_env()
        payload = {
            **agentv_payload(grading_payload(ctx, self.config), ctx, grader_sdk(argv, file.parent, env)),
            "answer": ctx.output,  # AgentV sends it to templates (v5.3.1 `prompt-resolution.ts`)
            "criteria": criteria or "",
            "expected_output": [{"role": "assistant", "content": expected}] if expected else [],
            "reference_answer": expected,
        }
        data = json.dumps(payload, ensure_ascii=False, default=str).encode()
        stdout, err_text = await run_program(argv, shown, file.parent, env, data, self.timeout_s, _WHAT)
        prompt = stdout.strip()
        if not prompt:
            raise GraderError(f"{_WHAT} `{shown}` printed no prompt{stderr_note(err_text)}")
        return prompt
