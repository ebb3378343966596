"""Recipe: a shared critic vs a critic conditioned on the environment index (the shared-critic paper).

When parallel environments give the same state different expected returns, one shared value
head has to average them. This recipe trains PPO with `critic = shared | conditioned |
multihead` on families of multi-context environments, several seeds each, then measures
(1) every critic's per-context value error against Monte-Carlo returns on fresh episodes,
(2) returns per context and, for level-based families, on unseen test levels, and writes
the evaluation episodes to the record store and an HTML report with CIs over seeds.

    harnessrl recipe conditioned-critic                 # bandit, CartPole variants, MiniGrid; ~minutes on 2 cores
    harnessrl recipe conditioned-critic --scale medium       # 2 Procgen games x 2 critics x 3 seeds, unseen levels; <= 100 min
    harnessrl recipe conditioned-critic --scale paper -j 8   # + MuJoCo, BipedalWalker, 16 Procgen games x 25M
                                                             # steps (Procgen on the GPU when there is one)

Each (family, task, critic, seed) run lives in its own folder with checkpoints; `--resume`
continues unfinished runs bit-identically and reuses finished ones.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

import torch
from pydantic import Field, ValidationError

from harnessrl.config import Config, ConfigError, format_validation_error, load_config, read_file
from harnessrl.envs.bandit import bandit_contexts
from harnessrl.envs.levels import bipedal_contexts, minigrid_contexts, minigrid_test_context, mujoco_contexts
from harnessrl.envs.multicontext import CARTPOLE_VARIANTS, MultiContextVectorEnv, cartpole_contexts
from harnessrl.evaluate.levels import PROCGEN_EASY, evaluate_episodes
from harnessrl.evaluate.value_error import measure_value_error
from harnessrl.fileio import atomic_write_text
from harnessrl.recipes.stages import check_same_config
from harnessrl.recipes.workers import folder_lock, run_pool
from harnessrl.train.metrics import REPORT_TO_HELP, ReportTo, share_trackio_store
from harnessrl.train.ppo import PPOConfig, train_ppo

Family = Literal["bandit", "cartpole", "minigrid", "mujoco", "bipedal", "procgen"]


#: Each family's PPO settings; a family's `ppo` entries are applied on top, key by key.
FAMILY_PPO: dict[str, dict[str, Any]] = {
    "bandit": dict(num_steps=32, clip_vloss=False, learning_rate=3e-3, ent_coef=0.0),
    # pooled reward scaling keeps the contexts' 8x value differences (the conflict) while making them learnable
    "cartpole": dict(clip_vloss=False, reward_norm="pooled"),
    "minigrid": dict(learning_rate=7e-4),
    "mujoco": dict(num_steps=512, update_epochs=10, num_minibatches=4, learning_rate=3e-4, ent_coef=0.0,
                   obs_norm="context", reward_norm="context"),
    "bipedal": dict(num_steps=512, update_epochs=10, num_minibatches=8, learning_rate=3e-4, ent_coef=0.0,
                    obs_norm="context", reward_norm="context"),
    # cleanrl's ppo_procgen settings (IMPALA CNN, gamma 0.999), with per-context reward scaling
    "procgen": dict(network="impala", num_steps=256, update_epochs=3, num_minibatches=8, learning_rate=5e-4,
                    gamma=0.999, ent_coef=0.01, anneal_lr=False, reward_norm="context", device="auto"),
}


class FamilySettings(Config):
    """One family of contexts: envs per context, training length, PPO settings over FAMILY_PPO."""

    envs_per_context: int = Field(2, ge=1)
    total_steps: int = Field(50_000, ge=1)
    ppo: dict[str, Any] = Field(default_factory=dict, description="PPOConfig fields applied over FAMILY_PPO[family]")


class BanditSettings(FamilySettings):
    envs_per_context: int = Field(4, ge=1)
    total_steps: int = Field(16_000, ge=1)
    offsets: list[float] = [0.0, 2.0, 5.0, 10.0]
    arm_means: list[float] = [0.0, 1.0]
    noise: float = 1.0


class CartPoleSettings(FamilySettings):
    total_steps: int = Field(80_000, ge=1)
    variants: list[str] = list(CARTPOLE_VARIANTS)


class MiniGridSettings(FamilySettings):
    total_steps: int = Field(60_000, ge=1)
    env_id: str = "MiniGrid-DoorKey-5x5-v0"
    num_contexts: int = 4
    num_train_levels: int = 32
    num_test_levels: int = 50


class MujocoSettings(FamilySettings):
    envs_per_context: int = Field(1, ge=1)
    total_steps: int = Field(1_000_000, ge=1)
    env_ids: list[str] = ["HalfCheetah-v5", "Hopper-v5"]
    weights: list[float] = [0.5, 1.0, 2.0, 4.0]


class BipedalSettings(MujocoSettings):
    envs_per_context: int = Field(2, ge=1)
    total_steps: int = Field(2_000_000, ge=1)
    env_ids: list[str] = ["BipedalWalker-v3"]


class ProcgenSettings(FamilySettings):
    envs_per_context: int = Field(16, ge=1)
    total_steps: int = Field(25_000_000, ge=1)
    games: list[str] = sorted(PROCGEN_EASY)
    num_levels: int = 200
    num_contexts: int = 4
    distribution_mode: Literal["easy", "hard"] = "easy"


class ConditionedCriticConfig(Config):
    scale: Literal["small", "medium", "paper"] = "small"
    families: list[Family] = ["bandit", "cartpole", "minigrid"]
    critics: list[Literal["shared", "conditioned", "multihead"]] = ["shared", "conditioned", "multihead"]
    seeds: list[int] = [0, 1, 2]
    workers: int = Field(2, ge=1)
    checkpoint_every: int = Field(10, ge=1)
    value_error_steps: int = Field(512, ge=8, description="steps per sub-env for the Monte-Carlo value error")
    eval_episodes: int = Field(4, ge=1, description="evaluation episodes per sub-env")
    bandit: BanditSettings = Field(default_factory=BanditSettings)
    cartpole: CartPoleSettings = Field(default_factory=CartPoleSettings)
    minigrid: MiniGridSettings = Field(default_factory=MiniGridSettings)
    mujoco: MujocoSettings = Field(default_factory=MujocoSettings)
    bipedal: BipedalSettings = Field(default_factory=BipedalSettings)
    procgen: ProcgenSettings = Field(default_factory=ProcgenSettings)
    report_to: ReportTo = Field(default_factory=list, description=REPORT_TO_HELP + " One run per job: runs/<job>/.")


PAPER = {"families": ["bandit", "cartpole", "mujoco", "bipedal", "procgen"], "seeds": [0, 1, 2, 3, 4],
         "cartpole": {"envs_per_context": 4, "total_steps": 500_000}}


#: The paper's Procgen question (unseen levels, IQM over games) sized for 2 CPU cores in <= 100 min; see
#: docs/conditioned-critic.md "Medium scale" for the measured throughput behind total_steps and the game choice.
MEDIUM = {"families": ["procgen"], "critics": ["shared", "conditioned"], "seeds": [0, 1, 2],
          "eval_episodes": 8, "value_error_steps": 256,
          "procgen": {"games": ["starpilot", "fruitbot"], "total_steps": 737_280, "envs_per_context": 16,
                      "num_levels": 200, "num_contexts": 4, "distribution_mode": "easy",
                      # a small strided CNN instead of IMPALA (1/35 of its CPU cost per sample, measured), on the CPU
                      "ppo": {"network": "nature-small", "device": "cpu"}}}
PRESETS = {"small": {}, "medium": MEDIUM, "paper": PAPER}


def preset(scale: str) -> dict[str, Any]:
    """Defaults for a scale; a config file and key=value overrides go on top."""
    if scale not in PRESETS:
        raise ConfigError(f"scale={scale!r}: choose {', '.join(PRESETS)}")
    return {"scale": scale, **copy.deepcopy(PRESETS[scale])}


def merge(base: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """Nested merge: a config file's `cartpole: {total_steps: ...}` keeps the preset's other cartpole keys."""
    out = dict(base)
    for k, v in new.items():
        out[k] = merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def load(scale: str = "small", path: str | Path | None = None, overrides: list[str] = ()) -> "ConditionedCriticConfig":
    """The recipe's config: scale preset <- file (merged key by key) <- key=value overrides."""
    base = preset(scale)
    if path is not None:
        base = merge(base, read_file(path))
    return load_config(ConditionedCriticConfig, None, list(overrides), base=base)


