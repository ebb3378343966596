"""GRPO step: harnessrl vs TRL's GRPOTrainer on the same tiny model, prompts and settings, in one run.

Measures (fp32, the same torch thread count, beta 0, no gradient checkpointing, 64-token
completions, 16 and 32 completions per step):
  1. whole training step (generation + update): completion tokens / s
  2. update alone, on identical prompt/completion tensors: completion tokens / s, and where
     the time goes (forward, backward, optimizer)
  3. loss parity: TRL's `_compute_loss` and harnessrl's losses on identical inputs with a
     ratio away from 1 (GRPO token-level, GSPO sequence-level), |difference| <= 1e-5
  4. harnessrl generation: one batched call for the group vs one call per completion

TRL traps handled: telemetry (HF_HUB_OFFLINE / HF_HUB_DISABLE_TELEMETRY), its CPU defaults
(bf16 and gradient checkpointing on: set off), and AutoTokenizer returning a different
tokenizer for a locally trained one (the same PreTrainedTokenizerFast is passed explicitly).

    python benchmarks/grpo_update.py [--steps 6] [--threads 1]

The last line is one JSON object: ours/anchor = whole-step tokens/s at 16 completions; the
other ratios are extra keys.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

for _k, _v in {"HF_HUB_OFFLINE": "1", "HF_HUB_DISABLE_TELEMETRY": "1", "TRANSFORMERS_OFFLINE": "1",
               "HF_DATASETS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false", "WANDB_DISABLED": "true",
               "DISABLE_MLFLOW_INTEGRATION": "TRUE", "TRL_EXPERIMENTAL_SILENCE": "1"}.items():
    os.environ.setdefault(_k, _v)

import numpy as np  # noqa: E402
import torch  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
#: The clock every measurement uses. process_time (CPU seconds of this process) by default: with one
#: torch thread it equals wall time on an idle machine and is not inflated by other work on a busy
#: one; --clock wall switches to time.perf_counter.
CLOCK = time.process_time
COMPLETION = 64
PROMPTS = [
    "Question: what is the colour of the lamp in the hall? Look first, then answer in one word.",
    "Question: which file defines the harness base class? Read the tree, then answer with a path.",
]


def build_model(root: Path) -> Path:
    """A ~3.5M-parameter Qwen2-style model; tokenizer trained on this repository's own source text."""
    from harnessrl.policies.tiny import build_tiny_lm

    corpus = [p.read_text(errors="ignore") for p in sorted((ROOT / "src").rglob("*.py"))] + PROMPTS
    return build_tiny_lm(root / "model", corpus, size="bench", vocab_size=4096, max_positions=512)


def reward_fn(completions, **_) -> list[float]:
    """Cheap, the same on both sides, and not constant (so advantages are not all zero)."""
    return [float(str(c).count("e") % 2) for c in completions]


# ----------------------------------------------------------------------------------------
# harnessrl side


def ours_setup(model_dir: Path):
    from harnessrl.policies.lm import LMConfig, LMPolicy

    policy = LMPolicy.from_config(LMConfig(model=str(model_dir), max_new_tokens=COMPLETION, temperature=1.0))
    from harnessrl.train.agent import adamw

    opt = adamw(policy.trainable_parameters(), lr=1e-5, weight_decay=0.0)  # what the trainer uses
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0)
    return policy, opt, sched


def ours_batch(prompt_ids: list[list[int]], completions: list[np.ndarray]):
    """Right-padded rows prompt + completion, loss mask on the completion."""
    from harnessrl.train.sequences import TokenBatch

    rows = [np.concatenate([np.asarray(p, np.int64), c.astype(np.int64)]) for p, c in zip(prompt_ids, completions)]
    B, T = len(rows), max(len(r) for r in rows)
    ids, attn, mask = torch.zeros(B, T, dtype=torch.long), torch.zeros(B, T, dtype=torch.long), torch.zeros(B, T)
    for b, (r, p) in enumerate(zip(rows, prompt_ids)):
        ids[b, :len(r)], attn[b, :len(r)] = torch.from_numpy(r), 1
        mask[b, len(p):len(r)] = 1
    return TokenBatch(ids, attn, mask, torch.zeros(B, T), torch.arange(B))


