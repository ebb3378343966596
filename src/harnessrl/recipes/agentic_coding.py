"""Recipe: agentic coding with one epoch of GSPO on a LoRA adapter, judged on external suites.

The agentic-coding paper trains a coding model with one epoch of GSPO on a rank-32 LoRA adapter
over a set of agentic coding tasks, then reports pass@1 on external benchmarks (including data
released after training), the number of agent steps, and how often the agent drops a
requirement or breaks existing behaviour — before vs after training. At small scale:

  1. the policy: a given model (`--model smollm2-135m`, ...) or a tiny LM built here;
  2. the training suite is split (seeded) into training tasks, held-out tasks and a held-back
     slice that is sealed before training (training refuses sealed tasks);
  3. BEFORE: the starting policy, greedy, on every external suite through every harness;
  4. one epoch of GSPO with a LoRA adapter through the harnesses (every training task drawn
     once: updates = ceil(tasks / tasks_per_update); recipes/engine.py: native or TRL);
  5. AFTER: the trained adapter on the same external suites, same seeds;
  6. each seal's evaluation (both policies) is written once and verified; report.

External suites: `heldout` (held-out tasks of the training suite), any other built-in suite
(`terminal-v1`), `sealed` (the held-back slice), `fresh` (a folder of tasks written after
training began: `--sealed-suite`, it may be added on `--resume` once training has run) and
`terminal-bench` (a Terminal-Bench / Harbor folder: `--tb-path`).

    harnessrl recipe agentic-coding                                   # tiny LM, CPU, a minute
    harnessrl recipe agentic-coding --model smollm2-135m --set ...    # a real model, CPU smoke
    harnessrl recipe agentic-coding --scale paper --model Qwen/Qwen3-8B   # TRL engine, GPU
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pydantic import Field, model_validator

from harnessrl.config import ConfigError
from harnessrl.episode import Episode
from harnessrl.fileio import atomic_write_text
from harnessrl.evaluate.seal import Seal, create_seal, load_seal, write_sealed_eval
from harnessrl.harness.base import Harness, make_harness
from harnessrl.policies.lm import LMPolicy
from harnessrl.policies.scripted import Oracle
from harnessrl.records import RecordStore
from harnessrl.recipes.engine import train_agent
from harnessrl.recipes.lm_base import LMRecipeConfig, policy_config, sampling_group_size
from harnessrl.recipes.splits import split_tasks
from harnessrl.recipes.stages import json_stage
from harnessrl.recipes.workers import folder_lock
from harnessrl.rollout.loop import RolloutItem, run_group
from harnessrl.tasks.contract import TaskLike
from harnessrl.train.agent import AgentTrainConfig
from harnessrl.train.sft import build_tiny_for
from harnessrl.train.tasks import load_tasks, task_id

CLAIM = ("Agentic coding RL: one epoch of GSPO on a rank-32 LoRA adapter (Kimi K2.7 Code, 1,700 tasks) raises pass@1 "
         "on six external benchmarks, including data released after training, and reduces agent steps and failure "
         "modes such as dropping a requirement or breaking existing behaviour.")
#: External suite names the recipe knows besides the built-in suites.
SPECIAL = ("heldout", "sealed", "fresh", "terminal-bench")
#: Settings that may change on --resume: ones that only add evaluations, and ones that change where the
#: work runs or how much memory a pass takes (micro-batching, recomputed activations), not what it computes.
EVAL_ONLY = {"sealed_suite", "tb_path", "eval_suites", "workers", "device", "micro_batch_tokens", "eval_batch_tokens",
             "sft_micro_batch_tokens", "gradient_checkpointing"}


class AgenticCodingConfig(LMRecipeConfig):
    suite: str = "code-v1"
    harnesses: list[str] = Field(["qwen_code_3turns"], min_length=1, description="Harnesses to train and evaluate through.")
    max_turns: int | None = Field(2, ge=1, description="Override every harness's turn limit (train and evaluation); None keeps it.")
    split_seed: int = 0
    train_tasks: int = Field(4, ge=1, description="Training tasks drawn from the suite (seeded shuffle).")
    heldout_tasks: int = Field(2, ge=1, description="Held-out tasks of the training suite (external suite `heldout`).")
    sealed_tasks: int = Field(2, ge=1, description="Tasks held back and sealed before training (external suite `sealed`).")
    sealed_suite: str | None = Field(None, description="A folder of tasks written after training began (suite `fresh`).")
    tb_path: str | None = Field(None, description="A Terminal-Bench / Harbor task folder (suite `terminal-bench`).")
    eval_suites: list[str] = Field(["heldout", "terminal-v1", "sealed"], description="External suites to evaluate on.")
    eval_tasks: int | None = Field(2, ge=1, description="At most this many tasks of each built-in / folder suite (None: all).")
    lora_rank: int = Field(4, ge=1, description="LoRA rank (32 at paper scale).")
    objective: str = "gspo"
    group_size: int = Field(2, ge=2)
    tasks_per_update: int = Field(4, ge=1)
    temperature: float = 1.0
    eval_seeds: int = Field(1, ge=1, description="Greedy episodes per task and harness.")
    max_new_tokens: int = 24
    tiny_positions: int = Field(4096, ge=256, description="Context of the tiny LM built when no model is given.")

    @model_validator(mode="after")
    def _check(self) -> "AgenticCodingConfig":
        if self.objective not in ("gspo", "gspo_token"):
            raise ValueError(f"objective {self.objective!r}: this recipe is GSPO (gspo or gspo_token)")
        return self

    def n_updates(self) -> int:
        """One epoch: every training task is drawn once (all in one update when tasks_per_update >= train_tasks)."""
        return math.ceil(self.train_tasks / self.tasks_per_update)


def preset(scale: str) -> dict[str, Any]:
    """small: a few code-v1 tasks through one harness (tiny LM or a small real model on CPU).
    paper: more of code-v1 through two coding harnesses, rank-32 LoRA, TRL engine (a GPU and --model)."""
    if scale == "small":
        return {"scale": "small"}
    if scale == "paper":
        return {"scale": "paper", "harnesses": ["qwen_code", "openhands"], "max_turns": None, "train_tasks": 25,
                "heldout_tasks": 8, "sealed_tasks": 8, "eval_tasks": None, "lora_rank": 32, "group_size": 8,
                "tasks_per_update": 4, "lr": 1e-5, "max_new_tokens": 1024, "max_context_tokens": 16384,
                "eval_seeds": 2, "workers": 1, "engine": "trl"}
    raise ConfigError(f"scale {scale!r}: choose small or paper")


# ----------------------------------------------------------------------------------------
# 1. Tasks, harnesses and the external suites


def harnesses_of(cfg: AgenticCodingConfig) -> list[Harness]:
    """The harnesses, each with the recipe's turn limit (the trainer applies the same override)."""
    out = []
    for spec in cfg.harnesses:
        h = make_harness(spec)
        if cfg.max_turns is not None:
            h.spec = h.spec.model_copy(update={"max_turns": cfg.max_turns})
        out.append(h)
    return out


