"""What one program episode of `recipe multi-harness --scale real-programs` costs with a given model
(outside `make test`): the model, greedy, on the preset's held-out task(s) through each program, all
episodes in lockstep as the recipe's evaluation runs them. Prints one JSON line per program: episodes,
model calls, sampled tokens, solved, wall seconds per episode, and the whole group's wall time.

    python scripts/multi_harness_program_cost.py --model runs/ac-smollm2/sft --max-new-tokens 160
"""

from __future__ import annotations

import argparse
import json
import time

from harnessrl.policies.lm import LMConfig, LMPolicy
from harnessrl.recipes import multi_harness as recipe
from harnessrl.rollout.loop import RolloutItem, run_group


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True, help="a model folder or name (e.g. a merged SFT model)")
    ap.add_argument("--harness", default="mini-swe-agent,aider-cli,qwen-code-cli-8k,openhands-cli-8k")
    ap.add_argument("--max-new-tokens", type=int, default=160)
    ap.add_argument("--max-context-tokens", type=int, default=8192)
    args = ap.parse_args()
    cfg = recipe.MultiHarnessConfig.model_validate(recipe.preset("real-programs"))
    _, held_out = recipe.tasks_of(cfg)
    policy = LMPolicy.from_config(LMConfig(model=args.model, temperature=0.0, max_new_tokens=args.max_new_tokens,
                                           max_context_tokens=args.max_context_tokens))
    harnesses = [recipe.harness(cfg, h) for h in args.harness.split(",")]
    t0 = time.perf_counter()
    episodes = run_group(policy, [RolloutItem(h, t, 10_000) for h in harnesses for t in held_out], run_id="cost")
    wall = time.perf_counter() - t0
    for h in harnesses:
        he = [e for e in episodes if e.context.harness_id == h.id]
        print(json.dumps({"harness": h.id, "episodes": len(he), "solved": sum(e.success for e in he),
                          "calls": sum(e.num_turns for e in he), "sampled_tokens": sum(e.tokens_out for e in he),
                          "status": [e.status for e in he], "wall_s_per_episode": sum(e.wall_time for e in he) / len(he),
                          "group_wall_s": wall, "max_turns": cfg.max_turns}))


if __name__ == "__main__":
    main()
