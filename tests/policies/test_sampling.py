"""The inverse-CDF draw used by every sampled decode step (policies/generation.py)."""

import torch

from harnessrl.policies.generation import SamplingParams, inverse_cdf_draw, sample_next


def _exact(scores: torch.Tensor, u01: torch.Tensor):
    """Float64 flat-CDF reference with the same uniform numbers."""
    logp = torch.log_softmax(scores.double(), -1)
    cdf = logp.exp().cumsum(-1)
    t = torch.searchsorted(cdf, u01.double() * cdf[:, -1:], right=True).squeeze(-1).clamp(max=scores.shape[-1] - 1)
    return t, logp.gather(-1, t[:, None]).squeeze(-1)


def test_draw_matches_a_float64_flat_cdf_with_the_same_uniforms():
    agree, n = 0, 0
    for seed in range(20):
        scores = torch.randn(64, 5000, generator=torch.Generator().manual_seed(seed)) * (1 + seed % 4)
        tokens, lp = inverse_cdf_draw(scores, torch.Generator().manual_seed(seed), block=256)  # 5000 = 19.5 blocks
        u01 = torch.rand((64, 1), generator=torch.Generator().manual_seed(seed))
        ref_t, ref_lp = _exact(scores, u01)
        same = tokens == ref_t
        agree, n = agree + int(same.sum()), n + 64
        # the log-prob is that of the drawn token under softmax(scores), whichever token it is
        exact_lp = torch.log_softmax(scores.double(), -1).gather(-1, tokens[:, None]).squeeze(-1)
        assert torch.allclose(lp.double(), exact_lp, atol=1e-4)
        assert torch.allclose(lp[same].double(), ref_lp[same], atol=1e-4)
    assert agree >= n - 2  # only a uniform within float rounding of a boundary may differ


def test_draw_frequencies_follow_the_distribution_and_never_pick_masked_tokens():
    probs = torch.tensor([0.05, 0.0, 0.4, 0.15, 0.0, 0.3, 0.1])
    scores = probs.log().expand(20_000, -1).contiguous()  # log 0 = -inf: must never be drawn
    tokens, lp = inverse_cdf_draw(scores, torch.Generator().manual_seed(0), block=3)  # 3 blocks, 2 padded slots
    counts = torch.bincount(tokens, minlength=7).double()
    assert counts[1] == 0 and counts[4] == 0
    expected = probs.double() * 20_000
    live = expected > 0
    chi2 = float(((counts[live] - expected[live]) ** 2 / expected[live]).sum())
    assert chi2 < 20.5  # chi-square, 4 degrees of freedom, p = 0.0004
    assert torch.allclose(lp, probs.log()[tokens], atol=1e-6)


def test_sample_next_keeps_full_vocabulary_logprobs_under_top_k():
    logits = torch.randn(256, 50, generator=torch.Generator().manual_seed(1))
    params = SamplingParams(max_new_tokens=1, temperature=0.7, top_k=3)
    tokens, lp = sample_next(logits, params, torch.Generator().manual_seed(2))
    top3 = torch.topk(logits, 3, dim=-1).indices
    assert (top3 == tokens[:, None]).any(-1).all()
    full = torch.log_softmax(logits / 0.7, -1).gather(-1, tokens[:, None]).squeeze(-1)
    assert torch.allclose(lp, full, atol=1e-6)
