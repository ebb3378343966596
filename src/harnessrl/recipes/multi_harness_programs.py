"""The multi-harness recipe on real agent programs: what it adds besides our own harnesses.

Real programs (mini-swe-agent, aider-cli, qwen-code-cli-8k, openhands-cli-8k, ...) run as harnesses
through the model gateway, so the recipe's rollouts, training and evaluation take them unchanged.
What this file adds, each piece idempotent (a resumed run reuses what is stored):

- `oracle_records`: the oracle's episodes through every trained program on the training tasks,
  stored once (run `oracle-records`): the frozen evidence that each task is solvable through each
  program as that program runs it, and, for the tiny LM built here, its tokenizer's corpus (the
  programs' own prompts, tool results and replies), so no second oracle pass is needed;
- `start_model`: the warm start given from outside (`warm_start_model`: a merged SFT model folder,
  or a PEFT adapter folder on `model`), e.g. the agentic-coding recipe's SFT stage;
- `reference_samples`: the start model sampled `ref_samples` times per held-out task through every
  program (the sealed one under its seal), the reference of the ceiling decomposition
  (analysis/ceiling.py): pass@k through a program is that program's ceiling for this model.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from harnessrl.config import ConfigError
from harnessrl.episode import Episode
from harnessrl.harness.base import Harness, make_harness
from harnessrl.policies.lm import LMPolicy
from harnessrl.policies.scripted import Oracle
from harnessrl.records import RecordStore
from harnessrl.rollout.loop import RolloutItem, run_group
from harnessrl.tasks.contract import TaskLike
from harnessrl.train.tasks import check_trainable

ORACLE_RUN = "oracle-records"


def harness_of(spec: str, max_turns: int | None) -> Harness:
    """A harness with the recipe's turn limit (the trainer applies the same override, so the frozen
    manifest's harness hash is the same in the recipe and in every run)."""
    h = make_harness(spec)
    if max_turns is not None:
        h.spec = h.spec.model_copy(update={"max_turns": max_turns})
    return h


def oracle_records(store: RecordStore, harnesses: list[Harness], tasks: list[TaskLike], seals_dir: Path) -> list[Episode]:
    """The oracle's episodes through each trained harness on each training task (seed 0), stored once.
    They are training-side records: a sealed task or harness is refused before any episode runs."""
    done = store.episodes(f"run_id = '{ORACLE_RUN}'")
    if done:
        return done
    check_trainable(tasks, harnesses, str(seals_dir))
    episodes = run_group(Oracle(), [RolloutItem(h, t, 0) for h in harnesses for t in tasks], run_id=ORACLE_RUN,
                         key_prefix=f"{ORACLE_RUN}-")
    for i, ep in enumerate(episodes):
        ep.episode_id = f"{ORACLE_RUN}-{i:05d}"
    store.append(episodes)
    return episodes


def records_summary(episodes: list[Episode]) -> list[dict[str, Any]]:
    """Per harness: oracle episodes, solved, model calls per episode, wall seconds per episode."""
    rows = []
    for h in dict.fromkeys(e.context.harness_id for e in episodes):
        he = [e for e in episodes if e.context.harness_id == h]
        rows.append({"harness": h, "episodes": len(he), "solved": sum(e.success for e in he),
                     "calls/episode": sum(e.num_turns for e in he) / len(he),
                     "wall s/episode": sum(e.wall_time or 0.0 for e in he) / len(he),
                     "statuses": dict(Counter(e.status for e in he))})
    return rows


def corpus(episodes: list[Episode]) -> list[str]:
    """Every text the programs showed or the oracle wrote: the tiny LM's tokenizer corpus."""
    texts = []
    for e in episodes:
        for m in e.messages:
            c = m.get("content")
            texts.append(c if isinstance(c, str) else json.dumps(c, ensure_ascii=False))
            if m.get("tool_calls"):
                texts.append(json.dumps(m["tool_calls"], ensure_ascii=False))
    return [t for t in texts if t]


