"""The DDPM diffusion policy learns a conditional multimodal distribution, and weighting tilts it."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from harnessrl.policies.diffusion import DiffusionPolicy, DiffusionPolicyConfig, cosine_schedule
from harnessrl.policies.reward_model import RewardModel
from harnessrl.train.diffusion_rl import FitConfig, fit, tilt_weights


def test_cosine_schedule() -> None:
    betas = cosine_schedule(16)
    abar = torch.cumprod(1 - betas, 0)
    assert betas.shape == (16,) and (betas > 0).all() and (betas <= 0.999).all()
    assert (abar[1:] < abar[:-1]).all() and abar[0] > 0.95 and abar[-1] < 0.01


def bimodal(n: int, rng: np.random.Generator, p_left: tuple[float, float] = (0.7, 0.2)):
    """Context c in {0, 1}; action -0.6 with probability p_left[c], else +0.6 (plus small noise)."""
    c = rng.integers(0, 2, n)
    left = rng.random(n) < np.asarray(p_left)[c]
    a = np.where(left, -0.6, 0.6) + rng.normal(0, 0.05, n)
    obs = np.stack([c, 1 - c], 1).astype(np.float32)
    return torch.as_tensor(obs), torch.as_tensor(a, dtype=torch.float32).reshape(n, 1, 1), left, c


@pytest.fixture(scope="module")
def data():
    return bimodal(3000, np.random.default_rng(0))


def train(obs, chunks, weights=None, prediction="sample", steps=1000):
    torch.manual_seed(0)
    pol = DiffusionPolicy(DiffusionPolicyConfig(obs_dim=2, action_dim=1, chunk=1, hidden=64, layers=2, time_dim=16,
                                                denoising_steps=16, prediction=prediction))
    fit(pol, obs, chunks, FitConfig(steps=steps, batch=256, lr=3e-3), weights=weights)
    return pol


def left_fraction(pol, context: int, n: int = 3000) -> tuple[float, float]:
    obs = np.tile(np.array([context, 1 - context], dtype=np.float32), (n, 1))
    a = pol.act(obs, torch.Generator().manual_seed(1))[:, 0, 0]
    assert a.shape == (n,) and np.abs(a).max() <= 1.0
    between = float((np.abs(a) < 0.3).mean())  # mass between the modes
    return float((a < 0).mean()), between


@pytest.mark.parametrize("prediction", ["sample", "epsilon"])
def test_learns_both_modes_with_their_weights(data, prediction: str) -> None:
    obs, chunks, _, _ = data
    pol = train(obs, chunks, prediction=prediction, steps=1000 if prediction == "sample" else 2000)
    for context, p in ((0, 0.7), (1, 0.2)):
        left, between = left_fraction(pol, context)
        assert left == pytest.approx(p, abs=0.08)
        assert between < 0.1


def test_weighted_loss_tilts_the_modes(data) -> None:
    """Weights exp(r/beta) with r = 1 on the right mode: p'(left) = p / (p + (1-p) e^{1/beta})."""
    obs, chunks, left, c = data
    beta = 1.0
    w = tilt_weights((~left).astype(float), c, beta)
    pol = train(obs, chunks, weights=torch.as_tensor(w, dtype=torch.float32))
    for context, p in ((0, 0.7), (1, 0.2)):
        expected = p / (p + (1 - p) * np.e)
        assert left_fraction(pol, context)[0] == pytest.approx(expected, abs=0.08)


def test_tilt_weights_normalise_per_context() -> None:
    r = np.array([0.0, 1.0, 0.0, 0.5, 0.5, 0.5])
    c = np.array([0, 0, 0, 1, 1, 1])
    w = tilt_weights(r, c, 0.5)
    assert w[:3].mean() == pytest.approx(1.0) and w[3:].mean() == pytest.approx(1.0)
    assert w[1] / w[0] == pytest.approx(np.exp(2.0))
    np.testing.assert_allclose(w[3:], 1.0)
    assert np.isfinite(tilt_weights(np.array([0.0, 1000.0]), np.zeros(2), 0.01)).all()  # no overflow


def test_reward_model_scores_in_unit_interval_and_learns() -> None:
    rng = np.random.default_rng(0)
    imgs = rng.integers(0, 60, size=(200, 32, 32, 3)).astype(np.uint8)
    labels = np.zeros(200)
    imgs[:100, 10:20, 10:20, 0] = 250  # a red square means "solved"
    labels[:100] = 1
    torch.manual_seed(0)
    from harnessrl.train.drawer_reward import RewardDataConfig, fit_reward_model

    model, losses = fit_reward_model(imgs, labels, RewardDataConfig(steps=60, batch=64))
    s = model.score(imgs)
    assert s.shape == (200,) and (s >= 0).all() and (s <= 1).all()
    assert s[:100].min() > s[100:].max()
    assert losses[-1] < losses[0]
    assert RewardModel().score(np.zeros((0, 32, 32, 3), np.uint8)).shape == (0,)


def test_hue_rotation_keeps_grey_and_swaps_handle_colours() -> None:
    from harnessrl.train.drawer_reward import hue_rotate

    x = torch.zeros(3, 3, 1, 1)
    x[0] = 0.5  # grey
    x[1, 0], x[1, 1], x[1, 2] = 0.82, 0.16, 0.16  # the red handle
    x[2, 0], x[2, 1], x[2, 2] = 0.16, 0.24, 0.82  # the blue handle
    y = hue_rotate(x, torch.tensor([1.0, 4 * torch.pi / 3, 0.0]))
    np.testing.assert_allclose(y[0, :, 0, 0], 0.5, atol=1e-6)
    assert y[1, 2, 0, 0] > 0.7 and y[1, 0, 0, 0] < 0.3  # red rotated by 240 degrees is blue
