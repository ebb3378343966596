"""Benchmark: GRPO + GSPO policy loss, forward + backward + diagnostics, harnessrl.rl vs real anchors.

Every implementation runs in this process on the same tensors: 64 sequences x 512 tokens (ragged
lengths, prompt positions masked), group-relative advantages of 16 tasks x 4 samples (computed once,
not timed), GRPO on the token-level ratio with clip (0.2, 0.28) and token-mean aggregation, GSPO on
the sequence ratio with clip (3e-4, 4e-4) and seq-mean-token-mean aggregation. A step is both losses,
one backward pass through their sum, and the diagnostics each implementation reports, read to host
floats (as each trainer logs them).

Anchors (the real library code, not re-implementations):
  TRL   `GRPOTrainer._compute_loss` (trl 1.16), called unbound on `TRLStandIn`, an object with the
        attributes that method reads; its one model-dependent call, `_get_per_token_logps_and_entropies`,
        returns the batch's log-probs (a leaf tensor) instead of running a model. GRPO = loss_type
        "bnpo" (TRL's token-mean) with importance_sampling_level "token"; GSPO = loss_type "grpo" with
        importance_sampling_level "sequence" (TRL's GSPO recipe).
  verl  `core_algos.compute_policy_loss_vanilla` and `compute_policy_loss_gspo` (both aggregate with
        `agg_loss`), verl 0.9.1. verl is not a dependency of this project: `pip install verl` pulls in
        ray[default], wandb, tensordict, hydra, datasets and pins transformers < 5.11 (the venv has 5.24),
        so it is not installed into the venv. Its core_algos module does import cleanly, without a GPU
        stack, from a side folder holding verl and the six small packages its import chain needs:

            python -m pip install --no-deps --target /tmp/verl-side verl==0.9.1 omegaconf==2.4.0 \\
                antlr4-python3-runtime==4.9.3 tensordict==0.10.0 pyvers==0.2.3 codetiming==1.4.0 orjson==3.13.0
            python benchmarks/rl_core.py --verl-path /tmp/verl-side      (or VERL_PATH=/tmp/verl-side)

        Without it the benchmark says so and compares against TRL alone.

Parity (before timing, float64): loss and gradient w.r.t. the log-probs of ours vs each anchor,
max |difference| <= 1e-6, on the benchmark batch and on a stress batch whose log-ratios are wide
enough that the clip ranges and a dual clip of 3 bind (ours dual_clip=3 = TRL delta=3 = verl
clip_ratio_c=3; verl's vanilla loss always applies its dual clip, 3 by default, which never binds
on the benchmark batch). Advantage parity with verl's `compute_grpo_outcome_advantage` too.

Timing: median CPU milliseconds of this thread per step (float32, one torch thread), in
alternating blocks so that every implementation sees the same machine load. Thread CPU time, not
wall time, because the machine is shared.

    python benchmarks/rl_core.py [--rounds 5 --per-round 20] [--verl-path DIR]

Last line: {"benchmark", "ours", "anchor", "unit", "ratio", "target"}; anchor = the fastest real
anchor (named in the benchmark field), ratio = anchor ms / ours ms (>= 1.0: ours is no slower).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections import defaultdict
from types import SimpleNamespace

for _k, _v in {"HF_HUB_OFFLINE": "1", "HF_HUB_DISABLE_TELEMETRY": "1", "TRANSFORMERS_OFFLINE": "1",
               "RAY_USAGE_STATS_ENABLED": "0", "WANDB_DISABLED": "true", "TRL_EXPERIMENTAL_SILENCE": "1"}.items():
    os.environ.setdefault(_k, _v)

import torch  # noqa: E402

from harnessrl.rl.advantages import group_advantages  # noqa: E402
from harnessrl.rl.losses import grpo_loss, gspo_loss  # noqa: E402

B, T = 64, 512
GRPO_CLIP = (0.2, 0.28)
GSPO_CLIP = (3e-4, 4e-4)
PARITY = 1e-6


def make_batch(seed: int = 0, spread: float = 0.05, dtype: torch.dtype = torch.float32) -> dict:
    """log-probs, old log-probs (log-ratio ~ N(0, spread)), mask, per-sequence advantages (B,) and (B, T)."""
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(T // 4, T + 1, (B,), generator=g)
    prompt = torch.randint(0, 32, (B,), generator=g)
    pos = torch.arange(T)[None, :]
    mask = ((pos >= prompt[:, None]) & (pos < lengths[:, None])).to(dtype)
    logp = (-torch.rand(B, T, generator=g, dtype=torch.float64) * 3).to(dtype)
    old = (logp.double() + spread * torch.randn(B, T, generator=g, dtype=torch.float64)).to(dtype)
    rewards = (torch.rand(B, generator=g) < 0.4).to(dtype)
    contexts = [(f"task-{i // 4}", f"harness-{i % 4}") for i in range(B)]
    adv = group_advantages(rewards, contexts, rule="cross", estimator="grpo").advantages
    return {"logp": logp, "old": old, "mask": mask, "adv": adv, "adv_tokens": (adv[:, None] * mask).contiguous(),
            "rewards": rewards, "tasks": [c[0] for c in contexts]}


# ----------------------------------------------------------------------------------------
# ours


def ours(b: dict, dual_clip: float | None = None) -> tuple[torch.Tensor, torch.Tensor, dict]:
    lp = b["logp"].clone().requires_grad_()
    grpo = grpo_loss(lp, b["old"], b["adv"], b["mask"], clip_low=GRPO_CLIP[0], clip_high=GRPO_CLIP[1], dual_clip=dual_clip)
    gspo = gspo_loss(lp, b["old"], b["adv"], b["mask"], clip_low=GSPO_CLIP[0], clip_high=GSPO_CLIP[1])
    loss = grpo.loss + gspo.loss
    loss.backward()
    metrics = {f"{n}/{k}": float(v) for n, out in (("grpo", grpo), ("gspo", gspo)) for k, v in out.metrics.items()}
    return loss.detach(), lp.grad, metrics


# ----------------------------------------------------------------------------------------
# TRL: GRPOTrainer._compute_loss itself


class _Accelerator:
    """Single process: gather and reduce are the identity."""

    num_processes = 1
    sync_gradients = True

    def gather(self, x):
        return x

    gather_for_metrics = gather

    def reduce(self, x, reduction="sum"):
        return x


class TRLStandIn:
    """What `GRPOTrainer._compute_loss` reads from `self`, for one process and no model: the log-probs
    come from the inputs (`per_token_logps`) instead of a forward pass."""

    def __init__(self, loss_type: str, level: str, clip: tuple[float, float], delta: float | None = None):
        self.loss_type, self.importance_sampling_level = loss_type, level
        self.epsilon_low, self.epsilon_high = clip
        self.args = SimpleNamespace(delta=delta, use_bias_correction_kl=False)
        self.beta = 0.0
        self.top_entropy_quantile = 1.0
        self.off_policy_mask_threshold = None
        self.use_vllm = False
        self.aux_loss_enabled = False
        self._entropy_bonus_enabled = False
        self.current_gradient_accumulation_steps = 1
        self.model = SimpleNamespace(training=True)
        self.accelerator = _Accelerator()
        self._metrics = {"train": defaultdict(list), "eval": defaultdict(list)}

    def _get_per_token_logps_and_entropies(self, model, input_ids, attention_mask, logits_to_keep, **_):
        return self._inputs["per_token_logps"], self._inputs["entropies"], None


def trl_inputs(b: dict, lp: torch.Tensor) -> dict:
    empty = torch.zeros(B, 0, dtype=torch.long)
    return {"prompt_ids": empty, "prompt_mask": empty, "completion_ids": torch.zeros(B, T, dtype=torch.long),
            "completion_mask": b["mask"], "advantages": b["adv"], "old_per_token_logps": b["old"],
            "per_token_logps": lp, "entropies": torch.zeros_like(b["logp"])}


def make_trl(delta: float | None = None):
    from trl.trainer.grpo_trainer import GRPOTrainer

    grpo = TRLStandIn("bnpo", "token", GRPO_CLIP, delta)
    gspo = TRLStandIn("grpo", "sequence", GSPO_CLIP)

    def trl(b: dict):
        lp = b["logp"].clone().requires_grad_()
        inputs = trl_inputs(b, lp)
        losses = []
        for standin in (grpo, gspo):
            standin._inputs = inputs
            standin._metrics["train"].clear()  # keep only this step's logged values
            losses.append(GRPOTrainer._compute_loss(standin, None, inputs))
        loss = losses[0] + losses[1]
        loss.backward()
        return loss.detach(), lp.grad, {}

    return trl


# ----------------------------------------------------------------------------------------
# verl: core_algos.compute_policy_loss_vanilla / compute_policy_loss_gspo + agg_loss


def load_verl(path: str | None):
    """(core_algos, ActorConfig) or (None, why not)."""
    if path:
        sys.path[:0] = path.split(os.pathsep)
    try:
        from verl.trainer.ppo import core_algos
        from verl.workers.config import ActorConfig
    except Exception as err:  # any import failure means: no verl anchor, said plainly
        hint = "" if path else " (give --verl-path DIR or VERL_PATH; see this script's docstring)"
        return None, f"{type(err).__name__}: {err}{hint}"
    return core_algos, ActorConfig


def make_verl(core_algos, ActorConfig, dual_clip: float = 3.0):
    def config(clip):
        return ActorConfig(strategy="fsdp", rollout_n=4, ppo_micro_batch_size_per_gpu=8, clip_ratio=clip[0],
                           clip_ratio_low=clip[0], clip_ratio_high=clip[1], clip_ratio_c=dual_clip)

    grpo_cfg, gspo_cfg = config(GRPO_CLIP), config(GSPO_CLIP)

    def verl(b: dict):
        lp = b["logp"].clone().requires_grad_()
        g, g_metrics = core_algos.compute_policy_loss_vanilla(b["old"], lp, b["adv_tokens"], b["mask"], "token-mean", grpo_cfg)
        s, s_metrics = core_algos.compute_policy_loss_gspo(b["old"], lp, b["adv_tokens"], b["mask"], "seq-mean-token-mean",
                                                           gspo_cfg)
        loss = g + s
        loss.backward()
        return loss.detach(), lp.grad, {**g_metrics, **s_metrics}

    return verl


def verl_advantage_parity(core_algos, b: dict) -> float:
    import numpy as np

    scores = b["rewards"].double()[:, None] * torch.ones(B, 1, dtype=torch.float64)
    theirs, _ = core_algos.compute_grpo_outcome_advantage(scores, torch.ones(B, 1, dtype=torch.float64),
                                                          np.array(b["tasks"], dtype=object), epsilon=1e-6)
    mine = group_advantages(b["rewards"].double(), [(t, "h") for t in b["tasks"]], rule="cross", estimator="grpo", eps=1e-6)
    return float((theirs[:, 0] - mine.advantages).abs().max())


# ----------------------------------------------------------------------------------------


def parity(name: str, anchor, anchor_dual, verbose: bool = True) -> float:
    """Max |difference| of loss and gradient, float64, on the benchmark batch and on the stress batch."""
    worst = 0.0
    for label, batch, dual in (("benchmark batch", make_batch(0, 0.05, torch.float64), None),
                               ("stress batch (clips and dual clip bind)", make_batch(1, 0.6, torch.float64), 3.0)):
        fn = anchor if dual is None else anchor_dual
        loss_o, grad_o, metrics = ours(batch, dual)
        loss_a, grad_a, _ = fn(batch)
        d_loss, d_grad = float((loss_o - loss_a).abs()), float((grad_o - grad_a).abs().max())
        if verbose:
            extra = f"  (GRPO clipfrac {metrics['grpo/clipfrac']:.3f}, dual {metrics.get('grpo/clipfrac_dual', 0.0):.4f})" \
                if dual else ""
            print(f"  parity vs {name:<5} {label:<40} |d loss| {d_loss:.1e}  max |d grad| {d_grad:.1e}{extra}")
        worst = max(worst, d_loss, d_grad)
    return worst


def timed_blocks(fns: dict, batch: dict, rounds: int, per_round: int) -> dict[str, float]:
    """Median CPU milliseconds of this thread per step, implementations in alternating blocks."""
    times: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            fn(batch)  # re-warm after the other ones ran
            for _ in range(per_round):
                t0 = time.thread_time()
                fn(batch)
                times[name].append(time.thread_time() - t0)
    return {name: statistics.median(ts) * 1e3 for name, ts in times.items()}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--per-round", type=int, default=20)
    ap.add_argument("--verl-path", default=os.environ.get("VERL_PATH"), help="Side folder(s) with verl, os.pathsep-separated (see docstring).")
    args = ap.parse_args()
    torch.set_num_threads(1)

    anchors = {"TRL": make_trl()}
    duals = {"TRL": make_trl(delta=3.0)}
    core_algos, actor_config = load_verl(args.verl_path)
    if core_algos is None:
        print(f"verl anchor not available: {actor_config}")
    else:
        anchors["verl"] = make_verl(core_algos, actor_config)
        duals["verl"] = anchors["verl"]  # verl's vanilla loss always dual-clips (clip_ratio_c = 3)

    print(f"parity (float64; target max |difference| <= {PARITY:g}):")
    worst = {name: parity(name, anchors[name], duals[name]) for name in anchors}
    if core_algos is not None:
        d_adv = verl_advantage_parity(core_algos, make_batch(0, 0.05, torch.float64))
        print(f"  GRPO advantages vs verl compute_grpo_outcome_advantage: max |d| {d_adv:.1e}")
        worst["verl"] = max(worst["verl"], d_adv)
    for name, w in worst.items():
        assert w <= PARITY, f"parity with {name}: {w:.2e} > {PARITY:g}"

    batch = make_batch()
    ms = timed_blocks({"ours": ours, **anchors}, batch, args.rounds, args.per_round)
    print(f"batch {B} x {T} tokens, float32, GRPO + GSPO loss, forward + backward + diagnostics, 1 torch thread:")
    print(f"  harnessrl.rl.losses                                 {ms['ours']:.3f} ms")
    print(f"  TRL GRPOTrainer._compute_loss (bnpo + sequence GSPO) {ms['TRL']:.3f} ms")
    if "verl" in ms:
        print(f"  verl compute_policy_loss_vanilla + _gspo + agg_loss {ms['verl']:.3f} ms")
    best = min(anchors, key=lambda n: ms[n])
    print(f"fastest real anchor: {best}")
    print(json.dumps({"benchmark": f"rl_core_grpo_gspo_fwd_bwd[vs {best}]", "ours": round(ms["ours"], 3),
                      "anchor": round(ms[best], 3), "unit": "ms", "ratio": round(ms[best] / ms["ours"], 2),
                      "target": ">= 1.0"}))


if __name__ == "__main__":
    main()
