"""LMPolicy: tiny model round trip, batched generation, log-prob recomputation, incremental chat
encoding (and its rewrite path), token budget, LoRA reference and PEFT save/load, bad input."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from harnessrl.config import ConfigError
from harnessrl.policies.base import AgentState
from harnessrl.policies.chat import ChatEncoder, EpisodeContext
from harnessrl.policies.generation import SamplingParams
from harnessrl.policies.lm import LMConfig, LMPolicy, load_tokenizer, token_logprobs
from tests import tiny_lm

SYSTEM = {"role": "system", "content": "You are an agent. Reply with one command per turn."}


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return tiny_lm.build(tmp_path_factory.mktemp("lm"))


def policy(model_dir, **kw) -> LMPolicy:
    return LMPolicy.from_config(LMConfig(model=str(model_dir), **kw))


def state(key: str, messages, turn: int = 0) -> AgentState:
    return AgentState(messages=messages, harness_id="h", task_id="t", turn=turn, episode_key=key)


def score(pol: LMPolicy, ids: np.ndarray, mask: np.ndarray, temperature: float = 1.0) -> np.ndarray:
    t = torch.as_tensor(ids[None].astype(np.int64))
    lp = token_logprobs(pol.model, t, torch.ones_like(t), torch.as_tensor(mask[None].astype(np.int64)), temperature).logprobs
    return lp[0].detach().numpy()


def test_tiny_model_reloads_with_its_own_tokenizer(model_dir):
    from transformers import AutoModelForCausalLM, PreTrainedTokenizerFast

    tok = load_tokenizer(str(model_dir))
    assert type(tok) is PreTrainedTokenizerFast or isinstance(tok, PreTrainedTokenizerFast)
    assert json.loads((model_dir / "tokenizer_config.json").read_text())["tokenizer_class"] == "PreTrainedTokenizerFast"
    text = tok.apply_chat_template([SYSTEM, {"role": "user", "content": "hi"}], tokenize=False, add_generation_prompt=True)
    assert text.endswith("<|im_start|>assistant\n")
    model = AutoModelForCausalLM.from_pretrained(model_dir)
    assert model.config.vocab_size == len(tok) and model.config.model_type == "qwen2"
    assert 50_000 < sum(p.numel() for p in model.parameters()) < 5_000_000


def test_batched_generation_matches_one_at_a_time(model_dir):
    pol = policy(model_dir, temperature=0.0, max_new_tokens=12)
    prompts = [[5, 9, 13, 40], [7, 8], [5, 9, 13, 40], [100, 3, 2, 1, 50, 60]]
    params = SamplingParams(12, 0.0, stop_token_ids=pol.stop_token_ids)
    batched = pol.engine.generate(prompts, params)
    for p, b in zip(prompts, batched):
        single = pol.engine.generate([p], params)[0]
        np.testing.assert_array_equal(single.token_ids, b.token_ids)
        np.testing.assert_allclose(single.logprobs, b.logprobs, atol=1e-4)


def test_behaviour_logprobs_are_full_distribution_at_temperature(model_dir):
    """top-k restricts sampling but the recorded log-probs are the untruncated tempered ones."""
    pol = policy(model_dir, temperature=0.7, top_k=3, max_new_tokens=16)
    pol.reseed(1)
    acts = pol.act([state(str(i), [SYSTEM, {"role": "user", "content": "What color is the lamp?"}]) for i in range(4)])
    for a in acts:
        m = a.loss_mask == 1
        assert m.sum() > 0 and a.info["temperature"] == 0.7
        np.testing.assert_allclose(score(pol, a.token_ids, a.loss_mask, 0.7)[m], a.logprobs[m], atol=1e-4)
        assert not np.allclose(score(pol, a.token_ids, a.loss_mask, 1.0)[m], a.logprobs[m], atol=1e-3)
        # every sampled token is among the 3 most likely at its position
        t = torch.as_tensor(a.token_ids[None].astype(np.int64))
        logits = pol.model(input_ids=t).logits[0].detach()
        for pos in np.flatnonzero(m):
            assert a.token_ids[pos] in torch.topk(logits[pos - 1], 3).indices.tolist()


def test_sampling_is_reproducible_under_reseed(model_dir):
    pol = policy(model_dir, max_new_tokens=10)
    msgs = [SYSTEM, {"role": "user", "content": "look"}]
    pol.reseed(7)
    a = [x.token_ids for x in pol.act([state(str(i), list(msgs)) for i in range(3)])]
    pol.reseed(7)
    b = [x.token_ids for x in pol.act([state(str(i), list(msgs)) for i in range(3)])]
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)


def run_turns(pol: LMPolicy, observations: list[str], key: str = "e"):
    """Play a conversation: the policy answers, the 'harness' appends its text and the next observation."""
    messages = [SYSTEM, {"role": "user", "content": observations[0]}]
    s = state(key, messages)
    actions = []
    for obs in observations[1:]:
        a = pol.act([s])[0]
        actions.append(a)
        messages += [{"role": "assistant", "content": a.text}, {"role": "user", "content": obs}]
    actions.append(pol.act([s])[0])
    return s, messages, actions


def test_multi_turn_context_is_appended_not_retokenised(model_dir):
    pol = policy(model_dir, max_new_tokens=20)
    pol.reseed(3)
    s, messages, actions = run_turns(pol, ["What color is the lamp?", "The lamp is red.", "Result: nothing here."])
    ctx = s.cache["lm"]
    ids = np.concatenate([a.token_ids for a in actions])
    np.testing.assert_array_equal(ids, ctx.ids)  # turns concatenate to exactly the context
    # every generated token appears verbatim at its place; observation tokens are mask 0
    for a in actions:
        gen = a.token_ids[a.loss_mask == 1]
        assert len(gen) > 0 and np.all(a.logprobs[a.loss_mask == 0] == 0)
    assert actions[1].info["keep"] == len(actions[0].token_ids)
    # the context decodes to the template rendering of the conversation (+ the last generation)
    enc = pol.encoder
    rendered = enc.render(messages + [{"role": "assistant", "content": actions[-1].text}], add_generation_prompt=False)
    assert rendered.startswith(enc.decode(ctx.ids[: len(ids) - int(actions[-1].loss_mask.sum())]))


def test_history_rewrite_reencodes_from_first_changed_message_exactly(model_dir):
    """A harness collapses an old observation (as SWE-agent does): the context must equal the one an
    encoder would have built had the history always read that way, with earlier generated tokens kept."""
    pol = policy(model_dir, max_new_tokens=12)
    pol.reseed(5)
    obs = ["What color is the lamp?", "The lamp is red. " * 5, "The box is small.", "Result: nothing here."]
    s, messages, actions = run_turns(pol, obs)
    gens = [a.token_ids[a.loss_mask == 1].tolist() for a in actions]
    texts = [a.text for a in actions]
    before = list(s.cache["lm"].ids)

    collapsed = [dict(m) for m in messages]
    collapsed[3]["content"] = "(1 line omitted)"  # the second observation (message 3)
    enc = pol.encoder
    ctx = s.cache["lm"]
    # drop the last generation from the cache view: the harness rewrites before the next turn
    got = enc.update(ctx, collapsed + [{"role": "assistant", "content": texts[-1]}, {"role": "user", "content": "next"}])
    assert got.rewritten and 0 < got.keep < len(before)
    assert before[: got.keep] == got.ids[: got.keep]
    # generated tokens of turn 0 (before the change) survive verbatim
    first_gen_end = len(actions[0].token_ids)
    assert got.ids[:first_gen_end] == before[:first_gen_end] and got.keep >= first_gen_end

    # Reference: replay the same generated tokens on the collapsed history from the start.
    ref_ctx, ref_enc = EpisodeContext(), ChatEncoder(pol.tokenizer)
    final = collapsed + [{"role": "assistant", "content": texts[-1]}, {"role": "user", "content": "next"}]
    upto = [2, 4, 6, 8]  # message counts before each generation
    for n, g, t in zip(upto, gens, texts):
        ref_enc.update(ref_ctx, final[:n])
        stop = t != enc.decode(g)
        ref_enc.append_generated(ref_ctx, g, t + (enc.decode(g[-1:]) if stop else ""))
    ref = ref_enc.update(ref_ctx, final)
    assert got.ids == ref.ids
    assert enc.decode(got.ids).startswith(enc.decode(ref.ids[:10]))


def test_history_rewrite_through_act_is_recorded_as_a_reset(model_dir):
    pol = policy(model_dir, max_new_tokens=8)
    messages = [SYSTEM, {"role": "user", "content": "What color is the lamp?"}]
    s = state("k", messages)
    a0 = pol.act([s])[0]
    messages += [{"role": "assistant", "content": a0.text}, {"role": "user", "content": "The lamp is red."}]
    pol.act([s])
    messages[1] = {"role": "user", "content": "What size is the box?"}  # rewrite the first observation
    messages += [{"role": "assistant", "content": "x"}, {"role": "user", "content": "ok"}]
    a2 = pol.act([s])[0]
    assert a2.info["keep"] == 0  # the first message changed: everything is re-encoded
    pol.end_episode(s)
    assert pol.pop_resets("k") == [(2, 0)] and pol.pop_resets("k") == []


def test_teacher_forcing_records_a_history_rewrite_as_a_reset_too(model_dir):
    from harnessrl.policies.lm import TeacherForcing
    from harnessrl.policies.replay import Replay

    pol = TeacherForcing(Replay(["look lamp", "answer red", "answer blue"]), policy(model_dir))
    messages = [SYSTEM, {"role": "user", "content": "What color is the lamp?"}]
    s = state("t", messages)
    pol.act([s])
    messages += [{"role": "assistant", "content": "look lamp"}, {"role": "user", "content": "The lamp is red."}]
    pol.act([s])
    del messages[2:4]  # the program dropped a turn (as mini-swe-agent does after a format error)
    messages.append({"role": "user", "content": "Try again."})
    pol.act([s])
    pol.end_episode(s)
    assert [t for t, _ in pol.lm.pop_resets("t")] == [2]


def test_token_budget_stops_the_episode(model_dir):
    pol = policy(model_dir, max_new_tokens=30, max_context_tokens=40)
    long = [SYSTEM, {"role": "user", "content": "The lamp is red. " * 30}]
    a = pol.act([state("a", long)])[0]
    assert a.info.get("stop") == "token_limit" and a.loss_mask.sum() == 0
    short = [{"role": "user", "content": "hi"}]
    b = pol.act([state("b", short)])[0]
    assert b.prompt_tokens + int(b.loss_mask.sum()) <= 40


def test_lora_reference_is_the_base_model_and_adapter_round_trips(model_dir, tmp_path):
    pol = policy(model_dir, lora_rank=4, lora_alpha=8)
    assert pol.is_lora
    base = policy(model_dir)
    ids = np.array([5, 9, 13, 40, 41, 42, 43], np.int64)
    mask = np.array([0, 0, 0, 1, 1, 1, 1], np.int64)
    np.testing.assert_allclose(score(pol, ids, mask), score(base, ids, mask), atol=1e-6)  # B=0 at init
    with torch.no_grad():
        for name, p in pol.model.named_parameters():
            if "lora_B" in name:
                p.normal_(0, 0.5)
    changed = score(pol, ids, mask)
    assert np.abs(changed - score(base, ids, mask)).max() > 1e-3
    with pol.reference() as ref:
        t = torch.as_tensor(ids[None])
        lp = token_logprobs(ref, t, torch.ones_like(t), torch.as_tensor(mask[None])).logprobs
    np.testing.assert_allclose(lp[0].detach().numpy(), score(base, ids, mask), atol=1e-6)
    assert len(pol.trainable_parameters()) > 0 and all("lora" in n for n, p in pol.model.named_parameters() if p.requires_grad)

    out = pol.save(tmp_path / "adapter")
    assert (out / "adapter_config.json").exists() and not (out / "config.json").exists()
    again = LMPolicy.from_config(LMConfig(model=str(model_dir), adapter=str(out)))
    np.testing.assert_allclose(score(again, ids, mask), changed, atol=1e-6)


def test_bad_model_path_is_a_clear_error(tmp_path):
    with pytest.raises(ConfigError, match="no such directory"):
        LMPolicy.from_config(LMConfig(model=str(tmp_path / "nope")))
    with pytest.raises(ConfigError, match="no config.json"):
        LMPolicy.from_config(LMConfig(model=str(tmp_path)))


def test_tokenizer_without_chat_template_is_a_clear_error(model_dir, tmp_path):
    import shutil

    bad = tmp_path / "nochat"
    shutil.copytree(model_dir, bad)
    cfg = json.loads((bad / "tokenizer_config.json").read_text())
    cfg.pop("chat_template", None)
    (bad / "tokenizer_config.json").write_text(json.dumps(cfg))
    for extra in ("chat_template.jinja", "chat_template.json"):
        (bad / extra).unlink(missing_ok=True)
    with pytest.raises(ConfigError, match="no chat template"):
        LMPolicy.from_config(LMConfig(model=str(bad)))


def test_shared_prefix_scoring_gives_the_same_values_and_gradients(model_dir):
    """Rows sharing a prompt run it once; log-probs, entropy and gradients equal the plain pass."""
    pol = policy(model_dir)
    g = torch.Generator().manual_seed(0)
    prompt_a, prompt_b = torch.randint(5, 300, (7,), generator=g), torch.randint(5, 300, (4,), generator=g)
    rows, masks = [], []
    for prompt, n_gen, obs in ((prompt_a, 5, 0), (prompt_a, 3, 2), (prompt_a, 6, 0), (prompt_b, 4, 3), (prompt_b, 2, 0)):
        gen = torch.randint(5, 300, (n_gen,), generator=g)
        tail = torch.randint(5, 300, (obs,), generator=g)  # a later observation (mask 0) and one more generated token
        extra = torch.randint(5, 300, (1,), generator=g) if obs else torch.zeros(0, dtype=torch.long)
        rows.append(torch.cat([prompt, gen, tail, extra]))
        masks.append(torch.cat([torch.zeros(len(prompt)), torch.ones(n_gen), torch.zeros(obs), torch.ones(len(extra))]))
    T = max(len(r) for r in rows)
    ids = torch.zeros(len(rows), T, dtype=torch.long)
    attn, mask = torch.zeros_like(ids), torch.zeros(len(rows), T)
    for b, (r, m) in enumerate(zip(rows, masks)):
        ids[b, :len(r)], attn[b, :len(r)], mask[b, :len(r)] = r, 1, m

    def run(share):
        pol.model.zero_grad()
        s = token_logprobs(pol.model, ids, attn, mask, 0.8, with_entropy=True, share_prefix=share)
        ((s.logprobs * mask).sum() / mask.sum()).backward()
        grads = [p.grad.clone() for p in pol.model.parameters() if p.grad is not None]
        return s.logprobs.detach(), s.entropy, grads

    plain, shared = run(False), run(True)
    torch.testing.assert_close(shared[0], plain[0], atol=2e-5, rtol=0)
    torch.testing.assert_close(shared[1], plain[1], atol=2e-5, rtol=0)
    assert len(shared[2]) == len(plain[2])
    for a, b in zip(shared[2], plain[2]):
        torch.testing.assert_close(a, b, atol=2e-5, rtol=1e-4)
    assert (plain[0][mask == 0] == 0).all() and (plain[0][mask == 1] < 0).all()


@pytest.mark.parametrize("lora,head_block", [(0, 1024), (4, 1024), (4, 16)])
def test_lean_decoder_matches_the_transformers_forward(model_dir, lora, head_block, monkeypatch):
    """The engine's fast path (preallocated cache + lean decode step) against plain transformers calls;
    head_block=16 runs the tiny model's LM head in vocabulary blocks, as a real model's is."""
    from harnessrl.policies import decode
    from harnessrl.policies.generation import HFEngine

    monkeypatch.setattr(decode, "HEAD_BLOCK", head_block)
    pol = policy(model_dir, lora_rank=lora)
    if lora:
        with torch.no_grad():
            for name, p in pol.model.named_parameters():
                if "lora_B" in name:
                    p.normal_(0, 0.3)
    fast = pol.engine
    assert fast.lean is not None and fast.preallocate
    slow = HFEngine(pol.model, pol.pad_token_id, preallocate=False, lean=False)
    prompts = [[5, 9, 13, 40, 41], [7, 8], [5, 9, 13, 40, 41], [100, 3, 2, 1, 50, 60, 61]]
    for params in (SamplingParams(16, 0.0, stop_token_ids=pol.stop_token_ids), SamplingParams(16, 1.0)):
        a = fast.generate(prompts, params, torch.Generator().manual_seed(3))
        b = slow.generate(prompts, params, torch.Generator().manual_seed(3))
        for x, y in zip(a, b):
            np.testing.assert_array_equal(x.token_ids, y.token_ids)
            np.testing.assert_allclose(x.logprobs, y.logprobs, atol=1e-4)
            assert x.finished == y.finished


def test_blocked_lm_head_equals_the_linear_head_and_leaves_other_heads_alone():
    from harnessrl.policies.decode import HEAD_BLOCK, lm_head_logits

    g = torch.Generator().manual_seed(0)
    head = torch.nn.Linear(64, 5 * HEAD_BLOCK + 123, bias=False)  # a ragged last block
    with torch.no_grad():
        head.weight.copy_(torch.randn(head.weight.shape, generator=g) * 0.1)
    x = torch.randn(7, 64, generator=g)
    out = lm_head_logits(head, x)
    assert out.shape == (7, 5 * HEAD_BLOCK + 123)
    torch.testing.assert_close(out, head(x), atol=1e-5, rtol=1e-5)
    calls = []
    biased = torch.nn.Linear(64, 4 * HEAD_BLOCK)
    biased.register_forward_hook(lambda m, i, o: calls.append(o))
    torch.testing.assert_close(lm_head_logits(biased, x), biased(x))
    assert len(calls) == 2  # a head with a bias is called as a module, not multiplied in blocks
