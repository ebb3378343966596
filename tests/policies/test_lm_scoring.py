"""LMPolicy.score_replies: whole-reply log-probs for log-odds analyses."""

from __future__ import annotations

import numpy as np
import pytest

from harnessrl.policies.base import AgentState
from harnessrl.policies.lm import LMConfig, LMPolicy
from tests import tiny_lm

MESSAGES = [{"role": "system", "content": "Reply with one command."}, {"role": "user", "content": "What is the color of the box?"}]


@pytest.fixture(scope="module")
def pol(tmp_path_factory):
    return LMPolicy.from_config(LMConfig(model=str(tiny_lm.build(tmp_path_factory.mktemp("lm"))), max_new_tokens=8, temperature=1.0))


def test_score_equals_the_log_prob_of_sampling_that_reply(pol):
    """A finished sample's recorded log-prob equals the score of its text whenever the text re-encodes to
    the same tokens (generation may pick a non-canonical tokenisation; those are not comparable)."""
    checked = 0
    for seed in range(120):
        pol.reseed(seed)
        action = pol.act([AgentState(messages=MESSAGES, harness_id="h", task_id="t", turn=0, episode_key=f"k{seed}")])[0]
        gen = action.token_ids[action.loss_mask == 1]
        finished = action.info["finished"]
        if list(gen[:-1] if finished else gen) != pol.encoder.encode_text(action.text):
            continue
        recorded = float(action.logprobs[action.loss_mask == 1].sum())
        scored = pol.score_replies([MESSAGES], [action.text], with_end=finished)[0]
        assert scored == pytest.approx(recorded, abs=1e-4)
        checked += 1
    assert checked >= 3


def test_batch_order_and_padding_do_not_change_scores(pol):
    replies = ["look box", "answer red", "look the big lamp now please"]
    together = pol.score_replies([MESSAGES] * 3, replies)
    alone = np.array([pol.score_replies([MESSAGES], [r])[0] for r in replies])
    assert np.allclose(together, alone, atol=1e-5) and np.all(together < 0)
    assert np.allclose(pol.score_replies([MESSAGES] * 3, replies, reference=True), together, atol=1e-6)  # untrained: same weights
