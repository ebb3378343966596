"""Sampling a GRPO group on a real model: harnessrl's engine vs transformers `generate()`, one run.

Model: SmolLM2-135M-Instruct (`harnessrl models install smollm2-135m`), fp32, the same torch
thread count on both sides. Workload: G completions of one prompt (a GRPO group shares its
prompt), temperature 1, full vocabulary (top-k 0, top-p 1). Prompts are real harness prompts,
rendered with the model's chat template:

  * `aider` on code-v1/fix-leap-year (~590 tokens: what a coding harness opens with)
  * `lookup-kv` on a lookup task (~40 tokens: a short prompt)

and two stopping regimes: `fixed` (no stop token, every completion max_new_tokens long, the
same token count on both sides) and `eos` (the model's end-of-turn token stops a sequence,
so sequences finish at different steps). The engine also records each token's behaviour
log-prob; `generate()` is run without scores (the cheaper anchor).

Why the engine was no faster on this model: with a ~3M-parameter model most of a decode
step is Python bookkeeping, which the engine's lean decode step removes; at 135M
parameters a step is dominated by the matmuls of 30 layers and a 49k-word LM head, the same
arithmetic for both sides. What remains to win is work `generate()` repeats or wastes: it
prefills the shared prompt once per completion (G x the prompt's tokens), and keeps
finished rows in the batch. The engine prefills once and drops finished rows; this run
reports the prefill and decode shares so the ratio can be read against them.

    python benchmarks/generation.py [--group 8] [--new-tokens 128] [--repeats 3] [--threads 1]

The last line is one JSON object; ours/anchor = tokens/s on the aider prompt, fixed length.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

# benchmarks/miniwob.py would shadow the miniwob package that the suites import
sys.path = [p for p in sys.path if os.path.abspath(p or ".") != os.path.dirname(os.path.abspath(__file__))]
for _k, _v in {"HF_HUB_OFFLINE": "1", "HF_HUB_DISABLE_TELEMETRY": "1", "TRANSFORMERS_OFFLINE": "1",
               "TOKENIZERS_PARALLELISM": "false"}.items():
    os.environ.setdefault(_k, _v)

import torch  # noqa: E402

CLOCK = time.process_time  # CPU seconds of this process: robust on a shared machine with one thread


def harness_prompt(tokenizer, harness_id: str, suite: str, task: str | None) -> list[int]:
    from harnessrl.harness.base import make_harness
    from harnessrl.rollout.envs import open_env
    from harnessrl.train.tasks import load_tasks

    tasks = load_tasks(suite)
    t = next(x for x in tasks if getattr(x, "id", None) == task) if task else tasks[0]
    env = open_env(t, 0)
    try:
        messages = make_harness(harness_id).open(t, env, 0).messages
    finally:
        env.close()
    text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    return tokenizer(text, add_special_tokens=False)["input_ids"]


def ours(policy, prompt: list[int], G: int, new: int, stops: tuple[int, ...], seed: int) -> tuple[float, int]:
    from harnessrl.policies.generation import SamplingParams

    gen = torch.Generator().manual_seed(seed)
    t0 = CLOCK()
    comps = policy.engine.generate([prompt] * G, SamplingParams(new, 1.0, 1.0, 0, stops), gen)
    return CLOCK() - t0, sum(len(c.token_ids) for c in comps)


def anchor(model, prompt: list[int], G: int, new: int, eos: int | None, pad: int, seed: int) -> tuple[float, int]:
    ids = torch.tensor([prompt] * G)
    torch.manual_seed(seed)
    kw = dict(do_sample=True, temperature=1.0, top_k=0, top_p=1.0, max_new_tokens=new, pad_token_id=pad)
    kw.update({"eos_token_id": eos} if eos is not None else {"min_new_tokens": new})  # fixed: eos suppressed
    t0 = CLOCK()
    with torch.no_grad():
        out = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), **kw)
    dt = CLOCK() - t0
    comp = out[:, len(prompt):]
    if eos is None:
        return dt, int(comp.numel())
    # tokens up to and including the first eos of each row (what the engine counts)
    n = 0
    for row in comp.tolist():
        n += (row.index(eos) + 1) if eos in row else len(row)
    return dt, n


def prefill_seconds(model, prompt: list[int], rows: int) -> float:
    ids = torch.tensor([prompt] * rows)
    t0 = CLOCK()
    with torch.no_grad():
        model(input_ids=ids, use_cache=True, logits_to_keep=1)
    return CLOCK() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--group", type=int, default=8, help="completions per prompt (a GRPO group)")
    ap.add_argument("--new-tokens", type=int, default=128)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--clock", choices=("cpu", "wall"), default="cpu")
    ap.add_argument("--precision", choices=("fp32", "bf16"), default="fp32",
                    help="the weights both sides sample with (policies/precision.py)")
    args = ap.parse_args()
    global CLOCK
    if args.clock == "wall":
        CLOCK = time.perf_counter
    torch.set_num_threads(args.threads)
    from harnessrl.policies.lm import LMConfig, LMPolicy

    policy = LMPolicy.from_config(LMConfig(model=args.model, max_new_tokens=args.new_tokens, precision=args.precision))
    model, tok = policy.model, policy.tokenizer
    model.eval()
    G, new = args.group, args.new_tokens
    eos = policy.stop_token_ids[0]
    prompts = {"aider": harness_prompt(tok, "aider", "code-v1", "code-v1/fix-leap-year"),
               "lookup": harness_prompt(tok, "lookup-kv", "lookup", None)}
    print(f"{args.model}: {sum(p.numel() for p in model.parameters()) / 1e6:.1f}M parameters, group {G} x {new} new "
          f"tokens, {args.precision}, {args.threads} thread(s), {args.clock} clock; prompts {({k: len(v) for k, v in prompts.items()})}",
          file=sys.stderr)
    ours(policy, prompts["lookup"], 2, 4, (), 0)  # warm-up both paths
    anchor(model, prompts["lookup"], 2, 4, None, policy.pad_token_id, 0)
    rows: dict[str, dict] = {}
    for name, prompt in prompts.items():
        for regime, stops in (("fixed", ()), ("eos", (eos,))):
            o = [ours(policy, prompt, G, new, stops, r) for r in range(args.repeats)]
            a = [anchor(model, prompt, G, new, stops[0] if stops else None, policy.pad_token_id, r)
                 for r in range(args.repeats)]
            o_tps = statistics.median(n / t for t, n in o)
            a_tps = statistics.median(n / t for t, n in a)
            rows[f"{name}_{regime}"] = {"ours": round(o_tps, 2), "anchor": round(a_tps, 2), "ratio": round(o_tps / a_tps, 3),
                                        "ours_tokens": [n for _, n in o], "anchor_tokens": [n for _, n in a]}
            print(f"{name:6s} ({len(prompt)} prompt tokens) {regime:5s}: ours {o_tps:7.2f} tok/s, generate() "
                  f"{a_tps:7.2f} tok/s, x{o_tps / a_tps:.2f}", file=sys.stderr)
        p1 = statistics.median(prefill_seconds(model, prompt, 1) for _ in range(2))
        pg = statistics.median(prefill_seconds(model, prompt, G) for _ in range(2))
        rows[f"{name}_prefill_s"] = {"one_row": round(p1, 3), "group_rows": round(pg, 3)}
        print(f"{name:6s} prefill: once {p1:.2f} s (the engine), {G} rows {pg:.2f} s (generate())", file=sys.stderr)
    # Is a decode step bound by reading the weights (the same for 1 row or G) or by arithmetic?
    steps = 32
    t1 = statistics.median(ours(policy, prompts["lookup"], 1, steps, (), r)[0] for r in range(2)) / steps
    tg = statistics.median(ours(policy, prompts["lookup"], G, steps, (), r)[0] for r in range(2)) / steps
    rows["decode_step_s"] = {"rows_1": round(t1, 4), f"rows_{G}": round(tg, 4), "ratio": round(tg / t1, 2)}
    print(f"decode step (short prompt): 1 row {t1 * 1000:.0f} ms, {G} rows {tg * 1000:.0f} ms (x{tg / t1:.2f} for "
          f"x{G} the rows)", file=sys.stderr)
    head = rows["aider_fixed"]
    print(json.dumps({"benchmark": "generation_grpo_group", "ours": head["ours"], "anchor": head["anchor"],
                      "unit": "generated tokens/s", "ratio": head["ratio"], "target": 2.0,
                      "model": args.model, "group": G, "new_tokens": new, "threads": args.threads, "clock": args.clock,
                      "precision": args.precision, **{k: v for k, v in rows.items()}}))


if __name__ == "__main__":
    main()
