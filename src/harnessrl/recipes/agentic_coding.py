"""Recipe: agentic coding with one epoch of GSPO on a LoRA adapter, judged on external suites.

The agentic-coding paper trains a coding model with one epoch of GSPO on a rank-32 LoRA adapter
over a set of agentic coding tasks, then reports pass@1 on external benchmarks (including data
released after training), the number of agent steps, and how often the agent drops a
requirement or breaks existing behaviour — before vs after training. At small scale:

  1. the policy: a given model (`--model smollm2-135m`, ...) or a tiny LM built here;
  2. the training suite is split (seeded) into training tasks, held-out tasks and a held-back
     slice that is sealed before training (training refuses sealed tasks);
  3. BEFORE: the starting policy, greedy, on every external suite through every harness;
  4. optional warm start (`warm_start=true`): SFT with LoRA on the oracle's token-exact episodes
     through one harness on the training tasks (never a sealed one), the adapter merged into the
     base; the SFT model is evaluated like the base;
  5. optional probe (`probe_samples`): sampled episodes of the start model on each training task;
     `gspo_tasks=sometimes` keeps the tasks it solved sometimes (agentic_coding_episodes.py);
  6. one epoch of GSPO with a fresh LoRA adapter on the start model (the SFT model when warmed,
     so the KL reference — the adapter disabled — is the SFT model), once per seed in
     `rl_seeds` (every chosen task drawn once: updates = ceil(tasks / tasks_per_update);
     recipes/engine.py: native or TRL);
  7. AFTER: each trained adapter on the same external suites, same seeds;
  8. each seal's evaluation (every policy) is written once and verified; report.

The held-out tasks and the held-back slice are both sealed before any demonstration or training
episode runs; `eval_harnesses` are evaluated through but never trained in (SFT or GSPO).

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
import resource
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, model_validator

from harnessrl.config import ConfigError, changed_settings
from harnessrl.fileio import atomic_write_text
from harnessrl.evaluate.seal import Seal, create_seal, load_seal, write_sealed_eval
from harnessrl.harness.base import Harness, make_harness
from harnessrl.policies.lm import LMPolicy
from harnessrl.records import RecordStore
from harnessrl.recipes.agentic_coding_episodes import evaluate, gspo_tasks, solve_rate
from harnessrl.recipes.agentic_coding_teacher import make_teacher
from harnessrl.recipes.engine import train_agent
from harnessrl.recipes.lm_base import LMRecipeConfig, policy_config, sampling_group_size
from harnessrl.recipes.splits import split_tasks
from harnessrl.recipes.stages import json_stage
from harnessrl.recipes.workers import folder_lock
from harnessrl.tasks.contract import TaskLike
from harnessrl.train.agent import AgentTrainConfig
from harnessrl.train.sft import build_tiny_for, warm_start
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
    warm_start: bool = Field(False, description="SFT (LoRA, merged) on the oracle's episodes through sft_harness on the "
                             "training tasks before GSPO; GSPO then trains a fresh LoRA whose KL reference is the SFT model.")
    sft_teacher: Literal["oracle", "oracle-edit"] = Field("oracle", description="The warm start's demonstrator: the oracle "
                                                         "as the harness renders it (mini-swe-agent: whole files in base64), or "
                                                         "oracle-edit (read the file, then a short python str.replace edit).")
    sft_harness: str | None = Field(None, description="Harness of the warm start's demonstrations (None: the first of harnesses).")
    eval_harnesses: list[str] = Field([], description="Harnesses every policy is evaluated through but never trained in.")
    rl_seeds: list[int] = Field([0], min_length=1, description="One GSPO run per seed, all from the same start; "
                                "pass@1 after training pools them (per task: the mean over seeds).")
    gspo_tasks: Literal["all", "sometimes"] = Field("all", description="Which training tasks GSPO draws: all, or the ones "
                                                   "the start model solved sometimes in the probe (topped up to "
                                                   "tasks_per_update by a rate nearest 1/2).")
    probe_samples: int = Field(0, ge=0, description="Sampled episodes per training task and harness from the start model "
                               "before GSPO (0: no probe); gspo_tasks=sometimes needs >= 2.")

    @model_validator(mode="after")
    def _check(self) -> "AgenticCodingConfig":
        if self.objective not in ("gspo", "gspo_token"):
            raise ValueError(f"objective {self.objective!r}: this recipe is GSPO (gspo or gspo_token)")
        if self.gspo_tasks == "sometimes" and self.probe_samples < 2:
            raise ValueError(f"probe_samples {self.probe_samples}: gspo_tasks=sometimes picks tasks by the probe's "
                             "solve rate; set probe_samples to 2 or more (e.g. 4)")
        if len(set(self.rl_seeds)) != len(self.rl_seeds):
            raise ValueError(f"rl_seeds {self.rl_seeds}: give each seed once")
        trained = {*self.harnesses, self.sft_harness_id()} if self.warm_start else set(self.harnesses)
        if set(self.eval_harnesses) & trained:
            raise ValueError(f"eval_harnesses {sorted(set(self.eval_harnesses) & trained)}: trained in (harnesses or "
                             "sft_harness); an evaluation-only harness must be one the policy never trained in")
        return self

    def sft_harness_id(self) -> str:
        return self.sft_harness or self.harnesses[0]

    def n_updates(self, tasks: int | None = None) -> int:
        """One epoch: every task GSPO trains on (all training tasks unless given) is drawn once (all in one
        update when tasks_per_update >= the tasks)."""
        return math.ceil((self.train_tasks if tasks is None else tasks) / self.tasks_per_update)


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


def harnesses_of(cfg: AgenticCodingConfig, specs: list[str] | None = None) -> list[Harness]:
    """The harnesses, each with the recipe's turn limit (the trainer applies the same override)."""
    out = []
    for spec in cfg.harnesses if specs is None else specs:
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