# ----------------------------------------------------------------------------------------
# Jobs: one PPO run per (family, task, critic, seed)


@dataclass(frozen=True)
class Job:
    family: str
    task: str  # the family itself, a MuJoCo env id, or a Procgen game
    critic: str
    seed: int

    @property
    def key(self) -> str:
        return f"{self.family}/{self.task}/{self.critic}/seed{self.seed}"


def jobs(cfg: ConditionedCriticConfig) -> list[Job]:
    out = []
    for family in cfg.families:
        settings = getattr(cfg, family)
        tasks = settings.games if family == "procgen" else settings.env_ids if family in ("mujoco", "bipedal") else [family]
        out += [Job(family, task, critic, seed) for task in tasks for critic in cfg.critics for seed in cfg.seeds]
    return out


def make_envs(cfg: ConditionedCriticConfig, job: Job, seed: int) -> tuple[Any, Any | None]:
    """(training env, unseen-level test env or None) for a job."""
    s = getattr(cfg, job.family)
    if job.family == "bandit":
        return MultiContextVectorEnv(bandit_contexts(s.offsets, s.arm_means, s.noise), s.envs_per_context), None
    if job.family == "cartpole":
        return MultiContextVectorEnv(cartpole_contexts(s.variants), s.envs_per_context), None
    if job.family == "minigrid":
        train = MultiContextVectorEnv(minigrid_contexts(s.env_id, s.num_contexts, s.num_train_levels), s.envs_per_context)
        test = MultiContextVectorEnv([minigrid_test_context(s.env_id, s.num_test_levels)], s.envs_per_context * s.num_contexts)
        return train, test
    if job.family == "mujoco":
        return MultiContextVectorEnv(mujoco_contexts(job.task, s.weights), s.envs_per_context), None
    if job.family == "bipedal":
        return MultiContextVectorEnv(bipedal_contexts(job.task, s.weights), s.envs_per_context), None
    from harnessrl.envs.procgen import ProcgenContextVectorEnv  # optional extra: imported only when asked for

    kw = dict(num_contexts=s.num_contexts, envs_per_context=s.envs_per_context, num_levels=s.num_levels,
              distribution_mode=s.distribution_mode, seed=seed)
    return ProcgenContextVectorEnv(job.task, **kw), ProcgenContextVectorEnv(job.task, **{**kw, "num_contexts": 1}, test=True)