def split_of(cfg: AgenticCodingConfig) -> tuple[list[Any], list[Any], list[Any]]:
    """(train, heldout, sealed) from one seeded shuffle of the training suite."""
    tasks = load_tasks(cfg.suite)
    n_held = cfg.heldout_tasks + cfg.sealed_tasks
    train, rest = split_tasks(tasks, n_held, n_train=cfg.train_tasks, seed=cfg.split_seed,
                              what=f"train_tasks={cfg.train_tasks}, heldout_tasks={cfg.heldout_tasks}, sealed_tasks={cfg.sealed_tasks}")
    return train, rest[:cfg.heldout_tasks], rest[cfg.heldout_tasks:]


def suite_names(cfg: AgenticCodingConfig) -> list[str]:
    """The external suites in report order; `fresh` and `terminal-bench` join when their folder is given."""
    names = list(dict.fromkeys(cfg.eval_suites))
    for name, given in (("fresh", cfg.sealed_suite), ("terminal-bench", cfg.tb_path)):
        if given and name not in names:
            names.append(name)
    return names


def run_key(cfg: AgenticCodingConfig, name: str) -> str:
    """The suite's key in run ids and seal names: a folder suite carries a digest of its path, so
    another folder given on --resume is evaluated afresh instead of reusing the first one's episodes."""
    folder = {"fresh": cfg.sealed_suite, "terminal-bench": cfg.tb_path}.get(name)
    return f"{name}-{hashlib.sha256(str(Path(folder).resolve()).encode()).hexdigest()[:8]}" if folder else name


