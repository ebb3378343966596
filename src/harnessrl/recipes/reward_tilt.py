"""Recipe: a learned visual reward tilts a diffusion policy toward the wrong drawer (the tilt paper).

    harnessrl recipe reward-tilt                  # ~minutes on 2 CPU cores
    harnessrl recipe reward-tilt --scale paper    # more demos, samples, rounds and seeds
    harnessrl recipe reward-tilt --task metaworld-drawer   # Meta-World's Sawyer scene (own venv: make metaworld)

1. Behaviour-clone a DDPM diffusion policy over action chunks from noisy scripted demos of
   the drawer task (some demos open the wrong drawer, some fumble).
2. Train a small CNN reward on labelled final frames (success vs not) that contain no
   wrong-object examples, and measure E[r | outcome] on the base policy's samples.
3. Fine-tune, by default with PPO over the denoising chain and a KL penalty to the BC policy
   (`train.diffusion_pg`, optimizer=ppo: it never fits the tilted distribution), and, with
   compare=true, also with KL-regularised reward-weighted regression (`train.diffusion_rl`,
   optimizer=rwr: round k fits pi_0 exp(k r / beta) / Z). Runs per optimiser: the learned
   reward (two seeds: the second is the re-optimisation with the same reward), the
   verifier-gated reward r * 1[target open], and a zero-reward control that measures how
   much the optimiser alone moves the frequencies.
4. Predict every round's outcome frequencies with the tilt model from the base samples in
   the record store, next to the observed ones, with CIs; write the HTML report.
"""

from __future__ import annotations

import copy
import tempfile
import time
import uuid
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any, Literal

import numpy as np
import torch
from pydantic import Field

from harnessrl.analysis import tilt
from harnessrl.config import Config, ConfigError
from harnessrl.envs import drawer
from harnessrl.fileio import atomic_write_text
from harnessrl.policies.diffusion import DiffusionPolicy, DiffusionPolicyConfig
from harnessrl.policies.reward_model import RewardModel
from harnessrl.records import RecordStore
from harnessrl.recipes.reward_tilt_analysis import LABELS, analyse, checks  # noqa: F401 (checks: part of this recipe's API)
from harnessrl.recipes.stages import check_same_config, json_stage, torch_stage
from harnessrl.train import diffusion_pg, diffusion_rl, drawer_reward
from harnessrl.train.metrics import REPORT_TO_HELP, ReportTo, Trackers, share_trackio_store

Progress = Callable[[str, int, int | None], None]


class DemoConfig(Config):
    episodes: int = Field(1000, ge=10)
    p_wrong: float = Field(0.2, ge=0, le=1)
    p_fumble: float = Field(0.3, ge=0, le=1)
    noise: float = Field(0.3, ge=0)


class RewardTiltConfig(Config):
    scale: Literal["small", "paper"] = "small"
    # the built-in 2-D drawer task, or Meta-World's drawer-open-v3 scene with a distractor drawer
    # (envs/metaworld_drawer.py; the metaworld extra, in its own environment)
    task: Literal["drawer", "metaworld-drawer"] = "drawer"
    seed: int = 0
    threads: int = Field(1, ge=1)
    demos: DemoConfig = Field(default_factory=DemoConfig)
    # final_std > 0: the executed denoising step is Gaussian, which the PPO fine-tuner needs
    policy: DiffusionPolicyConfig = Field(default_factory=lambda: DiffusionPolicyConfig(final_std=0.1))
    bc: diffusion_rl.FitConfig = Field(default_factory=diffusion_rl.FitConfig)
    reward: drawer_reward.RewardDataConfig = Field(default_factory=drawer_reward.RewardDataConfig)
    # ppo: policy gradient over the denoising chain (`ppo` settings); rwr: reward-weighted
    # regression toward pi_0 exp(k r / beta) / Z (`finetune` settings)
    optimizer: Literal["ppo", "rwr"] = "ppo"
    compare: bool = True  # also run the other optimiser on the same BC policy, reward and base samples
    finetune: diffusion_rl.FinetuneConfig = Field(default_factory=diffusion_rl.FinetuneConfig)
    ppo: diffusion_pg.PPOConfig = Field(default_factory=diffusion_pg.PPOConfig)
    learned_seeds: list[int] = [1, 2]  # the second run is the re-optimisation with the same reward
    verifier_seeds: list[int] = [1]
    control: bool = True
    base_episodes: int = Field(2000, ge=10)  # base-policy samples the tilt model predicts from
    n_boot: int = Field(1000, ge=10)
    report_to: ReportTo = Field(default_factory=list, description=REPORT_TO_HELP + " One run per fine-tuning run: runs/<name>/.")


