"""The generated reference pages of the docs: written from the code, so they cannot fall behind.

`pages()` returns `{path under docs/: Markdown}` for
- `reference/assertions.md`: every registered assertion type, its docstring, its fields (type,
  default, description, from the pydantic model) and a YAML example from `docs/examples/assertions.yaml`;
- `reference/providers.md`: every registered provider with its docstring;
- `reference/cli.md`: every command and option of the `convoeval` CLI (from typer);
- `reference/results.md`: every field of a result record (from the result model).

`docs/hooks.py` adds these pages to the MkDocs build; `tests/test_docs.py` checks that each
registered name has a docstring and an example and that every example validates.
Run it alone to print the pages: `python docs/gen_reference.py`.
"""

from __future__ import annotations

import inspect
import json
from pathlib import Path
from typing import Any

import typer
import yaml

from convoeval import registry
from convoeval.cli import app, load_commands
from convoeval.results import EvaluationResult, Message, ScoreEntry, TrialResult

DOCS = Path(__file__).resolve().parent
EXAMPLES = DOCS / "examples" / "assertions.yaml"


def assertion_examples() -> dict[str, str]:
    """`{type: YAML text of one assertion}` from docs/examples/assertions.yaml."""
    data = yaml.safe_load(EXAMPLES.read_text(encoding="utf-8"))
    return {
        name: yaml.safe_dump([value], sort_keys=False, allow_unicode=True, default_flow_style=None).strip()
        for name, value in data.items()
    }


def docstring(obj: Any) -> str:
    """The object's own docstring as Markdown ('' when it has none of its own): the indented
    lines under `Example:` / `Examples:` / `Args:` become a code block or a list."""
    own = obj.__dict__.get("__doc__") if isinstance(obj, type) else getattr(obj, "__doc__", None)
    if not own:
        return ""
    out: list[str] = []
    section = None
    for line in inspect.cleandoc(own).splitlines():
        heading = line.strip().rstrip(":")
        if line.endswith(":") and heading in ("Example", "Examples", "Args", "Settings"):
            _close(out, section)
            section = heading
            out += ["", f"**{heading}**", ""] + (["```yaml"] if heading.startswith("Example") else [])
        elif section and (line.startswith("    ") or not line.strip()):
            out.append(line[4:] if section.startswith("Example") else _as_item(line))
        else:
            _close(out, section)
            section = None
            out.append(line)
    _close(out, section)
    return "\n".join(out).strip()


def _close(out: list[str], section: str | None) -> None:
    if section and section.startswith("Example"):
        while out and not out[-1].strip():
            out.pop()
        out += ["```", ""]


def _as_item(line: str) -> str:
    """An `Args:` line: `name: text` starts a list item, a deeper line continues it."""
    if not line.strip():
        return ""
    return f"- {line.strip()}" if not line.startswith("        ") else f"  {line.strip()}"


def _type_text(schema: dict[str, Any]) -> str:
    if "enum" in schema:
        return ", ".join(f"`{json.dumps(v)}`" for v in schema["enum"])
    if "const" in schema:
        return f"`{json.dumps(schema['const'])}`"
    if "anyOf" in schema:
        return " or ".join(dict.fromkeys(_type_text(s) for s in schema["anyOf"] if s.get("type") != "null"))
    if "$ref" in schema:
        return schema["$ref"].rsplit("/", 1)[-1]
    if schema.get("type") == "array":
        return f"list of {_type_text(schema.get('items', {}))}"
    return str(schema.get("type", "any"))


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def fields_table(model: type[Any], skip: tuple[str, ...] = ()) -> str:
    """A Markdown table of a pydantic model's fields: name, type, default, description."""
    schema = model.model_json_schema(mode="validation")
    required = set(schema.get("required", []))
    rows = ["| field | type | default | description |", "|---|---|---|---|"]
    for name, field in model.model_fields.items():
        key = field.alias or name
        if key in skip:
            continue
        prop = schema.get("properties", {}).get(key, {})
        default = "required" if key in required else f"`{json.dumps(prop['default'])}`" if "default" in prop else ""
        description = field.description or prop.get("description", "")
        rows.append(f"| `{key}` | {_cell(_type_text(prop))} | {_cell(default)} | {_cell(description)} |")
    return "\n".join(rows)