def _folder_tasks(path: str, option: str) -> list[Any]:
    """Tasks of a suite folder or a Terminal-Bench / Harbor folder; errors name the option."""
    from harnessrl.tasks.loaders import SuiteError, load_suite

    if not Path(path).is_dir():
        raise ConfigError(f"{option} {path}: not a folder; give a folder of task folders (Terminal-Bench task.yaml, "
                          "Harbor task.toml, or a harnessrl suite with suite.toml)")
    try:
        suite = load_suite(Path(path))
    except SuiteError as err:
        raise ConfigError(f"{option} {path}: {err}") from None
    if not suite.tasks:
        why = "; ".join(f"{r.path.name}: {r.reason}" for r in suite.rejected[:3]) or "no task folders"
        raise ConfigError(f"{option} {path}: no task could be loaded ({why}); fix the tasks or give another folder")
    return list(suite.tasks)


def external_suites(cfg: AgenticCodingConfig, heldout: list[Any], sealed: list[Any]) -> dict[str, list[Any]]:
    """{suite name: tasks} for every external suite; unknown names and bad folders fail here, before any work."""
    from harnessrl.tasks.base import builtin_suites

    known = [*SPECIAL, *(s for s in builtin_suites() if s != cfg.suite)]
    cap = (lambda ts: ts[:cfg.eval_tasks]) if cfg.eval_tasks else (lambda ts: ts)  # noqa: E731
    out: dict[str, list[Any]] = {}
    for name in suite_names(cfg):
        if name == cfg.suite:
            raise ConfigError(f"eval_suites: {name!r} is the training suite; its unseen tasks are the suite 'heldout'")
        if name not in known:
            raise ConfigError(f"eval_suites: unknown suite {name!r}; choose from {', '.join(known)}")
        if name == "heldout":
            out[name] = heldout
        elif name == "sealed":
            out[name] = sealed
        elif name == "fresh":
            if not cfg.sealed_suite:
                raise ConfigError("eval_suites: 'fresh' needs --sealed-suite (a folder of tasks written after training began)")
            out[name] = cap(_folder_tasks(cfg.sealed_suite, "--sealed-suite"))
        elif name == "terminal-bench":
            if not cfg.tb_path:
                raise ConfigError("eval_suites: 'terminal-bench' needs --tb-path (a Terminal-Bench task folder)")
            out[name] = cap(_folder_tasks(cfg.tb_path, "--tb-path"))
        else:
            out[name] = cap(load_tasks(name))
    return out


def check_cells(harnesses: list[Harness], suites: dict[str, list[Any]]) -> None:
    """Every harness drives every task (a task needing a shell and a harness without one would be
    an episode that cannot start): refuse before any work, naming the first such pair."""
    for name, tasks in suites.items():
        for h in harnesses:
            bad = [task_id(t) for t in tasks if not h.supports(t)]
            if bad:
                why = getattr(h, "compatibility", lambda t: None)(next(t for t in tasks if not h.supports(t)))
                raise ConfigError(f"harness {h.id!r} cannot drive task {bad[0]} of suite {name!r} ({why}); choose a "
                                  "harness with a shell (qwen_code, openhands, terminus, swe_agent) or drop the suite")


# ----------------------------------------------------------------------------------------
# 2. Seals: the held-back slice (before training) and the fresh folder


