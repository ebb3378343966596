"""Every table `harnessrl analyze` shows, computed from episode samples (pure: no printing, no files).

    res = harness_tables(samples, reference="sft", policy="rl", betas=[0.1], after="rl-more")
    res.tables["harnesses"]         # ceiling / score / headroom / mismatch per harness and beta
    res.tables["decomposition"]     # dS = dC - dG and dJ = dV* - beta dM, first harness -> each other
    res.tables["gain_prediction"]   # dS = kappa (C - S), each held-out harness in turn
    res.tables["outcomes"], res.tables["tilt"]   # outcome frequencies; the tilt model's prediction

The reference policy's samples define each harness's ceilings, the evaluated policy's its
score and mismatch (ANCHORS §1). `per_beta` keeps, per beta, what a reader needs to print the
tables in order (the hard ceiling's k, the compared harnesses).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from harnessrl.analysis import ceiling, tilt
from harnessrl.analysis.samples import Samples


@dataclass
class BetaTables:
    beta: float
    k: int  # the hard ceiling's pass@k
    harnesses: list[str]  # in grid order: the decomposition goes from the first to each other
    rows: list[dict[str, Any]]  # ceiling.harness_table
    decompositions: list[tuple[str, list[dict[str, Any]]]]  # (other harness, ceiling.decomposition rows)


@dataclass
class HarnessTables:
    tables: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # name -> rows (the CSV files)
    per_beta: list[BetaTables] = field(default_factory=list)
    outcome_labels: list[str] = field(default_factory=list)


def harness_tables(samples: Samples, *, reference: str, policy: str | None = None, betas: list[float] = (0.1,),
                   harnesses: list[str] | None = None, after: str | None = None, holdout: list[str] | None = None,
                   k: int | None = None, n_boot: int = 1000, seed: int = 0) -> HarnessTables:
    """All tables for `reference` (ceilings) vs `policy` (default: the reference), optionally with
    the gain prediction towards `after` (held out in turn: `holdout`, default every harness)."""
    policies = samples.values("policy")
    ref = samples.where(policy=reference)
    pol = samples.where(policy=policy) if policy and policy != reference else ref
    out = HarnessTables()
    t = out.tables
    for b in betas:
        grid = ceiling.build_grid(ref, pol, beta=b, k=k, harnesses=harnesses, n_boot=n_boot, seed=seed)
        rows = ceiling.harness_table(grid)
        t.setdefault("harnesses", []).extend(rows)
        t.setdefault("cells", []).extend({"beta": b, **c} for c in ceiling.cell_table(grid))
        decs = []
        for other in grid.harnesses[1:]:
            dec = ceiling.decomposition(grid, grid.harnesses[0], other)
            t.setdefault("decomposition", []).extend({"beta": b, **d} for d in dec)
            decs.append((other, dec))
        out.per_beta.append(BetaTables(b, grid.k, list(grid.harnesses), rows, decs))
    if after:
        names = harnesses or ref.values("harness")
        held = holdout or (names if len(names) > 1 else [])
        for h in held:
            gp = ceiling.gain_prediction(ref, pol, samples.where(policy=after), holdout=[h], harnesses=harnesses, k=k,
                                         n_boot=n_boot, seed=seed)
            for row in gp.rows:
                row.update(kappa=gp.kappa.value, kappa_lo=gp.kappa.lo, kappa_hi=gp.kappa.hi, fit_on=",".join(gp.fit_on))
                t.setdefault("gain_prediction", []).append(row)
    labels = [o for o in tilt.outcome_labels(ref.outcome) if o]
    out.outcome_labels = labels
    if labels:
        trows = []
        for pid in policies:
            s = samples.where(policy=pid)
            for lab, e in zip(labels, tilt.observed_frequencies(s.outcome, labels)):
                trows.append({"policy": pid, "outcome": lab, "frequency": e.value, "lo": e.lo, "hi": e.hi, "n": e.n})
        t["outcomes"] = trows
        t["tilt"] = tilt.tilt_table(ref.outcome, ref.reward, list(betas), labels=labels, contexts=ref.level,
                                    accepted=ref.success, n_boot=n_boot, seed=seed)
    return out
