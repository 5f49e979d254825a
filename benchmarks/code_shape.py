"""Code-shape measures of src/convoeval: `Any` per 1,000 lines and functions over 80 lines.

Run: python benchmarks/code_shape.py [--list]
`Any` is counted as the word `Any` in source lines (as `grep -ow Any` would); a function's
length is from its `def` line (decorators excluded) to its last line, by `ast`. Functions
decorated by a typer command (`@app.command`, `@*.command`) are reported apart: their
signatures are the CLI's option declarations.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "src" / "convoeval"
LIMIT = 80


def main() -> None:
    lines = anys = 0
    long: list[tuple[int, str, bool]] = []
    for path in sorted(ROOT.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        lines += text.count("\n")
        anys += len(re.findall(r"\bAny\b", text))
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                size = (node.end_lineno or node.lineno) - node.lineno + 1
                if size > LIMIT:
                    typer = any("command" in ast.unparse(d) for d in node.decorator_list)
                    long.append((size, f"{path.relative_to(ROOT)}:{node.lineno} {node.name}", typer))
    print(f"lines {lines}, Any {anys}, per 1,000 lines {1000 * anys / lines:.1f}")
    print(f"functions over {LIMIT} lines: {sum(not t for *_, t in long)} (+{sum(t for *_, t in long)} typer commands)")
    if "--list" in sys.argv:
        for size, where, typer in sorted(long, reverse=True):
            print(f"  {size:4d} {where}{'  (typer command)' if typer else ''}")


if __name__ == "__main__":
    main()
