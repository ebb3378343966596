"""CPU time of a multi-turn conversation's turns with and without kept keys/values (docs/real-model.md).

Two rows, a long first prompt (a system text of ~2,500 characters), greedy replies and a fixed
~90-token observation after each; one decode thread. The same turns are run with
`prefix_cache_mb=0` (every turn prefills the whole conversation) and with a 1 GB store.

    python scripts/prefix_cache_turns.py [--model smollm2-135m] [--turns 6] [--new-tokens 64]
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")

import torch  # noqa: E402

from harnessrl.policies.generation import HFEngine, SamplingParams  # noqa: E402
from harnessrl.policies.lm import LMConfig, LMPolicy  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--turns", type=int, default=6)
    ap.add_argument("--new-tokens", type=int, default=64)
    args = ap.parse_args()
    torch.set_num_threads(1)
    pol = LMPolicy.from_config(LMConfig(model=args.model, dtype="float32"))
    tok = pol.tokenizer
    system = (ROOT / "src/harnessrl/policies/generation.py").read_text()[:2500]
    first = tok.apply_chat_template([{"role": "system", "content": system}, {"role": "user", "content": "Fix the bug."}],
                                    tokenize=False, add_generation_prompt=True)
    first = tok(first, add_special_tokens=False)["input_ids"]
    obs = tok((ROOT / "README.md").read_text()[:400], add_special_tokens=False)["input_ids"]
    print(f"first prompt {len(first)} tokens, observation {len(obs)} tokens")
    params = SamplingParams(args.new_tokens, 0.0)
    for name, mb in (("fresh prefill", 0), ("kept prefixes", 1024)):
        engine = HFEngine(pol.model, pol.pad_token_id, prefix_cache_mb=mb)
        prompts, per = [list(first), list(first)], []
        for _ in range(args.turns):
            t = time.process_time()
            outs = engine.generate(prompts, params)
            per.append(time.process_time() - t)
            prompts = [p + o.token_ids.tolist() + obs for p, o in zip(prompts, outs)]
        print(f"{name}: {args.turns} turns x 2 rows, {sum(per):.1f} s cpu; per turn "
              + " ".join(f"{x:.1f}" for x in per) + f"; last prompt {len(prompts[0])} tokens", flush=True)


if __name__ == "__main__":
    main()
