"""The docs site: it builds with no warning, its reference names everything the code has, and
every YAML example in it (and in the README) is valid convoeval input.

The shell commands of the same pages are run by tests/test_doc_commands.py.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import typer
import yaml

from convoeval import registry
from convoeval.cli import app, load_commands
from convoeval.results import EvaluationResult
from convoeval.spec._targets_file import load_targets_file

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted([ROOT / "README.md", *ROOT.glob("docs/**/*.md")])
#: Keys only a suite has: an example holding one is a suite without its `tests:`.
_SUITE_ONLY = {"execution", "tools", "backend", "plugins", "policy", "name", "description"}
_NOT_VALIDATED = re.compile(r"<!--\s*not validated:\s*\S.*?-->")


def _generator():
    spec = importlib.util.spec_from_file_location("gen_reference", ROOT / "docs" / "gen_reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def generated() -> dict[str, str]:
    return _generator().pages()


def test_the_site_builds_with_warnings_as_errors(tmp_path: Path) -> None:
    mkdocs = shutil.which("mkdocs", path=str(Path(sys.executable).parent))
    assert mkdocs, "mkdocs is part of the dev extra: pip install -e '.[dev]'"
    done = subprocess.run(
        [mkdocs, "build", "--strict", "--site-dir", str(tmp_path / "site")],
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "site" / "reference" / "assertions" / "index.html").is_file()


def test_every_assertion_type_has_a_description_fields_and_a_valid_example(generated: dict[str, str]) -> None:
    page = generated["reference/assertions.md"]
    examples = _generator().assertion_examples()
    # the built-in types: a plugin an earlier test loaded (examples/plugins) is not in the reference
    names = [
        n for n in registry.names("assertion") if registry.lookup("assertion", n).__module__.startswith("convoeval.")
    ]
    assert not [n for n in names if f"## `{n}`" not in page]
    assert not [n for n in names if not (registry.lookup("assertion", n).__doc__ or "").strip()]
    assert not [n for n in names if n not in examples], "add an example to docs/examples/assertions.yaml"
    assert not [n for n in examples if n not in names], "an example for a type that does not exist"


def test_every_provider_command_option_and_result_field_is_in_the_reference(generated: dict[str, str]) -> None:
    providers = generated["reference/providers.md"]
    missing = [n for n in registry.names("provider") if f"## `{n}`" not in providers]
    assert not missing and not [n for n in registry.names("provider") if not registry.lookup("provider", n).__doc__]
    load_commands()
    root = typer.main.get_command(app)
    cli = generated["reference/cli.md"]
    for name, command in root.commands.items():  # type: ignore[attr-defined]
        assert f"`convoeval {name}`" in cli and (command.help or "").strip(), name
        for param in command.params:
            if param.param_type_name == "option":
                assert f"`{param.opts[0]}`" in cli, f"{name} {param.opts[0]}"
    results = generated["reference/results.md"]
    assert not [f for f in EvaluationResult.model_fields if f"| `{f}` |" not in results]


def _yaml_blocks(path: Path) -> list[tuple[int, str, bool]]:
    """(line, text, validated) of every ```yaml block of a Markdown page."""
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks: list[tuple[int, str, bool]] = []
    start = None
    for number, line in enumerate(lines, 1):
        if start is None and line.strip() == "```yaml":
            start = number
        elif start is not None and line.strip() == "```":
            previous = next((p for p in reversed(lines[: start - 1]) if p.strip()), "")
            blocks.append((start, "\n".join(lines[start : number - 1]), not _NOT_VALIDATED.search(previous)))
            start = None
    return blocks


def _as_file(data: object) -> tuple[str, object]:
    """What a YAML example is, and the whole file it stands for: a suite, a targets file, or a
    fragment of a test (its keys, or a list of assertions) placed in a one-test suite."""
    if isinstance(data, dict) and "targets" in data and "tests" not in data:
        return "targets", data
    if isinstance(data, dict) and "tests" in data:
        return "suite", data
    if isinstance(data, list):
        return "suite", {"tests": [{"id": "example", "input": "hi", "assertions": data}]}
    assert isinstance(data, dict)
    if data.keys() & _SUITE_ONLY:
        return "suite", {**data, "tests": [{"id": "example", "mode": "conversation", "turns": [{"input": "hi"}]}]}
    test = {"id": "example", **data}
    if "turns" in test:
        test.setdefault("mode", "conversation")
    elif "simulated_user" not in test and "input" not in test and "transcript" not in test:
        test.update(mode="conversation", turns=[{"input": "hi"}])
    return "suite", {"tests": [test]}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_yaml_example_is_valid(page: Path, tmp_path: Path) -> None:
    blocks = [b for b in _yaml_blocks(page) if b[2]]
    if not blocks:
        pytest.skip("no YAML example")
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    for name in ("tools.py", "backend.json", "agent.py"):
        shutil.copy(ROOT / "examples" / "airline" / name, tmp_path / name)
    problems = []
    for line, text, _ in blocks:
        try:
            kind, data = _as_file(yaml.safe_load(text))
        except yaml.YAMLError as exc:
            problems.append(f"{page.name}:{line}: not YAML: {exc}")
            continue
        file = tmp_path / ("targets.yaml" if kind == "targets" else f"example-{line}.eval.yaml")
        file.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
        if kind == "targets":
            try:
                load_targets_file(file)
            except Exception as exc:  # noqa: BLE001 - reported with the page's line
                problems.append(f"{page.name}:{line}: {exc}")
            continue
        done = subprocess.run(
            [sys.executable, "-m", "convoeval", "validate", str(file)],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=60,
        )
        if done.returncode != 0:
            problems.append(f"{page.relative_to(ROOT)}:{line}:\n{done.stdout}{done.stderr}")
    assert not problems, "\n".join(problems)
