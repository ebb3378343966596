"""Train the drawer task's visual reward model on labelled rollouts.

The labelled data are final frames of rollouts collected the usual way: scripted attempts
aimed at the target drawer (pulling it by a random amount, so both sides of the success
threshold appear) and random-action rollouts; the label is the env's success check. The
collector never opens the distractor, so the model never sees a wrong-object frame unless
`hard_negatives` adds such frames (label 0) — the default reproduces the common setup in
which a learned reward gives credit to the wrong object.
"""

from __future__ import annotations

import numpy as np
import torch
from pydantic import Field

from harnessrl.config import Config
from harnessrl.envs import drawer
from harnessrl.policies.reward_model import RewardModel, to_tensor


class RewardDataConfig(Config):
    aimed: int = Field(600, ge=1)  # scripted attempts at the target drawer
    random: int = Field(200, ge=0)  # random-action rollouts
    hard_negatives: int = Field(0, ge=0)  # wrong-object rollouts labelled 0 (the fix the default leaves out)
    noise: float = Field(0.2, ge=0)  # the collector's action noise
    # colour augmentation (hue rotation by up to this fraction of the colour circle), as visual
    # reward models are commonly trained with; it also makes the handle colour — the only cue
    # that tells the target drawer from the distractor — uninformative. 0 turns it off.
    hue_jitter: float = Field(0.5, ge=0, le=0.5)
    steps: int = Field(400, ge=1)
    batch: int = Field(128, ge=1)
    lr: float = Field(2e-3, gt=0)


def labelled_rollouts(cfg: RewardDataConfig, rng: np.random.Generator, task: drawer.DrawerTask | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Final frames (N, 32, 32, 3) uint8, labels (N,) float, outcomes (N,) of `task` (default: the built-in drawer)."""
    task = task or drawer.TASK
    frames, outcomes = [], []
    low, high = task.pull_range
    for intent, n, lo in ((0, cfg.aimed, low), (1, cfg.hard_negatives, task.open_threshold)):
        if n == 0:
            continue
        pull = rng.uniform(lo, high, n)  # under- and over-threshold pulls
        batch = task.scripted(np.full(n, intent), rng, chunk=4, noise=cfg.noise, pull=pull)
        frames.append(batch.frames)
        outcomes.append(batch.outcome)
    if cfg.random:
        batch = task.run_episodes(lambda obs: rng.uniform(-1, 1, (len(obs), 4, task.action_dim)), cfg.random, rng, chunk=4)
        frames.append(batch.frames)
        outcomes.append(batch.outcome)
    x = np.concatenate(frames)
    o = np.concatenate(outcomes)
    if cfg.hard_negatives == 0:  # the collector's data contain no wrong-object frames
        keep = o != "wrong_object"
        x, o = x[keep], o[keep]
    return x, (o == "success").astype(np.float64), o


def hue_rotate(x: torch.Tensor, angle: torch.Tensor) -> torch.Tensor:
    """Rotate RGB colours (B, 3, H, W) about the grey axis by angle (B,) radians (Rodrigues)."""
    k = torch.full((3,), 3**-0.5)
    K = torch.tensor([[0.0, -k[2], k[1]], [k[2], 0.0, -k[0]], [-k[1], k[0], 0.0]])
    c, s = angle.cos()[:, None, None], angle.sin()[:, None, None]
    R = c * torch.eye(3) + s * K + (1 - c) * torch.outer(k, k)  # (B, 3, 3)
    return torch.einsum("bij,bjhw->bihw", R, x).clamp(0, 1)


def fit_reward_model(images: np.ndarray, labels: np.ndarray, cfg: RewardDataConfig, seed: int = 0) -> tuple[RewardModel, list[float]]:
    """Binary cross-entropy on (frame, label) pairs; returns the model and its loss curve."""
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    model = RewardModel()
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    x = to_tensor(images)
    y = torch.as_tensor(labels, dtype=torch.float32)
    # balance the classes so the rarer one is not ignored
    pos = float(y.mean())
    pos_weight = torch.tensor((1 - pos) / max(pos, 1e-6))
    losses = []
    for _ in range(cfg.steps):
        idx = torch.randint(0, len(x), (min(cfg.batch, len(x)),), generator=gen)
        xb = x[idx]
        if cfg.hue_jitter > 0:
            xb = hue_rotate(xb, (torch.rand(len(idx), generator=gen) * 2 - 1) * cfg.hue_jitter * 2 * torch.pi)
        loss = torch.nn.functional.binary_cross_entropy_with_logits(model(xb), y[idx], pos_weight=pos_weight)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    model.eval()
    return model, losses
