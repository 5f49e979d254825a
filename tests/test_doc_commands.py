"""Every shell command the README, the examples' READMEs and the docs show is run as written.

The commands of each document run in order, each with `bash -c`, in one fresh copy of the
repository (so a command may use the files an earlier one wrote), with `convoeval` on PATH and the
provider base URLs pointing at the project's loopback fake server: `openai:` and `anthropic:`
targets and judges answer from it, and a `http://localhost:PORT/v1` written in a command is that
server too. Commands on the embedded model (`local`, or no target at all) run the real model.

A block preceded by `<!-- not run: REASON -->` is not run (a cluster address, an install, this
very test suite); any other block must work: exit code 0, or 1 when a test did not pass its
threshold (a verdict, not a failure of the command), never a traceback.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from convoeval.testing import FakeOpenAIServer

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = sorted(
    {ROOT / "README.md", *ROOT.glob("examples/**/README*.md"), *ROOT.glob("docs/**/*.md")},
    key=lambda p: str(p.relative_to(ROOT)),
)
_FENCE = re.compile(r"^(?P<indent> *)```(?P<lang>[\w-]*)\s*$")
_NOT_RUN = re.compile(r"<!--\s*not run:\s*(?P<reason>\S.*?)\s*-->")
_LOCALHOST = re.compile(r"http://(?:localhost|127\.0\.0\.1):\d+/v1")
#: Commands not run because they are this very test suite.
_THIS_SUITE = {"make test"}
#: Commands that may exit 1: a test that did not pass its threshold is a verdict.
_VERDICT_COMMANDS = re.compile(r"\b(convoeval (run|grade|arena|compare)|make demo)\b")
_SKIP_COPY = shutil.ignore_patterns(".git", ".venv", ".convoeval", "__pycache__", "node_modules", ".tools", "site")


@dataclass(frozen=True)
class Command:
    document: str
    block: int  # the line of the block's opening fence: each block starts at the repository root
    line: int
    text: str
    skip: str | None  # why the block is not run


def shell_commands(path: Path) -> list[Command]:
    """The commands of the `bash`/`sh`/`console` blocks of a Markdown file, one per line (a
    trailing `\\` joins lines; comments and blank lines dropped)."""
    commands: list[Command] = []
    lines = path.read_text(encoding="utf-8").splitlines()
    in_block, lang, skip, pending, start, block = False, "", None, "", 0, 0
    for number, raw in enumerate(lines, 1):
        fence = _FENCE.match(raw)
        if fence and not in_block:
            in_block, lang, block = True, fence["lang"], number
            previous = next((p for p in reversed(lines[: number - 1]) if p.strip()), "")
            marker = _NOT_RUN.search(previous)
            skip = marker["reason"] if marker else None
            continue
        if fence and in_block:
            in_block = False
            continue
        if not in_block or lang not in ("bash", "sh", "shell", "console"):
            continue
        text = raw.strip().removeprefix("$ ")
        if not pending:
            start = number
        if text.endswith("\\"):
            pending += text[:-1] + " "
            continue
        text = _without_comment(pending + text).strip()
        pending = ""
        if text:
            commands.append(Command(str(path.relative_to(ROOT)), block, start, text, skip))
    return commands


def _without_comment(text: str) -> str:
    """The command without a trailing `# comment` (a `#` outside quotes after a space)."""
    quote = None
    for index, char in enumerate(text):
        if char in "'\"" and quote in (None, char):
            quote = None if quote else char
        elif char == "#" and quote is None and (index == 0 or text[index - 1] == " "):
            return text[:index]
    return text


@pytest.fixture(scope="module")
def copy_of_repository(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("repo") / "convoeval"
    shutil.copytree(ROOT, target, ignore=_SKIP_COPY, symlinks=True)
    (target / ".venv").symlink_to(Path(sys.executable).parents[1])  # `.venv/bin/convoeval` as written
    # `suite.eval.yaml` in a command stands for the reader's own suite: the demo's.
    shutil.copy(ROOT / "examples" / "demo" / "travel-demo.eval.yaml", target / "suite.eval.yaml")
    return target


def _environment(home: Path, server: FakeOpenAIServer) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CONVOEVAL_", "OPENAI_", "ANTHROPIC_"))}
    venv_bin = str(Path(sys.executable).parent)
    env.update(
        PATH=f"{venv_bin}{os.pathsep}{env.get('PATH', '')}",
        HOME=str(home),
        OPENAI_BASE_URL=server.base_url,
        OPENAI_API_KEY="sk-readme-test",
        ANTHROPIC_BASE_URL=server.base_url.removesuffix("/v1"),
        ANTHROPIC_API_KEY="sk-ant-readme-test",
        COLUMNS="120",
        VENV=str(Path(sys.executable).parents[1]),
    )
    return env


def _run(command: Command, cwd: Path, env: dict[str, str], server: FakeOpenAIServer) -> tuple[Path, str | None]:
    """Run one command; return the working directory for the next one and a problem, if any."""
    text = _LOCALHOST.sub(server.base_url, command.text)
    if match := re.fullmatch(r"cd\s+(\S+)", text):
        return (cwd / match[1]).resolve(), None
    if text == "make demo":  # the shared environment is installed: never re-install it from the copy
        text = f"make -o {env['VENV']}/.installed demo"
    if text.startswith("convoeval view"):
        text = f"timeout -s INT 3 {text} --port 0 || [ $? -eq 124 ]"
    done = subprocess.run(
        ["bash", "-c", text], cwd=cwd, env=env, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL
    )
    allowed = {0, 1} if _VERDICT_COMMANDS.search(text) else {0}
    output = done.stdout + done.stderr
    if done.returncode not in allowed or "Traceback (most recent call last):\n" in output:
        return cwd, f"{command.document}:{command.line}: `{command.text}` exited {done.returncode}:\n{output[-1500:]}"
    return cwd, None


@pytest.mark.local_model
@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_command_in_the_document_works_as_written(
    document: Path, copy_of_repository: Path, tmp_path: Path
) -> None:
    commands = shell_commands(document)
    runnable = [c for c in commands if c.skip is None and c.text not in _THIS_SUITE]
    if not runnable:
        pytest.skip("no runnable shell command in this document")
    problems: list[str] = []
    with FakeOpenAIServer() as server:
        env = _environment(tmp_path, server)
        cwd, block = copy_of_repository, 0
        for command in runnable:
            if command.block != block:
                cwd, block = copy_of_repository, command.block
            cwd, problem = _run(command, cwd, env, server)
            if problem:
                problems.append(problem)
    assert not problems, "\n\n".join(problems)


def test_every_block_that_is_not_run_says_why() -> None:
    for document in DOCUMENTS:
        for command in shell_commands(document):
            assert command.skip is None or command.skip.strip(), f"{command.document}:{command.line}"


def test_the_extractor_reads_blocks_comments_and_markers(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "text\n```bash\nconvoeval run a.yaml   # run it\n\n# a comment\necho '#not a comment' \\\n  done\n```\n"
        "<!-- not run: needs a cluster -->\n```bash\nconvoeval run --backend ray\n```\n```yaml\nx: 1\n```\n",
        encoding="utf-8",
    )
    global ROOT
    saved, ROOT = ROOT, tmp_path
    try:
        found = shell_commands(page)
    finally:
        ROOT = saved
    assert [(c.block, c.line, c.text, c.skip) for c in found] == [
        (2, 3, "convoeval run a.yaml", None),
        (2, 6, "echo '#not a comment'  done", None),
        (10, 11, "convoeval run --backend ray", "needs a cluster"),
    ]
