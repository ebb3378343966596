"""Acceptance rules for skill rewrites, and the exact model of how often they accept a no-op.

A skill optimizer evaluates a parent skill and a candidate rewrite, then an *acceptance rule*
keeps or drops the rewrite. The rules in use (ANCHORS §4):

    strict_minibatch     GEPA: sum of candidate scores on a minibatch (default 3 tasks)
                         strictly beats the parent's sum on the same minibatch
    margin               the candidate's minibatch sum beats the parent's by >= `margin`
    validation           SkillOpt: the candidate's mean on held-out validation tasks strictly
                         beats the parent's validation mean (the parent's recorded score)
    validation_no_drop   TextGrad: keep unless the validation mean drops

Both the optimizer (train) and the audit (analysis) import these, so a replay runs exactly the
rule the optimizer ran. Everything here is a pure function of score arrays.

The no-op model: if parent and candidate are the same skill, their scores on binary tasks
are independent Poisson-binomial sums with the same per-task success probabilities p, and

    P(accept no-op | strict) = P(S_c > S_p) = (1 - P(S_c = S_p)) / 2

(symmetry), e.g. 11/32 ~ 0.344 for three tasks at p = 0.5 — "half the time minus ties".
`accept_probability` computes this exactly for any rule, any p and any margin.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
from pydantic import Field

from harnessrl.config import Config, ConfigError

RuleName = Literal["strict_minibatch", "margin", "validation", "validation_no_drop"]
MINIBATCH_RULES = ("strict_minibatch", "margin")
VALIDATION_RULES = ("validation", "validation_no_drop")


class AcceptanceConfig(Config):
    """Which rule keeps a rewrite, and on what evaluation."""

    rule: RuleName = Field("strict_minibatch", description="strict_minibatch (GEPA) | margin | validation (SkillOpt) | validation_no_drop (TextGrad).")
    minibatch_size: int = Field(3, ge=1, description="Tasks per minibatch (GEPA default 3).")
    margin: float = Field(1.0, ge=0, description="For `margin`: required improvement of the minibatch score sum.")

    @property
    def role(self) -> str:
        """The evaluation the rule compares: 'minibatch' or 'validation'."""
        return "minibatch" if self.rule in MINIBATCH_RULES else "validation"


@dataclass(frozen=True, slots=True)
class Decision:
    accepted: bool
    parent_score: float  # sum (minibatch rules) or mean (validation rules) the rule compared
    candidate_score: float
    reason: str


def decide(cfg: AcceptanceConfig, parent: np.ndarray | float, candidate: np.ndarray) -> Decision:
    """Apply the rule. parent: per-episode scores (minibatch rules) or the parent's recorded
    validation mean (validation rules); candidate: per-episode scores, (n,)."""
    c = np.asarray(candidate, dtype=float)
    if cfg.rule in MINIBATCH_RULES:
        p = np.asarray(parent, dtype=float)
        if p.shape != c.shape:
            raise ConfigError(f"{cfg.rule}: parent and candidate must be scored on the same minibatch; got {p.shape} vs {c.shape}")
        ps, cs = float(p.sum()), float(c.sum())
        need = ps if cfg.rule == "strict_minibatch" else ps + cfg.margin
        ok = cs > need if cfg.rule == "strict_minibatch" else cs >= need
        op = ">" if cfg.rule == "strict_minibatch" else ">="
        return Decision(ok, ps, cs, f"minibatch sum {cs:g} {op if ok else 'not ' + op} {need:g}")
    pm, cm = float(np.mean(parent)), float(c.mean()) if c.size else float("nan")
    ok = cm > pm if cfg.rule == "validation" else cm >= pm
    op = ">" if cfg.rule == "validation" else ">="
    return Decision(bool(ok), pm, cm, f"validation mean {cm:.4g} {op if ok else 'not ' + op} {pm:.4g}")


# ---------------------------------------------------------------------------------------
# Exact acceptance probabilities for binary scores


def poisson_binomial_pmf(p: np.ndarray) -> np.ndarray:
    """PMF of the number of successes of independent Bernoulli(p_i): shape (len(p) + 1,)."""
    pmf = np.ones(1)
    for pi in np.asarray(p, dtype=float).ravel():
        if not 0.0 <= pi <= 1.0:
            raise ValueError(f"success probabilities must lie in [0, 1]; got {pi}")
        pmf = np.convolve(pmf, [1.0 - pi, pi])
    return pmf


def accept_probability(cfg: AcceptanceConfig, p_parent: np.ndarray, p_candidate: np.ndarray | None = None,
                       parent_score: float | None = None) -> float:
    """Exact P(the rule accepts) for binary per-task scores.

    Minibatch rules: p_parent, p_candidate are per-minibatch-task success probabilities, (m,);
    the candidate defaults to the parent (a no-op). Validation rules: the candidate's
    per-task probabilities over the validation set and the parent's recorded mean `parent_score`.
    """
    q = np.asarray(p_parent if p_candidate is None else p_candidate, dtype=float)
    cand = poisson_binomial_pmf(q)
    ks = np.arange(len(cand))
    if cfg.rule in VALIDATION_RULES:
        if parent_score is None:
            raise ValueError("validation rules compare with the parent's recorded mean: give parent_score")
        bar = parent_score * len(q)
        hit = ks > bar + 1e-9 if cfg.rule == "validation" else ks >= bar - 1e-9
        return float(cand[hit].sum())
    par = poisson_binomial_pmf(p_parent)
    diff = ks[:, None] - np.arange(len(par))[None, :]  # candidate sum - parent sum
    hit = diff > 0 if cfg.rule == "strict_minibatch" else diff >= cfg.margin - 1e-9
    return float((cand[:, None] * par[None, :])[hit].sum())


def tie_probability(p: np.ndarray) -> float:
    """P(S_c = S_p) for two independent evaluations of the same skill."""
    pmf = poisson_binomial_pmf(p)
    return float(np.sum(pmf**2))


def expected_gain_given_accept(cfg: AcceptanceConfig, p: np.ndarray) -> float:
    """E[S_c - S_p | accepted] for a no-op under a minibatch rule: the gain selection alone shows."""
    if cfg.rule not in MINIBATCH_RULES:
        raise ValueError("defined for minibatch rules")
    pmf = poisson_binomial_pmf(p)
    ks = np.arange(len(pmf))
    diff = ks[:, None] - ks[None, :]
    joint = pmf[:, None] * pmf[None, :]
    hit = diff > 0 if cfg.rule == "strict_minibatch" else diff >= cfg.margin - 1e-9
    mass = joint[hit].sum()
    return float((joint * diff)[hit].sum() / mass) if mass > 0 else 0.0
