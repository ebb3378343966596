"""Log-odds preference extraction: does a trained LM carry its training harness's preferences?

Under KL-regularised control (ANCHORS §1) the optimum's log-odds between two actions split as

    log pi*(a|s)/pi*(b|s) = log pi_ref(a|s)/pi_ref(b|s)  +  (Q*(s,a) - Q*(s,b)) / beta
                            `---- harness preference ---'    `----- value correction -----'

For recorded states (each task's first turn under each harness) we render a *contrast* — a
better and a worse action, expressed in that harness's own syntax — and score both under the
trained policy and under its reference. Per harness we report the mean log-odds of each, the
value correction (their difference) and the carry-over of the reference's preference
(slope and correlation of trained on reference log-odds, `klcontrol.preference_carryover`).

Contrasts are registered per task kind (`register_contrast`); `lookup` ships here: look at
the object the question is about vs look at another object of the same world.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from harnessrl.analysis.klcontrol import observed_log_odds, preference_carryover
from harnessrl.evaluate.stats import bootstrap_ci
from harnessrl.harness.base import Harness, Intent
from harnessrl.rollout.envs import open_env as default_open_env

ContrastFn = Callable[[Any, Any], tuple[Intent, Intent] | None]  # (task, session) -> (better, worse)
CONTRASTS: dict[str, ContrastFn] = {}


def register_contrast(kind: str, fn: ContrastFn) -> None:
    CONTRASTS[kind] = fn


def _lookup_contrast(task: Any, session: Any) -> tuple[Intent, Intent] | None:
    others = [o for o in task.objects if o != task.target]
    if not others:
        return None
    other = others[task.number % len(others)]  # a fixed distractor per task: the same in every harness
    return Intent("read", path=task.target), Intent("read", path=other)


register_contrast("lookup", _lookup_contrast)


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


def preference_table(items: list[Contrast], scores: dict[str, np.ndarray], seed: int = 0) -> list[dict[str, Any]]:
    """One row per harness: trained and reference log-odds (better vs worse), value correction, carry-over."""
    harness = np.array([c.harness_id for c in items])
    rows = []
    for h in dict.fromkeys(harness.tolist()):
        m = harness == h
        lo = observed_log_odds(scores["better"][m], scores["worse"][m], scores["ref_better"][m], scores["ref_worse"][m])
        corr = bootstrap_ci(lo.value_correction, seed=seed)
        carry = preference_carryover(lo)
        rows.append({
            "harness": h, "states": int(m.sum()),
            "log_odds_reference": float(np.mean(lo.harness_preference)),
            "log_odds_trained": float(np.mean(lo.total)),
            "value_correction": corr.value, "value_correction_lo": corr.lo, "value_correction_hi": corr.hi,
            "carryover_slope": carry["slope"], "carryover_correlation": carry["correlation"],
            "p_better_trained": float(np.mean(1 / (1 + np.exp(-lo.total)))),
            "p_better_reference": float(np.mean(1 / (1 + np.exp(-lo.harness_preference)))),
        })
    return rows
