"""Bug-injection rules: AST sites in a function where one small, typical mistake can be made.

Each rule lists every site it can mutate (deterministic: AST order), and a mutation is a
handful of *text* edits at the site's exact source position rather than an unparsed tree:
the rest of the file keeps its bytes, comments and layout, so the only difference between
the buggy workspace and the original is the bug itself (a reformatted function would point
at the bug), and the reference edit is one or two lines.

Rules (the `rule` key of a task's [factory] table):
    operator_swap          + <-> -, * -> +, // -> /, % -> //, and <-> or, == <-> !=, in <-> not in, += <-> -=
    boundary               < <-> <=, > <-> >=, range(.., n) -> range(.., n - 1) / n + 1
    negated_condition      `if c` -> `if not c` (if, elif, while, conditional expression, comprehension filter)
    changed_return         return True <-> False, n -> n + 1, "s" -> "", name -> None
    dropped_case           an elif branch, or a guard `if ...: return/raise/continue`, deleted
    swapped_arguments      f(a, b, ...) -> f(b, a, ...)
    renamed_symbol         a call to a misspelled name (len -> le): a NameError
    docstring_to_implement every statement after the docstring removed: implement it from the docstring
"""

from __future__ import annotations

import ast
import builtins
from dataclasses import dataclass

from harnessrl.tasks.factory.sources import Module

RULES = ("operator_swap", "boundary", "negated_condition", "changed_return", "dropped_case",
         "swapped_arguments", "renamed_symbol", "docstring_to_implement")

Edit = tuple[int, int, int, int, str]  # (line, col, end_line, end_col, new text); 1-based lines, byte columns

_BINOP = {ast.Add: ("+", "-"), ast.Sub: ("-", "+"), ast.Mult: ("*", "+"), ast.FloorDiv: ("//", "/"),
          ast.Mod: ("%", "//"), ast.Pow: ("**", "*"), ast.BitAnd: ("&", "|"), ast.BitOr: ("|", "&")}
_AUG = {ast.Add: ("+=", "-="), ast.Sub: ("-=", "+="), ast.Mult: ("*=", "+=")}
_CMP_SWAP = {ast.Eq: ("==", "!="), ast.NotEq: ("!=", "=="), ast.Is: ("is", "is not"), ast.IsNot: ("is not", "is"),
             ast.In: ("in", "not in"), ast.NotIn: ("not in", "in")}
_CMP_BOUND = {ast.Lt: ("<", "<="), ast.LtE: ("<=", "<"), ast.Gt: (">", ">="), ast.GtE: (">=", ">")}
_SIMPLE = (ast.Name, ast.Call, ast.Attribute, ast.Subscript, ast.Constant)


@dataclass(frozen=True)
class Mutation:
    rule: str
    function: str  # the origin: "f" or "Cls.method"
    unit: str  # the top-level unit that holds it
    line: int  # the site in the origin file
    col: int
    edits: tuple[Edit, ...]
    note: str  # what changed (for the manifest; never shown to the agent)

    @property
    def location(self) -> tuple[str, int, int]:
        return self.rule, self.line, self.col


def apply_edits(source: str, edits, shift: int = 0) -> str:
    """`source` with the edits made (lines moved by `shift`, for a module cut down around the unit)."""
    data = source.encode()
    starts = [0]
    for i, b in enumerate(data):
        if b == 10:
            starts.append(i + 1)
    starts.append(len(data))

    def at(line: int, col: int) -> int:
        return starts[line - 1 + shift] + col

    for line, col, eline, ecol, text in sorted(edits, key=lambda e: (e[0], e[1]), reverse=True):
        a, b = at(line, col), at(eline, ecol)
        data = data[:a] + text.encode() + data[b:]
    return data.decode()


