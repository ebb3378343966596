"""Keys/values kept between turns (policies/prefix_cache.py): the same tokens and log-probs as a
fresh prefill every turn, reuse that actually happens, and a store emptied when weights change."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from harnessrl.policies.generation import HFEngine, SamplingParams
from harnessrl.policies.lm import LMConfig, LMPolicy
from harnessrl.policies.prefix_cache import PrefixStore
from tests import tiny_lm
from tests.real_model import smollm2  # noqa: F401  (fixture)


@pytest.fixture(scope="module")
def pol(tmp_path_factory):
    p = LMPolicy.from_config(LMConfig(model=str(tiny_lm.build(tmp_path_factory.mktemp("lm"))), lora_rank=4))
    with torch.no_grad():  # a LoRA that changes the outputs, so the adapter state matters
        for name, w in p.model.named_parameters():
            if "lora_B" in name:
                w.normal_(0, 0.3, generator=torch.Generator().manual_seed(1))
    return p


def engines(pol):
    return (HFEngine(pol.model, pol.pad_token_id, prefix_cache_mb=64),
            HFEngine(pol.model, pol.pad_token_id))


def turns(pol, reuse, fresh, params, n_turns=3, between=None):
    """Episodes of several turns, each prompt = previous prompt + reply + an observation; both engines
    see the same prompts (the fresh engine's replies drive the conversation)."""
    prompts = [[5, 9, 13, 40, 41], [7, 8], [5, 9, 13, 40, 41], [100, 3, 2, 1, 50, 60, 61]]
    for t in range(n_turns):
        a = reuse.generate(prompts, params, torch.Generator().manual_seed(t))
        b = fresh.generate(prompts, params, torch.Generator().manual_seed(t))
        for x, y in zip(a, b):
            np.testing.assert_array_equal(x.token_ids, y.token_ids)
            np.testing.assert_allclose(x.logprobs, y.logprobs, atol=1e-4)
            assert x.finished == y.finished
        prompts = [p + y.token_ids.tolist() + [60 + t, 61, 62 + i] for i, (p, y) in enumerate(zip(prompts, b))]
        if between is not None:
            between(t)


@pytest.mark.parametrize("params", [SamplingParams(12, 0.0), SamplingParams(12, 1.0),
                                    SamplingParams(12, 1.0, stop_token_ids=tuple(range(0, 400, 3)))],
                         ids=["greedy", "sampled", "early-stops"])
def test_turns_on_kept_prefixes_match_a_fresh_prefill(pol, params):
    reuse, fresh = engines(pol)
    turns(pol, reuse, fresh, params)
    store = reuse.prefix
    assert store.hits >= 8, "turns 2 and 3 of all 4 rows reused their earlier turns"
    # the 4 rows of turn 3 all start with >= 5 kept tokens
    assert store.reused_tokens >= 8 * 5


def test_a_rewritten_tail_still_reuses_the_common_prefix(pol):
    reuse, fresh = engines(pol)
    params = SamplingParams(6, 0.0)
    first = [[5, 9, 13, 40, 41, 42, 43, 44]]
    reuse.generate(first, params)
    edited = [[5, 9, 13, 40, 99, 98]]  # history rewritten after 4 tokens
    a, b = reuse.generate(edited, params)[0], fresh.generate(edited, params)[0]
    np.testing.assert_array_equal(a.token_ids, b.token_ids)
    np.testing.assert_allclose(a.logprobs, b.logprobs, atol=1e-4)
    assert reuse.prefix.reused_tokens == 4


def test_kept_keys_are_dropped_when_weights_or_adapters_change(pol):
    reuse, fresh = engines(pol)
    lora_b = next(w for name, w in pol.model.named_parameters() if "lora_B" in name)
    saved = lora_b.detach().clone()

    def update(t):  # an in-place optimizer-like step between turns
        with torch.no_grad():
            lora_b.add_(0.5)

    try:
        turns(pol, reuse, fresh, SamplingParams(8, 0.0), between=update)
        assert reuse.prefix.hits == 0  # every turn came after a weight change
    finally:
        with torch.no_grad():
            lora_b.copy_(saved)
    reuse, fresh = engines(pol)
    prompts = [[5, 9, 13, 40, 41]]
    out = reuse.generate(prompts, SamplingParams(8, 0.0))[0]
    with pol.model.disable_adapter():  # the reference: same parameters, different outputs
        nxt = [prompts[0] + out.token_ids.tolist() + [61]]
        a, b = reuse.generate(nxt, SamplingParams(8, 0.0))[0], fresh.generate(nxt, SamplingParams(8, 0.0))[0]
    np.testing.assert_array_equal(a.token_ids, b.token_ids)
    np.testing.assert_allclose(a.logprobs, b.logprobs, atol=1e-4)


def kv(n: int) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """Keys and values of n positions for a 4-layer, 2-head, 8-dim toy: 512 n bytes."""
    return [torch.zeros(2, n, 8) for _ in range(4)], [torch.zeros(2, n, 8) for _ in range(4)]


def test_store_keeps_the_budget_and_supersedes_prefixes():
    store = PrefixStore(budget_mb=1)
    store.put(list(range(100)), *kv(100))
    store.put(list(range(150)), *kv(150))  # extends the first: replaces it
    assert len(store.entries) == 1 and len(store.entries[0].ids) == 150
    for s in range(1, 40):  # 76,800 bytes each (150 x 2 x 8 x 4 layers x 2 x 4 B): 13 fit in 1 MB
        store.put([1000 + s] + list(range(149)), *kv(150))
    assert sum(e.nbytes for e in store.entries) <= 1 << 20
    assert [1000 + 39] == store.entries[-1].ids[:1].tolist()
    n, e = store.lookup([1000 + 39] + list(range(10)))
    assert n == 11 - 1 + 0 or n == 10  # all but the last prompt token
    assert store.lookup([999, 1, 2])[0] == 0


def test_a_looked_up_row_outlives_newer_unused_ones():
    """Least recently *used* goes first, wherever it sits in the list. (This crashed in a study's
    evaluation: evicting an entry that was not the first compared entries field by field, arrays included.)"""
    store = PrefixStore(budget_mb=1)
    for s in range(10):  # 76,800 bytes each (150 x 2 x 8 x 4 layers x 2 x 4 B): 13 fit in 1 MB
        store.put([1000 + s] + list(range(149)), *kv(150))
    assert store.lookup([1000] + list(range(20)))[0] == 20  # the oldest row is used again
    for s in range(10, 20):
        store.put([1000 + s] + list(range(149)), *kv(150))
    firsts = [int(e.ids[0]) for e in store.entries]
    assert len(firsts) == 13 and 1000 in firsts and 1001 not in firsts  # the used one stayed, the next oldest went
    assert firsts[-1] == 1019 and sum(e.nbytes for e in store.entries) <= 1 << 20


@pytest.mark.slow
def test_real_model_episodes_are_the_same_with_kept_prefixes(smollm2):  # noqa: F811
    """SmolLM2 (Llama layout, grouped-query attention) through multi-turn lookup episodes, sampled:
    the same tokens and log-probs with and without the store, and the store was used."""
    from harnessrl.harness.base import make_harness
    from harnessrl.rollout.loop import RolloutItem, run_group
    from harnessrl.train.tasks import load_tasks

    tasks = load_tasks("lookup")[:2]
    runs = []
    for mb in (256, 0):
        lm = LMPolicy.from_config(LMConfig(model="smollm2-135m", temperature=1.0, max_new_tokens=16, prefix_cache_mb=mb))
        lm.reseed(7)
        items = [RolloutItem(make_harness(h), t, 3) for h in ("lookup-kv", "lookup-plain") for t in tasks]
        runs.append((lm, run_group(lm, items, key_prefix="e")))
    (kept, a), (_, b) = runs
    assert max(len(e.turns) for e in b) >= 2, "the check needs multi-turn episodes"
    for x, y in zip(a, b):
        assert len(x.turns) == len(y.turns)
        for s, t in zip(x.turns, y.turns):
            np.testing.assert_array_equal(s.token_ids, t.token_ids)
            np.testing.assert_allclose(s.logprobs, t.logprobs, atol=1e-4)
    assert kept.engine.prefix.hits > 0 and kept.engine.prefix.reused_tokens > 0
