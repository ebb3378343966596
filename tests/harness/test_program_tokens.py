"""Token-exact records of a program's calls, with a real (tiny) LM behind the gateway.

The tiny LM answers the program's calls; its replies are noise, which the program handles
itself. What is checked is the record: every call's prompt ids decode to exactly the call's
conversation rendered with the model's own chat template, the mask-1 tokens are the tokens the
gateway sampled (their count is what the program was told in `usage`), and the calls of an
episode that extend each other form one row (no context restart).
"""

from __future__ import annotations

import copy
import os

import numpy as np
import pytest

from harnessrl.harness._program_wire import to_reply, to_text
from harnessrl.policies.base import Policy
from harnessrl.policies.lm import LMConfig, LMPolicy
from harnessrl.policies.tiny import build_tiny_lm
from harnessrl.rollout.loop import RolloutItem, run_group
from harnessrl.rollout.suites import load_suite
from harnessrl.tasks.sandbox import bwrap_path
from harnessrl.train.token_check import check_rows
from tests import tiny_lm
from tests.harness.test_program import harness


class Recording(Policy):
    """Delegates to an LM and keeps the conversation of every call it answered."""

    def __init__(self, lm: LMPolicy):
        self.lm, self.seen, self.policy_id = lm, [], lm.policy_id

    def act(self, states):
        self.seen.append([copy.deepcopy(s.messages) for s in states])
        return self.lm.act(states)

    def end_episode(self, state):
        self.lm.end_episode(state)


@pytest.mark.sandbox
@pytest.mark.skipif(bwrap_path() is None or os.geteuid() != 0, reason="needs bubblewrap and root")
def test_every_call_is_recorded_token_exact(tmp_path):
    path = build_tiny_lm(tmp_path / "lm", tiny_lm.corpus(), size="micro", vocab_size=400, max_positions=8192)
    lm = LMPolicy.from_config(LMConfig(model=str(path), max_new_tokens=24, temperature=1.0))
    policy = Recording(lm)
    task = list(load_suite("code-v1").tasks)[0]
    ep = run_group(policy, [RolloutItem(harness(), task, 0)])[0]
    calls = ep.metadata["calls"]
    assert len(calls) == len(ep.turns) >= 3  # three unparseable replies end the program
    assert ep.metadata["stop_reason"] == "program exited (0)"
    ids = np.concatenate([t.token_ids for t in ep.turns])
    mask = np.concatenate([t.loss_mask for t in ep.turns])
    ends = np.cumsum([len(t.token_ids) for t in ep.turns])
    for i, (turn, call) in enumerate(zip(ep.turns, calls)):
        n_gen = int(turn.loss_mask.sum())
        assert n_gen == call["completion_tokens"] > 0
        assert (turn.loss_mask[len(turn.loss_mask) - n_gen:] == 1).all() and (turn.logprobs[turn.loss_mask == 1] < 0).all()
        prompt = ids[:ends[i] - n_gen]
        assert call["prompt_tokens"] == len(prompt)
        rendered = lm.encoder.render(policy.seen[i][0], add_generation_prompt=True)
        assert lm.encoder.decode(prompt.tolist()) == rendered  # the call, through the model's own template
    assert lm.pop_resets("0") == []  # every call extended the one before: one row
    assert int(mask.sum()) == sum(c["completion_tokens"] for c in calls)
    assert all(c["used"] == {"temperature": 1.0, "max_new_tokens": 24} for c in calls)
    # the stored row, teacher-forced: the recorded log-probs are the model's, every mask-1 token was sampled
    report = check_rows(lm, [ep])
    assert report["max_abs_diff"] <= 1e-4 and report["unsampled"] == 0 and report["rows"] == 1
    assert report["tokens"] == int(mask.sum())
    assert report["programs"]["mini-swe-agent"] == {"calls": len(calls), "merged": len(calls) - 1,
                                                    "spliced": report["programs"]["mini-swe-agent"]["spliced"], "split": 0}
    # and the check can fail: a log-prob off by 1e-3, a token the gateway never sampled
    ep.turns[1].logprobs[ep.turns[1].loss_mask == 1] += 1e-3
    ep.metadata["calls"][2]["completion_tokens"] += 1
    bad = check_rows(lm, [ep])
    assert bad["max_abs_diff"] > 5e-4 and bad["unsampled"] == 1