PAPER: dict[str, Any] = {
    "demos": {"episodes": 5000},
    "bc": {"steps": 20000},
    "reward": {"aimed": 3000, "random": 1000, "steps": 2000},
    "finetune": {"beta": 1.0, "rounds": 6, "samples_per_round": 8000, "steps_per_round": 4000, "lr": 1e-3, "eval_episodes": 5000},
    "ppo": {"rounds": 6, "iterations_per_round": 8, "samples": 1000, "eval_episodes": 5000},
    "learned_seeds": [1, 2, 3],
    "verifier_seeds": [1, 2],
    "base_episodes": 10000,
}


# Meta-World episodes cost ~30-60 ms of physics each (the built-in task: ~0.1 ms), so its small
# scale draws fewer samples and tilts harder per round (beta 0.5: beta_eff 0.5, 0.25, 0.17);
# its scripted expert needs little noise to stay competent. With 600 samples per round and
# lr 1e-3, refitting alone lost half the wrong-object mode (control .168 -> .073) and hid the
# tilt; 1000 samples at lr 5e-4 keep the drift smaller. 1500 reward-model steps instead of 400
# sharpen E[r | miss] from .45 to .13, which is what makes the wrong drawer worth tilting toward.
METAWORLD: dict[str, Any] = {
    "demos": {"episodes": 600, "noise": 0.1},
    "reward": {"aimed": 400, "random": 100, "noise": 0.1, "steps": 1500},
    "finetune": {"beta": 0.5, "rounds": 3, "samples_per_round": 1000, "lr": 5e-4, "eval_episodes": 400},
    # PPO over the denoising chain is not wired for Meta-World yet: its run_episodes acts in sub-batches,
    # and the chain recorder (train/diffusion_pg.rollout) needs every episode in each policy call
    "optimizer": "rwr", "compare": False,
    "base_episodes": 1000,
}


def preset(scale: str, task: str = "drawer") -> dict[str, Any]:
    if scale not in ("small", "paper"):
        raise ConfigError(f"scale={scale!r}: choose small or paper")
    if task not in drawer.TASKS:
        raise ConfigError(f"task={task!r}: choose one of {', '.join(drawer.TASKS)}")
    base = copy.deepcopy(METAWORLD) if task == "metaworld-drawer" and scale == "small" else {}
    return {"scale": scale, "task": task, **base, **(PAPER if scale == "paper" else {})}


def _check(cfg: RewardTiltConfig, task: drawer.DrawerTask) -> None:
    if task.horizon % cfg.policy.chunk:
        raise ConfigError(f"policy.chunk={cfg.policy.chunk} must divide the {task.name} horizon {task.horizon} (try 4, 6, 8, 12)")
    if cfg.demos.p_wrong + cfg.demos.p_fumble > 1:
        raise ConfigError("demos.p_wrong + demos.p_fumble must be <= 1")
    if "ppo" in optimizers(cfg) and cfg.task == "metaworld-drawer":
        raise ConfigError("optimizer=ppo (or compare=true) is not available on task=metaworld-drawer yet: its episodes act "
                          "in sub-batches the PPO chain recorder cannot follow; use optimizer=rwr compare=false")
    if "ppo" in optimizers(cfg) and cfg.policy.final_std <= 0:
        raise ConfigError("optimizer=ppo needs policy.final_std > 0 (the executed denoising step must have a log-probability): "
                          "set policy.final_std=0.1, or optimizer=rwr compare=false")


def optimizers(cfg: RewardTiltConfig) -> list[str]:
    """The primary optimiser first, then the comparison one."""
    return [cfg.optimizer] + ([o for o in ("ppo", "rwr") if o != cfg.optimizer] if cfg.compare else [])


def round_beta(cfg: RewardTiltConfig, optimizer: str, k: int) -> float:
    """The beta whose optimum pi_0 exp(r / beta) / Z round k aims at, and the tilt model predicts at.

    RWR round k fits pi_0 exp(k r / beta) / Z (anchor base); PPO optimises E[r] - kl_coef KL(pi || pi_BC)
    in every round, so its target is the same in each round and the rounds show how far it got.
    """
    if optimizer == "ppo":
        return cfg.ppo.kl_coef
    ft = cfg.finetune
    return ft.beta / k if ft.anchor == "base" else ft.beta


# ----------------------------------------------------------------------------------------
# Running the experiment


