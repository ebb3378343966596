"""Train / held-out task splits, one rule for every recipe.

    train, held = split_tasks(tasks, n_held=8)                        # the last 8 tasks are held out
    train, held = split_tasks(tasks, n_held=6, n_train=6, seed=0)     # a seeded shuffle: 6 + 6 of them

The first `n_train` tasks train (default: all but the held-out ones) and the next `n_held` are
held out, in the suite's own order, or with a seed in the order of numpy's
default_rng(seed).permutation, so the split is reproducible from the seed alone.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from harnessrl.config import ConfigError


def split_tasks(tasks: Sequence[Any], n_held: int, *, n_train: int | None = None, seed: int | None = None,
                min_held: int = 1, what: str = "the split") -> tuple[list[Any], list[Any]]:
    """(train tasks, held-out tasks); `what` names the settings in the error when they do not fit."""
    n = len(tasks)
    n_train = n - n_held if n_train is None else n_train
    if n_train < 1 or n_held < min_held or n_train + n_held > n:
        raise ConfigError(f"{what} asks for {n_train} training and {n_held} held-out tasks, but the suite has {n} tasks; "
                          f"choose numbers that leave at least 1 training and {min_held} held-out task(s)")
    order = list(range(n)) if seed is None else np.random.default_rng(seed).permutation(n).tolist()
    return [tasks[i] for i in order[:n_train]], [tasks[i] for i in order[n_train:n_train + n_held]]
