"""One GRPO step on a real model: harnessrl vs TRL's GRPOTrainer, same model, batch and settings.

Model: SmolLM2-135M-Instruct (`harnessrl models install smollm2-135m`), fp32 (`--precision bf16`: a bf16 base
on both sides), LoRA r=16
(alpha 32, no dropout, all linear layers) on both sides, the same tokenizer object, the same
torch thread count. Step: P prompts x G completions of N new tokens (fixed length: no stop on
our side, min_new_tokens on TRL's), temperature 1, full vocabulary, beta 0, GRPO loss (TRL's
loss_type="grpo": token mean per sequence, then mean over sequences) with the group-scaled
advantage, one optimizer step over the whole batch done as micro-batches of G rows
(TRL: per_device_train_batch_size=G, gradient_accumulation_steps=P).

Measures:
  1. whole step (generation + update): completion tokens / s (the headline ratio, target 1.5)
  2. loss parity: TRL's `compute_loss` and harnessrl's `policy_loss` on identical inputs with
     a ratio away from 1, |difference| (target <= 1e-4)

The TRL plumbing (reward, StepTimer, inputs for `compute_loss`) is shared with
benchmarks/grpo_update.py, the same comparison on a ~3M-parameter model.

    python benchmarks/real_lm_step.py [--prompts 8] [--group 8] [--new-tokens 128] [--steps 1]
    python benchmarks/real_lm_step.py --harness qwen_code   # real first-turn prompts of a coding harness

Prompts: by default eight short questions (~40 tokens each with the chat template). With
`--harness H` they are the first-turn conversations (system prompt with the tool docs, then the
task) of the first P code-v1 tasks in harness H, as an RL rollout would start them: 600-1,300
tokens. Either way every prompt is left-cut to the shortest one's length, so neither side pads.

The last line is one JSON object {"benchmark", "ours", "anchor", "unit", "ratio", "target", ...}.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
# benchmarks/miniwob.py would shadow the miniwob package the harness registry imports
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]
_spec = importlib.util.spec_from_file_location("grpo_update", HERE / "grpo_update.py")
gu = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gu)  # sets the offline environment before transformers is imported

import torch  # noqa: E402

PROMPTS = [
    "Question: what is the colour of the lamp in the hall? Look first, then answer in one word.",
    "Question: which file defines the harness base class? Read the tree, then answer with a path.",
    "Write a Python function leap(year) that returns True for leap years.",
    "Fix the bug: def mean(xs): return sum(xs) / len(xs) + 1",
    "Question: how many drawers does the desk have? Open each one and count.",
    "Explain in one sentence what a unit test is.",
    "Rename the variable tmp to total in: tmp = 0\nfor x in xs: tmp += x",
    "Question: is the door in the kitchen locked? Try it, then answer yes or no.",
]
LORA = dict(r=16, lora_alpha=32, lora_dropout=0.0, target_modules="all-linear", task_type="CAUSAL_LM")


def encode_left_cut(tok, conversations: list[list[dict[str, str]]]) -> list[list[int]]:
    """Each conversation rendered with the model's chat template (generation prompt added), then all
    left-cut to the shortest one's length: no prompt padding on either side (as grpo_update.py)."""
    texts = [tok.apply_chat_template(m, tokenize=False, add_generation_prompt=True) for m in conversations]
    ids = [tok(t, add_special_tokens=False)["input_ids"] for t in texts]
    L = min(len(p) for p in ids)
    return [p[-L:] for p in ids]


def chat_prompts(tok, n: int) -> list[list[int]]:
    """The first n short questions as one-message conversations."""
    return encode_left_cut(tok, [[{"role": "user", "content": p}] for p in PROMPTS[:n]])


def harness_prompts(tok, n: int, harness: str) -> list[list[int]]:
    """The first-turn conversations of the first n code-v1 tasks in `harness`, left-cut to one common length."""
    from harnessrl.harness.base import make_harness
    from harnessrl.rollout.envs import open_env
    from harnessrl.rollout.suites import load_suite

    h, conversations = make_harness(harness), []
    for task in list(load_suite("code-v1").tasks)[:n]:
        env = open_env(task, 0)
        try:
            conversations.append(h.open(task, env, 0).messages)
        finally:
            env.close()
    return encode_left_cut(tok, conversations)