TOOLS = [{"type": "function", "function": {"name": "bash", "parameters": {"type": "object"}}}]


def test_tools_render_hermes_style_and_a_tool_call_comes_back_as_its_sampled_text():
    issued: dict[str, str] = {}
    request = {"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "list files"}],
               "tools": TOOLS}
    text = to_text(request, issued)
    assert text[0]["content"].startswith("Be brief.") and '<tools>\n{"name": "bash"' in text[0]["content"]
    sampled = 'Listing.\n<tool_call>\n{"name":"bash",  "arguments": {"cmd": "ls"}}\n</tool_call>'
    reply, unparsed = to_reply(sampled, request, issued)
    assert not unparsed and reply.content == "Listing." and reply.finish_reason == "tool_calls"
    call = reply.tool_calls[0]
    assert call["function"] == {"name": "bash", "arguments": '{"cmd": "ls"}'}
    # the program sends the turn back with a tool result: the assistant text is what was sampled, token for token
    request["messages"] += [{"role": "assistant", "content": "Listing.", "tool_calls": [call]},
                            {"role": "tool", "tool_call_id": call["id"], "content": "a.py"},
                            {"role": "tool", "tool_call_id": call["id"], "content": "b.py"}]
    text = to_text(request, issued)
    assert text[2] == {"role": "assistant", "content": sampled}
    assert text[3] == {"role": "user", "content": "<tool_response>\na.py\n</tool_response>\n<tool_response>\nb.py\n</tool_response>"}
    # a history the program changed is rendered from its own fields
    request["messages"][2]["content"] = "Edited."
    assert to_text(request, issued)[2]["content"].startswith("Edited.\n<tool_call>\n")


@pytest.mark.parametrize("sampled", ['<tool_call>{"name": oops</tool_call>', '<tool_call>{"name": "rm", "arguments": {}}</tool_call>'])
def test_a_tool_call_that_does_not_parse_goes_back_as_content_and_is_counted(sampled):
    reply, unparsed = to_reply(sampled, {"messages": [], "tools": TOOLS}, {})
    assert unparsed and reply.content == sampled and reply.tool_calls == [] and reply.finish_reason == "stop"


CAPPED = os.path.join(os.path.dirname(__file__), "programs", "capped.py")


