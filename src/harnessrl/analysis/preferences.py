"""Log-odds preference extraction: does a trained LM carry its training harness's preferences?

Under KL-regularised control (ANCHORS §1) the optimum's log-odds between two actions split as

    log pi*(a|s)/pi*(b|s) = log pi_ref(a|s)/pi_ref(b|s)  +  (Q*(s,a) - Q*(s,b)) / beta
                            `---- harness preference ---'    `----- value correction -----'

For recorded states (each task's first turn under each harness) we render a *contrast* — a
better and a worse action, expressed in that harness's own syntax — and score both under the
trained policy and under its reference. Per harness we report the mean log-odds of each, the
value correction (their difference) and the carry-over of the reference's preference
(slope and correlation of trained on reference log-odds, `klcontrol.preference_carryover`).

This module is the pure half: arrays of log-probs in, one row per harness out. The states
and their scores come from harnessrl.evaluate.contrasts (`contrasts`, `score_contrasts`,
`register_contrast`), which open envs and run the policy.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from harnessrl.analysis.klcontrol import observed_log_odds, preference_carryover
from harnessrl.evaluate.stats import bootstrap_ci


def preference_table(items: Sequence[Any], scores: dict[str, np.ndarray], seed: int = 0) -> list[dict[str, Any]]:
    """One row per harness: trained and reference log-odds (better vs worse), value correction, carry-over.

    items: the scored states (anything with `harness_id`: evaluate.contrasts.Contrast), length N;
    scores: "better", "worse", "ref_better", "ref_worse" -> (N,) log-probs.
    """
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
