"""Three TRL-engine updates on a given model, the third after a resume from TRL's checkpoint; checks the
record store and prints what was measured.

    python scripts/engine_check.py --model PATH [--out runs/engine_check] [--processes 1]
                                   [--accelerate-config zero2.yaml] [--set KEY=VALUE ...]

Runs `python -m harnessrl.engines.trl` (under torchrun on 127.0.0.1, or `accelerate launch` when an
accelerate config is given) on the lookup suite through two harnesses, Cross grouping, LoRA r=8:
updates 1-2, then `--resume` to update 3. Then it checks, and exits 1 if any check fails:
  * the store holds 3 x (tasks_per_update x harnesses x group_size) episodes, ids unique,
    engine "trl", updates 0, 1, 2, every rank present
  * the last checkpoint's trainer_state says global_step 3
The last line is one JSON object: wall time per phase, peak memory per rank, reward per update.

The real-model check after merging the SmolLM2 work (issue 18) is
    python scripts/engine_check.py --model <the folder `harnessrl models install smollm2-135m` wrote>
and `scripts/gpu_check.sh` runs it on a GPU with bf16, vLLM and ZeRO-2.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(args: argparse.Namespace, run_yaml: Path, updates: int, resume: bool) -> None:
    module = ["-m", "harnessrl.engines.trl", "--config", str(run_yaml), "--set", f"updates={updates}", *sum(
        (["--set", s] for s in args.set), [])] + (["--resume"] if resume else [])
    if args.accelerate_config:
        cmd = ["accelerate", "launch", "--config_file", args.accelerate_config, "--num_processes", str(args.processes),
               "--main_process_ip", "127.0.0.1", "--main_process_port", str(free_port()), *module]
    else:
        cmd = [sys.executable, "-m", "torch.distributed.run", "--nnodes", "1", "--nproc_per_node", str(args.processes),
               "--master_addr", "127.0.0.1", "--master_port", str(free_port()), *module]
    print("+ " + " ".join(cmd), file=sys.stderr, flush=True)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
           "HF_HUB_DISABLE_TELEMETRY": "1", "TOKENIZERS_PARALLELISM": "false"}
    subprocess.run(cmd, env=env, check=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True, help="model folder (saved with save_pretrained) or cached hub id")
    ap.add_argument("--out", default="runs/engine_check")
    ap.add_argument("--processes", type=int, default=1)
    ap.add_argument("--accelerate-config", default=None)
    ap.add_argument("--set", action="append", default=[], help="extra KEY=VALUE for the run file")
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT / "src"))
    from harnessrl.records import RecordStore

    out = Path(args.out)
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    H, G, T = 2, 2, 2
    cfg = {"policy": {"model": args.model, "max_new_tokens": 48, "lora_rank": 8}, "run_dir": str(out / "run"),
           "suite": "lookup", "harnesses": ["lookup-plain", "lookup-kv"], "max_turns": 3, "grouping": "cross",
           "group_size": G, "tasks_per_update": T, "lr": 1e-5, "trl": {"save_steps": 1}}
    import yaml

    run_yaml = out / "run.yaml"
    run_yaml.write_text(yaml.safe_dump(cfg))
    per_update = T * H * G
    summaries = {}
    launch(args, run_yaml, 2, resume=False)
    summaries["updates_1_2"] = [json.loads(p.read_text()) for p in sorted((out / "run").glob("engine_summary-rank*.json"))]
    launch(args, run_yaml, 3, resume=True)
    summaries["update_3_resumed"] = [json.loads(p.read_text()) for p in sorted((out / "run").glob("engine_summary-rank*.json"))]

    eps = RecordStore(out / "run" / "store", create=False).episodes()
    ids = [e.episode_id for e in eps]
    ckpts = sorted((out / "run").glob("checkpoint-*"), key=lambda p: int(p.name.split("-")[1]))
    state = json.loads((ckpts[-1] / "trainer_state.json").read_text()) if ckpts else {}
    checks = {
        "episodes": len(eps) == 3 * per_update,
        "unique_ids": len(set(ids)) == len(ids),
        "engine_trl": {e.metadata.get("engine") for e in eps} == {"trl"},
        "updates_0_1_2": Counter(e.metadata.get("update") for e in eps) == {0: per_update, 1: per_update, 2: per_update},
        "all_ranks": {e.metadata.get("rank") for e in eps} == set(range(args.processes)),
        "global_step_3": state.get("global_step") == 3,
    }
    reward = {u: round(sum(e.reward for e in eps if e.metadata.get("update") == u) / per_update, 4) for u in (0, 1, 2)}
    print(json.dumps({"check": "engine_trl_3_updates_resume", "model": args.model, "processes": args.processes,
                      "accelerate_config": args.accelerate_config, "sets": args.set, "passed": all(checks.values()),
                      "checks": checks, "reward_per_update": reward, "episodes": len(eps),
                      "tokens_out": sum(e.tokens_out for e in eps), "format_errors": sum(e.format_errors for e in eps),
                      "summaries": summaries}))
    return 0 if all(checks.values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
