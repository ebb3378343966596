"""Sequences that stop early leave the batch by in-place compaction: the same tokens and log-probs
as generating each prompt alone, no cache copy per stop, and the sampling stream unchanged."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from harnessrl.policies.generation import SamplingParams
from harnessrl.policies.lm import LMConfig, LMPolicy
from tests import tiny_lm


@pytest.fixture(scope="module")
def pol(tmp_path_factory):
    return LMPolicy.from_config(LMConfig(model=str(tiny_lm.build(tmp_path_factory.mktemp("gen")))))


def _prompts():
    return [[5, 9, 13, 40], [7, 8], [100, 3, 2, 1, 50, 60], [11, 12, 13], [40, 41, 42, 43, 44], [9], [60, 61], [30, 31, 32]]


def test_rows_stopping_at_different_steps_match_one_at_a_time(pol):
    prompts = _prompts()
    free = pol.engine.generate(prompts, SamplingParams(20, 0.0, stop_token_ids=()))
    # stop tokens that end the greedy continuations at different steps
    stops = tuple(sorted({int(c.token_ids[k]) for c, k in zip(free, (2, 5, 9, 14))}))
    params = SamplingParams(20, 0.0, stop_token_ids=stops)
    batched = pol.engine.generate(prompts, params)
    lengths = [len(c.token_ids) for c in batched]
    assert len(set(lengths)) >= 3 and min(lengths) < 20  # rows really stopped at different steps
    for p, b in zip(prompts, batched):
        single = pol.engine.generate([p], params)[0]
        np.testing.assert_array_equal(single.token_ids, b.token_ids)
        np.testing.assert_allclose(single.logprobs, b.logprobs, atol=1e-4)
        assert single.finished == b.finished == (int(b.token_ids[-1]) in stops)


def test_stops_compact_the_cache_a_few_times_instead_of_copying_it_each_time(pol, monkeypatch):
    """The old engine re-indexed the whole preallocated buffer (capacity included) at every stop."""
    from harnessrl.policies.generation import preallocated_layer

    cls = preallocated_layer()
    calls = {"select": 0, "compact": 0}
    select, compact = cls.batch_select_indices, cls.compact

    def counting_select(self, indices):
        calls["select"] += 1
        return select(self, indices)

    def counting_compact(self, keep):
        calls["compact"] += 1
        return compact(self, keep)

    monkeypatch.setattr(cls, "batch_select_indices", counting_select)
    monkeypatch.setattr(cls, "compact", counting_compact)
    prompts = [[5, 9, 13, 40]] * 8
    free = pol.engine.generate(prompts, SamplingParams(24, 1.0, stop_token_ids=()), torch.Generator().manual_seed(0))
    stops = tuple(sorted({int(c.token_ids[k]) for c, k in zip(free, range(1, 16, 2))}))
    calls.update(select=0, compact=0)
    out = pol.engine.generate(prompts, SamplingParams(24, 1.0, stop_token_ids=stops), torch.Generator().manual_seed(0))
    n_stops = sum(c.finished for c in out)
    layers = pol.model.config.num_hidden_layers
    assert n_stops >= 4
    assert calls["select"] == layers  # once: the shared prefill repeated to the 8 rows
    assert 0 < calls["compact"] <= 3 * layers  # at most log2(8) halvings, however many rows stop


def test_sampling_stream_is_unchanged_by_stopped_rows(pol):
    """Stopped rows draw no random numbers: with stops, each row's tokens before its stop equal
    the tokens of the same seed without stops, as long as no earlier row has stopped."""
    prompts = [[5, 9, 13, 40]] * 4
    g = lambda: torch.Generator().manual_seed(7)  # noqa: E731
    free = pol.engine.generate(prompts, SamplingParams(16, 1.0, stop_token_ids=()), g())
    stop = int(free[0].token_ids[6])
    out = pol.engine.generate(prompts, SamplingParams(16, 1.0, stop_token_ids=(stop,)), g())
    end = min(len(c.token_ids) for c in out)
    for a, b in zip(free, out):
        np.testing.assert_array_equal(a.token_ids[:end], b.token_ids[:end])
    assert end <= 7


def test_decode_steps_run_on_one_thread_and_the_setting_comes_back(pol):
    """Decode steps use `decode_threads` (1) on CPU, prefill keeps the process's threads, and the
    tokens are those of a decode on the process's threads (generation.cpu_threads)."""
    seen: list[int] = []
    hook = pol.model.get_output_embeddings().register_forward_hook(lambda *a: seen.append(torch.get_num_threads()))
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        params = SamplingParams(6, 0.0, stop_token_ids=())
        pol.engine.decode_threads = 1
        one = pol.engine.generate(_prompts()[:3], params)
        assert seen[0] == 2 and set(seen[1:]) == {1} and len(seen) == 6  # prefill, then 5 decode steps
        assert torch.get_num_threads() == 2
        seen.clear()
        pol.engine.decode_threads = None
        both = pol.engine.generate(_prompts()[:3], params)
        assert set(seen) == {2}
    finally:
        hook.remove()
        pol.engine.decode_threads = 1
        torch.set_num_threads(before)
    for a, b in zip(one, both):
        np.testing.assert_array_equal(a.token_ids, b.token_ids)
        np.testing.assert_allclose(a.logprobs, b.logprobs, atol=1e-5)