class _Sites:
    """Collects the mutations of one function; `src` is the module's bytes for exact segments."""

    def __init__(self, mod: Module, unit: str, function: str, src: bytes, defined: set[str]):
        self.mod, self.unit, self.function, self.src, self.defined = mod, unit, function, src, defined
        self.lines = src.split(b"\n")
        self.out: list[Mutation] = []

    def text(self, node) -> str:
        return ast.get_source_segment(self.mod.source, node) or ""

    def gap(self, left, right) -> tuple[int, int, int, int, str]:
        """The source between two nodes on one line (where an operator token sits)."""
        if left.end_lineno != right.lineno:
            return 0, 0, 0, 0, ""
        line = self.lines[left.end_lineno - 1]
        return left.end_lineno, left.end_col_offset, right.lineno, right.col_offset, \
            line[left.end_col_offset:right.col_offset].decode()

    def add(self, rule, node, edits, note):
        self.out.append(Mutation(rule, self.function, self.unit, node.lineno, node.col_offset, tuple(edits), note))

    def token_swap(self, rule, node, left, right, old, new):
        line, col, eline, ecol, between = self.gap(left, right)
        if between.strip(" ()") == old:  # exactly the operator, maybe parentheses: replace just the token
            i = between.index(old)
            self.add(rule, node, [(line, col + i, line, col + i + len(old), new)], f"{old} -> {new}")

    def replace(self, rule, node, new, note):
        self.add(rule, node, [(node.lineno, node.col_offset, node.end_lineno, node.end_col_offset, new)], note)

    def delete_lines(self, rule, node, first, last, note):
        self.add(rule, node, [(first, 0, last + 1, 0, "")], note)


def _guard(node: ast.If) -> bool:
    return not node.orelse and isinstance(node.body[-1], (ast.Return, ast.Raise, ast.Continue, ast.Break))


def _misspell(name: str, taken: set[str]) -> str | None:
    options = [name[:-1], name + name[-1], name[0] + name[2] + name[1] + name[3:] if len(name) > 2 else ""]
    return next((o for o in options if len(o) >= 2 and o != name and o not in taken and o.isidentifier()), None)