def run(cfg: RewardTiltConfig, store: RecordStore, progress: Progress | None = None, *, out: Path | None = None) -> dict[str, Any]:
    """Everything but the report. Episodes go to `store` under one run_id; returns the results.

    With `out`, every finished stage (BC policy, reward model, base samples, each fine-tuning
    run) is kept in OUT/stages/, and calling again with the same settings and store resumes:
    finished stages are loaded, and episodes already in the store are not appended twice.
    Each stage draws from its own seeded generator, so a resumed run equals an uninterrupted one.
    """
    try:
        task = drawer.task(cfg.task)
    except ImportError as e:
        raise ConfigError(str(e)) from e
    # the policy's input and output sizes are the task's, whatever the config said
    cfg = cfg.model_copy(update={"policy": cfg.policy.model_copy(update={"obs_dim": task.obs_dim, "action_dim": task.action_dim})})
    try:
        if out is not None:
            return _run(cfg, task, store, progress, Path(out))
        with tempfile.TemporaryDirectory(prefix="reward-tilt-") as scratch:  # stages still need a home
            return _run(cfg, task, store, progress, Path(scratch))
    finally:
        task.close()


def _rng(cfg: RewardTiltConfig, stage: str) -> np.random.Generator:
    return np.random.default_rng([cfg.seed, ["demos", "reward", "base"].index(stage)])


def _append_once(store: RecordStore, run_id: str, policy_id: str, make: Callable[[], list]) -> None:
    """Append a policy's episodes unless an earlier (interrupted) attempt already did: appends are atomic."""
    n = store.sql("SELECT count(*) AS n FROM episodes WHERE run_id = ? AND policy_id = ?", [run_id, policy_id]).column("n")[0].as_py()
    if n == 0:
        store.append(make())


def _run(cfg: RewardTiltConfig, task: drawer.DrawerTask, store: RecordStore, progress: Progress | None, out: Path) -> dict[str, Any]:
    _check(cfg, task)
    tick = progress or (lambda stage, i, n: None)
    torch.set_num_threads(cfg.threads)
    t0 = time.perf_counter()
    run_id = _open_run(cfg, store, out)
    bc, policy = _behaviour_clone(cfg, task, out, tick)
    rm, rewards = _reward_model(cfg, task, out, tick)
    base_stage = _base_samples(cfg, task, out, tick, policy, rewards["learned"])
    base, base_r = base_stage["batch"], base_stage["reward"]
    _append_once(store, run_id, "bc", lambda: drawer.to_episodes(base, base_r, policy_id="bc", run_id=run_id, env_id=task.name,
                                                                 metadata={"recipe": "reward-tilt", "run": "base", "round": 0},
                                                                 per_episode={"learned_reward": base_r}))
    results, finetune_s = _finetune_runs(cfg, task, store, out, tick, run_id, policy, rewards)

    t = time.perf_counter()
    analysis = analyse(store, run_id, results, optimizers(cfg), n_boot=cfg.n_boot, seed=cfg.seed)
    timings = {**bc["seconds"], **rm["seconds"], **base_stage["seconds"], "fine-tuning": finetune_s,
               "analysis": time.perf_counter() - t, "this call": time.perf_counter() - t0}
    timings["total"] = sum(v for k, v in timings.items() if k != "this call")
    return {
        "run_id": run_id,
        "config": cfg,
        "demo_outcomes": bc["demo_outcomes"],
        "reward_data": rm["data"],
        "bc_losses": bc["losses"],
        "reward_losses": rm["losses"],
        "example_frames": {lab: base.frames[base.outcome == lab][:3] for lab in LABELS},
        "example_rewards": {lab: base_r[base.outcome == lab][:3] for lab in LABELS},
        "runs": results,
        "timings": timings,
        **analysis,
    }


def _open_run(cfg: RewardTiltConfig, store: RecordStore, out: Path) -> str:
    """The run_id of OUT: a new one, or the one a resumed run started with (same settings, same store)."""
    check_same_config(cfg, out / "stages" / "config.json")
    ident = json_stage(out, "run", lambda: {"run_id": f"reward-tilt-{time.strftime('%Y%m%d-%H%M%S')}-{uuid.uuid4().hex[:6]}",
                                            "store": str(store.root.resolve())})
    if ident["store"] != str(store.root.resolve()):
        raise ConfigError(f"{out} holds a run whose episodes are in {ident['store']}; resume it with --store {ident['store']}")
    atomic_write_text(out / "stages" / "config.json", cfg.model_dump_json(indent=2))
    return ident["run_id"]