def _seal(out: Path, kind: str, tasks: list[TaskLike], note: str) -> Seal:
    """One seal per recipe folder and suite key; loaded when it exists (resume), else created now."""
    name = f"agentic-{kind}-" + hashlib.sha256(str(out.resolve()).encode()).hexdigest()[:10]
    try:
        return load_seal(name, out / "seals")
    except ConfigError:
        return create_seal(name, tasks=tasks, suite="", directory=out / "seals", note=note)


def written_after(tasks: list[TaskLike], started: float) -> list[bool]:
    """Per task: was every file of its folder last written after `started` (a Unix time)?
    File times are what a folder can show; the seal's time stamp fixes them from then on."""
    def oldest(t: Any) -> float:
        return min((p.stat().st_mtime for p in Path(t.root).rglob("*") if p.is_file()), default=0.0)
    return [oldest(t) > started for t in tasks]


# ----------------------------------------------------------------------------------------
# 3. Evaluation and training


def _rate(store: RecordStore, ids: list[str]) -> float:
    quoted = ",".join("'" + i.replace("'", "") + "'" for i in ids)
    eps = store.episodes(f"episode_id IN ({quoted})") if ids else []
    return sum(e.success for e in eps) / max(1, len(eps))


def check_resumable(cfg: AgenticCodingConfig, out: Path) -> None:
    """The first run writes its settings; a resumed one must train the same way (evaluation-only
    settings — another external suite, a fresh or Terminal-Bench folder — may be added)."""
    path = out / "config.json"
    new = cfg.model_dump(mode="json")
    if path.exists():
        old = json.loads(path.read_text())
        diff = [f"{k}: {old.get(k)!r} -> {new[k]!r}" for k in new if k not in EVAL_ONLY and old.get(k) != new[k]]
        if diff:
            raise ConfigError(f"{out} holds a run with other training settings ({'; '.join(diff)}); resume it with the "
                              "same settings or choose another --out")
    else:
        atomic_write_text(path, json.dumps(new, indent=2))


def evaluate(policy: LMPolicy, harnesses: list[Harness], tasks: list[TaskLike], seeds: int, run_id: str,
             store: RecordStore, group: int) -> list[str]:
    """Greedy episodes of `policy` on every (task, harness, seed); stored once (idempotent on resume)."""
    done = set(store.sql("SELECT episode_id FROM episodes WHERE run_id = ?", [run_id]).column("episode_id").to_pylist())
    items = [RolloutItem(h, t, 10_000 + s) for h in harnesses for t in tasks for s in range(seeds)]
    ids = [f"{run_id}-{i:05d}" for i in range(len(items))]
    if set(ids) <= done:
        return ids
    policy.cfg = policy.cfg.model_copy(update={"temperature": 0.0})
    policy.reseed(0)
    for lo in range(0, len(items), group):  # bounded lockstep groups: memory, and a crash loses little
        episodes: list[Episode] = run_group(policy, items[lo:lo + group], run_id=run_id, key_prefix=f"{run_id}-{lo}-")
        for k, ep in enumerate(episodes):
            ep.episode_id = ids[lo + k]
            ep.metadata["eval"] = True
        store.append([e for e in episodes if e.episode_id not in done])
    return ids


def rl_config(cfg: AgenticCodingConfig, out: Path, model: str, train: list[Any]) -> AgentTrainConfig:
    extra = {"max_turns": cfg.max_turns} if cfg.max_turns is not None else {}
    return AgentTrainConfig(
        policy=policy_config(cfg, model, lora_rank=cfg.lora_rank, temperature=cfg.temperature),
        micro_batch_tokens=cfg.micro_batch_tokens, run_dir=str(out / "runs" / "gspo"), store=str(out / "store"),
        run_id="gspo", suite=cfg.suite, tasks=[task_id(t) for t in train], harnesses=list(cfg.harnesses),
        group_size=cfg.group_size, tasks_per_update=min(cfg.tasks_per_update, len(train)), updates=cfg.n_updates(),
        grouping="within", objective=cfg.objective, lr=cfg.lr, kl_coef=cfg.kl_coef, seed=0,
        seals_dir=str(out / "seals"), report_to=cfg.report_to, **extra)


