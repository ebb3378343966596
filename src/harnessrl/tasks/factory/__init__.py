"""The task factory: verifiable coding tasks made by rule from real code and its tests (docs/task-factory.md).

    from harnessrl.tasks.factory import generate
    manifest = generate("runs/factory", seed=0)   # suites <name>-train / -heldout / -sealed + manifest.json

sources.py   the corpus (modules + tests) cut into units and tests
rules.py     AST bug-injection rules, as exact text edits
build.py     one task from one or two mutations, checked in-process (verify.py)
instruct.py  the bug report the agent reads
pool.py      seeded order, near-duplicate removal, per-origin limit, two-bug pairs
split.py     train / held-out / sealed by origin
writer.py    suite folders and the manifest
"""

from __future__ import annotations

from pathlib import Path

from harnessrl.tasks.factory.rules import RULES
from harnessrl.tasks.factory.split import SPLITS, split_of

__all__ = ["RULES", "SPLITS", "generate", "split_of"]


def generate(out: str | Path, seed: int = 0, per_origin: int = 5, pairs: float = 0.25, name: str = "factory",
             rules: tuple[str, ...] = RULES, modules: list[str] | None = None) -> dict:
    """Generate and write the suites; returns the manifest (also OUT/manifest.json)."""
    from harnessrl.tasks.factory.pool import generate_pool
    from harnessrl.tasks.factory.sources import load_corpus
    from harnessrl.tasks.factory.writer import write_suites

    unknown = set(rules) - set(RULES)
    if unknown:
        raise ValueError(f"unknown rules {sorted(unknown)}; the rules are {', '.join(RULES)}")
    corpus = load_corpus()
    if modules:
        missing = set(modules) - {m.name for m in corpus}
        if missing:
            raise ValueError(f"no corpus modules {sorted(missing)}; known: {', '.join(m.name for m in corpus)}")
        corpus = [m for m in corpus if m.name in modules]
    tasks, stats = generate_pool(corpus, seed=seed, per_origin=per_origin, pairs=pairs, rules=tuple(rules))
    return write_suites(Path(out), tasks, stats, seed, name)