@pytest.mark.sandbox
@pytest.mark.skipif(bwrap_path() is None or os.geteuid() != 0, reason="needs bubblewrap and root")
def test_a_calls_max_tokens_and_stop_are_honoured_and_every_sampled_token_is_recorded(tmp_path):
    """The program asks for max_tokens=5, then stop strings, then sends the cut reply back."""
    import json

    from harnessrl.harness.base import load_spec, make_harness

    path = build_tiny_lm(tmp_path / "lm", tiny_lm.corpus(), size="micro", vocab_size=400, max_positions=8192)
    lm = LMPolicy.from_config(LMConfig(model=str(path), max_new_tokens=24, temperature=1.0))
    h = make_harness(load_spec("mini-swe-agent", ["options.program=script", f"options.script={CAPPED}"]))
    task = list(load_suite("code-v1").tasks)[0]
    ep = run_group(lm, [RolloutItem(h, task, 0)])[0]
    assert ep.metadata["stop_reason"] == "program exited (0)", ep.metadata["program_output"]
    seen = json.loads(ep.metadata["program_output"].strip().splitlines()[-1])
    calls, turns = ep.metadata["calls"], ep.turns
    assert len(calls) == len(turns) == 3
    # 1. max_tokens below the policy's 24: at most 5 tokens sampled, "length" when the cap ended it
    assert calls[0]["used"]["max_new_tokens"] == 5 and calls[0]["completion_tokens"] <= 5
    gen = turns[0].token_ids[turns[0].loss_mask == 1].tolist()
    ended = gen[-1] in lm.stop_token_ids  # the model closed its turn within the cap
    assert seen[0]["finish_reason"] == ("stop" if ended else "length") and (ended or len(gen) == 5)
    assert seen[0]["content"] == turns[0].action
    # 2. stop strings: the program reads the text up to the first of them; every sampled token is recorded
    full = turns[1].action
    cut = min(i for i in (full.find(s) for s in (" ", "e", "o", "a")) if i >= 0)
    assert seen[1] == {"content": full[:cut], "finish_reason": "stop"} and len(full) > cut
    assert calls[1]["finish_reason"] == "stop" and calls[1]["used"]["max_new_tokens"] == 24
    assert int(turns[1].loss_mask.sum()) == calls[1]["completion_tokens"] > 0
    # 3. the program sent the cut reply back: its history differs from what was sampled, a new row there
    resets = lm.pop_resets("0")
    assert [t for t, _ in resets] == [2]
    ep.metadata["context_resets"] = resets
    report = check_rows(lm, [ep])
    assert report["rows"] == 2 and report["unsampled"] == 0 and report["max_abs_diff"] <= 1e-4
    assert report["programs"]["mini-swe-agent"]["split"] == 1


@pytest.mark.sandbox
@pytest.mark.skipif(bwrap_path() is None or os.geteuid() != 0, reason="needs bubblewrap and root")
def test_demonstrations_through_max_tokens_and_stop_have_the_rows_an_lm_would_have(tmp_path):
    """TeacherForcing over the same program: a reply over the call's cap is cut at the cap (as the
    LM's sampling would be), a stop-cut reply splits the row, and every mask-1 token is the text's."""
    import json

    from harnessrl.harness.base import load_spec, make_harness
    from harnessrl.policies.lm import TeacherForcing
    from harnessrl.policies.replay import Replay

    path = build_tiny_lm(tmp_path / "lm", tiny_lm.corpus(), size="micro", vocab_size=400, max_positions=8192)
    lm = LMPolicy.from_config(LMConfig(model=str(path), max_new_tokens=24, temperature=1.0))
    replies = ["The lamp is red. look box answer blue. The cup is small.", "look door answer red", "answer blue"]
    policy = TeacherForcing(Replay(replies), lm)
    h = make_harness(load_spec("mini-swe-agent", ["options.program=script", f"options.script={CAPPED}"]))
    ep = run_group(policy, [RolloutItem(h, list(load_suite("code-v1").tasks)[0], 0)])[0]
    seen = json.loads(ep.metadata["program_output"].strip().splitlines()[-1])
    turns = ep.turns
    gen0 = turns[0].token_ids[turns[0].loss_mask == 1]
    assert len(gen0) == 5 and lm.stop_token_ids[0] not in gen0.tolist()  # cut at the call's cap, no end token
    assert seen[0] == {"content": lm.encoder.decode(gen0.tolist()), "finish_reason": "length"}
    assert replies[0].startswith(seen[0]["content"]) and len(seen[0]["content"]) < len(replies[0])
    assert seen[1] == {"content": "l", "finish_reason": "stop"}  # "look door ..." cut before its first "o"
    gen1 = turns[1].token_ids[turns[1].loss_mask == 1]
    assert lm.encoder.decode(gen1.tolist()) == replies[1] + "<|im_end|>"  # the whole reply stays in the record
    resets = lm.pop_resets("0")
    assert [t for t, _ in resets] == [2]
    ep.metadata["context_resets"] = resets
    report = check_rows(lm, [ep], recompute=False)
    assert report["rows"] == 2 and report["unsampled"] == 0
    assert report["programs"]["mini-swe-agent"]["split"] == 1
