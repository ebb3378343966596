"""How close one real-model GRPO/LoRA update runs to this CPU's GEMM floor, in fp32 and in bf16.

In one run:
  (a) torch.mm's rate at the step's shapes (tokens x 576 x 1536, tokens x 1536 x 576, tokens x 576 x
      49152 for SmolLM2: MLP up/gate, MLP down, LM head), fp32 and bf16, at the step's thread count;
  (b) one SmolLM2-135M GRPO update with LoRA r=16 (train/lm_update.update: today's native step,
      on-policy, token-mean, sampler/trainer TIS on) on program-length conversations: the first-turn
      prompt of a real coding harness (system prompt with its tool docs, then the task) followed by
      several assistant turns and tool outputs, P prompts x G rows that share their prompt (a GRPO
      group), ~1-2k tokens a row. Timed once in fp32 (the old path) and once in bf16 (precision=bf16:
      a bf16 frozen base, an fp32 adapter).

FLOPs as executed are counted with torch.utils.flop_counter.FlopCounterMode on an untimed pass of
the same update (which also warms the kernels up); a second dispatch mode records every mm/addmm's
(dtype, K, N, operand layouts) with its FLOPs. The floor of a step is sum over those shape classes of
flops / rate(dtype, K, N at the class's FLOP-weighted mean M), with FLOPs outside GEMMs (attention,
about 1-3%) charged at the step's weighted GEMM rate. `ratio` = achieved FLOP/s of the bf16 step /
its weighted GEMM rate = floor time / step time (target >= 0.5).

Parity (the same adapter weights, perturbed away from LoRA's zero init so both A and B get gradients;
the same batch and advantages; TIS off, so that precision alone is compared): relative difference of the
loss and of the LoRA gradient norm, and the cosine similarity of the flattened LoRA gradients, bf16 vs
fp32. Tolerances (PARITY): loss <= 0.02, grad norm <= 0.05, cosine >= 0.99. The cosine with TIS on (the
timed step: bf16 tokens reweighed against the fp32 sampler) is reported beside it.

    python benchmarks/cpu_floor.py [--prompts 2] [--group 2] [--turns 3] [--threads 1] [--harness qwen_code]

The last line is one JSON object {"benchmark": "cpu_floor", "ours": bf16 s, "anchor": fp32 s, ...}.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import defaultdict
from pathlib import Path

for _k, _v in {"HF_HUB_OFFLINE": "1", "HF_HUB_DISABLE_TELEMETRY": "1", "TRANSFORMERS_OFFLINE": "1",
               "TOKENIZERS_PARALLELISM": "false"}.items():
    os.environ.setdefault(_k, _v)
HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]  # benchmarks/miniwob.py shadows a package

import numpy as np  # noqa: E402
import torch  # noqa: E402
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402
from torch.utils.flop_counter import FlopCounterMode, sdpa_backward_flop_count, sdpa_flop_count  # noqa: E402

aten = torch.ops.aten
# FlopCounterMode knows the CUDA attention kernels only; the CPU flash kernel is counted the same way
# (the full q x k product, causal or not, as torch counts the CUDA ones)
CPU_ATTENTION = {
    aten._scaled_dot_product_flash_attention_for_cpu: lambda q, k, v, *a, out_shape=None, **kw: sdpa_flop_count(q, k, v),
    aten._scaled_dot_product_flash_attention_for_cpu_backward:
        lambda g, q, k, v, *a, out_shape=None, **kw: sdpa_backward_flop_count(g, q, k, v)}
#: Precision parity, judged with TIS off on both sides: bf16 keeps 8 mantissa bits, and over 30 layers the
#: per-token log-probs move by ~0.03 nats (measured; ~0.026 with an fp32 LM head, so the head is not the cause).
#: With TIS on, the bf16 step also reweighs tokens by exp(logp_bf16 - logp_fp32 sampler): a real, intended change
#: of direction, reported beside (grad_cosine_with_tis), not held to this tolerance.
PARITY = {"loss_rel": 0.02, "grad_norm_rel": 0.05, "grad_cos": 0.99}

# An agent's turns after the harness's first prompt: a read, an edit, a test run (the replies are what
# the model generates and is trained on; the tool outputs are observations, mask 0).
REPLIES = [
    "I will look at the source first to see how the function is written.\n\n"
    '{"name": "read_file", "arguments": {"path": "src/%s.py"}}',
    "The bug is in the boundary check: the loop stops one element early, so the last item is never "
    "compared. I will fix the range and keep the rest of the function as it is.\n\n"
    '{"name": "edit", "arguments": {"path": "src/%s.py", "old": "for i in range(len(xs) - 1):", '
    '"new": "for i in range(len(xs)):"}}',
    "Now I run the tests to check the change.\n\n"
    '{"name": "run_shell_command", "arguments": {"command": "python -m pytest -q tests/test_%s.py"}}',
    "All tests pass. The fix changes only the loop bound, which was the cause of the failure.",
]
TOOL = [
    "def %s(xs, target):\n    \"\"\"Return the index of target in the sorted list xs, or -1.\"\"\"\n"
    "    lo, hi = 0, len(xs) - 1\n    while lo <= hi:\n        mid = (lo + hi) // 2\n"
    "        if xs[mid] == target:\n            return mid\n        if xs[mid] < target:\n"
    "            lo = mid + 1\n        else:\n            hi = mid - 1\n    return -1\n\n\n"
    "def helper(values):\n    out = []\n    for i in range(len(values) - 1):\n        out.append(values[i] * 2)\n"
    "    return out\n" * 2,
    "Edited src/%s.py: 1 replacement.\n",
    "....F.\n=================================== FAILURES ===================================\n"
    "____________________________ test_%s_last ____________________________\n"
    "    def test_last():\n>       assert f([1, 2, 3], 3) == 2\nE       assert -1 == 2\n"
    "1 failed, 5 passed in 0.04s\n",
]


def conversations(policy, P: int, G: int, turns: int, harness: str):
    """P first prompts of code-v1 in `harness`, each continued G ways for `turns` assistant turns:
    (ids, mask) per row, built with the policy's own chat encoder (as LMPolicy.act builds contexts)."""
    from harnessrl.harness.base import make_harness
    from harnessrl.policies.chat import EpisodeContext
    from harnessrl.rollout.envs import open_env
    from harnessrl.rollout.suites import load_suite

    h, enc, rows = make_harness(harness), policy.encoder, []
    stop = policy.tokenizer.eos_token_id if policy.tokenizer.eos_token_id is not None else policy.stop_token_ids[0]
    for task in list(load_suite("code-v1").tasks)[:P]:
        env = open_env(task, 0)
        try:
            first = h.open(task, env, 0).messages
        finally:
            env.close()
        for g in range(G):
            name = ["search", "binary_search", "find_index", "lookup"][g % 4]
            msgs, ctx, ids, mask = list(first), EpisodeContext(), [], []
            for t in range(turns):
                e = enc.update(ctx, msgs)
                ids += list(e.new_ids)
                mask += [0] * len(e.new_ids)
                reply = REPLIES[min(t, len(REPLIES) - 1)].replace("%s", name)
                gen = enc.encode_text(reply) + [stop]
                enc.append_generated(ctx, gen, reply + enc.decode(gen[-1:]))
                ids += gen
                mask += [1] * len(gen)
                msgs = msgs + [{"role": "assistant", "content": reply},
                               {"role": "user", "content": TOOL[t % len(TOOL)].replace("%s", name)}]
            rows.append((ids, mask))
    return rows


