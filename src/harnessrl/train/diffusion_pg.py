"""Policy-gradient fine-tuning of a diffusion policy: PPO over the denoising chain (the DPPO/DDPO line).

Every denoising step of the policy's sampler is a Gaussian action in an inner MDP whose state is
(s, x_k, k): x_{k-1} ~ N(mu_theta(x_k, k, s), sigma_k^2 I) for k = K-1..1, and the executed chunk
x_0 ~ N(x0_theta(x_1, 0, s), final_std^2 I), clipped (DPPO, Ren et al. 2024, which also needs
a minimum noise on the last step; DDPO, Black et al. 2023, for the chain-as-MDP view). An
episode's chain log-likelihood is the sum over its chunks' steps; its reward scores the whole
episode, so every step gets the episode's advantage.

The objective per episode is E[r] - kl_coef * KL(p_theta || p_BC) over chains, where per step
KL = ||mu_theta - mu_BC||^2 / (2 sigma_k^2) (same std: exact) and the chain KL bounds the KL of
the executed chunks. Its exact optimum is p_BC(chain) exp(r / kl_coef) / Z, whose marginal on
actions is the tilt pi_0 exp(r / beta) / Z; but nothing here fits that distribution (unlike
reward-weighted regression, train/diffusion_rl.py): the policy only follows the clipped
surrogate's gradient on its own samples, so whether it gets there is what the recipe measures.

One iteration, in the order of this file:
  1. roll out `samples` episodes with the current policy, recording every chain (`rollout`);
  2. advantage = r - mean r over episodes of the same context (layout), in reward units so
     that kl_coef keeps its meaning as the beta of the objective (`advantages`);
  3. `epochs` passes of minibatch Adam on  -min(rho A, clip(rho, 1 - eps, 1 + eps) A)
     + kl_coef * KL_step(theta || BC), rho = p_theta(step) / p_behaviour(step) (`ppo_update`);
  4. after each epoch, the chain KL to BC on this iteration's states (`chain_kl`): an epoch
     that takes it over `kl_max` is undone and the iteration's update stops there — a hard
     trust region around the behaviour-cloned policy.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import torch
from pydantic import Field, model_validator

from harnessrl.config import Config
from harnessrl.envs import drawer
from harnessrl.policies.diffusion import DiffusionPolicy
from harnessrl.rl.trl_options import from_trl_names
from harnessrl.train.diffusion_rl import RewardFn, Round


class PPOConfig(Config):
    """PPO over the denoising chain, KL-regularised toward the BC policy.

    TRL's names are accepted (rl.trl_options): `epsilon` for clip (symmetric, so `epsilon_high`
    may only repeat it) and `beta` for kl_coef. clip 0.2 is TRL's epsilon and verl's clip_ratio
    default. kl_coef 0.25 follows neither: TRL's beta defaults to 0 and verl's kl_coef to 0.001,
    but here beta is the tilt's temperature, which the recipe must set for a visible tilt.
    """

    TRL_NAMES: ClassVar[dict[str, str]] = {"epsilon": "clip", "beta": "kl_coef"}

    # beta of E[r] - beta KL(pi || pi_BC): the tilt model predicts the optimum at this beta
    kl_coef: float = Field(0.25, gt=0)
    # hard bound, in nats per episode, on the chain KL to the BC policy (checked after every epoch)
    kl_max: float = Field(20.0, gt=0)
    rounds: int = Field(4, ge=1)  # evaluation points, as reward-weighted regression's rounds
    iterations_per_round: int = Field(4, ge=1)  # rollout + update cycles between evaluations
    samples: int = Field(400, ge=2)  # episodes per iteration
    epochs: int = Field(4, ge=1)
    minibatch: int = Field(2048, ge=1)  # denoising steps per gradient step
    lr: float = Field(3e-4, gt=0)
    clip: float = Field(0.2, gt=0)  # PPO's epsilon on the per-step probability ratio
    max_grad_norm: float = Field(1.0, gt=0)
    eval_episodes: int = Field(1000, ge=1)

    @model_validator(mode="before")
    @classmethod
    def _trl_names(cls, data: Any) -> Any:
        return from_trl_names(data, cls.model_fields, cls.TRL_NAMES)


# ----------------------------------------------------------------------------------------
# 1. Rollouts that keep the denoising chain


@dataclass
class Chains:
    """Every denoising step of every decision (chunk) of a batch of episodes.

    N = B * C decisions (episode-major), T = K + 1 chain entries (K steps). obs (N, obs_dim);
    x (N, T, flat): x[:, j] is the input of step k = K-1-j and x[:, j+1] its sampled output;
    episode (N,) the episode index of each decision; logp (N, K) log-probabilities under the
    behaviour policy; mean_bc (N, K, flat) the BC policy's step means at the same inputs.
    """

    obs: torch.Tensor
    x: torch.Tensor
    episode: torch.Tensor
    logp: torch.Tensor | None = None
    mean_bc: torch.Tensor | None = None

    @property
    def steps(self) -> torch.Tensor:
        """k of each chain step: (K,) = K-1, ..., 0."""
        K = self.x.shape[1] - 1
        return torch.arange(K - 1, -1, -1)


def rollout(policy: DiffusionPolicy, n: int, rng: np.random.Generator, gen: torch.Generator,
            task: drawer.DrawerTask | None = None) -> tuple[drawer.DrawerBatch, Chains]:
    """n episodes acted by the policy, with the chain behind every chunk it executed."""
    obs_calls, chain_calls = [], []

    def act(obs: np.ndarray) -> np.ndarray:
        o = torch.as_tensor(obs, dtype=torch.float32)
        chunks, chain = policy.sample_chain(o, gen)
        obs_calls.append(o)
        chain_calls.append(chain)
        return chunks.numpy()

    was_training = policy.training
    policy.eval()
    batch = (task or drawer.TASK).run_episodes(act, n, rng, chunk=policy.cfg.chunk)
    policy.train(was_training)
    if any(len(o) != n for o in obs_calls):
        raise ValueError(f"{type(task).__name__}.run_episodes must call the policy once per chunk with all {n} episodes")
    C = len(obs_calls)
    # calls are chunk-major (call c = chunk c of every episode); store episode-major like diffusion_rl.pairs
    obs = torch.stack(obs_calls, 1).reshape(n * C, -1)
    x = torch.stack(chain_calls, 1).reshape(n * C, *chain_calls[0].shape[1:])
    return batch, Chains(obs, x, torch.arange(n).repeat_interleave(C))


def step_means(policy: DiffusionPolicy, obs: torch.Tensor, x: torch.Tensor, steps: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Means (M, K, flat) and stds (M, K) of the steps x[:, :-1] -> x[:, 1:] of M decisions."""
    M, K = len(obs), len(steps)
    mean, std = policy.step_gaussian(x[:, :-1].reshape(M * K, -1), steps.repeat(M), obs.repeat_interleave(K, 0))
    return mean.reshape(M, K, -1), std.reshape(M, K)


