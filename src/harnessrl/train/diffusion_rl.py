"""Behaviour cloning and KL-regularised fine-tuning of a diffusion policy on a drawer task.

Fine-tuning is reward-weighted regression with the sampling policy as the KL anchor. Each
round samples episodes from the current policy pi_k, scores them with a reward r, and fits
the diffusion policy to the samples weighted by

    w_i = exp(r_i / beta) / mean_{j in context(i)} exp(r_j / beta)

— the weighted maximum-likelihood projection of pi_k exp(r/beta)/Z, which is the exact
maximiser of E[r] - beta KL(pi || pi_k). After n rounds the target is
pi_0 exp(n r / beta) / Z: a KL-regularised optimum relative to the BC policy with
effective coefficient beta / n, which is what the tilt model predicts from base samples.
Weights are normalised per context (layout) because the optimum normalises per start state.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import torch
from pydantic import Field

from harnessrl.config import Config
from harnessrl.envs import drawer
from harnessrl.policies.diffusion import DiffusionPolicy, DiffusionPolicyConfig


class FitConfig(Config):
    steps: int = Field(3000, ge=1)
    batch: int = Field(256, ge=1)
    lr: float = Field(2e-3, gt=0)
    ema: float = Field(0.995, ge=0, lt=1)


class FinetuneConfig(Config):
    beta: float = Field(1.0, gt=0)
    rounds: int = Field(4, ge=1)
    # where each round's samples come from: "base" = one set drawn from the starting policy,
    # reweighted by exp(k r / beta) in round k (the KL anchor stays pi_0: no compounding of
    # fitting errors); "current" = fresh samples from the current policy, weighted exp(r / beta)
    anchor: Literal["base", "current"] = "base"
    samples_per_round: int = Field(1500, ge=2)
    steps_per_round: int = Field(800, ge=1)
    batch: int = Field(256, ge=1)
    lr: float = Field(1e-3, gt=0)
    ema: float = Field(0.99, ge=0, lt=1)
    eval_episodes: int = Field(1000, ge=1)


def pairs(batch: drawer.DrawerBatch) -> tuple[torch.Tensor, torch.Tensor]:
    """(obs, chunk) training pairs, episode-major: (B*C, obs_dim), (B*C, chunk, action_dim)."""
    B, C = batch.obs.shape[:2]
    obs = torch.as_tensor(batch.obs.reshape(B * C, -1), dtype=torch.float32)
    chunks = torch.as_tensor(batch.chunks.reshape(B * C, *batch.chunks.shape[2:]), dtype=torch.float32)
    return obs, chunks


def fit(
    policy: DiffusionPolicy,
    obs: torch.Tensor,
    chunks: torch.Tensor,
    cfg: FitConfig | FinetuneConfig,
    *,
    weights: torch.Tensor | None = None,
    steps: int | None = None,
    seed: int = 0,
    on_step: Callable[[int, float], None] | None = None,
) -> list[float]:
    """Minibatch Adam on the (weighted) denoising loss; returns the loss per step.

    The learning rate decays on a cosine to 0 and the policy ends with the exponential moving
    average of its weights (decay `cfg.ema`), as Diffusion Policy does: single late iterates
    sample noticeably worse.
    """
    gen = torch.Generator().manual_seed(seed)
    total = steps or cfg.steps
    opt = torch.optim.Adam(policy.parameters(), lr=cfg.lr)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=total)
    ema = torch.optim.swa_utils.AveragedModel(policy, multi_avg_fn=torch.optim.swa_utils.get_ema_multi_avg_fn(cfg.ema))
    policy.train()
    losses = []
    for step in range(total):
        idx = torch.randint(0, len(obs), (min(cfg.batch, len(obs)),), generator=gen)
        loss = policy.loss(obs[idx], chunks[idx], None if weights is None else weights[idx], gen)
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        ema.update_parameters(policy)
        losses.append(loss.item())
        if on_step:
            on_step(step, losses[-1])
    with torch.no_grad():
        for p, q in zip(policy.parameters(), ema.module.parameters()):
            p.copy_(q)
    policy.eval()
    return losses


def behaviour_clone(demos: drawer.DrawerBatch, cfg: FitConfig, policy_cfg: DiffusionPolicyConfig | None = None, *, seed: int = 0,
                    on_step: Callable[[int, float], None] | None = None) -> tuple[DiffusionPolicy, list[float]]:
    shape = {"obs_dim": demos.obs.shape[-1], "chunk": demos.chunks.shape[2], "action_dim": demos.chunks.shape[3]}
    policy_cfg = policy_cfg or DiffusionPolicyConfig(**shape)
    for field, size in shape.items():
        if getattr(policy_cfg, field) != size:
            raise ValueError(f"policy.{field}={getattr(policy_cfg, field)} but the demonstrations have {size}: set policy.{field}={size}")
    torch.manual_seed(seed)
    policy = DiffusionPolicy(policy_cfg)
    obs, chunks = pairs(demos)
    return policy, fit(policy, obs, chunks, cfg, seed=seed, on_step=on_step)


def tilt_weights(rewards: np.ndarray, contexts: np.ndarray, beta: float) -> np.ndarray:
    """exp(r/beta) normalised to mean 1 within each context: (N,)."""
    r = np.asarray(rewards, dtype=np.float64)
    w = np.empty_like(r)
    for c in np.unique(contexts):
        m = contexts == c
        z = r[m] / beta
        w[m] = np.exp(z - z.max())
        w[m] /= w[m].mean()
    return w


def sample_episodes(policy: DiffusionPolicy, n: int, rng: np.random.Generator, seed: int, task: drawer.DrawerTask | None = None) -> drawer.DrawerBatch:
    """n episodes of `task` (default: the built-in drawer) acted by the policy."""
    gen = torch.Generator().manual_seed(seed)
    return (task or drawer.TASK).run_episodes(lambda obs: policy.act(obs, gen), n, rng, chunk=policy.cfg.chunk)


@dataclass
class Round:
    """One fine-tuning round: the rewards it trained on and the evaluation afterwards."""

    index: int
    train_rewards: np.ndarray
    effective_sample_size: float
    evaluation: drawer.DrawerBatch
    losses: list[float]
    stats: dict[str, float] = field(default_factory=dict)  # optimiser-specific figures (the PPO fine-tuner's KL to BC)


RewardFn = Callable[[drawer.DrawerBatch], np.ndarray]


def finetune(
    policy: DiffusionPolicy,
    reward: RewardFn,
    cfg: FinetuneConfig,
    *,
    seed: int = 0,
    on_round: Callable[[Round], None] | None = None,
    task: drawer.DrawerTask | None = None,
) -> list[Round]:
    """`cfg.rounds` rounds of reward-weighted regression, in place; evaluates after each round."""
    rng = np.random.default_rng(seed)
    rounds = []
    if cfg.anchor == "base":
        samples = sample_episodes(policy, cfg.samples_per_round, rng, seed=seed * 1000, task=task)
        r = reward(samples)
    for k in range(1, cfg.rounds + 1):
        if cfg.anchor == "current":
            samples = sample_episodes(policy, cfg.samples_per_round, rng, seed=seed * 1000 + 2 * k, task=task)
            r = reward(samples)
        beta = cfg.beta / k if cfg.anchor == "base" else cfg.beta
        w = tilt_weights(r, samples.layout, beta)
        ess = float(w.sum() ** 2 / (w**2).sum())
        obs, chunks = pairs(samples)
        per_pair = torch.as_tensor(np.repeat(w, samples.obs.shape[1]), dtype=torch.float32)
        losses = fit(policy, obs, chunks, cfg, weights=per_pair, steps=cfg.steps_per_round, seed=seed * 1000 + k)
        evaluation = sample_episodes(policy, cfg.eval_episodes, rng, seed=seed * 1000 + 2 * k + 1, task=task)
        rnd = Round(k, r, ess, evaluation, losses)
        rounds.append(rnd)
        if on_round:
            on_round(rnd)
    return rounds