def token_batch(rows, pad: int):
    from harnessrl.train.sequences import TokenBatch

    B, T = len(rows), max(len(r[0]) for r in rows)
    ids, attn, mask = torch.full((B, T), pad, dtype=torch.long), torch.zeros(B, T, dtype=torch.long), torch.zeros(B, T)
    for b, (i, m) in enumerate(rows):
        ids[b, :len(i)], attn[b, :len(i)], mask[b, :len(m)] = torch.tensor(i), 1, torch.tensor(m, dtype=torch.float32)
    return TokenBatch(ids, attn, mask, torch.zeros(B, T), torch.arange(B))


class GemmShapes(TorchDispatchMode):
    """FLOPs of every mm / addmm, by (dtype, K, N), with the FLOP-weighted sum of M."""

    def __init__(self):
        super().__init__()
        self.flops: dict[tuple, float] = defaultdict(float)
        self.m: dict[tuple, float] = defaultdict(float)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if func in (aten.mm.default, aten.addmm.default):
            a, b = (args[0], args[1]) if func is aten.mm.default else (args[1], args[2])
            (M, K), N = a.shape, b.shape[1]
            key = (str(a.dtype).replace("torch.", ""), K, N, _transposed(a), _transposed(b))
            f = 2.0 * M * K * N
            self.flops[key] += f
            self.m[key] += f * M
        return out