def _behaviour_clone(cfg: RewardTiltConfig, task: drawer.DrawerTask, out: Path, tick: Progress) -> tuple[dict[str, Any], DiffusionPolicy]:
    """1. Behaviour cloning from noisy scripted demonstrations: (the stage, the BC policy in eval mode)."""
    def clone() -> dict[str, Any]:
        t = time.perf_counter()
        tick("demonstrations", 0, 1)
        demonstrator = drawer.Demonstrator(p_wrong=cfg.demos.p_wrong, p_fumble=cfg.demos.p_fumble, noise=cfg.demos.noise)
        demos, _ = drawer.demonstrations(cfg.demos.episodes, _rng(cfg, "demos"), demonstrator, chunk=cfg.policy.chunk, task=task)
        tick("demonstrations", 1, 1)
        t_demos, t = time.perf_counter() - t, time.perf_counter()

        def bc_step(i: int, loss: float) -> None:
            if (i + 1) % 50 == 0 or i + 1 == cfg.bc.steps:
                tick("behaviour cloning", i + 1, cfg.bc.steps)

        policy, losses = diffusion_rl.behaviour_clone(demos, cfg.bc, cfg.policy, seed=cfg.seed, on_step=bc_step)
        return {"state": policy.state_dict(), "losses": losses, "seconds": {"demonstrations": t_demos, "behaviour cloning": time.perf_counter() - t},
                "demo_outcomes": {lab: int((demos.outcome == lab).sum()) for lab in LABELS}}

    bc = torch_stage(out, "bc", clone)
    policy = DiffusionPolicy(cfg.policy)
    policy.load_state_dict(bc["state"])
    policy.eval()
    return bc, policy


RewardFn = Callable[[drawer.DrawerBatch], np.ndarray]


def _reward_model(cfg: RewardTiltConfig, task: drawer.DrawerTask, out: Path, tick: Progress) -> tuple[dict[str, Any], dict[str, RewardFn]]:
    """2. The learned visual reward, from frames that never show the wrong drawer open: (the stage,
    the reward of each run kind: learned, verified = learned gated by success, control = zero)."""
    def fit_reward() -> dict[str, Any]:
        t = time.perf_counter()
        tick("reward model", 0, 1)
        images, labels, outcomes = drawer_reward.labelled_rollouts(cfg.reward, _rng(cfg, "reward"), task)
        model, losses = drawer_reward.fit_reward_model(images, labels, cfg.reward, seed=cfg.seed)
        tick("reward model", 1, 1)
        return {"state": model.state_dict(), "losses": losses, "seconds": {"reward model": time.perf_counter() - t},
                "data": {"frames": int(len(images)), "positives": int(labels.sum()), "outcomes": {lab: int((outcomes == lab).sum()) for lab in LABELS}}}

    rm = torch_stage(out, "reward", fit_reward)
    reward_model = RewardModel()
    reward_model.load_state_dict(rm["state"])
    reward_model.eval()
    return rm, {"learned": lambda batch: reward_model.score(batch.frames),
                "verified": lambda batch: tilt.gate(reward_model.score(batch.frames), batch.success),
                "control": lambda batch: np.zeros(len(batch.outcome))}


def _base_samples(cfg: RewardTiltConfig, task: drawer.DrawerTask, out: Path, tick: Progress, policy: DiffusionPolicy,
                  learned: RewardFn) -> dict[str, Any]:
    """3. Base-policy samples, what the tilt model predicts from: the stage (batch, learned reward, seconds)."""
    def sample_base() -> dict[str, Any]:
        t = time.perf_counter()
        tick("base samples", 0, 1)
        batch = diffusion_rl.sample_episodes(policy, cfg.base_episodes, _rng(cfg, "base"), seed=cfg.seed * 1000 + 999, task=task)
        tick("base samples", 1, 1)
        return {"batch": batch, "reward": learned(batch), "seconds": {"base samples": time.perf_counter() - t}}

    return torch_stage(out, "base", sample_base)


