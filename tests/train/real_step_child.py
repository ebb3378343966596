"""One GRPO step of SmolLM2-135M-Instruct with LoRA in a fresh process; prints its memory as JSON.

    python -m tests.train.real_step_child COMPLETIONS NEW_TOKENS MICRO_TOKENS CHECKPOINTING(0|1)

Sampling runs with no stop token, so every completion has exactly NEW_TOKENS tokens (the
worst case); the update scores the group under the policy and the reference (the adapter
disabled), then one optimizer step, micro-batched as the smollm2 preset does.
"""

from __future__ import annotations

import json
import resource
import sys

import numpy as np
import torch


def rss_mb() -> float:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS")) / 1024


def main(n: int, new_tokens: int, micro: int, checkpointing: bool) -> None:
    torch.set_num_threads(1)
    from harnessrl.episode import Context, Episode, Turn
    from harnessrl.policies.base import AgentState
    from harnessrl.policies.lm import LMConfig, LMPolicy
    from harnessrl.rl.advantages import group_advantages
    from harnessrl.train import lm_update
    from harnessrl.train.agent import adamw
    from harnessrl.train.sequences import build_batch

    policy = LMPolicy.from_config(LMConfig(model="smollm2-135m", lora_rank=16, max_new_tokens=new_tokens,
                                           gradient_checkpointing=checkpointing))
    policy.stop_token_ids = ()  # no early stop: every completion is new_tokens long
    loaded = rss_mb()
    opt = adamw([{"params": policy.trainable_parameters(), "lr": 1e-5}])
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0)
    messages = [{"role": "system", "content": "Reply with exactly one command per turn: look X or answer Y."},
                {"role": "user", "content": "Question: what colour is the lamp in the study?"}]
    states = [AgentState(messages=messages, harness_id="h", task_id="t", turn=0, episode_key=str(i)) for i in range(n)]
    policy.reseed(0)
    actions = policy.act(states)
    after_sampling = rss_mb()
    episodes = [Episode(Context("t", "h"), turns=[Turn(action=a.text, token_ids=a.token_ids, logprobs=a.logprobs,
                                                       loss_mask=a.loss_mask)], reward=float(i % 2))
                for i, a in enumerate(actions)]
    batch = build_batch(episodes, policy.pad_token_id)
    rewards = torch.tensor([e.reward for e in episodes])
    ga = group_advantages(rewards, [("t", "h")] * n, rule="within", estimator="grpo")
    scored = lm_update.score_batch(policy, batch, micro, with_ref=True, need_old=False)
    adv, _ = lm_update.token_advantages("grpo", ga.advantages, batch, rewards, scored)
    settings = lm_update.UpdateSettings(objective="grpo", clip=(0.2, 0.28), agg="token-mean", micro_tokens=micro)
    stats = lm_update.update(policy, opt, sched, batch, scored, adv, settings, torch.Generator().manual_seed(0))
    gen = [int(a.loss_mask.sum()) for a in actions]
    print(json.dumps({"loaded_mb": loaded, "after_sampling_mb": after_sampling,
                      "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                      "generated": gen, "rows": int(batch.ids.shape[0]), "width": int(batch.ids.shape[1]),
                      "micro_tokens": micro, "checkpointing": checkpointing, "loss": stats["loss"],
                      "grad_norm": stats["grad_norm"],
                      "kl": stats.get("kl", float("nan")), "finite": bool(np.isfinite(stats["loss"]))}))


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "1")
