"""Jinja2 templates for grader prompts: sandboxed (no attribute tricks reach Python), no
globals, and strict (an unknown variable is an error, found when the eval file is loaded)."""

from __future__ import annotations

import re
from collections.abc import Collection
from functools import lru_cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import jinja2

#: Variables every grader prompt may use.
#: `{{ input }}`, `{{ output }}`, `{{ criteria }}`, `{{ expected_output }}`, and AgentV's names
#: for them (`output_text`, `answer`, `candidate_answer`, `input_text`, `question`,
#: `expected_output_text`, `reference_answer`, `expected_outcome`).
GRADER_VARIABLES = frozenset(
    {
        "input",
        "output",
        "criteria",
        "expected_output",
        "output_text",
        "answer",
        "candidate_answer",
        "input_text",
        "question",
        "expected_output_text",
        "reference_answer",
        "expected_outcome",
    }
)


@lru_cache(maxsize=1)
def _env() -> jinja2.sandbox.ImmutableSandboxedEnvironment:
    """The environment, built (and jinja2 imported) when a suite first uses a template."""
    import jinja2.meta
    import jinja2.nodes
    import jinja2.sandbox

    env = jinja2.sandbox.ImmutableSandboxedEnvironment(
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        keep_trailing_newline=True,
    )
    env.globals.clear()  # range, cycler, joiner, lipsum, namespace, dict: nothing a prompt needs
    return env


class TemplateProblem(ValueError):
    """A template does not parse, or uses a variable nobody sets."""


@lru_cache(maxsize=256)
def _compile(source: str) -> jinja2.Template:
    import jinja2

    env = _env()
    try:
        return env.from_string(source)
    except jinja2.TemplateSyntaxError as exc:
        raise TemplateProblem(f"template syntax error on its line {exc.lineno}: {exc.message}") from None


def template_variables(source: str) -> set[str]:
    """The variables a template reads."""
    import jinja2.meta

    env = _env()
    try:
        return set(jinja2.meta.find_undeclared_variables(env.parse(source)))
    except jinja2.TemplateSyntaxError as exc:
        raise TemplateProblem(f"template syntax error on its line {exc.lineno}: {exc.message}") from None


def check_template(source: str, known: set[str] | frozenset[str]) -> str | None:
    """Why a template cannot be rendered with variables `known`, or None when it can."""
    try:
        unknown = template_variables(source) - set(known)
        private = _private_attributes(source)
    except TemplateProblem as exc:
        return str(exc)
    if private:
        return f"template reads private attribute(s) {', '.join(sorted(private))} (not allowed)"
    if unknown:
        return f"unknown template variable(s) {', '.join(sorted(unknown))} (available: {', '.join(sorted(known))})"
    return None


def _private_attributes(source: str) -> set[str]:
    """`_name` attributes or keys a template reads (the sandbox refuses them at render time)."""
    import jinja2.nodes

    found = set()
    for node in _env().parse(source).find_all((jinja2.nodes.Getattr, jinja2.nodes.Getitem)):
        name = (
            node.attr if isinstance(node, jinja2.nodes.Getattr) else getattr(getattr(node, "arg", None), "value", None)
        )
        if isinstance(name, str) and name.startswith("_"):
            found.add(name)
    return found


def render(source: str, variables: dict[str, Any]) -> str:
    """Render a template; raises TemplateProblem naming the missing variable."""
    import jinja2.sandbox

    template = _compile(source)
    try:
        return template.render(**variables)
    except jinja2.UndefinedError as exc:
        raise TemplateProblem(f"template variable error: {exc.message}") from None
    except jinja2.sandbox.SecurityError as exc:
        raise TemplateProblem(f"template refused by the sandbox: {exc}") from None


_VARIABLE = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")


def unfilled(text: str, names: Collection[str]) -> list[str]:
    """The names among `names` still written as `{{ name }}` in `text` (after `substitute`:
    captured variables that were never set). Other `{{ ... }}` text is not a placeholder."""
    if not names or "{{" not in text:
        return []
    return list(dict.fromkeys(m.group(1) for m in _VARIABLE.finditer(text) if m.group(1) in names))


def substitute(text: str, variables: dict[str, Any]) -> str:
    """Replace `{{ name }}` with captured variables in turn inputs; other text is kept as is.

    Unlike `render`, this leaves unknown `{{ ... }}` untouched so that a user message may talk
    about templates.
    """
    if "{{" not in text or not variables:
        return text
    return _VARIABLE.sub(lambda m: str(variables[m.group(1)]) if m.group(1) in variables else m.group(0), text)