def check_resumable(cfg: AgenticCodingConfig, out: Path) -> None:
    """The first run writes its settings; a resumed one must train the same way (evaluation-only
    settings — another external suite, a fresh or Terminal-Bench folder — may be added)."""
    path = out / "config.json"
    new = cfg.model_dump(mode="json")
    if path.exists():  # a setting added since the run began counts as its default there (config.changed_settings)
        diff = [f"{k}: {was!r} -> {now!r}" for k, was, now in changed_settings(cfg, json.loads(path.read_text()), EVAL_ONLY)]
        if diff:
            raise ConfigError(f"{out} holds a run with other training settings ({'; '.join(diff)}); resume it with the "
                              "same settings or choose another --out")
    else:
        atomic_write_text(path, json.dumps(new, indent=2))


def gspo_run_id(seed: int) -> str:
    """Seed 0 keeps the name a single-seed run always had (its folders and episodes stay resumable)."""
    return "gspo" if seed == 0 else f"gspo-s{seed}"


def rl_config(cfg: AgenticCodingConfig, out: Path, model: str, train: list[Any], seed: int = 0) -> AgentTrainConfig:
    """GSPO with a fresh LoRA on `model` (the base, or the merged SFT model): its reference is `model`;
    one epoch over `train` (every training task, or the ones the probe chose)."""
    extra = {"max_turns": cfg.max_turns} if cfg.max_turns is not None else {}
    run_id = gspo_run_id(seed)
    return AgentTrainConfig(
        policy=policy_config(cfg, model, lora_rank=cfg.lora_rank, temperature=cfg.temperature),
        micro_batch_tokens=cfg.micro_batch_tokens, run_dir=str(out / "runs" / run_id), store=str(out / "store"),
        run_id=run_id, suite=cfg.suite, tasks=[task_id(t) for t in train], harnesses=list(cfg.harnesses),
        group_size=cfg.group_size, tasks_per_update=min(cfg.tasks_per_update, len(train)), updates=cfg.n_updates(len(train)),
        grouping="within", objective=cfg.objective, lr=cfg.lr, kl_coef=cfg.kl_coef, seed=seed,
        seals_dir=str(out / "seals"), report_to=cfg.report_to, **extra)


def run(cfg: AgenticCodingConfig, out: str | Path, *, progress: Callable[[str, int, int | None], None] = lambda *a: None
        ) -> dict[str, Any]:
    """The whole recipe; returns what the report needs."""
    with folder_lock(out):  # one run per folder, and no survivor of a killed one
        return _run(cfg, Path(out), progress)


def check(cfg: AgenticCodingConfig) -> tuple[list[Harness], list[Any], dict[str, list[Any]]]:
    """Everything cheap that can be wrong with the settings, before anything is written:
    (harnesses evaluated through, training tasks, {external suite: tasks})."""
    trained = harnesses_of(cfg)  # an unknown harness fails here
    evaluated = trained + harnesses_of(cfg, cfg.eval_harnesses)
    train, heldout, sealed = split_of(cfg)
    suites = external_suites(cfg, heldout, sealed)
    check_cells(trained, {"train": train})
    if cfg.warm_start:
        check_cells(harnesses_of(cfg, [cfg.sft_harness_id()]), {"train": train})
    check_cells(evaluated, suites)
    return evaluated, train, suites