def _transposed(x: torch.Tensor) -> bool:
    """A 2-D operand that is a transposed view (F.linear's W.t(), autograd's dy.t()): its layout changes the kernel's speed."""
    return x.dim() == 2 and x.stride(0) == 1 and x.shape[1] > 1


def mm_rate(M: int, K: int, N: int, dtype: torch.dtype, ta: bool = False, tb: bool = False, min_s: float = 0.25) -> float:
    """torch.mm FLOP/s at (M, K) @ (K, N), each operand in the step's layout (ta, tb: a transposed view): the best
    of the repeats after a warm-up (process CPU clock)."""
    a = torch.randn(K, M).to(dtype).t() if ta else torch.randn(M, K).to(dtype)
    b = torch.randn(N, K).to(dtype).t() if tb else torch.randn(K, N).to(dtype)
    torch.mm(a, b)
    best, spent = float("inf"), 0.0
    while spent < min_s or best == float("inf"):
        t0 = time.process_time()
        torch.mm(a, b)
        dt = time.process_time() - t0
        best, spent = min(best, max(dt, 1e-9)), spent + dt
    return 2.0 * M * K * N / best


def make_policy(model: str, precision: str, adapter_state=None):
    from harnessrl.policies.lm import LMConfig, LMPolicy
    from harnessrl.train.agent import adamw

    policy = LMPolicy.from_config(LMConfig(model=model, lora_rank=16, lora_alpha=32, precision=precision))
    if adapter_state is None:  # away from LoRA's zero init (B = 0), the same weights on both sides
        g = torch.Generator().manual_seed(0)
        adapter_state = {n: (p.detach().float() + 0.02 * torch.randn(p.shape, generator=g))
                         for n, p in policy.model.named_parameters() if p.requires_grad}
    with torch.no_grad():
        for n, p in policy.model.named_parameters():
            if p.requires_grad:
                p.copy_(adapter_state[n])
    # lr 0: the optimizer step runs (its cost counts) but leaves the weights, so both timed passes and both
    # precisions take their gradients at the same point
    opt = adamw(policy.trainable_parameters(), lr=0.0, weight_decay=0.0)
    return policy, opt, torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0), adapter_state


def run_update(policy, opt, sched, batch, adv, micro: int, tis: float | None = 2.0):
    from harnessrl.train import lm_update

    settings = lm_update.UpdateSettings(objective="grpo", clip=(0.2, 0.28), agg="token-mean", micro_tokens=micro,
                                        sampler_tis_cap=tis)
    return lm_update.update(policy, opt, sched, batch, lm_update.Scored(None, None, None, None),
                            adv[batch.episode][:, None] * batch.mask, settings, torch.Generator().manual_seed(0))


def grads(policy) -> torch.Tensor:
    return torch.cat([p.grad.detach().float().flatten() for p in policy.trainable_parameters()])


def measure(name, policy, opt, sched, batch, adv, micro):
    """Untimed counting pass (warm-up too), then the timed step. Returns its record and the gradient."""
    shapes, counter = GemmShapes(), FlopCounterMode(display=False, custom_mapping=CPU_ATTENTION)
    with counter, shapes:
        run_update(policy, opt, sched, batch, adv, micro)
    t0 = time.process_time()
    stats = run_update(policy, opt, sched, batch, adv, micro)
    secs = time.process_time() - t0
    total = float(counter.get_total_flops())
    print(f"{name}: step {secs:.2f} s, {total / 1e12:.3f} TFLOP executed, {total / secs / 1e9:.1f} GFLOP/s, "
          f"loss {stats['loss']:.6f}, grad norm {stats['grad_norm']:.6f}, mean |dlogp| vs the fp32 sampler "
          f"{stats.get('sampler_abs_dlogp', 0):.5f}", file=sys.stderr)
    return {"s": secs, "flops": total, "shapes": shapes, "stats": stats}, grads(policy)


