"""Contrast states for the log-odds preference analysis: render them and score them (I/O half).

For recorded states (each task's first turn under each harness) a *contrast* is a better and a
worse action, expressed in that harness's own syntax. `contrasts` opens each task's env and
harness session to render them; `score_contrasts` scores both replies under a policy and its
reference. The arithmetic on those scores (log-odds, value correction, carry-over) is pure and
lives in harnessrl.analysis.preferences.

Contrasts are registered per task kind (`register_contrast`); two ship here. lookup: look at
the object the question is about vs look at another object of the same world. miniwob: the
oracle's first action vs a click on another element with text (harness._miniwob.contrast).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from harnessrl.harness.base import Harness, Intent
from harnessrl.rollout.envs import open_env as default_open_env

ContrastFn = Callable[[Any, Any], tuple[Intent, Intent] | None]  # (task, session) -> (better, worse)
CONTRASTS: dict[str, ContrastFn] = {}
DESCRIPTIONS: dict[str, str] = {}  # kind -> "better ... and worse ..." in words, for reports


def register_contrast(kind: str, fn: ContrastFn, description: str) -> None:
    CONTRASTS[kind], DESCRIPTIONS[kind] = fn, description


def describe_contrasts(kinds: set[str]) -> str:
    """The registered contrasts of these task kinds in words ('' when none is registered)."""
    return "; ".join(DESCRIPTIONS[k] for k in sorted(kinds) if k in DESCRIPTIONS)


def _lookup_contrast(task: Any, session: Any) -> tuple[Intent, Intent] | None:
    others = [o for o in task.objects if o != task.target]
    if not others:
        return None
    other = others[task.number % len(others)]  # a fixed distractor per task: the same in every harness
    return Intent("read", path=task.target), Intent("read", path=other)


def _miniwob_contrast(task: Any, session: Any) -> tuple[Intent, Intent] | None:
    from harnessrl.harness._miniwob import contrast  # imports the browser stack only when a MiniWoB task is scored

    return contrast(task, session)


register_contrast("lookup", _lookup_contrast, "looking at the asked object and another object")
register_contrast("miniwob", _miniwob_contrast,
                  "clicking what the scripted oracle clicks first and clicking another element with text")


@dataclass(slots=True)
class Contrast:
    """One state under one harness with its two candidate replies, in that harness's syntax."""

    task_id: str
    harness_id: str
    seed: int
    messages: list[dict[str, str]]
    better: str
    worse: str


def contrasts(harnesses: list[Harness], tasks: list[Any], seeds: tuple[int, ...] = (0,),
              open_env: Callable[[Any, int], Any] = default_open_env) -> list[Contrast]:
    """First-turn states of every (task, harness, seed) with a registered contrast."""
    out = []
    for h in harnesses:
        for task in tasks:
            fn = CONTRASTS.get(getattr(task, "kind", ""))
            if fn is None or not h.supports(task):
                continue
            for seed in seeds:
                env = open_env(task, seed)
                try:
                    session = h.open(task, env, seed)
                    session.ready()
                    pair = fn(task, session)
                    if pair is None:
                        continue
                    better, worse = (h.render_intent(i, session) for i in pair)
                    out.append(Contrast(task.task_id, h.id, seed, [dict(m) for m in session.messages], better, worse))
                finally:
                    env.close()
    return out


def score_contrasts(policy: Any, items: list[Contrast], *, reference: Any = None, batch: int = 256) -> dict[str, np.ndarray]:
    """log-probs of both replies under the policy and the reference: arrays of shape (N,).

    Policies need `score_replies(conversations, replies, reference=bool)` (LMPolicy has it). The
    reference is `policy`'s own (its adapter disabled / its starting weights) unless one is given.
    """
    cols = {k: [] for k in ("better", "worse", "ref_better", "ref_worse")}
    for lo in range(0, len(items), batch):
        chunk = items[lo : lo + batch]
        convs = [c.messages for c in chunk]
        for key in ("better", "worse"):
            replies = [getattr(c, key) for c in chunk]
            cols[key].append(policy.score_replies(convs, replies))
            ref = policy.score_replies(convs, replies, reference=True) if reference is None else reference.score_replies(convs, replies)
            cols["ref_" + key].append(ref)
    return {k: np.concatenate(v) if v else np.zeros(0) for k, v in cols.items()}