def _run(cfg: AgenticCodingConfig, out: Path, progress: Callable[[str, int, int | None], None]) -> dict[str, Any]:
    t0 = time.perf_counter()
    harnesses, train, suites = check(cfg)
    check_resumable(cfg, out)
    model = cfg.model or build_tiny_for(out / "model", make_teacher(cfg.sft_teacher), [*cfg.harnesses, cfg.sft_harness_id()], train,
                                         size=cfg.tiny_size, max_positions=cfg.tiny_positions)
    # the held-out tasks and the held-back slice are sealed before any demonstration or training episode
    seals = {name: _seal(out, run_key(cfg, name), suites[name], note) for name, note in (
        ("heldout", f"held out from {cfg.suite}, sealed before the warm start and training"),
        ("sealed", f"held back from {cfg.suite}, sealed before training")) if name in suites}
    store, group = RecordStore(out / "store"), sampling_group_size(cfg, turns=cfg.max_turns or 4)
    order = list(suites)
    policies = ["before", *(["sft"] if cfg.warm_start else []), *(f"after-s{s}" for s in cfg.rl_seeds)]
    steps, done = len(policies) * len(order), 0

    def evaluate_all(label: str, policy: LMPolicy, names: list[str]) -> dict[str, list[str]]:
        nonlocal done
        ids = {}
        for name in names:
            ids[name] = evaluate(policy, harnesses, suites[name], cfg.eval_seeds, f"{label}-{run_key(cfg, name)}", store, group)
            done += 1
            progress("evaluations", done, steps)
        return ids

    now = [o for o in order if o != "fresh"]  # fresh tasks exist only once training began
    evals: dict[str, dict[str, list[str]]] = {"before": evaluate_all("before", LMPolicy.from_config(policy_config(cfg, model)), now)}
    start, sft_info = model, None
    if cfg.warm_start:
        start, sft_info = warm_start(out / "sft", policy_config(cfg, model, lora_rank=cfg.lora_rank), make_teacher(cfg.sft_teacher),
                                     cfg.sft_harness_id(), train[:cfg.sft_tasks], seeds=cfg.sft_seeds, epochs=cfg.sft_epochs,
                                     lr=cfg.sft_lr, batch_rows=cfg.sft_batch, micro_batch_tokens=cfg.sft_micro_batch_tokens,
                                     progress=progress, seals_dir=out / "seals")
        evals["sft"] = evaluate_all("sft", LMPolicy.from_config(policy_config(cfg, start)), now)
    chosen = gspo_tasks(cfg, out, lambda: LMPolicy.from_config(policy_config(cfg, start)), harnesses_of(cfg), train,
                        store, group, progress)
    gspo_train = [t for t in train if task_id(t) in chosen["tasks"]]
    gspo_train.sort(key=lambda t: chosen["tasks"].index(task_id(t)))
    n_updates = cfg.n_updates(len(gspo_train))
    started = json_stage(out, "training_started", lambda: {"unix": time.time(),
                                                          "utc": datetime.now(timezone.utc).isoformat(timespec="seconds")})
    metrics, per_seed = [], {}
    for seed in cfg.rl_seeds:
        trained = train_agent(rl_config(cfg, out, start, gspo_train, seed), gspo_train, cfg.engine,
                              lambda r: progress(f"GSPO updates (seed {seed})", r["update"], n_updates))
        metrics += [{"seed": seed, **r} for r in trained.rows]
        if "fresh" in suites and "fresh" not in seals:
            seals["fresh"] = _seal(out, run_key(cfg, "fresh"), suites["fresh"], f"{cfg.sealed_suite}: tasks written "
                                   f"after training began ({started['utc']}); sealed once training had run")
        label = "after" if seed == 0 else f"after-s{seed}"  # seed 0 keeps a single-seed run's episode ids
        per_seed[seed] = evaluate_all(label, trained.policy, order)
        del trained  # a real model: one copy in memory at a time
    if "fresh" in suites:  # the untrained policies on the fresh tasks, which exist only once training began
        evals["before"].update(evaluate_all("before", LMPolicy.from_config(policy_config(cfg, model)), ["fresh"]))
        if cfg.warm_start:
            evals["sft"].update(evaluate_all("sft", LMPolicy.from_config(policy_config(cfg, start)), ["fresh"]))
    evals["after"] = {name: [i for seed in cfg.rl_seeds for i in per_seed[seed][name]] for name in order}
    for name, seal in seals.items():  # each seal's one evaluation: every policy, written once
        if not seal.eval_path.exists():
            ids = [i for p in evals.values() for i in p.get(name, [])]
            write_sealed_eval(seal, store, ids, {"pass@1": {p: solve_rate(store, v[name]) for p, v in evals.items() if name in v}})
    fresh_after = written_after(suites["fresh"], started["unix"]) if "fresh" in suites else []
    return {"cfg": cfg, "out": out, "model": model, "start_model": start, "sft": sft_info,
            "suites": {k: [task_id(t) for t in v] for k, v in suites.items()}, "suite_tasks": suites,
            "train_tasks": [task_id(t) for t in train], "harnesses": [h.id for h in harnesses],
            "gspo": {**chosen, "updates": n_updates},
            "before": evals["before"], "sft_eval": evals.get("sft"), "after": evals["after"], "after_by_seed": per_seed,
            "seals": seals, "metrics": metrics, "training_started": started, "fresh_written_after": fresh_after,
            "wall_s": time.perf_counter() - t0, "peak_rss_gb": peak_rss_gb()}


def peak_rss_gb() -> float:
    """Peak resident memory of this process and its finished children (Linux: ru_maxrss in KiB)."""
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return max(own, kids) / 2**20