def ours_setup(model: str, new: int, precision: str = "fp32"):
    from harnessrl.policies.lm import LMConfig, LMPolicy
    from harnessrl.train.agent import adamw

    policy = LMPolicy.from_config(LMConfig(model=model, lora_rank=16, lora_alpha=32, max_new_tokens=new,
                                             precision=precision))
    opt = adamw(policy.trainable_parameters(), lr=1e-5, weight_decay=0.0)
    return policy, opt, torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0)


def ours_step(policy, opt, sched, prompts: list[list[int]], G: int, new: int, gen: torch.Generator) -> int:
    from harnessrl.policies.generation import SamplingParams
    from harnessrl.rl.advantages import grpo_advantages
    from harnessrl.train import lm_update

    rows = [p for p in prompts for _ in range(G)]
    comps = policy.engine.generate(rows, SamplingParams(new, 1.0, stop_token_ids=()), gen)
    rewards = torch.tensor(gu.reward_fn([policy.tokenizer.decode(c.token_ids.tolist()) for c in comps]))
    adv = grpo_advantages(rewards, torch.arange(len(rows)) // G, len(prompts), eps=1e-4).advantages
    batch = gu.ours_batch(rows, [c.token_ids for c in comps])
    micro = G * int(batch.attention.sum(-1).max())  # G rows per backward pass, as TRL's micro-batches
    settings = lm_update.UpdateSettings(objective="grpo", clip=(0.2, 0.2), agg="seq-mean-token-mean", micro_tokens=micro)
    lm_update.update(policy, opt, sched, batch, lm_update.Scored(None, None, None, None), adv[:, None] * batch.mask,
                     settings, torch.Generator().manual_seed(0))
    return sum(len(c.token_ids) for c in comps)


def trl_trainer(model_dir: str, tok, prompts: list[list[int]], out: Path, G: int, new: int, steps: int,
                precision: str = "fp32"):
    from datasets import Dataset
    from peft import LoraConfig
    from transformers import AutoModelForCausalLM
    from trl import GRPOConfig, GRPOTrainer

    P = len(prompts)
    texts = [tok.decode(p) for p in prompts]
    ds = Dataset.from_dict({"prompt": [texts[i % P] for i in range(P * G * (steps + 1))]})
    args = GRPOConfig(
        output_dir=str(out), per_device_train_batch_size=G, gradient_accumulation_steps=P, num_generations=G,
        max_completion_length=new, learning_rate=1e-5, beta=0.0, bf16=precision == "bf16", fp16=False, use_cpu=True,
        gradient_checkpointing=False, report_to=[], save_strategy="no", logging_steps=10_000, max_steps=steps,
        temperature=1.0, top_p=1.0, top_k=0, seed=0, disable_tqdm=True, dataloader_num_workers=0, loss_type="grpo",
        epsilon=0.2, epsilon_high=0.2, generation_kwargs={"min_new_tokens": new}, shuffle_dataset=False,
        scale_rewards="group")
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.bfloat16 if precision == "bf16" else torch.float32)
    return GRPOTrainer(model=model, reward_funcs=gu.reward_fn, args=args, train_dataset=ds, processing_class=tok,
                       peft_config=LoraConfig(**LORA))