def ours_update(policy, opt, sched, batch, adv: torch.Tensor, objective: str = "grpo") -> dict:
    from harnessrl.train import lm_update

    scored = lm_update.Scored(None, None, None, None)  # one on-policy step: no separate pi_old pass
    tok_adv = adv[:, None] * batch.mask
    settings = lm_update.UpdateSettings(objective=objective, clip=(0.2, 0.2) if objective == "grpo" else (3e-4, 4e-4),
                                        agg="seq-mean-token-mean", micro_tokens=1 << 30)
    return lm_update.update(policy, opt, sched, batch, scored, tok_adv, settings, torch.Generator().manual_seed(0))


def ours_step(policy, opt, sched, prompt_ids: list[list[int]], G: int, gen: torch.Generator) -> int:
    """One GRPO step: generate G completions per prompt (one batch), reward, advantages, update."""
    from harnessrl.policies.generation import SamplingParams
    from harnessrl.rl.advantages import grpo_advantages

    prompts = [p for p in prompt_ids for _ in range(G)]
    comps = policy.engine.generate(prompts, SamplingParams(COMPLETION, 1.0, stop_token_ids=()), gen)
    texts = [policy.tokenizer.decode(c.token_ids.tolist()) for c in comps]
    rewards = torch.tensor(reward_fn(texts), dtype=torch.float32)
    index = torch.arange(len(prompts)) // G
    adv = grpo_advantages(rewards, index, len(prompt_ids), eps=1e-4).advantages
    ours_update(policy, opt, sched, ours_batch(prompts, [c.token_ids for c in comps]), adv)
    return sum(len(c.token_ids) for c in comps)


# ----------------------------------------------------------------------------------------
# TRL side


class StepTimer:
    """A TrainerCallback recording each optimizer step's wall time (generation included)."""

    def __init__(self):
        from transformers import TrainerCallback

        outer = self
        self.times: list[float] = []

        class CB(TrainerCallback):
            def on_step_begin(self, args, state, control, **kw):
                outer.t0 = CLOCK()

            def on_step_end(self, args, state, control, **kw):
                outer.times.append(CLOCK() - outer.t0)

        self.callback = CB()


def trl_trainer(model_dir: Path, tokenizer, out: Path, B: int, G: int, steps: int, loss_type: str = "grpo",
                level: str = "token"):
    from datasets import Dataset
    from transformers import AutoModelForCausalLM
    from trl import GRPOConfig, GRPOTrainer

    n_prompts = B // G
    ds = Dataset.from_dict({"prompt": [PROMPTS[i % n_prompts] for i in range(n_prompts * (steps + 2))]})
    args = GRPOConfig(
        output_dir=str(out), per_device_train_batch_size=B, num_generations=G, max_completion_length=COMPLETION,
        learning_rate=1e-5, beta=0.0, bf16=False, fp16=False, use_cpu=True, gradient_checkpointing=False,
        report_to=[], save_strategy="no", logging_steps=10_000, max_steps=steps, temperature=1.0, top_p=1.0,
        seed=0, disable_tqdm=True, dataloader_num_workers=0, loss_type=loss_type, importance_sampling_level=level,
        epsilon=0.2 if level == "token" else 3e-4, epsilon_high=0.2 if level == "token" else 4e-4,
        generation_kwargs={"min_new_tokens": COMPLETION}, shuffle_dataset=False, scale_rewards="group",
    )
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    return GRPOTrainer(model=model, reward_funcs=reward_fn, args=args, train_dataset=ds, processing_class=tokenizer)


def trl_inputs(trainer, prompt_ids: list[list[int]], completions: list[np.ndarray], adv: torch.Tensor, old=None) -> dict:
    """The dict `_compute_loss` reads: left-padded prompts (equal length here), right-padded completions."""
    P = max(len(p) for p in prompt_ids)
    pad = trainer.processing_class.pad_token_id
    p_ids = torch.tensor([[pad] * (P - len(p)) + list(p) for p in prompt_ids])
    p_mask = torch.tensor([[0] * (P - len(p)) + [1] * len(p) for p in prompt_ids])
    C = max(len(c) for c in completions)
    c_ids = torch.tensor([list(c) + [pad] * (C - len(c)) for c in completions])
    c_mask = torch.tensor([[1] * len(c) + [0] * (C - len(c)) for c in completions])
    inputs = {"prompt_ids": p_ids, "prompt_mask": p_mask, "completion_ids": c_ids, "completion_mask": c_mask,
              "advantages": adv, "num_items_in_batch": c_mask.sum().float()}
    if old is not None:
        inputs["old_per_token_logps"] = old
    return inputs


