"""Per-episode random streams (policies/sampling.py): an episode's sample does not depend on its batch."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from harnessrl.policies.base import AgentState
from harnessrl.policies.generation import SamplingParams
from harnessrl.policies.lm import LMConfig, LMPolicy
from harnessrl.policies.sampling import RowSpec, stream_seed
from tests import tiny_lm

SYSTEM = {"role": "system", "content": "You are an agent. Reply with one command per turn."}
QUESTIONS = ["What color is the lamp?", "look box", "What color is the cup?", "look door answer red",
             "Result: nothing here.", "The key is blue.", "look lamp", "What size is the box?"]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return tiny_lm.build(tmp_path_factory.mktemp("lm"))


def _state(key: str, question: str, seed: int = 0) -> AgentState:
    return AgentState(messages=[SYSTEM, {"role": "user", "content": question}], harness_id="h", task_id="t", turn=0,
                      episode_key=key, seed=seed)


def _episode(policy: LMPolicy, batch: list[AgentState], target: int, turns: int = 2) -> list[list[int]]:
    """The target episode's generated tokens over `turns` calls, acting with the whole batch each call."""
    out = []
    for _ in range(turns):
        actions = policy.act(batch)
        for s, a in zip(batch, actions):
            s.messages = s.messages + [{"role": "assistant", "content": a.text}, {"role": "user", "content": "ok"}]
        a = actions[target]
        out.append(a.token_ids[a.loss_mask == 1].tolist())
    return out


def test_an_episode_samples_the_same_tokens_alone_and_inside_a_batch_of_eight(model_dir):
    policy = LMPolicy.from_config(LMConfig(model=str(model_dir), max_new_tokens=24, temperature=1.0))
    policy.reseed(11)
    alone = _episode(policy, [_state("job-3", QUESTIONS[3], seed=5)], 0)
    policy.reseed(11)
    batch = [_state(f"job-{i}", q, seed=5 if i == 3 else i) for i, q in enumerate(QUESTIONS)]
    together = _episode(policy, batch, 3)
    assert sum(len(t) for t in alone) >= 10  # sampled, not empty
    assert together == alone
    # the stream is the episode's: another key, seed or run seed samples something else
    policy.reseed(11)
    other_key = _episode(policy, [_state("job-4", QUESTIONS[3], seed=5)], 0)
    policy.reseed(12)
    other_run = _episode(policy, [_state("job-3", QUESTIONS[3], seed=5)], 0)
    assert other_key != alone and other_run != alone


def test_one_shared_generator_would_make_the_sample_depend_on_the_batch(model_dir):
    """What the per-row streams fix: the same prompt drawn from a single stream alone and in a batch."""
    policy = LMPolicy.from_config(LMConfig(model=str(model_dir), max_new_tokens=24, temperature=1.0))
    enc = policy.encoder
    prompts = [enc.encode_text(enc.render([SYSTEM, {"role": "user", "content": q}])) for q in QUESTIONS]
    params = policy.sampling
    alone = policy.engine.generate([prompts[3]], params, torch.Generator().manual_seed(1))[0].token_ids
    batched = policy.engine.generate(prompts, params, torch.Generator().manual_seed(1))[3].token_ids
    assert alone.tolist() != batched.tolist()
    rows = lambda idx: [RowSpec.for_call(1, f"job-{i}", 0, 0) for i in idx]  # noqa: E731
    alone = policy.engine.generate([prompts[3]], params, None, rows=rows([3]))[0].token_ids
    batched = policy.engine.generate(prompts, params, None, rows=rows(range(8)))[3].token_ids
    assert alone.tolist() == batched.tolist()


def test_a_row_cap_stops_that_row_only_and_keeps_its_stream(model_dir):
    policy = LMPolicy.from_config(LMConfig(model=str(model_dir), max_new_tokens=24, temperature=1.0))
    enc = policy.encoder
    prompts = [enc.encode_text(enc.render([SYSTEM, {"role": "user", "content": q}])) for q in QUESTIONS[:2]]
    # no stop tokens: every row runs to its budget, so the cap is what ends it
    params = SamplingParams(24, 1.0, 1.0, 0, ())
    free = policy.engine.generate(prompts, params, None, rows=[RowSpec.for_call(0, f"k{i}", 0, 0) for i in range(2)])
    capped = policy.engine.generate(prompts, params, None,
                                    rows=[RowSpec.for_call(0, "k0", 0, 0, max_new_tokens=5), RowSpec.for_call(0, "k1", 0, 0)])
    assert len(free[0].token_ids) == 24 and len(capped[0].token_ids) == 5 and not capped[0].finished
    assert capped[0].token_ids.tolist() == free[0].token_ids[:5].tolist()  # a prefix of the same draw
    assert capped[1].token_ids.tolist() == free[1].token_ids.tolist()
    np.testing.assert_allclose(capped[0].logprobs, free[0].logprobs[:5], atol=1e-5)


def test_stream_seeds_are_stable_and_distinct():
    assert stream_seed(0, "job-1", 0, 0) == stream_seed(0, "job-1", 0, 0)  # no per-process salt (blake2b)
    seeds = {stream_seed(r, k, s, c) for r in (0, 1) for k in ("job-1", "job-2") for s in (0, 1) for c in (0, 1)}
    assert len(seeds) == 16 and all(0 <= x < 2**63 for x in seeds)