def ppo_config(cfg: ConditionedCriticConfig, job: Job) -> PPOConfig:
    s = getattr(cfg, job.family)
    try:
        return PPOConfig(**{**FAMILY_PPO[job.family], **s.ppo, "total_steps": s.total_steps, "critic": job.critic,
                            "seed": job.seed, "checkpoint_every": cfg.checkpoint_every,
                            "report_to": cfg.report_to})
    except ValidationError as err:  # name the family whose PPO overrides are wrong
        raise ConfigError(format_validation_error(err, PPOConfig, f"{job.family}.ppo")) from None


def normalizer(cfg: ConditionedCriticConfig, job: Job, context_names: list[str]) -> Callable[[int, float], float]:
    """Return -> normalised score in [0, 1]-ish per context, so contexts and families can be aggregated."""
    s = getattr(cfg, job.family)
    if job.family == "bandit":
        lo, hi = min(s.arm_means), max(s.arm_means)
        return lambda k, r: (r - s.offsets[k] - lo) / (hi - lo)
    if job.family == "cartpole":
        return lambda k, r: r / (500.0 * CARTPOLE_VARIANTS[context_names[k]].get("reward_scale", 1.0))
    if job.family == "procgen":
        rmin, rmax = PROCGEN_EASY[job.task]
        return lambda k, r: (r - rmin) / (rmax - rmin)
    if job.family in ("mujoco", "bipedal"):
        return lambda k, r: r / s.weights[k] / 1000.0  # per unit of reward weight, in thousands
    return lambda k, r: r  # MiniGrid: success-weighted returns in [0, 1]


