"""Sources for the task factory: modules of pure functions with their pytest tests.

The corpus (factory/corpus/) holds pairs `NAME.py` + `test_NAME.py`. Conventions that let the
factory cut a module down to a few functions and still know which tests apply:

- a module's top-level statements are imports, constants, functions and classes; each function or
  class is a *unit*, the thing a workspace keeps or drops;
- the test file imports its module as `m` (`import NAME as m`) and reaches every unit as `m.X`:
  a test's dependencies are exactly the `m.X` it names, so a test is kept iff those units are;
- tests are plain functions (`test_*`), parametrized with literal tables, no fixtures.

Everything here is pure: text in, text and line maps out.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

CORPUS_DIR = Path(__file__).resolve().parent / "corpus"


@dataclass(frozen=True)
class Unit:
    """A top-level function or class of a module: lines [start, end] (1-based, decorators included)."""

    name: str
    start: int
    end: int
    deps: frozenset[str]  # other units of the module it names (kept along with it)
    functions: tuple[str, ...]  # origin names inside: "f", or "Cls.method" for each method


@dataclass(frozen=True)
class TestFn:
    name: str
    start: int
    end: int
    deps: frozenset[str]  # the m.X it names

    __test__ = False  # not a pytest class


@dataclass(frozen=True)
class Module:
    name: str  # the import name, e.g. "textkit"
    origin: str  # where it came from, e.g. "corpus/textkit.py"
    source: str
    units: tuple[Unit, ...]
    header: tuple[tuple[int, int], ...]  # line spans of every other top-level statement
    test_source: str
    test_header: tuple[tuple[int, int], ...]
    tests: tuple[TestFn, ...]
    alias: str = "m"  # the name the tests reach the module by
    header_deps: frozenset[str] = frozenset()  # units the header calls at import time (always kept)

    def unit(self, name: str) -> Unit:
        return next(u for u in self.units if u.name == name)

    def closure(self, names) -> set[str]:
        """The named units, the units the module header needs, and every unit they depend on, transitively."""
        out, todo = set(), [*names, *self.header_deps]
        while todo:
            n = todo.pop()
            if n not in out:
                out.add(n)
                todo.extend(self.unit(n).deps)
        return out


def _span(node: ast.stmt) -> tuple[int, int]:
    first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
    return first, node.end_lineno


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def parse_module(name: str, source: str, test_source: str, origin: str, alias: str = "m") -> Module:
    """Split a module and its tests into units, header spans and tests (see the module docstring).

    `alias`: how the tests import the module (`import NAME as m` for the corpus; a PyPI package's own
    tests use `import NAME`, alias NAME)."""
    tree = ast.parse(source)
    defs = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))]
    top = {d.name for d in defs}
    units, header, header_deps = [], [], set()
    for node in tree.body:
        if node in defs:
            if isinstance(node, ast.ClassDef):
                fns = tuple(f"{node.name}.{b.name}" for b in node.body if isinstance(b, ast.FunctionDef))
            else:
                fns = (node.name,)
            units.append(Unit(node.name, *_span(node), frozenset((_names(node) & top) - {node.name}), fns))
        else:
            header.append(_span(node))
            header_deps |= _names(node) & top
    ttree = ast.parse(test_source)
    found = [a.asname or a.name for n in ttree.body if isinstance(n, ast.Import) for a in n.names if a.name == name]
    if found != [alias]:
        how = f"import {name} as m" if alias == "m" else f"import {name}"
        raise ValueError(f"{origin}: its test file must `{how}` (found {found})")
    tests, theader = [], []
    for node in ttree.body:
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
            deps = {a.attr for a in ast.walk(node) if isinstance(a, ast.Attribute)
                    and isinstance(a.value, ast.Name) and a.value.id == alias}
            tests.append(TestFn(node.name, *_span(node), frozenset(deps & top)))
        else:
            theader.append(_span(node))
    return Module(name, origin, source, tuple(units), tuple(header), test_source, tuple(theader), tuple(tests), alias,
                  frozenset(header_deps))


def load_corpus(folder: Path = CORPUS_DIR) -> list[Module]:
    """Every NAME.py with a test_NAME.py beside it, sorted by name (the order is part of determinism)."""
    mods = []
    for path in sorted(folder.glob("*.py")):
        if path.name.startswith("test_"):
            continue
        test = path.with_name(f"test_{path.name}")
        if test.exists():
            mods.append(parse_module(path.stem, path.read_text(encoding="utf-8"), test.read_text(encoding="utf-8"),
                                     f"corpus/{path.name}"))
    return mods


def _lines(text: str, span: tuple[int, int]) -> str:
    lines = text.splitlines(keepends=True)
    return "".join(lines[span[0] - 1:span[1]])


def assemble(source: str, pieces: list[tuple[tuple[int, int], bool]]) -> tuple[str, dict[int, int]]:
    """Join line spans of `source` in order (two blank lines around a def, as PEP 8 has it).

    Returns the text and {first line of each span in `source`: its first line in the text}, so
    a mutation found in the full module can be placed in the cut-down one."""
    out, where, line, prev_def, prev_end = [], {}, 1, None, 0
    src_lines = source.splitlines()
    for span, is_def in pieces:
        if prev_def is not None:
            # PEP 8's two blank lines around a def; elsewhere the blank lines the source had (at most 2)
            between = src_lines[prev_end:span[0] - 1]
            blank = 2 if (is_def or prev_def) else min(2, sum(not x.strip() for x in between))
            out.append("\n" * blank)
            line += blank
        chunk = _lines(source, span)
        if not chunk.endswith("\n"):
            chunk += "\n"
        where[span[0]] = line
        out.append(chunk)
        line += chunk.count("\n")
        prev_def, prev_end = is_def, span[1]
    return "".join(out), where


def module_text(mod: Module, keep: set[str]) -> tuple[str, dict[int, int]]:
    """The module with only the units in `keep` (and all header statements), in source order."""
    pieces = [(s, False) for s in mod.header] + [((u.start, u.end), True) for u in mod.units if u.name in keep]
    return assemble(mod.source, sorted(pieces))


def render_tests(mod: Module, names) -> str:
    """The test file's header with the named tests, in source order."""
    chosen = set(names)
    pieces = [(s, False) for s in mod.test_header] + [((t.start, t.end), True) for t in mod.tests if t.name in chosen]
    return assemble(mod.test_source, sorted(pieces))[0]


def select_tests(mod: Module, keep: set[str]) -> list[TestFn]:
    """The tests whose every dependency is kept."""
    return [t for t in mod.tests if t.deps <= keep]