def _visit(s: _Sites, fn: ast.FunctionDef) -> None:
    blocks = [fn.body]
    for node in ast.walk(fn):
        for field in ("body", "orelse", "finalbody"):
            seq = getattr(node, field, None)
            if node is not fn and isinstance(seq, list) and seq and isinstance(seq[0], ast.stmt):
                blocks.append(seq)
    for node in ast.walk(fn):
        if isinstance(node, ast.BinOp) and type(node.op) in _BINOP:
            s.token_swap("operator_swap", node, node.left, node.right, *_BINOP[type(node.op)])
        elif isinstance(node, ast.BoolOp) and len(node.values) == 2:
            old, new = ("and", "or") if isinstance(node.op, ast.And) else ("or", "and")
            s.token_swap("operator_swap", node, node.values[0], node.values[1], old, new)
        elif isinstance(node, ast.AugAssign) and type(node.op) in _AUG:
            s.token_swap("operator_swap", node, node.target, node.value, *_AUG[type(node.op)])
        elif isinstance(node, ast.Compare) and len(node.ops) == 1:
            op = type(node.ops[0])
            rule = "operator_swap" if op in _CMP_SWAP else "boundary" if op in _CMP_BOUND else None
            if rule:
                s.token_swap(rule, node, node.left, node.comparators[0], *(_CMP_SWAP.get(op) or _CMP_BOUND[op]))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            args = node.args
            if node.func.id == "range" and args and not any(isinstance(a, ast.Starred) for a in args):
                stop = args[1] if len(args) >= 2 else args[0]
                seg = s.text(stop)
                seg = seg if isinstance(stop, _SIMPLE) else f"({seg})"
                for sign in ("-", "+"):
                    s.replace("boundary", stop, f"{seg} {sign} 1", f"range stop {sign} 1")
            if node.func.id in s.defined or node.func.id in vars(builtins):
                new = _misspell(node.func.id, s.defined | set(vars(builtins)))
                if new:
                    s.replace("renamed_symbol", node.func, new, f"{node.func.id} -> {new}")
        if isinstance(node, ast.Call) and len(node.args) >= 2 and not any(isinstance(a, ast.Starred) for a in node.args[:2]):
            a, b = node.args[0], node.args[1]
            ta, tb = s.text(a), s.text(b)
            if ta and tb and ta != tb:
                s.add("swapped_arguments", node, [(a.lineno, a.col_offset, a.end_lineno, a.end_col_offset, tb),
                                                  (b.lineno, b.col_offset, b.end_lineno, b.end_col_offset, ta)],
                      f"arguments {ta} <-> {tb}")
        tests = []
        if isinstance(node, (ast.If, ast.While, ast.IfExp)):
            tests = [node.test]
        elif isinstance(node, ast.comprehension):
            tests = list(node.ifs)
        for t in tests:
            if isinstance(t, ast.UnaryOp) and isinstance(t.op, ast.Not):
                s.replace("negated_condition", t, s.text(t.operand), "not dropped")
            else:
                seg = s.text(t)
                s.replace("negated_condition", t, f"not {seg}" if isinstance(t, _SIMPLE) else f"not ({seg})", "negated")
        if isinstance(node, ast.Return) and node.value is not None:
            v = node.value
            if isinstance(v, ast.Constant) and isinstance(v.value, bool):
                s.replace("changed_return", v, str(not v.value), f"{v.value} -> {not v.value}")
            elif isinstance(v, ast.Constant) and isinstance(v.value, int):
                s.replace("changed_return", v, str(v.value + 1), f"{v.value} -> {v.value + 1}")
            elif isinstance(v, ast.Constant) and isinstance(v.value, str):
                s.replace("changed_return", v, '""' if v.value else '"?"', "string changed")
            elif isinstance(v, (ast.Name, ast.List, ast.Dict, ast.Tuple)):
                s.replace("changed_return", v, "None", f"{s.text(v)[:20]} -> None")
        if isinstance(node, ast.If) and len(node.orelse) == 1 and isinstance(node.orelse[0], ast.If):
            elif_ = node.orelse[0]
            if s.lines[elif_.lineno - 1].lstrip().startswith(b"elif"):
                s.delete_lines("dropped_case", elif_, elif_.lineno, elif_.body[-1].end_lineno, "elif branch deleted")
    for block in blocks:
        if len(block) >= 2:
            for stmt in block:
                if isinstance(stmt, ast.If) and _guard(stmt):
                    s.delete_lines("dropped_case", stmt, stmt.lineno, stmt.end_lineno, "guard deleted")
    doc = ast.get_docstring(fn, clean=False)
    if doc is not None and len(fn.body) >= 2:
        s.delete_lines("docstring_to_implement", fn.body[1], fn.body[1].lineno, fn.body[-1].end_lineno,
                       "body after the docstring deleted")


def mutations(mod: Module) -> list[Mutation]:
    """Every mutation of every function of `mod`, in source order (ties: rule order)."""
    tree = ast.parse(mod.source)
    src = mod.source.encode()
    defined = {u.name for u in mod.units}
    out: list[Mutation] = []
    for node in tree.body:
        fns = [node] if isinstance(node, ast.FunctionDef) else \
            [b for b in node.body if isinstance(b, ast.FunctionDef)] if isinstance(node, ast.ClassDef) else []
        for fn in fns:
            name = fn.name if fn is node else f"{node.name}.{fn.name}"
            s = _Sites(mod, node.name, name, src, defined)
            _visit(s, fn)
            out.extend(s.out)
    seen, unique = set(), []
    for mu in sorted(out, key=lambda m: (m.line, m.col, RULES.index(m.rule), m.note)):
        if (mu.location, mu.edits) not in seen:
            seen.add((mu.location, mu.edits))
            unique.append(mu)
    return unique