def floor(rec, threads: int) -> tuple[float, float, list]:
    """(floor seconds, weighted GEMM rate) of one step from its shape classes; FLOPs outside GEMMs at that rate."""
    gemm_flops = sum(rec["shapes"].flops.values())
    t, table = 0.0, []
    for (dt, K, N, ta, tb), f in sorted(rec["shapes"].flops.items(), key=lambda kv: -kv[1]):
        M = max(1, int(round(rec["shapes"].m[(dt, K, N, ta, tb)] / f)))
        if f < 0.002 * gemm_flops:  # negligible classes (tiny LoRA products): charged at the mean rate below
            continue
        r = mm_rate(M, K, N, getattr(torch, dt), ta, tb)
        t += f / r
        table.append((dt, M, K, N, f, r))
    covered = sum(row[4] for row in table)
    rate = covered / t
    return rec["flops"] / rate, rate, table


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--prompts", type=int, default=2)
    ap.add_argument("--group", type=int, default=2)
    ap.add_argument("--turns", type=int, default=3)
    ap.add_argument("--harness", default="qwen_code")
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    from harnessrl.policies.precision import detect

    det = detect("cpu")
    fp, fopt, fsched, state = make_policy(args.model, "fp32")
    rows = conversations(fp, args.prompts, args.group, args.turns, args.harness)
    batch = token_batch(rows, fp.pad_token_id)
    B, tokens, trained = batch.ids.shape[0], int(batch.attention.sum()), int(batch.mask.sum())
    micro = args.group * int(batch.attention.sum(-1).max())  # one group (shared prompt) per backward pass
    adv = torch.tensor([(-1.0) ** i * (1 + i % 3) / 2 for i in range(B)])
    cfg = fp.model.config
    print(f"{args.model}: LoRA r=16, {B} rows ({args.prompts} prompts x {args.group}, {args.turns} turns, {args.harness}), "
          f"{tokens} tokens ({trained} trained), rows {batch.attention.sum(-1).tolist()}, {args.threads} thread(s); "
          f"bf16 support: {det.bf16} ({det.capability}, {','.join(det.flags) or 'no flags'})", file=sys.stderr)
    from harnessrl.policies.lm import token_logprobs

    with torch.no_grad():  # the sampler's log-probs, as an fp32 sampler would have recorded them
        batch.behaviour = token_logprobs(fp.model.eval(), batch.ids, batch.attention, batch.mask).logprobs.float()
    # (a) the GEMM rates at the step's three main shapes
    H, I, V = cfg.hidden_size, cfg.intermediate_size, cfg.vocab_size
    gemm = {}
    for label, (M, K, N) in {"tokens x H x I": (tokens, H, I), "tokens x I x H": (tokens, I, H),
                             "trained x H x V": (trained, H, V)}.items():
        gemm[label] = {dt: mm_rate(M, K, N, getattr(torch, dt)) / 1e9 for dt in ("float32", "bfloat16")}
        print(f"torch.mm {label} = {M} x {K} x {N}: fp32 {gemm[label]['float32']:.1f} GFLOP/s, "
              f"bf16 {gemm[label]['bfloat16']:.1f} GFLOP/s", file=sys.stderr)
    # (b) the update, fp32 then bf16, from the same adapter weights
    f32, g32 = measure("fp32", fp, fopt, fsched, batch, adv, micro)
    del fp, fopt
    bf, bopt, bsched, _ = make_policy(args.model, "bf16", state)
    b16, g16 = measure("bf16", bf, bopt, bsched, batch, adv, micro)
    # the same bf16 gradient without the TIS weights (fp32's are exactly 1): precision alone, not the reweighting
    plain = run_update(bf, bopt, bsched, batch, adv, micro, tis=None)
    g16_plain = grads(bf)
    out = {}
    for name, rec in (("fp32", f32), ("bf16", b16)):
        fl_s, rate, table = floor(rec, args.threads)
        out[name] = {"floor_s": fl_s, "rate": rate, "ratio": fl_s / rec["s"]}
        print(f"{name} floor: {fl_s:.2f} s at a weighted GEMM rate of {rate / 1e9:.1f} GFLOP/s; achieved "
              f"{rec['flops'] / rec['s'] / 1e9:.1f} GFLOP/s = {fl_s / rec['s']:.3f} of it", file=sys.stderr)
        for dt, M, K, N, f, r in table[:8]:
            print(f"   {dt:8s} {M:6d} x {K:5d} x {N:5d}: {f / rec['flops']:6.1%} of FLOPs at {r / 1e9:6.1f} GFLOP/s",
                  file=sys.stderr)
    s32, s16 = f32["stats"], b16["stats"]
    # parity of precision alone: the bf16 step without the TIS weights against fp32 (whose weights are exactly 1)
    loss_rel = abs(plain["loss"] - s32["loss"]) / max(abs(s32["loss"]), 1e-12)
    gn_rel = abs(plain["grad_norm"] - s32["grad_norm"]) / max(s32["grad_norm"], 1e-12)
    cos = float(torch.nn.functional.cosine_similarity(g32, g16_plain, dim=0))
    cos_tis = float(torch.nn.functional.cosine_similarity(g32, g16, dim=0))
    ok = loss_rel <= PARITY["loss_rel"] and gn_rel <= PARITY["grad_norm_rel"] and cos >= PARITY["grad_cos"]
    print(f"parity bf16 vs fp32 (TIS off): loss rel diff {loss_rel:.2e}, grad norm rel diff {gn_rel:.2e}, grad cosine "
          f"{cos:.5f} ({'within' if ok else 'OUTSIDE'} tolerance {PARITY}); with the TIS weights on, as timed: "
          f"grad cosine {cos_tis:.5f}", file=sys.stderr)
    speedup = f32["s"] / b16["s"]
    print(json.dumps({
        "benchmark": "cpu_floor", "ours": round(b16["s"], 3), "anchor": round(f32["s"], 3), "unit": "s per update step",
        "ratio": round(out["bf16"]["ratio"], 3), "target": 0.5, "speedup": round(speedup, 3), "speedup_target": 3,
        "fp32_ratio": round(out["fp32"]["ratio"], 3),
        "bf16_gflops": round(b16["flops"] / b16["s"] / 1e9, 1), "fp32_gflops": round(f32["flops"] / f32["s"] / 1e9, 1),
        "bf16_weighted_gemm_gflops": round(out["bf16"]["rate"] / 1e9, 1),
        "fp32_weighted_gemm_gflops": round(out["fp32"]["rate"] / 1e9, 1),
        "gemm_gflops": {k: {d: round(x, 1) for d, x in v.items()} for k, v in gemm.items()},
        "tflop_executed": {"fp32": round(f32["flops"] / 1e12, 3), "bf16": round(b16["flops"] / 1e12, 3)},
        "loss_rel_diff": float(f"{loss_rel:.3g}"), "grad_norm_rel_diff": float(f"{gn_rel:.3g}"),
        "grad_cosine": round(cos, 5), "grad_cosine_with_tis": round(cos_tis, 5), "parity_tolerance": PARITY, "parity_ok": ok,
        "sampler_abs_dlogp_bf16": float(f"{s16.get('sampler_abs_dlogp', 0):.3g}"),
        "tis_clipfrac_bf16": float(f"{s16.get('tis_clipfrac', 0):.3g}"),
        "rows": B, "tokens": tokens, "trained_tokens": trained, "threads": args.threads, "harness": args.harness,
        "bf16_cpu": det.bf16, "cpu_flags": list(det.flags), "clock": "process CPU",
        "load_avg_1m": round(os.getloadavg()[0], 2)}))


if __name__ == "__main__":
    main()
