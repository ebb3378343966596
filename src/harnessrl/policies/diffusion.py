"""A diffusion policy over action chunks (DDPM, Ho et al. 2020; Chi et al. 2023's Diffusion Policy).

Given an observation s, the policy samples a chunk x_0 of `chunk` actions by running the
reverse DDPM chain x_K -> ... -> x_0 with an MLP denoiser eps_theta(x_k, k, s). Training
minimises the (optionally per-sample weighted) noise-prediction loss

    L = sum_i w_i || eps - eps_theta(sqrt(abar_k) x0_i + sqrt(1 - abar_k) eps, k, s_i) ||^2 / sum_i w_i

— uniform weights for behaviour cloning, exp(r/beta) for reward-weighted regression.
Shapes: obs (B, obs_dim); chunks (B, chunk, action_dim); actions live in [-1, 1].
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
import torch
from pydantic import Field
from torch import nn

from harnessrl.config import Config


class DiffusionPolicyConfig(Config):
    obs_dim: int = 9
    action_dim: int = 2
    chunk: int = 12  # actions per chunk: the drawer task's 24-step episode is two chunks
    denoising_steps: int = 16
    hidden: int = 128
    layers: int = 3  # residual blocks
    time_dim: int = 32
    # what the network predicts: "sample" (x_0; learned the drawer task's multimodal chunks
    # about twice as fast here) or "epsilon" (the noise, as in DDPM)
    prediction: Literal["sample", "epsilon"] = "sample"
    # std of the last denoising step x_1 -> x_0 (DDPM's is 0: x_0 is the clipped estimate). The
    # policy-gradient fine-tuner needs it > 0 so that every step of the chain, the executed one
    # included, has a log-probability (DPPO's minimum exploration noise)
    final_std: float = Field(0.0, ge=0)


def cosine_schedule(steps: int, s: float = 0.008) -> torch.Tensor:
    """betas (K,) of Nichol & Dhariwal's cosine schedule, clipped at 0.999."""
    t = torch.linspace(0, steps, steps + 1, dtype=torch.float64) / steps
    abar = torch.cos((t + s) / (1 + s) * math.pi / 2) ** 2
    abar = abar / abar[0]
    return (1 - abar[1:] / abar[:-1]).clamp(max=0.999).float()


def time_embedding(k: torch.Tensor, dim: int) -> torch.Tensor:
    """Sinusoidal embedding of integer steps (B,) -> (B, dim)."""
    half = dim // 2
    freqs = torch.exp(-math.log(10_000) * torch.arange(half, dtype=torch.float32) / half)
    angles = k.float()[:, None] * freqs[None]
    return torch.cat([angles.sin(), angles.cos()], dim=1)


