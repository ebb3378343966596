"""A real LM through real agent programs: the records are token-exact (outside `make test`).

    python scripts/program_tokens.py --model smollm2-135m --harness mini-swe-agent,aider-cli --tasks 3

Runs the model (fp32, CPU unless --device) behind each program's gateway on the first N code-v1
tasks, all episodes of the group in lockstep (one batched generation per turn), then recomputes
every stored row teacher-forced and checks it against the recorded log-probs (max abs diff) and
that every mask-1 token was sampled by the gateway (train/token_check.py). Prints one JSON line:
episodes, calls, the check's figures and the per-program merged/spliced/split counts.
"""

from __future__ import annotations

import argparse
import json
import time

from harnessrl.harness.base import load_spec, make_harness
from harnessrl.policies.lm import LMConfig, LMPolicy
from harnessrl.rollout.loop import RolloutItem, run_group
from harnessrl.rollout.suites import load_suite
from harnessrl.train.token_check import check_rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--harness", default="mini-swe-agent,aider-cli")
    ap.add_argument("--tasks", type=int, default=3)
    ap.add_argument("--max-turns", type=int, default=3)
    ap.add_argument("--max-new-tokens", type=int, default=48)
    ap.add_argument("--prefix-cache-mb", type=int, default=1024, help="keep earlier turns' keys/values (prefill new tokens only)")
    ap.add_argument("--device", default="cpu")
    args = ap.parse_args()
    lm = LMPolicy.from_config(LMConfig(model=args.model, max_new_tokens=args.max_new_tokens, temperature=1.0,
                                       dtype="float32", device=args.device, prefix_cache_mb=args.prefix_cache_mb))
    lm.reseed(0)
    harnesses = [make_harness(load_spec(h, [f"max_turns={args.max_turns}"])) for h in args.harness.split(",")]
    tasks = [t for t in load_suite("code-v1").tasks if not t.needs_shell][: args.tasks]
    items = [RolloutItem(h, t, 0) for h in harnesses for t in tasks]
    t0 = time.time()
    episodes = run_group(lm, items, run_id="program-tokens")
    for i, ep in enumerate(episodes):
        ep.metadata["context_resets"] = [list(r) for r in lm.pop_resets(str(i))]
    wall = time.time() - t0
    report = check_rows(lm, episodes)
    print(json.dumps({
        "model": args.model, "episodes": len(episodes), "wall_s": round(wall, 1),
        "calls": sum(len(e.metadata.get("calls", [])) for e in episodes),
        "statuses": [f"{e.context.harness_id}:{e.context.task_id.split('/')[-1]}:{e.status}:{e.metadata.get('stop_reason')}"
                     for e in episodes],
        **report}))


if __name__ == "__main__":
    main()
