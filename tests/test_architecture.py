"""The import rules of DESIGN.md, checked with import-linter on every test run, and no cycles.

The `layers` contract in pyproject.toml states one order of the packages; the cycle check
below does not trust that list: it builds the real import graph (grimp, which import-linter
itself uses), collapses it to packages (`harnessrl.X`), and fails on any strongly connected
group of two or more packages, naming the module imports that close the loop.
"""

import subprocess
import sys
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[1]


def test_import_contracts_hold():
    lint = Path(sys.executable).with_name("lint-imports")
    result = subprocess.run([str(lint), "--config", str(ROOT / "pyproject.toml")], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout
    assert "one order of layers" in result.stdout and "KEPT" in result.stdout.split("one order of layers")[1]


def package_edges(graph, depth: int = 2) -> dict[tuple[str, str], list[tuple[str, str]]]:
    """(importer package, imported package) -> the module imports behind it; packages cut at `depth` name parts."""
    cut = lambda m: ".".join(m.split(".")[:depth])  # noqa: E731
    edges: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for m in graph.modules:
        for i in graph.find_modules_directly_imported_by(m):
            a, b = cut(m), cut(i)
            if a != b and a.count(".") == depth - 1 and b.count(".") == depth - 1:  # the root package itself is no layer
                edges.setdefault((a, b), []).append((m, i))
    return edges


def cycles(edges) -> list[list[str]]:
    """Strongly connected groups of two or more nodes (Tarjan), each sorted."""
    nodes = sorted({n for e in edges for n in e})
    succ = {n: sorted(b for a, b in edges if a == n) for n in nodes}
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in succ[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(sorted(group))

    for n in nodes:
        if n not in index:
            visit(n)
    return out


def test_the_cycle_check_finds_cycles():
    edges = {("p.a", "p.b"): [], ("p.b", "p.c"): [], ("p.c", "p.a"): [], ("p.c", "p.d"): [], ("p.d", "p.e"): []}
    assert cycles(edges) == [["p.a", "p.b", "p.c"]]
    assert cycles({k: v for k, v in edges.items() if k != ("p.c", "p.a")}) == []


def test_no_import_cycle_between_packages():
    edges = package_edges(grimp.build_graph("harnessrl", cache_dir=None))
    assert ("harnessrl.recipes", "harnessrl.train") in edges  # the graph is the real one
    found = cycles(edges)
    detail = [f"{a} -> {b}: {edges[(a, b)][:3]}" for g in found for a in g for b in g if (a, b) in edges]
    assert found == [], "\n".join(detail)


def test_programs_are_data_and_argv():
    """harnessrl.programs (one module per real agent program) imports from harnessrl only config and
    plugins, every module in it is a listed program or its base, and the runtime reaches a program
    only through it (agents installs and launches, harness renders through the tool table)."""
    from harnessrl.programs import BUILTIN

    graph = grimp.build_graph("harnessrl", cache_dir=None)
    modules = {m for m in graph.modules if m.startswith("harnessrl.programs")}
    assert {m.rsplit(".", 1)[-1] for m in modules} == {"programs", "base", *BUILTIN}
    for m in sorted(modules):
        outside = {i for i in graph.find_modules_directly_imported_by(m)
                   if i.startswith("harnessrl.") and not i.startswith("harnessrl.programs")}
        assert outside <= {"harnessrl.config", "harnessrl.plugins"}, (m, outside)
    importers = {i.split(".")[1] for m in modules for i in graph.find_modules_that_directly_import(m)
                 if not i.startswith("harnessrl.programs")}
    assert importers <= {"agents", "harness", "recipes", "commands"}, importers
    layers = (ROOT / "docs" / "architecture.md").read_text()
    assert "\n programs " in layers and "harnessrl.programs" in (ROOT / "pyproject.toml").read_text()