class ResidualBlock(nn.Module):
    """x + MLP(LayerNorm(x)): with these blocks the denoiser separated modes in a quarter of the
    steps a plain MLP needed (and sampled the minority mode at its data frequency sooner)."""

    def __init__(self, dim: int):
        super().__init__()
        self.f = nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, 2 * dim), nn.Mish(), nn.Linear(2 * dim, dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.f(x)


class DiffusionPolicy(nn.Module):
    def __init__(self, cfg: DiffusionPolicyConfig | None = None):
        super().__init__()
        self.cfg = cfg = cfg or DiffusionPolicyConfig()
        self.flat = cfg.chunk * cfg.action_dim
        self.net = nn.Sequential(
            nn.Linear(self.flat + cfg.obs_dim + cfg.time_dim, cfg.hidden),
            *[ResidualBlock(cfg.hidden) for _ in range(cfg.layers)],
            nn.LayerNorm(cfg.hidden),
            nn.Mish(),
            nn.Linear(cfg.hidden, self.flat),
        )
        betas = cosine_schedule(cfg.denoising_steps)
        alphas = 1 - betas
        self.register_buffer("betas", betas)
        self.register_buffer("alphas", alphas)
        self.register_buffer("abar", torch.cumprod(alphas, 0))

    def denoise(self, x: torch.Tensor, k: torch.Tensor, obs: torch.Tensor) -> torch.Tensor:
        """Predicted noise eps_theta(x_k, k, s): (B, flat)."""
        return self.net(torch.cat([x, obs, time_embedding(k, self.cfg.time_dim)], dim=1))

    def loss(self, obs: torch.Tensor, chunks: torch.Tensor, weights: torch.Tensor | None = None, generator: torch.Generator | None = None) -> torch.Tensor:
        """Weighted noise-prediction loss; weights (B,) default to 1."""
        x0 = chunks.reshape(len(chunks), self.flat)
        k = torch.randint(0, self.cfg.denoising_steps, (len(x0),), generator=generator)
        eps = torch.randn(x0.shape, generator=generator)
        ab = self.abar[k][:, None]
        target = eps if self.cfg.prediction == "epsilon" else x0
        per_sample = (self.denoise(ab.sqrt() * x0 + (1 - ab).sqrt() * eps, k, obs) - target).pow(2).mean(1)
        if weights is None:
            return per_sample.mean()
        return (weights * per_sample).sum() / weights.sum()

    def predict_x0(self, x: torch.Tensor, k: torch.Tensor, obs: torch.Tensor) -> torch.Tensor:
        """The denoiser's x_0 estimate from x_k, clipped to [-1, 1]: x (B, flat), k (B,) -> (B, flat)."""
        out = self.denoise(x, k, obs)
        ab = self.abar[k][:, None]
        return ((x - (1 - ab).sqrt() * out) / ab.sqrt() if self.cfg.prediction == "epsilon" else out).clamp(-1, 1)

    def step_gaussian(self, x: torch.Tensor, k: torch.Tensor, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """One reverse step x_k -> x_{k-1} ~ N(mean, std^2 I): x (B, flat), k (B,) -> mean (B, flat), std (B, 1).

        For k >= 1 the posterior q(x_{k-1} | x_k, x_0) at the predicted x_0 (Ho et al. eq. 7); for
        k = 0 the predicted x_0 itself with std `final_std` (the action is then clipped to [-1, 1]).
        The std does not depend on the parameters, so a log-probability ratio of two policies
        needs only their means (the policy-gradient fine-tuner, train/diffusion_pg.py).
        """
        x0 = self.predict_x0(x, k, obs)
        ab, a, beta, ab_prev = self.abar[k][:, None], self.alphas[k][:, None], self.betas[k][:, None], self.abar[(k - 1).clamp(min=0)][:, None]
        last = (k == 0)[:, None]
        mean = (ab_prev.sqrt() * beta / (1 - ab)) * x0 + (a.sqrt() * (1 - ab_prev) / (1 - ab)) * x
        std = (beta * (1 - ab_prev) / (1 - ab)).sqrt()
        return torch.where(last, x0, mean), torch.where(last, torch.full_like(std, self.cfg.final_std), std)

    @torch.no_grad()
    def sample_chain(self, obs: torch.Tensor, generator: torch.Generator | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """Ancestral DDPM sampling: chunks (B, chunk, action_dim) and the chain (B, K+1, flat).

        chain[:, j] is the input of denoising step k = K-1-j (chain[:, 0] = x_K, the noise) and
        chain[:, K] the unclipped x_0 (the clipped estimate itself when final_std = 0).
        """
        B = len(obs)
        x = torch.randn((B, self.flat), generator=generator)
        chain = []
        for k in reversed(range(1, self.cfg.denoising_steps)):
            chain.append(x)
            mean, std = self.step_gaussian(x, torch.full((B,), k, dtype=torch.long), obs)
            x = mean + std * torch.randn(x.shape, generator=generator)
        chain.append(x)
        x0 = self.predict_x0(x, torch.zeros((B,), dtype=torch.long), obs)
        if self.cfg.final_std > 0:
            x0 = x0 + self.cfg.final_std * torch.randn(x0.shape, generator=generator)
        chain.append(x0)
        return x0.clamp(-1, 1).reshape(B, self.cfg.chunk, self.cfg.action_dim), torch.stack(chain, 1)

    def sample(self, obs: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
        """Ancestral DDPM sampling with the predicted x_0 clipped to [-1, 1]: (B, chunk, action_dim)."""
        return self.sample_chain(obs, generator)[0]

    def act(self, obs: np.ndarray, generator: torch.Generator | None = None) -> np.ndarray:
        """numpy (B, obs_dim) -> numpy (B, chunk, action_dim); the drawer env's ChunkPolicy."""
        was_training = self.training
        self.eval()
        out = self.sample(torch.as_tensor(obs, dtype=torch.float32), generator).numpy()
        self.train(was_training)
        return out
