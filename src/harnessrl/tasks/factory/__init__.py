"""The task factory: verifiable coding tasks made by rule from real code and its tests (docs/task-factory.md).

    from harnessrl.tasks.factory import generate
    manifest = generate("runs/factory", seed=0)   # suites <name>-train / -heldout / -sealed + manifest.json

sources.py   the corpus (modules + tests) cut into units and tests
rules.py     AST bug-injection rules, as exact text edits
build.py     one task from one or two mutations, checked in-process (verify.py)
instruct.py  the bug report the agent reads
pypi.py      pinned PyPI sdists (module + own tests), fetched once into a cache
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
             rules: tuple[str, ...] = RULES, modules: list[str] | None = None, confirm: int = 0,
             sources: tuple[str, ...] = ("corpus",)) -> dict:
    """Generate and write the suites; returns the manifest (also OUT/manifest.json).

    `confirm` N re-checks N tasks (an even sample over the sorted list) with a real `python -m pytest` in a
    temporary folder, buggy (must fail) and fixed (must pass), on top of the in-process check every task had;
    a disagreement is an error, never a silently dropped task. `sources`: "corpus" (ours, shipped) and/or
    "pypi" (pinned packages fetched once by `harnessrl tasks fetch-sources`: pypi.py)."""
    from harnessrl.tasks.factory.pool import generate_pool
    from harnessrl.tasks.factory.sources import load_corpus
    from harnessrl.tasks.factory.writer import write_suites

    out = Path(out)
    if out.exists() and not out.is_dir():
        raise ValueError(f"{out}: not a folder; give a new or empty folder")
    if per_origin < 0 or pairs < 0:
        raise ValueError(f"--per-origin {per_origin} / --pairs {pairs}: use 0 or more")
    if out.exists() and any(out.iterdir()):  # before the work, not after it
        raise FileExistsError(f"{out}: not empty; give a new folder (generated suites are never merged)")
    unknown = set(rules) - set(RULES)
    if unknown:
        raise ValueError(f"unknown rules {sorted(unknown)}; the rules are {', '.join(RULES)}")
    unknown_sources = set(sources) - {"corpus", "pypi"}
    if unknown_sources or not sources:
        raise ValueError(f"sources {sorted(unknown_sources) or '(none)'}: use corpus and/or pypi")
    corpus = load_corpus() if "corpus" in sources else []
    if "pypi" in sources:
        from harnessrl.tasks.factory.pypi import load_pypi

        corpus += load_pypi()
    if modules:
        missing = set(modules) - {m.name for m in corpus}
        if missing:
            raise ValueError(f"no corpus modules {sorted(missing)}; known: {', '.join(m.name for m in corpus)}")
        corpus = [m for m in corpus if m.name in modules]
    tasks, stats = generate_pool(corpus, seed=seed, per_origin=per_origin, pairs=pairs, rules=tuple(rules))
    if confirm and tasks:
        from harnessrl.tasks.base import Solution
        from harnessrl.tasks.factory.verify import confirm_with_pytest

        step = max(1, len(tasks) // confirm)
        for spec in tasks[::step][:confirm]:
            buggy_ok, out_b = confirm_with_pytest(spec.workspace, spec.tests)
            fixed = {**spec.workspace, **Solution(spec.steps).final_files(spec.workspace)}
            fixed_ok, out_f = confirm_with_pytest(fixed, spec.tests)
            if buggy_ok or not fixed_ok:
                raise RuntimeError(f"{spec.name}: pytest disagrees with the in-process check "
                                   f"(buggy passed: {buggy_ok}, fixed passed: {fixed_ok}):\n{out_b if buggy_ok else out_f}")
        stats.confirmed = min(confirm, len(tasks[::step]))
    return write_suites(Path(out), tasks, stats, seed, name)