def build_tiny_from_records(out: Path, episodes: list[Episode], *, size: str, vocab_size: int, max_positions: int) -> str:
    """A tiny LM (random Qwen2-style weights) whose tokenizer saw the oracle records' text (idempotent)."""
    from harnessrl.policies.tiny import build_tiny_lm

    if (out / "config.json").exists():
        return str(out)
    texts = corpus(episodes)
    if not texts:
        raise ConfigError("oracle_records: the oracle's episodes through the programs hold no text to train a "
                          "tokenizer on; check `harnessrl agents list` (programs installed) and the episodes' status")
    build_tiny_lm(out, texts, size=size, vocab_size=vocab_size, max_positions=max_positions)
    return str(out)


def start_model(warm_start_model: str, base: str | None, out: Path) -> str:
    """The given warm start as a model path: a merged model folder as is; a PEFT adapter folder
    merged onto `base` (the recipe's `model`) once, into out/warm-start."""
    path = Path(warm_start_model).expanduser()
    if not path.is_dir():
        raise ConfigError(f"warm_start_model {warm_start_model!r}: no such folder; give the SFT stage's output "
                          "(a merged model folder with config.json, or an adapter folder with adapter_config.json)")
    if (path / "adapter_config.json").exists():
        merged = out / "warm-start"
        if (merged / "config.json").exists():
            return str(merged)
        if not base:
            raise ConfigError(f"warm_start_model {warm_start_model!r} is a LoRA adapter; set model to the base it was "
                              "trained on (--model) so it can be merged")
        from harnessrl.policies.lm import LMConfig

        LMPolicy.from_config(LMConfig(model=base, adapter=str(path), device="cpu")).save_merged(merged)
        return str(merged)
    if not (path / "config.json").exists():
        raise ConfigError(f"warm_start_model {warm_start_model!r}: neither config.json (a merged model) nor "
                          "adapter_config.json (a LoRA adapter) there")
    return str(path)


def warm_start_info(path: str, policy: LMPolicy) -> dict[str, Any]:
    """The report's SFT summary for a warm start made elsewhere (its sft.json when it has one)."""
    saved = Path(path) / "sft.json"
    info = json.loads(saved.read_text()) if saved.exists() else {}
    return {"demonstrations": info.get("demonstrations", 0), "demo_tokens": info.get("demo_tokens", 0),
            "steps": info.get("steps", 0), "loss_first": info.get("loss_first", float("nan")),
            "loss_last": info.get("loss_last", float("nan")), "seconds": info.get("seconds", 0.0),
            "parameters": sum(p.numel() for p in policy.model.parameters()), "given": path}


def reference_samples(policy: LMPolicy, harnesses: list[Harness], tasks: list[TaskLike], samples: int, temperature: float,
                      run_id: str, store: RecordStore, group: int) -> list[str]:
    """`samples` sampled episodes of the start model per (task, harness), stored once under `run_id`."""
    items = [RolloutItem(h, t, 20_000 + s) for h in harnesses for t in tasks for s in range(samples)]
    ids = [f"{run_id}-{i:05d}" for i in range(len(items))]
    done = set(store.sql("SELECT episode_id FROM episodes WHERE run_id = ?", [run_id]).column("episode_id").to_pylist())
    if set(ids) <= done:
        return ids
    policy.cfg = policy.cfg.model_copy(update={"temperature": temperature})
    policy.reseed(1)
    episodes: list[Episode] = []
    for lo in range(0, len(items), group):
        episodes += run_group(policy, items[lo:lo + group], run_id=run_id, key_prefix=f"{run_id}-{lo}-")
    for eid, ep in zip(ids, episodes):
        ep.episode_id = eid
        ep.metadata["reference"] = True
    store.append([e for e in episodes if e.episode_id not in done])
    return ids