def trl_update(trainer, inputs) -> None:
    model = trainer.model
    model.train()
    loss = trainer.compute_loss(model, inputs)
    trainer.accelerator.backward(loss)
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    trainer.optimizer.step()
    trainer.optimizer.zero_grad(set_to_none=True)


# ----------------------------------------------------------------------------------------


def timed(fn, repeats: int) -> list[float]:
    out = []
    for _ in range(repeats):
        t0 = CLOCK()
        fn()
        out.append(CLOCK() - t0)
    return out


def profile_update(fn) -> dict[str, float]:
    """Self CPU time (ms) of the update's dominant operator groups."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        fn()
    groups = {"matmul": ("aten::mm", "aten::addmm", "aten::bmm", "aten::linear"),
              "attention": ("aten::_scaled_dot_product", "aten::scaled_dot_product"),
              "softmax/log-softmax": ("aten::_log_softmax", "aten::_softmax", "aten::log_softmax"),
              "optimizer": ("Optimizer.step", "aten::_foreach", "aten::addcdiv", "aten::lerp")}
    out = {k: 0.0 for k in groups}
    total = 0.0
    for e in prof.key_averages():
        total += e.self_cpu_time_total
        for k, names in groups.items():
            if e.key.startswith(names):
                out[k] += e.self_cpu_time_total
    out["other"] = total - sum(out.values())
    return {k: round(v / 1000, 1) for k, v in out.items()}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=8, help="timed whole steps per side (after 2 warm-up steps)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--clock", choices=("cpu", "wall"), default="cpu",
                    help="cpu: process CPU time (robust on a shared machine; 1 thread); wall: perf_counter")
    args = ap.parse_args()
    global CLOCK
    if args.clock == "wall":
        CLOCK = time.perf_counter
    torch.set_num_threads(args.threads)
    import transformers

    transformers.utils.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()
    tmp = Path(tempfile.mkdtemp(prefix="grpo-bench-"))
    model_dir = build_model(tmp)
    policy, opt, sched = ours_setup(model_dir)
    tok = policy.tokenizer  # the SAME tokenizer object on both sides (AutoTokenizer would differ)
    prompt_ids = [tok(p, add_special_tokens=False)["input_ids"] for p in PROMPTS]
    L = min(len(p) for p in prompt_ids)
    prompt_ids = [p[:L] for p in prompt_ids]  # equal lengths: no prompt padding on either side
    n_params = sum(p.numel() for p in policy.model.parameters())
    print(f"model: {n_params / 1e6:.2f}M parameters, vocab {len(tok)}, prompt {L} tokens, {args.threads} thread(s), "
          f"{args.clock} clock", file=sys.stderr)
    results: dict = {}

    # 1. whole step
    for B in (16, 32):
        G = 16
        gen = torch.Generator().manual_seed(0)
        ps = [prompt_ids[i % (B // G)] for i in range(B // G)]
        for _ in range(2):
            ours_step(policy, opt, sched, ps, G, gen)
        ours_t = timed(lambda: ours_step(policy, opt, sched, ps, G, gen), args.steps)
        trainer = trl_trainer(model_dir, tok, tmp / f"trl{B}", B, G, args.steps + 2)
        timer = StepTimer()
        trainer.add_callback(timer.callback)
        trainer.train()
        trl_t = timer.times[2:]
        ours_tps, trl_tps = B * COMPLETION / statistics.median(ours_t), B * COMPLETION / statistics.median(trl_t)
        results[f"step{B}"] = (ours_tps, trl_tps)
        print(f"whole step, {B} completions: ours {ours_tps:,.0f} tok/s ({statistics.median(ours_t):.3f} s), "
              f"TRL {trl_tps:,.0f} tok/s ({statistics.median(trl_t):.3f} s), x{ours_tps / trl_tps:.2f}", file=sys.stderr)

    # 2. update alone on identical tensors (16 completions of one prompt)
    B, G = 16, 16
    gen = torch.Generator().manual_seed(1)
    from harnessrl.policies.generation import SamplingParams

    prompts = [prompt_ids[0]] * B
    comps = [c.token_ids for c in policy.engine.generate(prompts, SamplingParams(COMPLETION, 1.0), gen)]
    adv = torch.randn(B, generator=gen)
    batch = ours_batch(prompts, comps)
    trainer = trl_trainer(model_dir, tok, tmp / "trl-upd", B, G, 1)
    trainer.create_optimizer()
    trainer.current_gradient_accumulation_steps = 1
    inputs = trl_inputs(trainer, prompts, comps, adv)
    for _ in range(2):
        ours_update(policy, opt, sched, batch, adv)
        trl_update(trainer, inputs)
    reps = max(5, args.steps)
    ours_u = statistics.median(timed(lambda: ours_update(policy, opt, sched, batch, adv), reps))
    trl_u = statistics.median(timed(lambda: trl_update(trainer, inputs), reps))
    results["update"] = (B * COMPLETION / ours_u, B * COMPLETION / trl_u)
    where_ours = profile_update(lambda: ours_update(policy, opt, sched, batch, adv))
    where_trl = profile_update(lambda: trl_update(trainer, inputs))
    print(f"update alone: ours {ours_u * 1000:.0f} ms, TRL {trl_u * 1000:.0f} ms, x{trl_u / ours_u:.2f}", file=sys.stderr)
    print(f"  where the time goes (self CPU ms) ours {where_ours}", file=sys.stderr)
    print(f"                                    TRL  {where_trl}", file=sys.stderr)

    # 3. loss parity on identical inputs, ratio away from 1 (old log-probs perturbed)
    from harnessrl.policies.lm import token_logprobs
    from harnessrl.rl.losses import policy_loss

    with torch.no_grad():
        lp = token_logprobs(trainer.model, batch.ids, batch.attention, batch.mask).logprobs
    noise = torch.randn(lp.shape, generator=gen) * 0.3
    old_tokens = (lp + noise) * batch.mask  # (B, T) aligned with our rows
    P = len(prompts[0])
    old_trl = old_tokens[:, P:P + COMPLETION]
    parity = {}
    for level, objective in (("token", "grpo"), ("sequence", "gspo")):
        t = trl_trainer(model_dir, tok, tmp / f"trl-par-{level}", B, G, 1, loss_type="grpo", level=level)
        t.current_gradient_accumulation_steps = 1
        t.model.load_state_dict(trainer.model.state_dict())
        t.model.train()
        with torch.no_grad():
            trl_loss = float(t.compute_loss(t.model, trl_inputs(t, prompts, comps, adv, old_trl)))
            cur = token_logprobs(t.model, batch.ids, batch.attention, batch.mask).logprobs
            clip = (0.2, 0.2) if objective == "grpo" else (3e-4, 4e-4)
            a = adv if objective == "gspo" else adv[:, None] * batch.mask
            ours_loss = float(policy_loss(objective, cur, old_tokens, a, batch.mask, clip_low=clip[0], clip_high=clip[1],
                                          agg="seq-mean-token-mean").loss)
        parity[objective] = abs(ours_loss - trl_loss)
        print(f"loss parity {objective}: ours {ours_loss:.8f} TRL {trl_loss:.8f} |diff| {parity[objective]:.2e}", file=sys.stderr)

    # 4. batched vs one-at-a-time generation (ours)
    params = SamplingParams(COMPLETION, 1.0, stop_token_ids=())
    one = [prompt_ids[0]] * 16
    policy.engine.generate(one, params, gen)
    t_batch = statistics.median(timed(lambda: policy.engine.generate(one, params, gen), 3))
    t_single = statistics.median(timed(lambda: [policy.engine.generate([p], params, gen) for p in one], 2))
    gen_ratio = t_single / t_batch
    print(f"generation, 16 x 64 tokens: batched {16 * COMPLETION / t_batch:,.0f} tok/s, one at a time "
          f"{16 * COMPLETION / t_single:,.0f} tok/s, x{gen_ratio:.2f}", file=sys.stderr)

    s16, s32, upd = results["step16"], results["step32"], results["update"]
    print(json.dumps({
        "benchmark": "grpo_step_16x64", "ours": round(s16[0], 1), "anchor": round(s16[1], 1), "unit": "completion tokens/s",
        "ratio": round(s16[0] / s16[1], 3), "target": 1.5,
        "step32_ours": round(s32[0], 1), "step32_anchor": round(s32[1], 1), "step32_ratio": round(s32[0] / s32[1], 3),
        "update_ours": round(upd[0], 1), "update_anchor": round(upd[1], 1), "update_ratio": round(upd[0] / upd[1], 3),
        "update_target": 1.5, "loss_parity_grpo": parity["grpo"], "loss_parity_gspo": parity["gspo"],
        "loss_parity_target": 1e-5, "batched_generation_ratio": round(gen_ratio, 3), "batched_generation_target": 4.0,
        "threads": args.threads, "clock": args.clock, "params": n_params,
    }))


if __name__ == "__main__":
    main()