def run_job(cfg: ConditionedCriticConfig, job: Job, out_dir: str, resume: bool, queue: Any = None) -> dict[str, Any]:
    """Train one run (resuming from its checkpoint), evaluate it, write result.json; returns the result."""
    torch.set_num_threads(1)
    run_dir = Path(out_dir) / "runs" / job.key
    done = run_dir / "result.json"
    if resume and done.exists():
        return json.loads(done.read_text())
    env, test_env = make_envs(cfg, job, job.seed)
    pcfg = ppo_config(cfg, job)

    def on_update(i: int, n: int, row: dict) -> None:
        if queue is not None:
            queue.put((job.key, i, n))

    res = train_ppo(pcfg, env, run_dir=run_dir, resume=resume, on_update=on_update)
    names = list(env.context_names)
    norm = normalizer(cfg, job, names)
    ve = measure_value_error(make_envs(cfg, job, job.seed + 10_000)[0], res.policy_fn(job.seed + 1), res.value_fn(),
                             steps=cfg.value_error_steps, gamma=pcfg.gamma, seed=job.seed + 10_000,
                             truncation_is_terminal=not pcfg.bootstrap_truncation)
    train_eps = evaluate_episodes(env, res.policy_fn(job.seed + 2), cfg.eval_episodes, seed=job.seed + 20_000)
    test_eps = evaluate_episodes(test_env, res.policy_fn(job.seed + 3), cfg.eval_episodes, seed=job.seed + 30_000) \
        if test_env is not None else []
    keep = ("global_step", "return", "explained_variance", *(f"return/{k}" for k in range(len(names))),
            *(f"value_mse/{k}" for k in range(len(names))))
    result = {
        "job": asdict(job), "contexts": names, "wall_time": res.wall_time, "global_step": res.global_step,
        "history": [{k: row[k] for k in keep} for row in res.history],
        "value_error": {"mse": ve.mse.tolist(), "bias": ve.bias.tolist(), "count": ve.count.tolist()},
        "train_episodes": [dict(context=e.context, level=e.level, ret=e.ret, length=e.length,
                                score=float(norm(e.context, e.ret))) for e in train_eps],
        "test_episodes": [dict(context=e.context, level=e.level, ret=e.ret, length=e.length) for e in test_eps],
        "timings": res.extra["timings"],
    }
    if job.family == "procgen":
        for e in result["test_episodes"]:
            e["score"] = float(norm(0, e["ret"]))
    else:
        for e in result["test_episodes"]:
            e["score"] = float(e["ret"])
    atomic_write_text(done, json.dumps(result))  # a kill mid-write leaves no torn result for --resume to trip on
    for e in (env, test_env):
        if e is not None:
            e.close()
    return result


def run_recipe(cfg: ConditionedCriticConfig, out_dir: str | Path, *, resume: bool = False,
               on_progress: Callable[[str, int, int], None] | None = None) -> list[dict[str, Any]]:
    """Run every job on `cfg.workers` processes; returns the results in job order."""
    out_dir = Path(out_dir)
    todo = jobs(cfg)
    for job in todo:  # fail fast on bad settings, before any training time is spent
        ppo_config(cfg, job)
    for job in {(j.family, j.task): j for j in todo}.values():  # every env builds and passes its pre-flight
        for env in make_envs(cfg, job, job.seed):
            if env is not None:
                env.close()
    if not resume and any((out_dir / "runs").glob("**/checkpoint.pt")):
        raise ConfigError(f"{out_dir} already holds runs; pass --resume to continue them or choose a new --out")
    share_trackio_store(out_dir, cfg.report_to)
    with folder_lock(out_dir):  # one run per folder, and no survivor of a killed one
        # finished runs are reused on --resume only with the settings they were trained with
        check_same_config(cfg, out_dir / "config.json")
        atomic_write_text(out_dir / "config.json", cfg.model_dump_json(indent=2))
        results: dict[str, dict] = {}
        if resume:  # finished runs are read, not re-run
            for job in todo:
                done = out_dir / "runs" / job.key / "result.json"
                if done.exists():
                    results[job.key] = json.loads(done.read_text())
        todo_left = [job for job in todo if job.key not in results]
        fresh = run_pool(run_job, [(cfg, job, str(out_dir), resume) for job in todo_left], workers=cfg.workers,
                         on_message=on_progress, lock_dir=out_dir)
        results.update({job.key: r for job, r in zip(todo_left, fresh)})
    return [results[job.key] for job in todo]