def loss_parity(policy, trainer, prompts: list[list[int]], G: int, new: int) -> float:
    """Both losses on identical inputs: the same completions, advantages and perturbed old log-probs."""
    from harnessrl.policies.generation import SamplingParams
    from harnessrl.policies.lm import token_logprobs
    from harnessrl.rl.losses import policy_loss

    gen = torch.Generator().manual_seed(5)
    rows = [p for p in prompts[:1] for _ in range(G)]
    comps = [c.token_ids for c in policy.engine.generate(rows, SamplingParams(min(new, 32), 1.0, stop_token_ids=()), gen)]
    adv = torch.randn(len(rows), generator=gen)
    batch = gu.ours_batch(rows, comps)
    trainer.model.load_state_dict(policy.model.state_dict())  # the same LoRA weights on both sides (strict)
    trainer.current_gradient_accumulation_steps = 1
    trainer.model.train()
    with torch.no_grad():
        lp = token_logprobs(trainer.model, batch.ids, batch.attention, batch.mask).logprobs
        old = (lp + torch.randn(lp.shape, generator=gen) * 0.3) * batch.mask
        P = len(rows[0])
        inputs = gu.trl_inputs(trainer, rows, comps, adv, old[:, P:P + len(comps[0])])
        inputs["num_items_in_batch"] = batch.mask.sum()
        trl_loss = float(trainer.compute_loss(trainer.model, inputs))
        ours = float(policy_loss("grpo", lp, old, adv[:, None] * batch.mask, batch.mask, clip_low=0.2, clip_high=0.2,
                                 agg="seq-mean-token-mean").loss)
    print(f"loss parity (GRPO, TRL loss_type=grpo = seq-mean-token-mean): ours {ours:.8f} TRL {trl_loss:.8f} "
          f"|diff| {abs(ours - trl_loss):.2e}",
          file=sys.stderr)
    return abs(ours - trl_loss)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--prompts", type=int, default=8)
    ap.add_argument("--group", type=int, default=8)
    ap.add_argument("--new-tokens", type=int, default=128)
    ap.add_argument("--steps", type=int, default=1, help="timed steps per side (after one warm-up step)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--clock", choices=("cpu", "wall"), default="cpu")
    ap.add_argument("--precision", choices=("fp32", "bf16"), default="fp32",
                    help="both sides: bf16 base weights (ours: precision=bf16; TRL: a bf16 model, bf16=True)")
    ap.add_argument("--harness", default=None, help="prompts: first turns of code-v1 tasks in this harness "
                                                     "(default: the short questions)")
    args = ap.parse_args()
    if args.clock == "wall":
        gu.CLOCK = time.perf_counter
    torch.set_num_threads(args.threads)
    import transformers

    from harnessrl.models import resolve

    transformers.utils.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()
    P, G, new = args.prompts, args.group, args.new_tokens
    policy, opt, sched = ours_setup(args.model, new, args.precision)
    tok = policy.tokenizer
    prompts = harness_prompts(tok, P, args.harness) if args.harness else chat_prompts(tok, P)
    print(f"{args.model}: LoRA r=16, {P} prompts x {G} completions x {new} new tokens, prompt {len(prompts[0])} tokens, "
          f"{args.precision}, {args.threads} thread(s), {args.clock} clock", file=sys.stderr)
    gen = torch.Generator().manual_seed(0)
    ours_step(policy, opt, sched, prompts, G, new, gen)  # warm-up
    ours_t = []
    for _ in range(args.steps):
        t0 = gu.CLOCK()
        n = ours_step(policy, opt, sched, prompts, G, new, gen)
        ours_t.append(n / (gu.CLOCK() - t0))
    trainer = trl_trainer(resolve(args.model), tok, prompts, Path(tempfile.mkdtemp(prefix="real-step-")), G, new,
                          args.steps + 1, args.precision)
    timer = gu.StepTimer()
    trainer.add_callback(timer.callback)
    trainer.train()
    trl_t = [P * G * new / t for t in timer.times[1:]]
    o, a = statistics.median(ours_t), statistics.median(trl_t)
    print(f"whole step: ours {o:.2f} tok/s, TRL {a:.2f} tok/s, x{o / a:.2f}", file=sys.stderr)
    parity = loss_parity(policy, trainer, prompts, G, new)
    print(json.dumps({"benchmark": "real_lm_grpo_step", "ours": round(o, 3), "anchor": round(a, 3),
                      "unit": "completion tokens/s", "ratio": round(o / a, 3), "target": 1.5,
                      "loss_parity": parity, "loss_parity_target": 1e-4, "model": args.model, "prompts": P, "group": G,
                      "new_tokens": new, "prompt_tokens": len(prompts[0]), "harness": args.harness, "lora_rank": 16,
                      "steps": args.steps, "threads": args.threads, "clock": args.clock,
                      "precision": args.precision}))


if __name__ == "__main__":
    main()
