"""A learned visual reward: a small CNN scoring an RGB frame with P(task solved).

`RewardModel(images)` returns logits; `score(images)` returns sigmoid probabilities in
[0, 1], the reward a fine-tuning run optimises. Images are uint8 (B, H, W, 3) numpy arrays
or float tensors (B, 3, H, W) in [0, 1]. What it learns depends on its labelled data — a
model trained on successes versus misses, with no wrong-object examples, can give credit
to any open drawer: the failure the tilt model explains.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn


def to_tensor(images: np.ndarray) -> torch.Tensor:
    """uint8 (B, H, W, 3) -> float (B, 3, H, W) in [0, 1]."""
    return torch.as_tensor(np.ascontiguousarray(images), dtype=torch.float32).permute(0, 3, 1, 2) / 255.0


class RewardModel(nn.Module):
    def __init__(self, channels: int = 16, hidden: int = 64):
        super().__init__()
        c = channels
        self.features = nn.Sequential(
            nn.Conv2d(3, c, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),  # 32 -> 16
            nn.Conv2d(c, 2 * c, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),  # 16 -> 8
            nn.Conv2d(2 * c, 2 * c, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(4),
        )
        self.head = nn.Sequential(nn.Flatten(), nn.Linear(2 * c * 16, hidden), nn.ReLU(), nn.Linear(hidden, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(B, 3, H, W) -> logits (B,)."""
        return self.head(self.features(x))[:, 0]

    @torch.no_grad()
    def score(self, images: np.ndarray, batch: int = 1024) -> np.ndarray:
        """uint8 frames (B, H, W, 3) -> rewards (B,) in [0, 1]."""
        was_training = self.training
        self.eval()
        out = np.concatenate(
            [torch.sigmoid(self(to_tensor(images[i : i + batch]))).numpy() for i in range(0, len(images), batch)]
        ) if len(images) else np.zeros(0, dtype=np.float32)
        self.train(was_training)
        return out.astype(np.float64)
