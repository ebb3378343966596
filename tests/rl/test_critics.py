"""Critics: one interface, three uses of the context; the conflicting-contexts bandit."""

from __future__ import annotations

import pytest
import torch

from harnessrl.rl.critics import CRITICS, ConditionedCritic, MultiHeadCritic, make_critic


@pytest.mark.parametrize("name", ["shared", "conditioned", "multihead"])
def test_interface_shapes_and_unknown_context(name):
    critic = make_critic(name, feature_dim=5, num_contexts=3)
    x, c = torch.randn(7, 5), torch.tensor([0, 1, 2, 0, 1, 2, 0])
    assert critic(x, c).shape == (7,)
    with pytest.raises(ValueError, match=r"unknown context index 3.*3 contexts \(valid indices 0\.\.2\)"):
        critic(x, torch.tensor([0, 1, 2, 3, 0, 0, 0]))
    with pytest.raises(ValueError, match="unknown context index -1"):
        critic(x, torch.tensor([0, -1, 2, 0, 0, 0, 0]))
    with pytest.raises(ValueError, match="integer"):
        critic(x, c.float())
    with pytest.raises(ValueError, match=r"\(B, 5\)"):
        critic(torch.randn(7, 4), c)


def test_registry_names_and_bad_options():
    assert list(CRITICS) == ["conditioned", "multihead", "shared"]
    with pytest.raises(KeyError, match="shared"):
        make_critic("sharde", 3, 2)
    with pytest.raises(ValueError, match="conditioning"):
        make_critic("conditioned", 3, 2, conditioning="film")
    with pytest.raises(ValueError, match="num_contexts"):
        make_critic("shared", 3, 0)


def test_conditioned_concatenates_the_context_and_multihead_selects_a_head():
    torch.manual_seed(0)
    x, c = torch.randn(6, 3), torch.tensor([2, 0, 1, 1, 0, 2])
    cond = ConditionedCritic(3, 3, hidden=())
    manual = cond.head(torch.cat([x, torch.eye(3)[c]], 1)).squeeze(-1)
    torch.testing.assert_close(cond(x, c), manual)
    emb = ConditionedCritic(3, 3, hidden=(8,), conditioning="embedding", embed_dim=4)
    manual = emb.head(emb.body(torch.cat([x, emb.embedding.weight[c]], 1))).squeeze(-1)
    torch.testing.assert_close(emb(x, c), manual)
    multi = MultiHeadCritic(3, 3, hidden=(8,))
    all_heads = multi.heads(multi.body(x))
    torch.testing.assert_close(multi(x, c), all_heads[torch.arange(6), c])


def _fit(name: str, mu: torch.Tensor, steps: int = 600, noise: float = 1.0) -> float:
    """Fit a critic on the conflicting-contexts bandit; return its MSE to the true per-context means."""
    g = torch.Generator().manual_seed(1)
    torch.manual_seed(1)
    K = len(mu)
    critic = make_critic(name, feature_dim=2, num_contexts=K, hidden=(16,))
    opt = torch.optim.Adam(critic.parameters(), lr=0.02)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda i: 1.0 - i / steps)
    obs = torch.tensor([1.0, -0.5])  # the same observation in every context
    ctx = torch.arange(K).repeat(64)
    for _ in range(steps):
        target = mu[ctx] + noise * torch.randn(len(ctx), generator=g)
        loss = (critic(obs.expand(len(ctx), 2), ctx) - target).square().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
    with torch.no_grad():
        pred = critic(obs.expand(K, 2), torch.arange(K))
    return float((pred - mu).square().mean())


def test_conflicting_contexts_bandit():
    mu = torch.tensor([0.0, 1.0, 3.0, 8.0])  # same observation, different expected returns
    between = float(mu.var(unbiased=False))  # 9.5: what a shared value must get wrong on average
    shared = _fit("shared", mu)
    assert shared == pytest.approx(between, rel=0.03)
    for name in ("conditioned", "multihead"):
        assert _fit(name, mu) < 0.01 * between
