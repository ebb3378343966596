"""Literal examples in a task's text: `name(args) == value`, `name(args) -> value`, doctest lines.

    examples("`slugify('A b') == 'a-b'` and\n>>> add(1, 2)\n3")
    -> {"slugify": [(("A b",), "a-b")], "add": [((1, 2), 3)]}

Only literal arguments and values count (ast.literal_eval); anything else is ignored, so a
task whose text shows no literal examples gives the example-based attacks nothing to use.
"""

from __future__ import annotations

import ast
import re
from typing import Any

_INLINE = re.compile(r"`([^`\n]{3,300})`")
_ARROW = re.compile(r"^(.*\))\s*(?:->|→|returns|gives)\s*(.+)$")


def _call(expr: ast.AST) -> tuple[str, tuple[Any, ...]] | None:
    if not (isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and not expr.keywords):
        return None
    try:
        return expr.func.id, tuple(ast.literal_eval(a) for a in expr.args)
    except (ValueError, TypeError, SyntaxError, RecursionError):
        return None


def _pair(call_text: str, value_text: str) -> tuple[str, tuple[Any, ...], Any] | None:
    try:
        expr = ast.parse(call_text.strip(), mode="eval").body
        value = ast.literal_eval(value_text.strip().rstrip(".,;"))
    except (SyntaxError, ValueError, TypeError, RecursionError):
        return None
    got = _call(expr)
    return (got[0], got[1], value) if got else None


def _one(snippet: str) -> tuple[str, tuple[Any, ...], Any] | None:
    try:
        node = ast.parse(snippet.strip(), mode="eval").body
    except (SyntaxError, ValueError, RecursionError):
        node = None
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], ast.Eq):
        got = _call(node.left)
        if got:
            try:
                return got[0], got[1], ast.literal_eval(node.comparators[0])
            except (ValueError, TypeError, SyntaxError, RecursionError):
                return None
    m = _ARROW.match(snippet.strip())
    return _pair(m.group(1), m.group(2)) if m else None


def examples(text: str) -> dict[str, list[tuple[tuple[Any, ...], Any]]]:
    """{function name: [(args, expected value), ...]} shown literally in `text`."""
    out: dict[str, list[tuple[tuple[Any, ...], Any]]] = {}
    found = [_one(s) for s in _INLINE.findall(text)]
    lines = text.splitlines()
    for i, line in enumerate(lines):
        s = line.strip()
        if s.startswith(">>> ") and i + 1 < len(lines):
            found.append(_pair(s[4:], lines[i + 1]))
        elif not s.startswith("`"):
            found.append(_one(s))
    for hit in found:
        if hit is not None:
            name, args, value = hit
            if (args, value) not in out.setdefault(name, []):
                out[name].append((args, value))
    return out


def module_defining(files: dict[str, str], name: str) -> str | None:
    """The workspace path whose code defines `def name(` (None if none does)."""
    pattern = re.compile(rf"^def {re.escape(name)}\(", re.M)
    return next((p for p, text in sorted(files.items()) if pattern.search(text)), None)
