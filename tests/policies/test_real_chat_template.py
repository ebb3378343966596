"""SmolLM2-135M-Instruct's own chat template, exactly, over real multi-turn episodes.

The trainer trains on the token ids the policy acted on (turns concatenated, train/sequences.py).
Here, for real episodes of the real model through the lookup harnesses, those ids must equal a
fresh tokenisation of the whole conversation rendered with the model's chat template (no
template drift), with every generated token (its end-of-turn token included) unmasked and
every other token (system prompt, observations, template tags) masked.
"""

from __future__ import annotations

import numpy as np
import pytest

from harnessrl.harness.base import make_harness
from harnessrl.policies.base import Action, AgentState, Policy
from harnessrl.policies.lm import LMConfig, LMPolicy
from harnessrl.rollout.loop import RolloutItem, run_group
from harnessrl.train.sequences import build_batch, episode_rows
from harnessrl.train.tasks import load_tasks
from tests.real_model import smollm2  # noqa: F401  (fixture)


class Transcript(Policy):
    """Runs the LM and keeps each episode's final conversation as the harness holds it."""

    privileged = True  # a test recorder: it reads the harness's own conversation (the LM inside never looks)

    def __init__(self, lm: LMPolicy):
        self.lm, self.policy_id, self.final = lm, lm.policy_id, {}

    def act(self, states: list[AgentState]) -> list[Action]:
        return self.lm.act(states)

    def end_episode(self, state: AgentState) -> None:
        self.final[state.episode_key] = [dict(m) for m in state.privileged.session.messages]
        self.lm.end_episode(state)


@pytest.mark.slow
def test_trained_tokens_are_a_fresh_tokenisation_of_the_templated_conversation(smollm2):  # noqa: F811
    lm = LMPolicy.from_config(LMConfig(model="smollm2-135m", temperature=0.0, max_new_tokens=16))
    assert "<|im_start|>" in lm.tokenizer.chat_template  # the model's own template, not a stand-in
    rec = Transcript(lm)
    tasks = load_tasks("lookup")[:2]
    items = [RolloutItem(make_harness(h), t, 3) for h in ("lookup-kv", "lookup-plain") for t in tasks]
    episodes = run_group(rec, items, key_prefix="e")
    assert max(len(e.turns) for e in episodes) >= 2, "the check needs multi-turn episodes"
    tok = lm.tokenizer
    end = tok.convert_tokens_to_ids("<|im_end|>")
    for i, ep in enumerate(episodes):
        messages = rec.final[f"e{i}"]
        assistant = [j for j, m in enumerate(messages) if m["role"] == "assistant"]
        assert len(assistant) >= len(ep.turns) - 1 and not ep.metadata.get("context_resets")
        (row,) = episode_rows(ep)
        rendered = tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=False)
        fresh = tok(rendered, add_special_tokens=False)["input_ids"]
        # the row stops at the last generated token; after it come "\n" and the final observation, if any
        assert row.ids.tolist() == fresh[: len(row.ids)], f"template drift in episode {i}"
        tail = tok.decode(fresh[len(row.ids):])
        assert tail.startswith(("\n", "<|im_end|>\n")) and "<|im_start|>assistant" not in tail
        # generated spans from fresh tokenisations of each conversation prefix
        expected = np.zeros(len(row.ids), np.int8)
        for turn, j in zip(ep.turns, assistant):
            start = len(tok(tok.apply_chat_template(messages[:j], tokenize=False, add_generation_prompt=True),
                            add_special_tokens=False)["input_ids"])
            gen = tok(messages[j]["content"], add_special_tokens=False)["input_ids"]
            finished = turn.token_ids[turn.loss_mask == 1][-1] == end
            expected[start:start + len(gen) + int(finished)] = 1
            assert messages[j]["content"] == turn.action
        np.testing.assert_array_equal(row.mask, expected)
        assert row.mask.sum() == sum(int(t.loss_mask.sum()) for t in ep.turns) > 0
        gen_logps = np.concatenate([t.logprobs[t.loss_mask == 1] for t in ep.turns])
        assert (gen_logps <= 0).all() and (gen_logps < 0).any()
    batch = build_batch(episodes, lm.pad_token_id)
    assert int(batch.mask.sum()) == sum(int(t.loss_mask.sum()) for e in episodes for t in e.turns)
