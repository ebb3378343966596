"""Forward mode, measured: a real program's calls forwarded to an upstream, its tokens recorded exactly.

    python scripts/forward_tokens.py --model smollm2-135m --harness mini-swe-agent --tasks 2 --max-turns 3

The upstream is our own gateway serving the model on loopback (fp32, CPU, greedy), answering as
`harnessrl gateway serve` does, with vLLM's token fields (`logprobs`, `return_token_ids`) when
asked. The episodes run the real program in its sandbox with `--policy forward:URL`. Then:

  direct:    every request the upstream received is sent again straight to it (no harnessrl in
             between) and its prompt ids, sampled ids and log-probs are compared with what forward
             mode recorded for that call (ids equal; max abs log-prob difference printed);
  recompute: every stored training row is recomputed teacher-forced by the same model loaded
             separately in this process (train/token_check.py: max abs diff, unsampled tokens).

Prints one JSON line. Outside `make test` (a real model and a real program).
"""

from __future__ import annotations

import argparse
import json
import os
import threading
import time

import numpy as np
import openai

from harnessrl.gateway import Gateway
from harnessrl.harness.base import load_spec, make_harness
from harnessrl.policies.endpoint import ForwardConfig, ForwardPolicy
from harnessrl.policies.lm import LMConfig, LMPolicy
from harnessrl.policies.upstream_tokens import TOKEN_OPTIONS, answer_call, read_tokens
from harnessrl.rollout.loop import RolloutItem, run_group
from harnessrl.rollout.suites import load_suite
from harnessrl.train.token_check import check_rows


def serve(gw: Gateway, policy: LMPolicy, seen: list[dict], stop: threading.Event) -> None:
    issued: dict[str, str] = {}
    n = 0
    while not stop.is_set():
        call = gw.next_call(timeout=0.05)
        if call is not None:
            seen.append(call.request)
            answer_call(gw, call, policy, issued, n)
            n += 1


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--harness", default="mini-swe-agent")
    ap.add_argument("--tasks", type=int, default=2)
    ap.add_argument("--max-turns", type=int, default=3)
    ap.add_argument("--max-new-tokens", type=int, default=48)
    args = ap.parse_args()
    cfg = LMConfig(model=args.model, temperature=0.0, max_new_tokens=args.max_new_tokens, dtype="float32", device="cpu")
    key = "sk-forward-tokens"
    gw = Gateway(api_key=key, model=args.model).start()
    seen: list[dict] = []
    stop = threading.Event()
    thread = threading.Thread(target=serve, args=(gw, LMPolicy.from_config(cfg), seen, stop), daemon=True)
    thread.start()
    os.environ["FORWARD_TOKENS_KEY"] = key
    fwd = ForwardPolicy(ForwardConfig(base_url=gw.base_url, api_key_env="FORWARD_TOKENS_KEY", temperature=0.0,
                                      max_tokens=args.max_new_tokens, concurrency=1))
    harnesses = [make_harness(load_spec(h, [f"max_turns={args.max_turns}"])) for h in args.harness.split(",")]
    tasks = [t for t in load_suite("code-v1").tasks if not t.needs_shell][: args.tasks]
    t0 = time.time()
    episodes, pairs = [], []
    for i, (h, t) in enumerate((h, t) for h in harnesses for t in tasks):  # one at a time: calls stay in turn order
        first = len(seen)
        ep = run_group(fwd, [RolloutItem(h, t, 0)], run_id="forward-tokens", key_prefix=f"{i}-")[0]
        ep.metadata["context_resets"] = [list(r) for r in fwd.pop_resets(f"{i}-0")]
        episodes.append(ep)
        pairs += list(zip(seen[first:], ep.turns))
    wall = time.time() - t0
    # direct: the same requests straight to the upstream
    client = openai.OpenAI(base_url=gw.base_url, api_key=key, max_retries=0)
    worst, same_ids, compared = 0.0, 0, 0
    for request, turn in pairs:
        body = {k: v for k, v in request.items() if k not in ("model", "messages")}
        out = client.chat.completions.create(model=args.model, messages=request["messages"],
                                             extra_body={**body, **TOKEN_OPTIONS["vllm"]}).model_dump()
        tok = read_tokens(out)
        gen = turn.token_ids[turn.loss_mask == 1]
        compared += 1
        same_ids += int(tok.completion_ids == gen.tolist())
        n = min(len(gen), len(tok.logprobs or []))
        if n:
            worst = max(worst, float(np.abs(np.asarray(tok.logprobs[:n]) - turn.logprobs[turn.loss_mask == 1][:n]).max()))
    stop.set()
    thread.join(timeout=5)
    gw.close()
    report = check_rows(LMPolicy.from_config(cfg), episodes)
    print(json.dumps({
        "model": args.model, "harness": args.harness, "episodes": len(episodes), "calls": compared, "wall_s": round(wall, 1),
        "direct_same_ids": f"{same_ids}/{compared}", "direct_max_abs_diff": worst,
        "recompute_max_abs_diff": report["max_abs_diff"], "recompute_tokens": report["tokens"],
        "unsampled": report["unsampled"], "rows": report["rows"], "programs": report["programs"],
        "statuses": [f"{e.context.harness_id}:{e.context.task_id.split('/')[-1]}:{e.status}" for e in episodes]}))


if __name__ == "__main__":
    main()