def assertions_page() -> str:
    examples = assertion_examples()
    parts = [
        "# Assertion types",
        "",
        "Every assertion type convoeval knows, generated from the code. Any structured assertion also "
        "takes the common fields `name`, `weight`, `required`, `min_score` and `negate`; a plain string "
        "is a rubric criterion. See [Conversation tests](../guides/conversation-tests.md) for how scores "
        "and verdicts combine.",
        "",
    ]
    common = {"type", "name", "weight", "required", "min_score", "negate", "description"}
    for name in registry.names("assertion"):
        cls = registry.lookup("assertion", name)
        parts += [f"## `{name}`", "", docstring(cls) or "(no description)", ""]
        table = fields_table(cls, skip=tuple(common))
        if table.count("\n") > 1:
            parts += [table, ""]
        if name in examples:
            parts += ["```yaml", examples[name], "```", ""]
    return "\n".join(parts)


def providers_page() -> str:
    parts = [
        "# Providers",
        "",
        "A target or judge is `provider:model` on the command line, or an entry of a targets file "
        "(`targets: [{name, provider, model, ...}]`) whose other keys are the provider's settings.",
        "",
    ]
    for name in registry.names("provider"):
        parts += [f"## `{name}`", "", docstring(registry.lookup("provider", name)) or "(no description)", ""]
    for kind in ("simulator", "environment"):
        for name in registry.names(kind):
            obj = registry.lookup(kind, name)
            parts += [f"## {kind} `{name}`", "", docstring(obj if isinstance(obj, type) else type(obj)), ""]
    return "\n".join(parts)


def _command_section(name: str, command: Any, level: int) -> list[str]:
    parts = [f"{'#' * level} `{name}`", "", inspect.cleandoc(command.help or "") or "(no description)", ""]
    rows = ["| option | description | default |", "|---|---|---|"]
    for param in command.params:
        if param.param_type_name == "argument":
            label = f"`{param.name.upper()}`" + ("" if param.required else " (optional)")
        else:
            label = ", ".join(f"`{o}`" for o in [*param.opts, *param.secondary_opts])
        default = param.default if param.default not in (None, False, (), []) else ""
        rows.append(f"| {label} | {_cell(getattr(param, 'help', '') or '')} | {_cell(str(default))} |")
    if len(rows) > 2:
        parts += [*rows, ""]
    for sub_name, sub in getattr(command, "commands", {}).items():
        parts += _command_section(f"{name} {sub_name}", sub, level + 1)
    return parts


def cli_page() -> str:
    load_commands()
    root = typer.main.get_command(app)
    parts = ["# Command line", "", "Every command and option of `convoeval`, generated from the CLI itself.", ""]
    for name, command in root.commands.items():  # type: ignore[attr-defined]
        parts += _command_section(f"convoeval {name}", command, 2)
    return "\n".join(parts)


def results_page() -> str:
    return "\n".join(
        [
            "# Result records",
            "",
            "`-o results.jsonl` holds one record per test and target, written as each test finishes; "
            "the run store and every report read the same model.",
            "",
            "## EvaluationResult",
            "",
            fields_table(EvaluationResult),
            "",
            "## ScoreEntry (`scores[]`)",
            "",
            fields_table(ScoreEntry),
            "",
            "## TrialResult (`trials[]`)",
            "",
            fields_table(TrialResult),
            "",
            "## Message (`output[]`)",
            "",
            fields_table(Message),
            "",
        ]
    )


def pages() -> dict[str, str]:
    return {
        "reference/assertions.md": assertions_page(),
        "reference/providers.md": providers_page(),
        "reference/cli.md": cli_page(),
        "reference/results.md": results_page(),
    }


if __name__ == "__main__":
    for path, text in pages().items():
        print(f"<!-- {path} -->\n{text}\n")
