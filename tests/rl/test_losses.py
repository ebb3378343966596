"""Objectives, aggregations, KL estimators and value loss against Python-loop references (float64)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from harnessrl.rl import kl as K
from harnessrl.rl import losses as L
from harnessrl.rl import value as V
from harnessrl.rl.masked import masked_mean
from tests.rl import reference as ref
from tests.rl.strategies import arrays, masks, policy_batches, shapes

TOL = dict(rtol=1e-6, atol=1e-6)
AGGS = ["token-mean", "seq-mean-token-sum", "seq-mean-token-mean", "seq-mean-token-sum-norm"]
t64 = lambda x: torch.as_tensor(np.asarray(x), dtype=torch.float64)  # noqa: E731
scalar = lambda x: t64(float(x))  # noqa: E731


@settings(max_examples=100, deadline=None)
@given(shapes(), st.sampled_from(AGGS), st.data())
def test_aggregations_match_reference(shape, agg, data):
    loss, mask = data.draw(arrays(shape)), data.draw(masks(shape))
    got = L.aggregate(t64(loss), t64(mask), agg)
    torch.testing.assert_close(got, scalar(ref.aggregate(loss.tolist(), mask.tolist(), agg)), **TOL)
    ones = np.ones(shape, bool)  # mask=None must equal an all-ones mask
    torch.testing.assert_close(L.aggregate(t64(loss), None, agg), L.aggregate(t64(loss), t64(ones), agg), **TOL)


@settings(max_examples=150, deadline=None)
@given(policy_batches(), st.sampled_from(["ppo", "grpo", "rloo"]), st.sampled_from(AGGS),
       st.floats(0.05, 0.3), st.floats(0.05, 0.4), st.sampled_from([None, 3.0]))
def test_clipped_token_objective_matches_reference(b, name, agg, lo, hi, dual):
    out = L.policy_loss(name, t64(b["logp"]), t64(b["old"]), t64(b["adv"]), t64(b["mask"]),
                        clip_low=lo, clip_high=hi, dual_clip=dual, agg=agg)
    want = ref.ppo(b["logp"].tolist(), b["old"].tolist(), b["adv"].tolist(), b["mask"].tolist(), lo, hi, dual, agg)
    torch.testing.assert_close(out.loss, scalar(want), **TOL)
    # diagnostics, counted by hand
    ratio, adv, m = np.exp(b["logp"] - b["old"]), b["adv"], b["mask"]
    n = max(m.sum(), 1)
    assert out.metrics["clipfrac_low"].item() == pytest.approx((((ratio < 1 - lo) & (adv < 0)) & m).sum() / n)
    assert out.metrics["clipfrac_high"].item() == pytest.approx((((ratio > 1 + hi) & (adv > 0)) & m).sum() / n)
    if m.any():
        assert out.metrics["ratio_min"].item() == pytest.approx(ratio[m].min())
        assert out.metrics["ratio_max"].item() == pytest.approx(ratio[m].max())
        assert out.metrics["ratio_mean"].item() == pytest.approx(ratio[m].mean())
        x = b["old"] - b["logp"]
        assert out.metrics["approx_kl"].item() == pytest.approx((np.exp(-x) + x - 1)[m].mean())


@settings(max_examples=150, deadline=None)
@given(policy_batches(), st.floats(1e-4, 0.3), st.floats(1e-4, 0.4), st.data())
def test_gspo_matches_reference(b, lo, hi, data):
    B = b["logp"].shape[0]
    adv = data.draw(arrays((B,)))
    args = (t64(b["logp"]), t64(b["old"]), t64(adv), t64(b["mask"]))
    want = ref.gspo(b["logp"].tolist(), b["old"].tolist(), adv.tolist(), b["mask"].tolist(), lo, hi)
    out = L.gspo_loss(*args, clip_low=lo, clip_high=hi)
    torch.testing.assert_close(out.loss, scalar(want), **TOL)
    tok = L.gspo_token_loss(args[0], args[1], t64(adv), args[3], clip_low=lo, clip_high=hi)
    torch.testing.assert_close(tok.loss, scalar(want), **TOL)
    live = b["mask"].sum(1) > 0
    s = np.array([ref.seq_ratio(b["logp"][i], b["old"][i], b["mask"][i]) for i in range(B)])
    if live.any():
        assert out.metrics["ratio_max"].item() == pytest.approx(s[live].max())
        low = ((s < 1 - lo) & (adv < 0))[live].mean()
        assert out.metrics["clipfrac_low"].item() == pytest.approx(low)


@settings(max_examples=60, deadline=None)
@given(policy_batches())
def test_gspo_token_equals_gspo_in_value_and_gradient(b):
    B = b["logp"].shape[0]
    adv = t64(np.linspace(-1, 1, B))
    grads = []
    for fn in (L.gspo_loss, L.gspo_token_loss):
        lp = t64(b["logp"]).requires_grad_()
        out = fn(lp, t64(b["old"]), adv, t64(b["mask"]), clip_low=0.1, clip_high=0.2)
        out.loss.backward()
        grads.append((out.loss.detach(), lp.grad))
    torch.testing.assert_close(grads[0][0], grads[1][0], **TOL)
    torch.testing.assert_close(grads[0][1], grads[1][1], **TOL)


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 8), st.floats(0.05, 0.3), st.floats(0.05, 0.4), st.data())
def test_gspo_equals_grpo_when_every_sequence_has_length_one(B, lo, hi, data):
    logp = data.draw(arrays((B, 1), st.floats(-3.0, 0.0)))
    old = logp + data.draw(arrays((B, 1), st.floats(-0.5, 0.5)))
    adv = data.draw(arrays((B,)))
    results = []
    for fn in (L.gspo_loss, L.grpo_loss):
        lp = t64(logp).requires_grad_()
        out = fn(lp, t64(old), t64(adv), None, clip_low=lo, clip_high=hi, agg="seq-mean-token-mean")
        out.loss.backward()
        results.append((out.loss.detach(), lp.grad))
    torch.testing.assert_close(results[0][0], results[1][0], **TOL)
    torch.testing.assert_close(results[0][1], results[1][1], **TOL)
    # the same through a mask that leaves one token per sequence of a longer batch
    pad = torch.zeros(B, 3, dtype=torch.float64)
    lp2, old2 = torch.cat([t64(logp), pad], 1), torch.cat([t64(old), pad + 0.3], 1)
    m2 = torch.cat([torch.ones(B, 1), torch.zeros(B, 3)], 1).double()
    g = L.gspo_loss(lp2, old2, t64(adv), m2, clip_low=lo, clip_high=hi).loss
    torch.testing.assert_close(g, results[0][0], **TOL)


@settings(max_examples=60, deadline=None)
@given(st.floats(-0.5, 0.5), st.lists(st.integers(1, 50), min_size=1, max_size=6))
def test_gspo_ratio_is_invariant_to_length_for_constant_log_ratio(c, lengths):
    T = max(lengths)
    mask = t64([[1.0] * n + [0.0] * (T - n) for n in lengths])
    old = torch.full((len(lengths), T), -1.0, dtype=torch.float64)
    s = torch.exp(L.sequence_log_ratio(old + c, old, mask))
    torch.testing.assert_close(s, torch.full_like(s, math.exp(c)), **TOL)


@settings(max_examples=100, deadline=None)
@given(shapes(), st.sampled_from(["k1", "k2", "k3", "kl", "mse", "low_var_kl"]), st.data())
def test_kl_estimators_match_reference(shape, kind, data):
    lp = data.draw(arrays(shape, st.floats(-30.0, 0.0)))
    rl = data.draw(arrays(shape, st.floats(-30.0, 0.0)))
    base = {"kl": "k1", "mse": "k2", "low_var_kl": "k3"}.get(kind, kind)
    want = [[ref.kl(a - b, base) for a, b in zip(r1, r2)] for r1, r2 in zip(lp.tolist(), rl.tolist())]
    torch.testing.assert_close(K.kl_penalty(t64(lp), t64(rl), kind), t64(want), **TOL)
    mask = data.draw(masks(shape))
    kl = K.kl_loss(t64(lp), t64(rl), t64(mask), kind)
    torch.testing.assert_close(kl.loss, scalar(ref.aggregate(want, mask.tolist(), "token-mean")), **TOL)
    torch.testing.assert_close(kl.metrics["kl"], kl.loss, **TOL)  # token-mean: the logged mean is the loss
    rewards = data.draw(arrays(shape))
    folded = K.kl_in_reward(t64(rewards), t64(lp), t64(rl), t64(mask), coef=0.1, kind=kind)
    torch.testing.assert_close(folded, (t64(rewards) - 0.1 * t64(want)) * t64(mask), **TOL)


def test_k3_is_nonnegative_and_clamped():
    x = t64([-50.0, -1.0, 0.0, 1.0, 50.0])
    k3 = K.kl_k3(x)
    assert torch.all(k3 >= 0) and k3.max() <= 10.0 and k3[2] == 0


@settings(max_examples=100, deadline=None)
@given(shapes(), st.sampled_from([None, 0.2, 1.0]), st.sampled_from(AGGS), st.data())
def test_value_loss_matches_reference(shape, clip, agg, data):
    v, vo, r = (data.draw(arrays(shape)) for _ in range(3))
    m = data.draw(masks(shape))
    out = V.value_loss(t64(v), t64(r), t64(m), old_values=t64(vo), clip=clip, agg=agg)
    want = ref.value_loss(v.tolist(), vo.tolist(), r.tolist(), m.tolist(), clip, agg)
    torch.testing.assert_close(out.loss, scalar(want), **TOL)


def test_value_loss_accepts_flat_batches():
    v, vo, r = t64([1.0, 2.0]), t64([1.5, 1.5]), t64([0.0, 4.0])
    out = V.value_loss(v, r, old_values=vo, clip=0.2)
    want = 0.5 * ((max(1.0, (1.3 - 0.0) ** 2)) + max(4.0, (1.7 - 4.0) ** 2)) / 2
    torch.testing.assert_close(out.loss, scalar(want))
    assert out.metrics["vf_clipfrac"].item() == pytest.approx(1.0)


def test_entropy_diagnostic_from_logits():
    logits = torch.zeros(2, 3, 4, dtype=torch.float64)
    lp = torch.full((2, 3), -math.log(4), dtype=torch.float64)
    out = L.ppo_loss(lp, lp, torch.ones(2), logits=logits)
    assert out.metrics["entropy"].item() == pytest.approx(math.log(4))
    assert out.metrics["ratio_mean"].item() == pytest.approx(1.0)


@pytest.mark.parametrize("name", ["ppo", "grpo", "gspo", "gspo_token"])
@pytest.mark.parametrize("agg", AGGS)
def test_gradients_flow_only_through_unmasked_tokens(name, agg):
    g = torch.Generator().manual_seed(0)
    B, T = 4, 7
    lp = (-torch.rand(B, T, generator=g, dtype=torch.float64)).requires_grad_()
    old = lp.detach() + 0.01 * torch.randn(B, T, generator=g, dtype=torch.float64)
    mask = (torch.rand(B, T, generator=g) < 0.6).double()
    mask[0] = 0.0  # an empty sequence too
    mask[1, 0] = 1.0
    adv = torch.randn(B, T if name != "gspo" else 1, generator=g, dtype=torch.float64).squeeze(-1)
    ref_lp = -torch.rand(B, T, generator=g, dtype=torch.float64)
    clip = dict(clip_low=0.5, clip_high=0.5)  # wide: every unmasked token keeps a gradient
    loss = L.policy_loss(name, lp, old, adv, mask, agg=agg, **clip).loss + K.kl_loss(lp, ref_lp, mask, "k3", agg).loss
    loss.backward()
    assert torch.all(lp.grad[mask == 0] == 0)
    assert torch.all(lp.grad[mask == 1] != 0)
    v = torch.randn(B, T, generator=g, dtype=torch.float64, requires_grad=True)
    returns = torch.randn(B, T, generator=g, dtype=torch.float64)
    V.value_loss(v, returns, mask, old_values=v.detach() + 0.1, clip=0.2, agg=agg).loss.backward()
    assert torch.all(v.grad[mask == 0] == 0)


def test_unknown_names_and_bad_shapes_raise_clear_errors():
    x = torch.zeros(2, 3)
    with pytest.raises(KeyError, match="gspo"):
        L.policy_loss("gpso", x, x, torch.zeros(2))
    with pytest.raises(KeyError, match="token-mean"):
        L.aggregate(x, None, "token-avg")
    with pytest.raises(KeyError, match="k3"):
        K.kl_penalty(x, x, "k4")
    with pytest.raises(ValueError, match="advantages"):
        L.ppo_loss(x, x, torch.zeros(3))
    with pytest.raises(ValueError, match="mask"):
        L.ppo_loss(x, x, torch.zeros(2), torch.ones(2, 4))
    with pytest.raises(ValueError, match="dual"):
        L.gspo_loss(x, x, torch.zeros(2), dual_clip=3.0)
    with pytest.raises(ValueError, match="dual_clip"):
        L.ppo_loss(x, x, torch.zeros(2), dual_clip=0.5)


def test_registries_expose_the_documented_names():
    assert {"ppo", "grpo", "rloo", "gspo", "gspo_token"} <= set(L.POLICY_LOSSES)
    assert set(AGGS) == set(L.AGGREGATIONS)
    assert all(v in L.AGGREGATIONS for v in L.TRL_LOSS_TYPES.values())


def _plain_clipped(lp, old, adv, lo, hi, dual):
    """The textbook formula through autograd: max(-A r, -A clip(r)), then min with -A c for A < 0."""
    ratio = torch.exp(lp - old)
    loss = torch.maximum(-adv * ratio, -adv * ratio.clamp(1 - lo, 1 + hi))
    if dual is not None:
        loss = torch.where(adv < 0, torch.minimum(loss, -adv * dual), loss)
    return loss


@settings(max_examples=100, deadline=None)
@given(policy_batches(), st.sampled_from(AGGS), st.sampled_from([None, 1.5]))
def test_clipped_objective_gradient_matches_autograd_of_the_formula(b, agg, dual):
    # keep ratios away from the clip boundaries, where the subgradient is a convention
    ratio = np.exp(b["logp"] - b["old"])
    bounds = np.array([0.8, 1.3, 1.5])
    if np.min(np.abs(ratio[..., None] - bounds)) < 1e-6:
        return
    lp1 = t64(b["logp"]).requires_grad_()
    L.ppo_loss(lp1, t64(b["old"]), t64(b["adv"]), t64(b["mask"]), clip_low=0.2, clip_high=0.3, dual_clip=dual,
               agg=agg).loss.backward()
    lp2 = t64(b["logp"]).requires_grad_()
    L.aggregate(_plain_clipped(lp2, t64(b["old"]), t64(b["adv"]), 0.2, 0.3, dual), t64(b["mask"]), agg).backward()
    torch.testing.assert_close(lp1.grad, lp2.grad, **TOL)


@settings(max_examples=60, deadline=None)
@given(policy_batches(), st.sampled_from(AGGS), st.data())
def test_gspo_aggregations_equal_aggregating_the_broadcast_sequence_loss(b, agg, data):
    B, T = b["logp"].shape
    adv = data.draw(arrays((B,)))
    m = t64(b["mask"])
    s = torch.exp(L.sequence_log_ratio(t64(b["logp"]), t64(b["old"]), m))
    seq_loss = torch.maximum(-t64(adv) * s, -t64(adv) * s.clamp(1 - 0.1, 1 + 0.2))
    want = L.aggregate(seq_loss[:, None].expand(B, T), m, agg)
    got = L.gspo_loss(t64(b["logp"]), t64(b["old"]), t64(adv), m, clip_low=0.1, clip_high=0.2, agg=agg).loss
    torch.testing.assert_close(got, want, **TOL)


def test_huge_log_ratios_stay_finite_with_zero_gradient():
    lp = torch.tensor([[0.0, 0.0]], requires_grad=True)
    old = torch.tensor([[-200.0, -0.1]])
    out = L.ppo_loss(lp, old, torch.tensor([-1.0]))
    out.loss.backward()
    assert torch.isfinite(out.loss) and lp.grad[0, 0] == 0 and lp.grad[0, 1] != 0


@pytest.mark.parametrize("agg", AGGS)
@pytest.mark.parametrize("log_s", [0.3, 9.9, 14.5])
def test_gspo_token_equals_gspo_beyond_the_sequence_clamp(agg, log_s):
    """The sequence log-ratio is clamped at 10: past it both forms have the same value and a zero
    gradient (gspo_token clamps its whole token log-ratio, as verl does)."""
    g = torch.Generator().manual_seed(3)
    B, T = 3, 5
    old = -torch.rand(B, T, generator=g, dtype=torch.float64)
    noise = 0.1 * torch.randn(B, T, generator=g, dtype=torch.float64)
    mask = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1], [0, 1, 1, 0, 1]], dtype=torch.float64)
    noise = noise - (noise * mask).sum(-1, keepdim=True) / mask.sum(-1, keepdim=True)  # masked mean exactly 0
    logp = old + log_s + noise  # every sequence's mean token log-ratio is log_s
    adv = torch.tensor([1.0, -0.5, 2.0], dtype=torch.float64)
    results = []
    for fn in (L.gspo_loss, L.gspo_token_loss):
        lp = logp.clone().requires_grad_()
        out = fn(lp, old, adv, mask, clip_low=0.1, clip_high=0.2, agg=agg)
        out.loss.backward()
        results.append((out.loss.detach(), lp.grad))
    torch.testing.assert_close(results[0][0], results[1][0], **TOL)
    torch.testing.assert_close(results[0][1], results[1][1], **TOL)
    if log_s > L.MAX_LOG_S:
        assert torch.all(results[1][1] == 0)
        s = math.exp(L.MAX_LOG_S)  # A > 0 rows are clipped at 1.2; A < 0 rows keep -A s at the clamp
        assert results[0][0].item() == pytest.approx(L.aggregate(
            torch.tensor([-1.2, 0.5 * s, -2.4], dtype=torch.float64)[:, None].expand(B, T), mask, agg).item())


def test_kl_loss_returns_a_loss_output_like_the_other_losses():
    lp, ref_lp = torch.zeros(2, 3), torch.full((2, 3), -0.5)
    out = K.kl_loss(lp, ref_lp)
    assert isinstance(out, L.LossOutput)
    assert out.loss.item() == pytest.approx(math.exp(-0.5) + 0.5 - 1)
    assert out.metrics["kl"].item() == pytest.approx(out.loss.item())


def test_value_loss_needs_old_values_only_when_clipped():
    v, r = torch.tensor([1.0, 2.0]), torch.tensor([0.0, 4.0])
    assert V.value_loss(v, r).loss.item() == pytest.approx(0.5 * (1.0 + 4.0) / 2)
    with pytest.raises(ValueError, match="old_values"):
        V.value_loss(v, r, clip=0.2)


def _hand_gradient_surrogate(log_ratio, adv, lo, hi, dual=None):
    """The clipped surrogate as harnessrl wrote it before the formula-order rewrite: the value from a
    detached ratio, the gradient added by hand as (-A r) * (log r - sg[log r]) where the clip does not bind."""
    ratio = torch.exp(log_ratio.detach())
    loss = torch.maximum(-adv * ratio, -adv * ratio.clamp(1 - lo, 1 + hi))
    if dual is not None:
        loss = torch.where(adv < 0, torch.minimum(loss, -adv * dual), loss)
    slope = torch.where(loss == -adv * ratio, ratio * -adv, 0.0)
    return loss + slope * (log_ratio - log_ratio.detach())


def _fixed_batch(dtype, seed=7, B=16, T=48, spread=0.3):
    g = torch.Generator().manual_seed(seed)
    lp = (-torch.rand(B, T, generator=g, dtype=torch.float64) * 3)
    old = lp + spread * torch.randn(B, T, generator=g, dtype=torch.float64)
    mask = (torch.rand(B, T, generator=g) > 0.25).to(torch.float64)
    mask[3] = 0  # an empty row
    return lp.to(dtype), old.to(dtype), torch.randn(B, generator=g, dtype=torch.float64).to(dtype), mask.to(dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("agg", AGGS)
@pytest.mark.parametrize("spread,dual", [(0.05, None), (0.3, None), (1.0, 3.0)])
def test_formula_order_surrogate_keeps_losses_and_gradients(dtype, agg, spread, dual):
    """The surrogate in formula order (autograd of CleanRL's / verl's max(-A r, -A clip(r))) against the
    earlier hand-built gradient, on fixed batches where the clips (and a dual clip) bind: losses and
    gradients agree to 1e-6 relative, for the token-level and the sequence-level objectives."""
    lp, old, adv, mask = _fixed_batch(dtype, spread=spread)
    for name in ("ppo", "gspo", "gspo_token"):
        lo, hi = (0.2, 0.28) if name == "ppo" else (3e-4, 4e-4)
        dual_arg = dual if name == "ppo" else None
        x = lp.clone().requires_grad_()
        L.policy_loss(name, x, old, adv, mask, clip_low=lo, clip_high=hi, dual_clip=dual_arg, agg=agg).loss.backward()
        y = lp.clone().requires_grad_()
        if name == "ppo":
            log_ratio = (y - old).clamp(-L.MAX_LOG_RATIO, L.MAX_LOG_RATIO)
            want = L.aggregate(_hand_gradient_surrogate(log_ratio, adv[:, None], lo, hi, dual_arg), mask, agg)
        elif name == "gspo":
            log_s = L.sequence_log_ratio(y, old, mask)
            want = L.aggregate_sequences(_hand_gradient_surrogate(log_s, adv, lo, hi), mask, lp.shape[1], agg)
        else:
            log_s = masked_mean(y - old, mask, dim=-1)
            log_ratio = (y - y.detach() + log_s.detach()[:, None]).clamp(max=L.MAX_LOG_S)
            want = L.aggregate(_hand_gradient_surrogate(log_ratio, adv[:, None], lo, hi), mask, agg)
        want.backward()
        got_loss = L.policy_loss(name, lp, old, adv, mask, clip_low=lo, clip_high=hi, dual_clip=dual_arg, agg=agg).loss
        torch.testing.assert_close(got_loss, want.detach(), rtol=1e-6, atol=0)
        torch.testing.assert_close(x.grad, y.grad, rtol=1e-6, atol=1e-12 if dtype == torch.float64 else 1e-9)
        assert y.grad.abs().sum() > 0