def _finetune_runs(cfg: RewardTiltConfig, task: drawer.DrawerTask, store: RecordStore, out: Path, tick: Progress, run_id: str,
                   policy: DiffusionPolicy, rewards: dict[str, RewardFn]) -> tuple[list[dict[str, Any]], float]:
    """4. KL-regularised fine-tuning per optimiser: learned reward (twice), verifier-gated reward,
    zero-reward control. Each run is a stage; its rounds' episodes go to the store. Returns (one
    summary per run, seconds spent fine-tuning)."""
    kinds = [("learned", s) for s in cfg.learned_seeds] + [("verified", s) for s in cfg.verifier_seeds]
    if cfg.control:
        kinds.append(("control", cfg.seed + 100))
    runs = [(opt, kind, seed) for opt in optimizers(cfg) for kind, seed in kinds]
    settings = {"ppo": cfg.ppo, "rwr": cfg.finetune}
    total_rounds = sum(1 if kind == "control" else settings[opt].rounds for opt, kind, _ in runs)
    done = 0

    def advance(rounds: int) -> None:
        nonlocal done
        done += rounds
        tick("fine-tuning rounds", done, total_rounds)

    results, finetune_s = [], 0.0
    for opt, kind, seed in runs:
        ft = settings[opt].model_copy(update={"rounds": 1}) if kind == "control" else settings[opt]
        name = f"{opt}-{kind}-s{seed}"
        if (out / "stages" / f"run-{name}.pt").exists():
            advance(ft.rounds)
        stage = torch_stage(out, f"run-{name}", partial(_finetune, cfg, task, policy, rewards, opt, kind, seed, ft, name, advance, out))
        finetune_s += stage["seconds"]
        for r in stage["rounds"]:
            _append_once(store, run_id, r["policy_id"], lambda r=r, name=name, kind=kind, opt=opt: drawer.to_episodes(
                r["batch"], r["r_run"], policy_id=r["policy_id"], run_id=run_id, env_id=task.name,
                metadata={"recipe": "reward-tilt", "run": name, "optimizer": opt, "kind": kind, "round": r["round"], "beta": r["beta"]},
                per_episode={"learned_reward": r["r_learned"]}))
        results.append({"name": name, "optimizer": opt, "kind": kind, "seed": seed,
                        "rounds": [{k: r.get(k, float("nan")) for k in ("round", "beta", "policy_id", "ess", "kl_to_bc", "final_loss")}
                                   for r in stage["rounds"]]})
    return results, finetune_s


def _finetune(cfg: RewardTiltConfig, task: drawer.DrawerTask, policy: DiffusionPolicy, rewards: dict[str, RewardFn], opt: str,
              kind: str, seed: int, ft: Any, name: str, advance: Callable[[int], None], out: Path) -> dict[str, Any]:
    """One fine-tuning run from a copy of the BC policy: every round's evaluation batch (frames
    dropped once scored) with its run reward and learned reward, and the seconds it took."""
    t = time.perf_counter()
    rounds: list[dict[str, Any]] = []
    share_trackio_store(out, cfg.report_to)
    trackers = Trackers(out / "runs" / name, cfg.report_to, name, {"optimizer": opt, "kind": kind, "seed": seed, **ft.model_dump(mode="json")})

    def on_round(rnd: diffusion_rl.Round) -> None:
        ev = rnd.evaluation
        r_learned = rewards["learned"](ev)
        r_run = tilt.gate(r_learned, ev.success) if kind == "verified" else (np.zeros(len(r_learned)) if kind == "control" else r_learned)
        ev.frames = ev.frames[:0]  # rewards are computed; the stage file need not keep the images
        rounds.append({"round": rnd.index, "beta": round_beta(cfg, opt, rnd.index),
                       "policy_id": f"{name}-r{rnd.index}", "ess": rnd.effective_sample_size,
                       "kl_to_bc": rnd.stats.get("kl_to_bc", float("nan")),
                       "final_loss": float(np.mean(rnd.losses[-50:])), "batch": ev, "r_run": r_run, "r_learned": r_learned})
        trackers.log({"ess": rnd.effective_sample_size, "kl_to_bc": rnd.stats.get("kl_to_bc", float("nan")),
                      "final_loss": rounds[-1]["final_loss"], "train_reward_mean": float(np.mean(rnd.train_rewards)),
                      "reward_mean": float(np.mean(r_run)), "learned_reward_mean": float(np.mean(r_learned)),
                      **{f"freq/{label}": float(np.mean(ev.outcome == label)) for label in LABELS}}, rnd.index)
        advance(1)

    trainer = diffusion_pg.finetune if opt == "ppo" else diffusion_rl.finetune
    try:
        trainer(copy.deepcopy(policy), rewards[kind], ft, seed=seed, on_round=on_round, task=task)
    finally:
        trackers.close()
    return {"rounds": rounds, "seconds": time.perf_counter() - t}


def default_out() -> Path:
    return Path("runs/reward-tilt")
