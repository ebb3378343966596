"""From a corpus to a set of tasks: every mutation tried in a seeded order, near-duplicates dropped,
at most `per_origin` tasks per origin, two-bug tasks paired within a split.

    tasks, stats = generate_pool(load_corpus(), seed=0, per_origin=5, pairs=0.25)

Near-duplicates (the first one in the seeded order stays):
- the same origin file, rule and location (`range(n)` -> n - 1 and n + 1 are one site), and
- the same set of failing test cases in the same module (two mutations the tests cannot tell apart,
  e.g. `not (x in s)` and `x not in s`).
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field

from harnessrl.tasks.factory.build import Bug, TaskSpec, build_task
from harnessrl.tasks.factory.rules import RULES, mutations
from harnessrl.tasks.factory.sources import Module
from harnessrl.tasks.factory.split import split_of


@dataclass
class PoolStats:
    candidates: int = 0  # mutations tried
    not_a_task: int = 0  # equivalent mutants, hangs, edits that do not replay
    duplicates: int = 0
    capped: int = 0  # over the per-origin limit
    rules: Counter = field(default_factory=Counter)  # kept tasks per rule (a two-bug task counts both)
    confirmed: int = 0  # tasks re-checked with a real pytest run


def task_split(spec: TaskSpec) -> str:
    return split_of(*spec.origins[0])


class _Keeper:
    """Dedupe and per-origin caps, in arrival order."""

    def __init__(self, per_origin: int, stats: PoolStats):
        self.per_origin, self.stats = per_origin, stats
        self.locations, self.failing, self.count = set(), set(), Counter()
        self.kept: list[TaskSpec] = []

    def full(self, origin) -> bool:
        return bool(self.per_origin) and self.count[origin] >= self.per_origin

    def offer(self, spec: TaskSpec | None) -> bool:
        if spec is None:
            self.stats.not_a_task += 1
            return False
        loc = tuple(sorted((b.module.origin, *b.mutation.location) for b in spec.bugs))
        fail = (tuple(sorted({b.module.name for b in spec.bugs})), spec.failing)
        if loc in self.locations or fail in self.failing:
            self.stats.duplicates += 1
            return False
        if any(self.full(o) for o in spec.origins):
            self.stats.capped += 1
            return False
        self.locations.add(loc)
        self.failing.add(fail)
        for o in set(spec.origins):
            self.count[o] += 1
        for b in spec.bugs:
            self.stats.rules[b.mutation.rule] += 1
        self.kept.append(spec)
        return True


def generate_pool(modules: list[Module], seed: int = 0, per_origin: int = 5, pairs: float = 0.25,
                  rules: tuple[str, ...] = RULES) -> tuple[list[TaskSpec], PoolStats]:
    """Every kept task, in a deterministic order (sorted by name). per_origin 0 = no limit.

    `pairs` is the share of two-bug tasks relative to one-bug ones; a two-bug task takes a slot of each origin,
    so under a per-origin limit one-bug tasks are placed first, with one slot per origin left for pairs."""
    stats = PoolStats()
    rng = random.Random(f"factory:{seed}")
    candidates = [Bug(mod, mu) for mod in modules for mu in mutations(mod) if mu.rule in rules]
    rng.shuffle(candidates)
    # rules round-robin within an origin: a limit of 5 then spreads over rules instead of taking the first 5 sites
    by_origin: dict = {}
    for bug in candidates:
        by_origin.setdefault((bug.module.origin, bug.mutation.function), []).append(bug)
    order = []
    for origin in sorted(by_origin):
        buckets: dict = {}
        for bug in by_origin[origin]:
            buckets.setdefault(bug.mutation.rule, []).append(bug)
        queues = [buckets[r] for r in rules if r in buckets]
        rng.shuffle(queues)
        while any(queues):
            for q in queues:
                if q:
                    order.append(q.pop(0))
    singles_cap = max(per_origin - 1, 1) if per_origin and pairs > 0 else per_origin
    keeper = _Keeper(singles_cap, stats)
    for bug in order:
        if keeper.full((bug.module.origin, bug.mutation.function)):
            stats.capped += 1
            continue
        stats.candidates += 1
        keeper.offer(build_task((bug,), modules, seed))
    singles = list(keeper.kept)
    keeper.per_origin = per_origin
    by_split: dict = {}
    for spec in singles:
        by_split.setdefault(task_split(spec), []).append(spec)
    want = round(pairs * len(singles))
    made, tries = 0, 0
    pool = sorted(singles, key=lambda s: s.name)
    rng.shuffle(pool)
    while made < want and tries < 4 * want + 50:
        tries += 1
        first = pool[tries % len(pool)] if pool else None
        if first is None:
            break
        mates = [s for s in by_split[task_split(first)] if s.origins[0] != first.origins[0]]
        if not mates:
            continue
        second = rng.choice(mates)
        if keeper.full(first.origins[0]) or keeper.full(second.origins[0]):
            continue
        stats.candidates += 1
        if keeper.offer(build_task((first.bugs[0], second.bugs[0]), modules, seed)):
            made += 1
    return sorted(keeper.kept, key=lambda s: s.name), stats
