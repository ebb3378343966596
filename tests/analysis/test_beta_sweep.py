"""The beta sweep's solver agreement on a small exact case, and its predictions' closed forms.

A softmax bandit trained by policy gradient with harnessrl's own loss terms (rl.losses grpo
surrogate + rl.kl.kl_loss at kl_coef = beta, group-mean baseline from rl.advantages with the
study's adv_scale "none") must converge to klcontrol's closed form pi* = pi_ref exp(r/beta)/Z,
for each beta of the study's sweep. The same training with k1 or k3 as the loss term must miss
it: that is why the study trains with k2.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from harnessrl.analysis.beta_sweep import predicted_correction, tilt_of_samples, tilt_prediction
from harnessrl.analysis.klcontrol import bandit_optimum, binary_soft_value
from harnessrl.analysis.samples import Samples
from harnessrl.rl.advantages import group_advantages
from harnessrl.rl.kl import kl_loss
from harnessrl.rl.losses import policy_loss

PI_REF = np.array([0.4, 0.3, 0.2, 0.1])
REWARD = np.array([0.0, 0.02, 0.05, 0.1])  # on the scale of the betas, so every optimum is interior


def train_bandit(beta: float, estimator: str, *, steps: int = 500, samples: int = 2048, seed: int = 0) -> np.ndarray:
    """KL-regularised policy gradient on one softmax bandit, started at pi_ref; returns the final pi (A,)."""
    gen = torch.Generator().manual_seed(seed)
    ref_logp = torch.log(torch.tensor(PI_REF, dtype=torch.float32))
    theta = ref_logp.clone().requires_grad_(True)
    opt = torch.optim.Adam([theta], lr=0.05)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0 if s < steps // 2 else 0.1)  # settle the noise
    r = torch.tensor(REWARD, dtype=torch.float32)
    mask = torch.ones(samples, 1)
    for _ in range(steps):
        logp = torch.log_softmax(theta, -1)
        a = torch.multinomial(logp.detach().exp(), samples, replacement=True, generator=gen)
        lp = logp[a][:, None]  # (B, T=1): one action token per episode
        adv = group_advantages(r[a], [("task", "harness")] * samples, rule="within", estimator="grpo",
                               scale="none").advantages[:, None]
        loss = policy_loss("grpo", lp, lp.detach(), adv, mask, clip_low=0.2, clip_high=0.28, agg="token-mean").loss
        loss = loss + beta * kl_loss(lp, ref_logp[a][:, None], mask, estimator, "token-mean").loss
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
    return torch.softmax(theta.detach(), -1).double().numpy()


@pytest.mark.parametrize("beta", [0.02, 0.1, 0.5])
def test_kl_regularised_pg_with_k2_converges_to_the_exact_tilt(beta):
    star, _ = bandit_optimum(PI_REF, REWARD, beta)
    pi = train_bandit(beta, "k2")
    assert np.abs(np.log(pi) - np.log(star)).max() < 0.1, (pi, star)


def test_k1_and_k3_as_loss_terms_miss_the_tilt():
    """k1's loss gradient is zero in expectation (no regularisation: pi runs to the best arm); k3's
    follows KL(pi_ref || pi), whose optimum is not the tilt when beta is small."""
    beta = 0.02
    star, _ = bandit_optimum(PI_REF, REWARD, beta)
    for est in ("k1", "k3"):
        pi = train_bandit(beta, est, steps=300)
        assert np.abs(np.log(pi) - np.log(star)).max() > 0.5, (est, pi, star)


@pytest.mark.parametrize("beta", [0.02, 0.1, 0.5])
def test_tilt_of_samples_matches_the_binary_closed_form(beta):
    """N samples with a 0/1 return, k of them successes: S* = p e^{1/b} / (1 - p + p e^{1/b}) with p = k/N,
    V* = beta log(1 - p + p e^{1/beta}), and KL* = (S* - V*) / beta (the identity J = V* - beta M at M = 0)."""
    R = np.array([1.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0])
    p = R.mean()
    s, kl, v = tilt_of_samples(R, beta)
    s_exact = p * np.exp(1 / beta) / (1 - p + p * np.exp(1 / beta))
    assert s == pytest.approx(s_exact, rel=1e-9)
    assert v == pytest.approx(float(binary_soft_value(p, beta)), rel=1e-9)
    assert kl == pytest.approx((s - v) / beta, rel=1e-9, abs=1e-12)
    # a larger beta keeps the optimum closer to the reference
    assert tilt_of_samples(R, beta * 2)[1] < kl


def test_tilt_prediction_per_harness_and_correction():
    n = 16
    rng = np.random.default_rng(0)
    rows = []
    for h, p in (("a", 0.25), ("b", 0.75)):
        for t in ("t1", "t2", "t3"):
            rows += [(h, t, float(rng.random() < p)) for _ in range(n)]
    h, t, r = (np.array(x, dtype=object) for x in zip(*rows))
    r = r.astype(float)
    nan = np.full(len(r), np.nan)
    ref = Samples(task=t, harness=h, policy=np.full(len(r), "ref", dtype=object), run=np.full(len(r), "ref", dtype=object),
                  level=np.full(len(r), -1), reward=r, success=r > 0, outcome=np.full(len(r), "", dtype=object),
                  logprob=nan, ref_logprob=nan)
    out = {row["harness"]: row for row in tilt_prediction(ref, ["a", "b"], 0.1, n_boot=50)}
    for hh in ("a", "b"):
        cells = [tilt_of_samples(r[(h == hh) & (t == tt)], 0.1) for tt in ("t1", "t2", "t3")]
        assert out[hh]["pred_score"] == pytest.approx(np.mean([c[0] for c in cells]))
        assert out[hh]["pred_kl"] == pytest.approx(np.mean([c[1] for c in cells]))
        assert out[hh]["pred_score_lo"] <= out[hh]["pred_score"] <= out[hh]["pred_score_hi"]
    # the value correction: (Q*(a) - Q*(b)) / beta with Q* the soft value of each action's returns
    better, worse = np.array([1.0, 1.0, 0.0, 1.0]), np.array([0.0, 0.0, 0.0, 1.0])
    c = predicted_correction(better, worse, 0.1, n_boot=50, min_episodes=4)
    expect = (binary_soft_value(0.75, 0.1) - binary_soft_value(0.25, 0.1)) / 0.1
    assert c["pred_correction"] == pytest.approx(float(expect), rel=1e-9)
    assert np.isnan(predicted_correction(better, np.array([]), 0.1, min_episodes=1)["pred_correction"])
    assert np.isnan(predicted_correction(better, worse, 0.1)["pred_correction"])  # 4 < 5 episodes: no estimate
