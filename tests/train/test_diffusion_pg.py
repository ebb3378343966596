"""PPO over the denoising chain (train/diffusion_pg.py) on a one-step toy task with a learned reward.

The toy: one chunk of one 1-D action per episode, a constant observation, demonstrations from
two modes (-0.5 with weight .7, +0.5 with weight .3). A logistic reward model is fitted to
labelled actions (positive = right of 0.1), so the reward the fine-tuner sees is learned.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from harnessrl.envs.drawer import DrawerBatch
from harnessrl.policies.diffusion import DiffusionPolicy, DiffusionPolicyConfig
from harnessrl.train import diffusion_pg, diffusion_rl


def _batch(actions: np.ndarray) -> DrawerBatch:
    n = len(actions)
    return DrawerBatch(obs=np.zeros((n, 1, 2)), chunks=actions.reshape(n, 1, 1, 1), layout=np.zeros(n, dtype=int),
                       opening=np.zeros((n, 2)), frames=np.zeros((n, 1, 1, 3), dtype=np.uint8),
                       outcome=np.where(actions > 0, "success", "miss"))


class Toy:
    """The DrawerTask interface reduced to one decision: act once on a constant observation."""

    def run_episodes(self, act, n, rng, *, chunk=1, layouts=None):
        return _batch(np.asarray(act(np.zeros((n, 2))), dtype=np.float64).reshape(n))


@pytest.fixture(scope="module")
def setup():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # these small networks run several times slower with threads contending for 2 cores
    rng = np.random.default_rng(0)
    right = rng.random(600) < 0.3
    actions = np.where(right, 0.5, -0.5) + 0.05 * rng.standard_normal(600)
    cfg = DiffusionPolicyConfig(obs_dim=2, action_dim=1, chunk=1, denoising_steps=8, hidden=64, layers=2, final_std=0.1)
    bc, _ = diffusion_rl.behaviour_clone(_batch(actions), diffusion_rl.FitConfig(steps=400, batch=128, lr=3e-3), cfg, seed=0)
    # the learned reward: logistic regression on labelled actions
    xs = torch.linspace(-1, 1, 200)[:, None]
    labels = (xs > 0.1).float()
    w = torch.zeros(2, requires_grad=True)
    opt = torch.optim.Adam([w], lr=0.1)
    for _ in range(300):
        loss = torch.nn.functional.binary_cross_entropy_with_logits(w[0] * xs + w[1], labels)
        opt.zero_grad()
        loss.backward()
        opt.step()
    w = w.detach()

    def reward(batch: DrawerBatch) -> np.ndarray:
        a = torch.as_tensor(batch.chunks.reshape(-1), dtype=torch.float32)
        return torch.sigmoid(w[0] * a + w[1]).numpy().astype(np.float64)

    yield bc, reward
    torch.set_num_threads(threads)


def _run(bc, reward, **kw):
    cfg = diffusion_pg.PPOConfig(**{"rounds": 3, "iterations_per_round": 4, "samples": 256, "epochs": 4, "minibatch": 512,
                                    "lr": 1e-3, "eval_episodes": 1000, **kw})
    policy = DiffusionPolicy(bc.cfg)
    policy.load_state_dict(bc.state_dict())
    return policy, diffusion_pg.finetune(policy, reward, cfg, seed=3, task=Toy())


def test_ppo_raises_the_learned_reward(setup) -> None:
    bc, reward = setup
    base = Toy().run_episodes(lambda o: bc.act(o, torch.Generator().manual_seed(7)), 2000, None)
    r0 = reward(base).mean()
    _, rounds = _run(bc, reward, kl_coef=0.05)
    r = [reward(rnd.evaluation).mean() for rnd in rounds]
    assert 0.05 < r0 < 0.45  # the BC policy samples the minority mode, less often than the demos (.3)
    assert r[-1] > r0 + 0.25, (r0, r)
    assert rounds[-1].evaluation.success.mean() > 0.6


def test_kl_to_bc_stays_within_the_configured_bound(setup) -> None:
    bc, reward = setup
    kl_max = 1.0
    _, free = _run(bc, reward, kl_coef=0.002, kl_max=1000.0)
    policy, bounded = _run(bc, reward, kl_coef=0.002, kl_max=kl_max)
    # without the bound this push goes well past it, so the bound is what holds it back
    assert free[-1].stats["kl_to_bc"] > 3 * kl_max, [r.stats for r in free]
    # on-policy (fresh evaluation episodes) chain KL to BC after every round
    kls = [r.stats["kl_to_bc"] for r in bounded]
    assert max(kls) <= kl_max * 1.1, kls
    assert any(r.stats["kl_stop"] for r in bounded)
    # and the policy still moved toward the reward as far as the bound allows
    base = Toy().run_episodes(lambda o: bc.act(o, torch.Generator().manual_seed(7)), 2000, None)
    assert bounded[-1].evaluation.success.mean() > base.success.mean() + 0.1


def test_needs_a_stochastic_last_step(setup) -> None:
    bc, reward = setup
    policy = DiffusionPolicy(bc.cfg.model_copy(update={"final_std": 0.0}))
    with pytest.raises(ValueError, match="final_std"):
        diffusion_pg.finetune(policy, reward, diffusion_pg.PPOConfig(rounds=1), task=Toy())


def test_chain_log_prob_matches_the_sampler() -> None:
    """The per-step Gaussians the fine-tuner scores are the ones the sampler drew from."""
    torch.manual_seed(0)
    policy = DiffusionPolicy(DiffusionPolicyConfig(obs_dim=2, action_dim=1, chunk=2, denoising_steps=4, hidden=16, layers=1, final_std=0.1))
    obs = torch.randn(4000, 2)
    _, chain = policy.sample_chain(obs, torch.Generator().manual_seed(1))
    steps = torch.arange(3, -1, -1)
    mean, std = diffusion_pg.step_means(policy, obs, chain, steps)
    z = (chain[:, 1:] - mean) / std[..., None]  # standard normal if the chain was drawn from these steps
    assert z.mean().abs() < 0.02 and (z.std() - 1).abs() < 0.02
    assert torch.allclose(std[0, -1], torch.tensor(0.1))
