"""Jinja2 templates for grader prompts: sandboxed (no attribute tricks reach Python), no
globals, and strict (an unknown variable is an error, found when the eval file is loaded)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Collection, Mapping
from contextvars import ContextVar
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import jinja2
    from jinja2.runtime import Context

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


#: The longest string or list a template may build with `*`, `+` or `%`, and the largest
#: number a call may take (widths, counts): `{{ 'a' * 800000000 }}` is refused, not allocated.
MAX_TEMPLATE_ITEMS = 1_000_000
_BIG_WIDTH = re.compile(r"\d{7,}")
#: The longest text a template may render.
MAX_RENDERED_CHARS = 10_000_000


def _size(value: object) -> int:
    return len(value) if isinstance(value, (str, bytes, list, tuple)) else 0


def _check_binop(operator: str, left: object, right: object) -> None:
    """Refuse an operation whose result would exceed the bounds (before it is computed)."""
    if operator == "*":
        for seq, count in ((left, right), (right, left)):
            if _size(seq) and isinstance(count, int) and _size(seq) * count > MAX_TEMPLATE_ITEMS:
                raise ValueError(f"`*` would build {_size(seq) * count} items (at most {MAX_TEMPLATE_ITEMS})")
        if isinstance(left, int) and isinstance(right, int) and abs(left).bit_length() + abs(right).bit_length() > 4096:
            raise ValueError("`*` on numbers this large is not allowed")
    elif operator == "**" and isinstance(right, (int, float)):
        if abs(right) > 1024 and isinstance(left, (int, float)) and abs(left) > 1:
            raise ValueError(f"`**` with exponent {right} is not allowed (at most 1024)")
    elif operator == "+" and _size(left) + _size(right) > MAX_TEMPLATE_ITEMS:
        raise ValueError(f"`+` would build {_size(left) + _size(right)} items (at most {MAX_TEMPLATE_ITEMS})")
    elif operator == "%" and isinstance(left, str):
        values = right if isinstance(right, tuple) else (right,)
        if _BIG_WIDTH.search(left) or (
            "*" in left and any(isinstance(v, int) and v > MAX_TEMPLATE_ITEMS for v in values)
        ):
            raise ValueError("`%` with a field width of a million or more is not allowed")


#: Callables whose numeric arguments are sizes (a width, a count) of what they build.
_SIZED = frozenset({"center", "ljust", "rjust", "zfill", "expandtabs", "indent", "wordwrap", "format"})


def _check_call(name: str, args: tuple[object, ...], kwargs: Mapping[str, object], fmt: object = None) -> None:
    """Refuse a sized call with a huge number (`center(10**9)`, `indent(10**9)`) or format width."""
    if name not in _SIZED:
        return
    for value in (*args, *kwargs.values()):
        if isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_TEMPLATE_ITEMS:
            raise ValueError(f"`{name}` with the number {value} is not allowed (at most {MAX_TEMPLATE_ITEMS})")
    if isinstance(fmt, str) and name in ("format", "format_map") and _BIG_WIDTH.search(fmt):
        raise ValueError("a format width of a million or more is not allowed")


#: The names an `_env(strict=False)` rendering left empty (set by `render_lenient`).
_EMPTY: ContextVar[list[str] | None] = ContextVar("_EMPTY", default=None)


@lru_cache(maxsize=2)
def _env(strict: bool = True) -> jinja2.sandbox.ImmutableSandboxedEnvironment:
    """The environment, built (and jinja2 imported) when a suite first uses a template. Not
    `strict`: an unknown name renders as empty text (recorded in `_EMPTY`), as nunjucks does."""
    import jinja2.meta
    import jinja2.nodes
    import jinja2.sandbox

    class Bounded(jinja2.sandbox.ImmutableSandboxedEnvironment):
        """The sandbox, plus bounds on what a template may allocate."""

        intercepted_binops = frozenset({"*", "**", "+", "%"})

        def call_binop(self, context: Context, operator: str, left: object, right: object) -> object:
            try:
                _check_binop(operator, left, right)
            except ValueError as exc:
                raise jinja2.sandbox.SecurityError(str(exc)) from None
            return super().call_binop(context, operator, left, right)

        def call(__self, __context: Context, __obj: object, *args: object, **kwargs: object) -> object:  # noqa: N805
            try:
                bound = getattr(__obj, "__wrapped__", __obj)  # str.format comes wrapped by the sandbox
                _check_call(getattr(__obj, "__name__", ""), args, kwargs, getattr(bound, "__self__", None))
            except ValueError as exc:
                raise jinja2.sandbox.SecurityError(str(exc)) from None
            return super().call(__context, __obj, *args, **kwargs)

    class Empty(jinja2.ChainableUndefined):
        """An unknown name (or an attribute of one): empty text, remembered."""

        def __str__(self) -> str:
            if (empty := _EMPTY.get()) is not None:
                empty.append(str(self._undefined_name))
            return ""

    undefined = jinja2.StrictUndefined if strict else Empty
    env = Bounded(undefined=undefined, autoescape=False, keep_trailing_newline=True)
    env.globals.clear()  # range, cycler, joiner, lipsum, namespace, dict: nothing a prompt needs
    if not strict:
        env.filters["load"] = json.loads  # AgentV's own filter (`interpolation.ts`)
    for name in ("center", "indent", "wordwrap", "format"):
        env.filters[name] = _bounded_filter(name, env.filters[name], jinja2.sandbox.SecurityError)
    return env


def _bounded_filter(name: str, fn: Callable[..., object], error: type[Exception]) -> Callable[..., object]:
    """Filter `fn` refusing huge sizes (`'a'|center(10**9)`, `'%999999999s'|format(x)`)."""
    import functools

    skip = 2 if getattr(fn, "jinja_pass_arg", None) is not None else 1  # (environment,) value, then arguments

    @functools.wraps(fn)
    def bounded(*args: object, **kwargs: object) -> object:
        try:
            _check_call(name, args[skip:], kwargs, args[skip - 1] if len(args) >= skip else None)
        except ValueError as exc:
            raise error(str(exc)) from None
        return fn(*args, **kwargs)

    return bounded


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


def render(source: str, variables: Mapping[str, object]) -> str:
    """Render a template; raises TemplateProblem naming the missing variable."""
    import jinja2.sandbox

    template = _compile(source)
    try:
        parts, size = [], 0
        for part in template.generate(**variables):  # loops cannot build an unbounded prompt either
            size += len(part)
            if size > MAX_RENDERED_CHARS:
                raise TemplateProblem(f"template output exceeds {MAX_RENDERED_CHARS} characters; refused")
            parts.append(part)
        return "".join(parts)
    except jinja2.UndefinedError as exc:
        raise TemplateProblem(f"template variable error: {exc.message}") from None
    except jinja2.sandbox.SecurityError as exc:
        raise TemplateProblem(f"template refused by the sandbox: {exc}") from None


def render_lenient(source: str, variables: Mapping[str, object]) -> tuple[str, list[str]]:
    """Render a template as nunjucks does without `throwOnUndefined` (AgentV's `{{ env.NAME }}`):
    an unknown name is empty text. Returns the text and the names left empty; raises
    TemplateProblem when the template does not parse or the sandbox refuses it."""
    import jinja2

    try:
        template = _env(strict=False).from_string(source)
    except jinja2.TemplateSyntaxError as exc:
        raise TemplateProblem(f"template syntax error: {exc.message}") from None
    empty: list[str] = []
    token = _EMPTY.set(empty)
    try:
        text = template.render(**variables)
    except (jinja2.TemplateError, ValueError, TypeError) as exc:
        raise TemplateProblem(f"template error: {exc}") from None
    finally:
        _EMPTY.reset(token)
    if len(text) > MAX_RENDERED_CHARS:
        raise TemplateProblem(f"template output exceeds {MAX_RENDERED_CHARS} characters; refused")
    return text, empty


_VARIABLE = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")


def unfilled(text: str, names: Collection[str]) -> list[str]:
    """The names among `names` still written as `{{ name }}` in `text` (after `substitute`:
    captured variables that were never set). Other `{{ ... }}` text is not a placeholder."""
    if not names or "{{" not in text:
        return []
    return list(dict.fromkeys(m.group(1) for m in _VARIABLE.finditer(text) if m.group(1) in names))


def substitute(text: str, variables: Mapping[str, object]) -> str:
    """Replace `{{ name }}` with captured variables in turn inputs; other text is kept as is.

    Unlike `render`, this leaves unknown `{{ ... }}` untouched so that a user message may talk
    about templates.
    """
    if "{{" not in text or not variables:
        return text
    return _VARIABLE.sub(lambda m: str(variables[m.group(1)]) if m.group(1) in variables else m.group(0), text)


def regex_values(variables: Mapping[str, object]) -> dict[str, object]:
    """The variables as they go into a regular expression: escaped, so that a captured `$12.50`
    or `(A)` is matched as the text it is, never read as regex syntax."""
    return {name: re.escape(str(value)) for name, value in variables.items()}


def substitute_regex(pattern: str, variables: Mapping[str, object]) -> str:
    """`substitute` for a regular expression (the values escaped: `regex_values`)."""
    if "{{" not in pattern or not variables:
        return pattern
    return substitute(pattern, regex_values(variables))
