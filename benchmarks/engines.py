"""The TRL engine vs the native agent trainer on the same work: generated tokens / s over whole updates.

Both train the same locally built tiny model (LoRA r=8, fp32, no gradient checkpointing) on the
lookup suite through two harnesses, Cross grouping, 2 tasks x 2 harnesses x 4 rollouts per update,
2 turns of at most 16 tokens; rollouts, advantages and the update all count. The first update
is warm-up and is not timed. Tokens are the generated tokens of the timed updates' episodes, read
back from each run's record store (so only work that landed counts).

    python benchmarks/engines.py [--updates 4] [--threads 1]

There is no target: this measures what the adapter costs (or saves) on one CPU process; the
engine exists for what the native trainer cannot do (many processes, DeepSpeed/FSDP, vLLM).
The last line is one JSON object (ours = TRL engine, anchor = native trainer).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

# Run as a script, this folder leads sys.path and benchmarks/miniwob.py would shadow the miniwob package.
sys.path = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

for _k, _v in {"HF_HUB_OFFLINE": "1", "HF_HUB_DISABLE_TELEMETRY": "1", "TRANSFORMERS_OFFLINE": "1",
               "HF_DATASETS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false", "TRL_EXPERIMENTAL_SILENCE": "1"}.items():
    os.environ.setdefault(_k, _v)

import torch  # noqa: E402

from harnessrl.policies.lm import LMConfig  # noqa: E402
from harnessrl.policies.tiny import build_tiny_lm  # noqa: E402
from harnessrl.records import RecordStore  # noqa: E402

WORDS = "look lamp box door key cup answer red blue green small large the is of what color size".split()
COMMON = dict(suite="lookup", tasks=["lookup/000", "lookup/001", "lookup/002"], harnesses=["lookup-plain", "lookup-kv"],
              max_turns=2, grouping="cross", group_size=4, tasks_per_update=2, lr=1e-3, log_kl=False, seed=3)


def tiny_model(root: Path) -> Path:
    lines = [f"The {a} is {b}. look {a} answer {b}" for a in WORDS[:6] for b in WORDS[8:12]] * 10
    out = root / "tiny"
    build_tiny_lm(out, lines, size="micro", vocab_size=400, seed=0, max_positions=512)
    return out


def generated_tokens(store: Path, first_update: int) -> int:
    return sum(e.tokens_out for e in RecordStore(store, create=False).episodes() if e.metadata["update"] >= first_update)


def native(model: Path, run: Path, updates: int) -> tuple[float, int]:
    from harnessrl.train.agent import AgentTrainConfig, AgentTrainer

    stamps: list[float] = []
    cfg = AgentTrainConfig(policy=LMConfig(model=str(model), max_new_tokens=16, lora_rank=8), run_dir=str(run),
                           updates=updates, **COMMON)
    AgentTrainer(cfg, on_update=lambda row: stamps.append(time.perf_counter())).run()
    return stamps[-1] - stamps[0], generated_tokens(run / "store", 1)


def trl_engine(model: Path, run: Path, updates: int) -> tuple[float, int]:
    from transformers import TrainerCallback

    from harnessrl.engines.trl import TRLEngine
    from harnessrl.engines.trl_config import TRLRunConfig

    stamps: list[float] = []

    class Stamp(TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):
            stamps.append(time.perf_counter())

    cfg = TRLRunConfig(policy=LMConfig(model=str(model), max_new_tokens=16, lora_rank=8), run_dir=str(run),
                       updates=updates, trl={"gradient_checkpointing": False, "save_steps": 10_000}, **COMMON)
    engine = TRLEngine(cfg)
    engine.trainer.add_callback(Stamp())
    engine.run()
    return stamps[-1] - stamps[0], generated_tokens(run / "store", 1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--updates", type=int, default=4)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        model = tiny_model(root)
        t_nat, n_nat = native(model, root / "native", args.updates)
        t_trl, n_trl = trl_engine(model, root / "trl", args.updates)
    nat, trl = n_nat / t_nat, n_trl / t_trl
    print(f"{args.updates - 1} timed updates of {2 * 2 * 4} episodes, {args.threads} thread(s)", file=sys.stderr)
    print(f"native trainer: {n_nat} generated tokens in {t_nat:.2f} s = {nat:,.0f} tok/s", file=sys.stderr)
    print(f"TRL engine:     {n_trl} generated tokens in {t_trl:.2f} s = {trl:,.0f} tok/s", file=sys.stderr)
    print(json.dumps({"benchmark": "engine_trl_vs_native", "ours": round(trl, 1), "anchor": round(nat, 1),
                      "unit": "generated tokens/s (whole updates)", "ratio": round(trl / nat, 3), "target": None,
                      "updates_timed": args.updates - 1, "threads": args.threads}))


if __name__ == "__main__":
    main()