def run(cfg: AgenticCodingConfig, out: str | Path, *, progress: Callable[[str, int, int | None], None] = lambda *a: None
        ) -> dict[str, Any]:
    """The whole recipe; returns what the report needs."""
    with folder_lock(out):  # one run per folder, and no survivor of a killed one
        return _run(cfg, Path(out), progress)


def check(cfg: AgenticCodingConfig) -> tuple[list[Harness], list[Any], list[Any], dict[str, list[Any]]]:
    """Everything cheap that can be wrong with the settings, before anything is written:
    (harnesses, training tasks, held-back sealed tasks, {external suite: tasks})."""
    harnesses = harnesses_of(cfg)  # an unknown harness fails here
    train, heldout, sealed = split_of(cfg)
    suites = external_suites(cfg, heldout, sealed)
    check_cells(harnesses, {"train": train, **suites})
    return harnesses, train, sealed, suites


def _run(cfg: AgenticCodingConfig, out: Path, progress: Callable[[str, int, int | None], None]) -> dict[str, Any]:
    t0 = time.perf_counter()
    harnesses, train, sealed, suites = check(cfg)
    check_resumable(cfg, out)
    model = cfg.model or build_tiny_for(out / "model", Oracle(), list(cfg.harnesses), train, size=cfg.tiny_size,
                                         max_positions=cfg.tiny_positions)
    seals = {"sealed": _seal(out, run_key(cfg, "sealed"), sealed, f"held back from {cfg.suite}, sealed before training")} \
        if "sealed" in suites else {}
    store, group = RecordStore(out / "store"), sampling_group_size(cfg, turns=cfg.max_turns or 4)
    order = list(suites)
    steps = 2 * len(order)
    base = LMPolicy.from_config(policy_config(cfg, model))  # the starting policy: no adapter
    before = {}
    for i, name in enumerate(o for o in order if o != "fresh"):  # fresh tasks exist only once training began
        before[name] = evaluate(base, harnesses, suites[name], cfg.eval_seeds, f"before-{run_key(cfg, name)}", store, group)
        progress("evaluations", i + 1, steps)
    del base  # a real model: not two copies in memory while training
    started = json_stage(out, "training_started", lambda: {"unix": time.time(),
                                                          "utc": datetime.now(timezone.utc).isoformat(timespec="seconds")})
    trained = train_agent(rl_config(cfg, out, model, train), train, cfg.engine,
                          lambda r: progress("GSPO updates", r["update"], cfg.n_updates()))
    if "fresh" in suites:
        seals["fresh"] = _seal(out, run_key(cfg, "fresh"), suites["fresh"], f"{cfg.sealed_suite}: tasks written after training "
                               f"began ({started['utc']}); sealed once training had run")
        before["fresh"] = evaluate(LMPolicy.from_config(policy_config(cfg, model)), harnesses, suites["fresh"],
                                   cfg.eval_seeds, f"before-{run_key(cfg, 'fresh')}", store, group)
    after = {}
    for i, name in enumerate(order):
        after[name] = evaluate(trained.policy, harnesses, suites[name], cfg.eval_seeds, f"after-{run_key(cfg, name)}", store, group)
        progress("evaluations", len(order) + i + 1, steps)
    for name, seal in seals.items():  # each seal's one evaluation: both policies, written once
        if not seal.eval_path.exists():
            write_sealed_eval(seal, store, before[name] + after[name], {"pass@1": {
                "before": _rate(store, before[name]), "after": _rate(store, after[name])}})
    fresh_after = written_after(suites["fresh"], started["unix"]) if "fresh" in suites else []
    return {"cfg": cfg, "out": out, "model": model, "suites": {k: [task_id(t) for t in v] for k, v in suites.items()},
            "suite_tasks": suites, "train_tasks": [task_id(t) for t in train], "harnesses": [h.id for h in harnesses],
            "before": before, "after": after, "seals": seals, "metrics": trained.rows, "training_started": started,
            "fresh_written_after": fresh_after, "wall_s": time.perf_counter() - t0}