def log_prob(mean: torch.Tensor, std: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    """Gaussian log-density of a step's output: mean, out (..., flat), std (...) -> (...)."""
    z = (out - mean) / std[..., None]
    return -0.5 * z.pow(2).sum(-1) - mean.shape[-1] * (std.log() + 0.5 * math.log(2 * math.pi))


def step_kl(mean: torch.Tensor, mean_bc: torch.Tensor, std: torch.Tensor) -> torch.Tensor:
    """KL(N(mean, std^2 I) || N(mean_bc, std^2 I)) per step: (..., flat) x2, std (...) -> (...)."""
    return (mean - mean_bc).pow(2).sum(-1) / (2 * std.pow(2))


@torch.no_grad()
def annotate(policy: DiffusionPolicy, bc: DiffusionPolicy, chains: Chains) -> Chains:
    """Fill in the behaviour log-probabilities and the BC means, once per iteration."""
    mean, std = step_means(policy, chains.obs, chains.x, chains.steps)
    chains.logp = log_prob(mean, std, chains.x[:, 1:])
    chains.mean_bc = step_means(bc, chains.obs, chains.x, chains.steps)[0]
    return chains


@torch.no_grad()
def chain_kl(policy: DiffusionPolicy, chains: Chains, n_episodes: int) -> float:
    """Mean over episodes of the summed per-step KL to BC at the chains' states (nats per episode).

    On chains the policy itself sampled this is an unbiased estimate of KL(p_theta || p_BC) over
    whole episodes' chains; on an older policy's chains, the trust-region estimate PPO uses.
    """
    assert chains.mean_bc is not None
    mean, std = step_means(policy, chains.obs, chains.x, chains.steps)
    return float(step_kl(mean, chains.mean_bc, std).sum() / n_episodes)


# ----------------------------------------------------------------------------------------
# 2. Advantages


def advantages(rewards: np.ndarray, contexts: np.ndarray) -> np.ndarray:
    """r minus the mean reward of the same context: (B,) -> (B,). Unscaled, so kl_coef is the objective's beta."""
    r = np.asarray(rewards, dtype=np.float64)
    a = np.empty_like(r)
    for c in np.unique(contexts):
        m = contexts == c
        a[m] = r[m] - r[m].mean()
    return a


# ----------------------------------------------------------------------------------------
# 3-4. The clipped-surrogate update with the KL penalty and the KL bound


def ppo_update(policy: DiffusionPolicy, chains: Chains, adv: np.ndarray, n_episodes: int, cfg: PPOConfig,
               opt: torch.optim.Optimizer, gen: torch.Generator) -> dict[str, float]:
    """`cfg.epochs` passes over the iteration's steps, in place; returns the iteration's figures."""
    assert chains.logp is not None and chains.mean_bc is not None
    N, K = chains.logp.shape
    steps = chains.steps
    a_dec = torch.as_tensor(adv, dtype=torch.float32)[chains.episode]  # (N,): the episode's advantage
    flat_idx = N * K  # minibatches draw (decision, step) pairs
    losses, clipped, epochs_done, stopped = [], [], 0, False
    policy.train()
    for _ in range(cfg.epochs):
        before = copy.deepcopy(policy.state_dict()), copy.deepcopy(opt.state_dict())
        perm = torch.randperm(flat_idx, generator=gen)
        for start in range(0, flat_idx, cfg.minibatch):
            idx = perm[start:start + cfg.minibatch]
            i, j = idx // K, idx % K
            k = steps[j]
            mean, std = policy.step_gaussian(chains.x[i, j], k, chains.obs[i])
            std = std[:, 0]  # (M,)
            logp = log_prob(mean, std, chains.x[i, j + 1])
            rho = (logp - chains.logp[i, j]).exp()
            a = a_dec[i]
            surrogate = torch.minimum(rho * a, rho.clamp(1 - cfg.clip, 1 + cfg.clip) * a)
            kl = step_kl(mean, chains.mean_bc[i, j], std)
            loss = (-surrogate + cfg.kl_coef * kl).mean()
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(policy.parameters(), cfg.max_grad_norm)
            opt.step()
            losses.append(loss.item())
            clipped.append(float(((rho - 1).abs() > cfg.clip).float().mean()))
        if chain_kl(policy, chains, n_episodes) > cfg.kl_max:
            policy.load_state_dict(before[0])  # undo the epoch that left the trust region
            opt.load_state_dict(before[1])
            stopped = True
            break
        epochs_done += 1
    policy.eval()
    return {"loss": float(np.mean(losses)), "clip_fraction": float(np.mean(clipped)), "epochs": epochs_done,
            "kl_stop": float(stopped), "kl_to_bc_after": chain_kl(policy, chains, n_episodes)}


# ----------------------------------------------------------------------------------------
# The loop: rounds of iterations, each round ending with an on-policy evaluation


def finetune(
    policy: DiffusionPolicy,
    reward: RewardFn,
    cfg: PPOConfig,
    *,
    seed: int = 0,
    on_round: Callable[[Round], None] | None = None,
    task: drawer.DrawerTask | None = None,
) -> list[Round]:
    """`cfg.rounds` x `cfg.iterations_per_round` PPO iterations, in place; evaluates after each round.

    The policy at entry is the BC anchor. Round.stats carries the on-policy chain KL to it
    (nats per episode, measured on the evaluation episodes) and the last iteration's figures.
    """
    if policy.cfg.final_std <= 0:
        raise ValueError("the policy-gradient fine-tuner needs policy.final_std > 0 (the executed step must have a "
                         "log-probability): set policy.final_std=0.1")
    bc = copy.deepcopy(policy).eval()
    for p in bc.parameters():
        p.requires_grad_(False)
    rng = np.random.default_rng(seed)
    gen = torch.Generator().manual_seed(seed)
    opt = torch.optim.Adam(policy.parameters(), lr=cfg.lr)
    rounds = []
    for k in range(1, cfg.rounds + 1):
        losses, train_r, last = [], [], {}
        for _ in range(cfg.iterations_per_round):
            batch, chains = rollout(policy, cfg.samples, rng, gen, task)
            r = np.asarray(reward(batch), dtype=np.float64)
            annotate(policy, bc, chains)
            last = {"kl_to_bc_rollout": chain_kl(policy, chains, cfg.samples),
                    **ppo_update(policy, chains, advantages(r, batch.layout), cfg.samples, cfg, opt, gen)}
            losses.append(last["loss"])
            train_r.append(r)
        evaluation, ev_chains = rollout(policy, cfg.eval_episodes, rng, gen, task)
        with torch.no_grad():
            ev_chains.mean_bc = step_means(bc, ev_chains.obs, ev_chains.x, ev_chains.steps)[0]
        stats = {**last, "kl_to_bc": chain_kl(policy, ev_chains, cfg.eval_episodes)}
        rnd = Round(k, np.concatenate(train_r), float("nan"), evaluation, losses, stats)
        rounds.append(rnd)
        if on_round:
            on_round(rnd)
    return rounds
