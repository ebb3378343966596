"""Agent trainer: RL for an LM acting through harnesses, online or from frozen records.

    cfg = AgentTrainConfig(policy=LMConfig(model="runs/tiny", lora_rank=8), suite="lookup",
                           harnesses=["lookup-plain", "lookup-kv"], grouping="cross", objective="gspo")
    rows = AgentTrainer(cfg).run(resume=True)

Each update:
  1. rollout   G episodes per (task, harness) for `tasks_per_update` tasks, all in one lockstep
               group (one batched generation per turn), written to the record store
               (offline: a sample of the frozen records instead)
  2. advantage the grouping rule (`within` = task x harness, `cross` = task, `batch`) on each
               episode's context, then GRPO / RLOO / (PPO: GAE from a critic on the LM's states)
  3. update    the objective on generated tokens only, KL (k3) to the reference (the adapter
               disabled), micro-batched (train/lm_update.py)
  4. record    a metrics row (metrics.csv / .parquet, live console) and an atomic checkpoint
               (weights being trained, optimizer, scheduler, RNG, rows) — so `resume` after
               kill -9 continues exactly as an uninterrupted run

Every source of randomness is a function of (seed, update): sampling is reseeded per update,
tasks and env seeds are drawn from them, episode ids are deterministic (a resumed update never
writes an episode twice).

Backends: LM rollouts run in this process (generation is one batched, KV-cached forward per
turn over the whole group; the policy's weights live here). `backend="ray"` is refused for LM
training with an explanation: spreading environment stepping over Ray actors while generation
stays local is not implemented.
"""

from __future__ import annotations

import json
import math
import random
import time
from pathlib import Path
from typing import Any, Callable, Literal

import numpy as np
import torch
from pydantic import Field, field_validator, model_validator

from harnessrl.config import Config, ConfigError
from harnessrl.episode import Episode
from harnessrl.fileio import atomic_write_text
from harnessrl.rewards import RewardHook
from harnessrl.rewards import apply as apply_rewards
from harnessrl.rewards import check_tasks
from harnessrl.harness.base import Harness, make_harness
from harnessrl.policies.lm import LMConfig, LMPolicy
from harnessrl.policies.precision import run_record
from harnessrl.records import RecordStore
from harnessrl.rl.advantages import group_advantages
from harnessrl.rl.critics import make_critic
from harnessrl.rl.objectives import OBJECTIVES
from harnessrl.rl.trl_options import from_trl_names
from harnessrl.rollout.envs import open_env
from harnessrl.rollout.loop import RolloutItem, run_group
from harnessrl.tasks.contract import TaskLike
from harnessrl.train import lm_update
from harnessrl.train.manifest import freeze_training_set
from harnessrl.train.checkpoint import check_same_config, load_checkpoint, load_trainable_state, rng_state, save_checkpoint, set_rng_state, trainable_state
from harnessrl.train.metrics import MetricsTable, episode_columns, harness_columns, normalize_report_to
from harnessrl.train.sequences import build_batch
from harnessrl.train.tasks import check_first_prompts_fit, check_trainable, load_tasks


class AgentTrainConfig(Config):
    """Everything an agent RL run depends on (written into the checkpoint and the report)."""

    policy: LMConfig
    run_dir: str = Field("runs/agent", description="Checkpoint, metrics table and adapter go here.")
    store: str | None = Field(None, description="Record store for the episodes; default <run_dir>/store.")
    run_id: str | None = Field(None, description="Recorded with every episode; default the run folder's name.")
    suite: str = Field("lookup", description="Task suite: lookup, miniwob, or a suite folder/name.")
    tasks: list[str] | None = Field(None, description="Task ids to train on; default the whole suite.")
    harnesses: list[str] = Field(..., min_length=1, description="Harness ids or spec files to train through.")
    max_turns: int | None = Field(None, ge=1, description="Override every harness's turn limit.")
    group_size: int = Field(8, ge=1, description="Rollouts per (task, harness) per update.")
    tasks_per_update: int = Field(4, ge=1)
    updates: int = Field(20, ge=1)
    grouping: str = Field("within", description="within (task x harness) | cross (task) | batch")
    objective: str = Field("grpo", description="grpo | gspo | gspo_token | rloo | ppo, or a registered objective "
                           "(rl/objectives.py)")
    adv_scale: Literal["group", "batch", "none"] = "group"
    adv_eps: float = Field(1e-6, gt=0)
    clip_low: float | None = Field(None, gt=0, description="Default per objective (GSPO 3e-4, GRPO 0.2).")
    clip_high: float | None = Field(None, gt=0, description="Default per objective (GSPO 4e-4, GRPO 0.28).")
    dual_clip: float | None = Field(None, gt=1, description="Cap the ratio of A < 0 tokens (token-level objectives); TRL delta.")
    loss_agg: str | None = Field(None, description="token-mean | seq-mean-token-mean | seq-mean-token-sum | seq-mean-token-sum-norm")
    kl_coef: float = Field(0.0, ge=0, description="Weight of the KL-to-reference loss term.")
    kl_estimator: Literal["k1", "k2", "k3"] = "k3"
    log_kl: bool = Field(True, description="Compute KL to the reference every update even when kl_coef is 0.")
    lr: float = Field(2e-5, gt=0)
    weight_decay: float = Field(0.0, ge=0)
    max_grad_norm: float = Field(1.0, gt=0)
    scheduler: Literal["constant", "linear", "cosine"] = "constant"
    warmup_steps: int = Field(0, ge=0)
    epochs: int = Field(1, ge=1)
    minibatches: int = Field(1, ge=1, description="Optimizer steps per epoch.")
    micro_batch_tokens: int = Field(32_768, ge=64, description="Padded tokens per forward/backward pass.")
    critic: Literal["shared", "conditioned", "multihead"] = "conditioned"
    critic_lr: float = Field(1e-3, gt=0)
    vf_coef: float = Field(0.5, ge=0)
    vf_clip: float | None = Field(0.2, gt=0)
    gamma: float = Field(1.0, ge=0, le=1)
    lam: float = Field(0.95, ge=0, le=1)
    source: Literal["online", "offline"] = "online"
    offline_store: str | None = Field(None, description="Record store holding the frozen episodes (offline).")
    offline_where: str | None = Field(None, description="SQL filter on the frozen episodes, e.g. run_id = 'x'.")
    offline_correction: Literal["tis", "ratio", "none"] = Field(
        "tis", description="tis: advantages x min(pi_old/pi_behaviour, cap); ratio: clip against pi_behaviour.")
    tis_cap: float = Field(2.0, gt=0)
    precision: Literal["auto", "fp32", "bf16"] | None = Field(
        None, description="Sampling and update arithmetic (policies/precision.py); None: policy.precision. Set here, "
        "it replaces policy.precision.")
    sampler_correction: Literal["tis", "none"] = Field(
        "tis", description="Online: weigh each token's policy-gradient loss by min(pi_train_old / pi_sampler, "
        "sampler_tis_cap), the sampler's recorded log-probs against the trainer's (rl/tis.py); none: off.")
    sampler_tis_cap: float = Field(2.0, gt=0, description="Cap of the sampler/trainer importance weight.")
    backend: Literal["local", "ray"] = "local"
    seals_dir: str | None = Field(None, description="Where seals live (default $HARNESSRL_SEALS or runs/seals).")
    manifest: str | None = Field(None, description="A frozen training manifest (train/manifest.py) the runs of one "
                                 "comparison share: this run's task-harness records must match it (the first run writes it).")
    seed: int = 0
    report_to: list[Literal["tensorboard", "wandb", "trackio", "mlflow"]] = Field(
        default_factory=list, description="Trackers the per-update metrics also go to, by TRL's names (metrics.csv is "
        "always written): tensorboard (run_dir/tensorboard), wandb (offline unless WANDB_MODE), trackio (local, "
        "run_dir/trackio), mlflow (run_dir/mlruns unless MLFLOW_TRACKING_URI); 'all' or 'none' as in TRL.")
    reward_funcs: list[str] = Field(default_factory=list, description="Reward functions (TRL's reward_funcs shape, "
                                    "pkg.module:function or a harnessrl.rewards plugin) added to the verifier's reward "
                                    "on the host after grading; see harnessrl.rewards.")
    reward_weights: list[float] | None = Field(None, description="One weight per reward function (TRL's name); None: 1.0 each.")
    verifier_weight: float = Field(1.0, description="Weight of the verifier's reward in the sum.")
    tensorboard: bool = Field(False, description="Old spelling of report_to=[tensorboard].")
    wandb: bool = Field(False, description="Old spelling of report_to=[wandb].")

    @model_validator(mode="before")
    @classmethod
    def _trl_names(cls, data: Any) -> Any:
        # TRL's GRPOConfig names (epsilon, epsilon_high, delta, beta, loss_type, importance_sampling_level, report_to)
        return normalize_report_to(from_trl_names(data, cls.model_fields))

    @property
    def reward_hook(self) -> RewardHook:
        return RewardHook(tuple(self.reward_funcs), tuple(self.reward_weights) if self.reward_weights is not None else None,
                          self.verifier_weight)

    @field_validator("objective")
    @classmethod
    def _known_objective(cls, name: str) -> str:
        if name not in OBJECTIVES:
            raise ValueError(f"unknown objective {name!r}; choose one of: {', '.join(OBJECTIVES.names())} "
                             "(or register one: rl/objectives.py)")
        return name

    @model_validator(mode="after")
    def _check(self) -> "AgentTrainConfig":
        if self.precision is not None and self.precision != self.policy.precision:
            self.policy = self.policy.model_copy(update={"precision": self.precision})
        if self.policy.precision == "bf16" and not (self.policy.lora_rank or self.policy.adapter):
            raise ValueError("precision=bf16 trains through LoRA (a frozen bf16 base, fp32 adapter): full fine-tuning "
                             "would keep bf16 weights without fp32 master copies; set policy.lora_rank or precision=fp32")
        if self.reward_weights is not None and len(self.reward_weights) != len(self.reward_funcs):
            raise ValueError(f"reward_weights: {len(self.reward_weights)} weights for {len(self.reward_funcs)} reward_funcs; "
                             "give one weight per function")
        per_group = {"within": 1, "cross": len(self.harnesses)}.get(self.grouping, len(self.harnesses) * self.tasks_per_update)
        obj = OBJECTIVES.get(self.objective)
        if self.source == "online" and not obj.critic and self.group_size * per_group < 2:
            raise ValueError(f"group_size={self.group_size} with the group-relative objective {self.objective!r} and "
                             f"grouping {self.grouping!r} puts one episode in every group, which gets zero advantage; "
                             "use group_size >= 2 (e.g. 8), or objective=ppo")
        if self.dual_clip is not None and obj.level == "sequence":
            raise ValueError(f"dual_clip (TRL delta) caps token ratios; {self.objective!r} has a sequence ratio and no dual clip")
        if self.source == "offline" and not self.offline_store:
            raise ValueError("source=offline needs offline_store (the record store with the frozen episodes)")
        return self


class AgentTrainer:
    def __init__(self, cfg: AgentTrainConfig, tasks: list[TaskLike] | None = None, policy: LMPolicy | None = None,
                 on_update: Callable[[dict[str, Any]], None] | None = None,
                 open_env: Callable[[Any, int], Any] = open_env, harnesses: list[Harness] | None = None):
        self.cfg, self.on_update, self.open_env = cfg, on_update, open_env
        self.run_dir = Path(cfg.run_dir)
        self.run_id = cfg.run_id or self.run_dir.name
        self.objective = obj = OBJECTIVES.get(cfg.objective)
        self.clip = (cfg.clip_low or obj.clip[0], cfg.clip_high or obj.clip[1])
        self.agg = cfg.loss_agg or obj.agg
        self.settings = lm_update.UpdateSettings(
            objective=cfg.objective, clip=self.clip, agg=self.agg, dual_clip=cfg.dual_clip, kl_coef=cfg.kl_coef,
            kl_estimator=cfg.kl_estimator, epochs=cfg.epochs, minibatches=cfg.minibatches,
            micro_tokens=cfg.micro_batch_tokens, max_grad_norm=cfg.max_grad_norm, vf_coef=cfg.vf_coef, vf_clip=cfg.vf_clip,
            # offline data has its own correction against the records' behaviour (offline_correction)
            sampler_tis_cap=cfg.sampler_tis_cap if cfg.sampler_correction == "tis" and cfg.source == "online" else None)
        if cfg.backend == "ray":
            raise ConfigError("backend=ray is not supported for LM training: generation runs in this process as one "
                              "batched forward per turn over the whole group, and stepping environments in Ray actors "
                              "while generating locally is not implemented; use backend=local")
        # 1. Bad input fails here, before any rollout.
        self.harnesses = harnesses or [self._harness(h) for h in cfg.harnesses]
        self.harness_index = {h.id: i for i, h in enumerate(self.harnesses)}
        self.tasks = tasks if tasks is not None else load_tasks(cfg.suite, cfg.tasks)
        check_trainable(self.tasks, self.harnesses, cfg.seals_dir)
        check_tasks(self.tasks)  # the tasks' own reward functions (task.toml) import before any model loads
        _seed_all(_mix(cfg.seed, -1, 0))  # LoRA's random init must not depend on what ran before
        self.policy = policy or LMPolicy.from_config(cfg.policy)
        self.precision = run_record(self.policy.precision, self.policy.model)  # precision.json, metrics rows
        self._preflight_context()
        self.store = RecordStore(cfg.store or self.run_dir / "store")
        self.frozen = self._load_frozen() if cfg.source == "offline" else None
        # 2. Training state.
        if not self.policy.is_lora and (cfg.kl_coef or cfg.log_kl):
            self.policy.freeze_reference()  # before any resume: the reference is the starting weights
        self.critic = None
        groups = [{"params": self.policy.trainable_parameters(), "lr": cfg.lr}]
        if obj.critic:
            hidden = self.policy.model.config.hidden_size
            self.critic = make_critic(cfg.critic, hidden, len(self.harnesses), hidden=(64,)).to(self.policy.device)
            groups.append({"params": list(self.critic.parameters()), "lr": cfg.critic_lr})
        self.optimizer = adamw(groups, weight_decay=cfg.weight_decay)
        total = cfg.updates * cfg.epochs * cfg.minibatches
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(self.optimizer, lambda s: _lr_factor(cfg, s, total))
        self.update_index = 0
        self.metrics = MetricsTable(self.run_dir, report_to=cfg.report_to, run_name=self.run_id,
                                    config={**cfg.model_dump(mode="json"), "resolved_precision": self.precision})

    def _harness(self, spec: str) -> Harness:
        h = make_harness(spec)
        if self.cfg.max_turns is not None:
            h.spec = h.spec.model_copy(update={"max_turns": self.cfg.max_turns})
        return h

    def _preflight_context(self) -> None:
        """Every harness's first prompt (on the longest instruction) plus a turn must fit the window."""
        check_first_prompts_fit(self.tasks, self.harnesses, self.open_env, self.policy.prompt_tokens,
                                self.policy.cfg.max_new_tokens, self.policy.max_context, self.cfg.policy.model)

    def _load_frozen(self) -> list[Episode]:
        where = " AND ".join(x for x in (self.cfg.offline_where, "harness_id IN ({})".format(
            ", ".join("'" + h.id.replace("'", "''") + "'" for h in self.harnesses))) if x)
        episodes = RecordStore(self.cfg.offline_store, create=False).episodes(where)
        if not episodes:
            raise ConfigError(f"offline_store {self.cfg.offline_store!r}: no episodes match {where!r}")
        build_batch(episodes[:1])  # raises NoTokensError with the fix when records have no tokens
        temps = {e.metadata.get("temperature") for e in episodes} - {None}
        if temps and temps != {self.cfg.policy.temperature}:
            raise ConfigError(f"the frozen episodes were sampled at temperature {sorted(temps)} but policy.temperature="
                              f"{self.cfg.policy.temperature}; the behaviour log-probs only correct against the same temperature")
        return episodes

    # -- the loop --------------------------------------------------------------------

    def run(self, resume: bool = False) -> list[dict[str, Any]]:
        if resume:
            self._resume()
        elif (self.run_dir / "checkpoint.pt").exists():
            raise ConfigError(f"{self.run_dir} already holds a checkpoint; pass resume (--resume) or use a new run_dir")
        self.manifest_sha256 = freeze_training_set(self.cfg, self.tasks, self.harnesses, self.open_env)
        atomic_write_text(self.run_dir / "precision.json", json.dumps(self.precision, indent=2))
        while self.update_index < self.cfg.updates:
            row = self.step(self.update_index)
            self.update_index += 1
            self.metrics.log(row)
            self._checkpoint()
            if self.on_update:
                self.on_update(row)
        self.policy.save(self.run_dir / "final")
        self.metrics.close()
        return self.metrics.rows

    def step(self, u: int) -> dict[str, Any]:
        cfg, t0 = self.cfg, time.perf_counter()
        _seed_all(_mix(cfg.seed, u, 3))  # dropout and anything else drawing from the global RNGs
        episodes = self._collect(u)
        t_roll = time.perf_counter() - t0
        batch = build_batch(episodes, self.policy.pad_token_id)
        rewards = torch.tensor([e.reward for e in episodes], dtype=torch.float32)
        contexts = [(e.context.task_id, e.context.harness_id) for e in episodes]
        estimator = "grpo" if self.objective.critic else self.objective.advantage  # PPO: GAE per token; grpo's for the logs
        ga = group_advantages(rewards, contexts, rule=cfg.grouping, estimator=estimator,
                              **({"scale": cfg.adv_scale, "eps": cfg.adv_eps} if estimator == "grpo" else {}))
        context = torch.tensor([self.harness_index[episodes[e].context.harness_id] for e in batch.episode.tolist()])
        t1 = time.perf_counter()
        with_ref = bool(cfg.kl_coef or cfg.log_kl)
        on_policy_step = self.frozen is None and cfg.epochs == 1 and cfg.minibatches == 1
        scored = lm_update.score_batch(self.policy, batch, cfg.micro_batch_tokens, with_ref=with_ref,
                                       critic=self.critic, context=context, need_old=not on_policy_step)
        adv, returns = lm_update.token_advantages(cfg.objective, ga.advantages, batch, rewards, scored, cfg.gamma, cfg.lam)
        old_for_ratio = None
        if self.frozen is not None and cfg.offline_correction == "tis":
            adv = adv * _tis_weights(scored.old, batch.behaviour, batch.mask, cfg.tis_cap, self.objective.sequence_advantage)
        elif self.frozen is not None and cfg.offline_correction == "ratio":
            old_for_ratio = batch.behaviour
        gen = torch.Generator().manual_seed(_mix(cfg.seed, u, 2))
        stats = lm_update.update(self.policy, self.optimizer, self.scheduler, batch, scored, adv, self.settings, gen,
                                 critic=self.critic, context=context, returns=returns, old_for_ratio=old_for_ratio)
        t_upd = time.perf_counter() - t1
        return self._row(u, episodes, ga, batch, scored, stats, t_roll, t_upd)

    def _collect(self, u: int) -> list[Episode]:
        cfg = self.cfg
        rng = np.random.default_rng([cfg.seed, u])
        if self.frozen is not None:
            task_ids = sorted({e.context.task_id for e in self.frozen})
            pick = set(rng.choice(task_ids, size=min(cfg.tasks_per_update, len(task_ids)), replace=False).tolist())
            return [e for e in self.frozen if e.context.task_id in pick]
        tasks = [self.tasks[i] for i in rng.permutation(len(self.tasks))[: cfg.tasks_per_update]]
        items = [RolloutItem(h, t, int(_mix(cfg.seed, u, k) % 2**31))
                 for k, (t, h, _) in enumerate((t, h, g) for t in tasks for h in self.harnesses for g in range(cfg.group_size))]
        self.policy.reseed(_mix(cfg.seed, u, 1))
        prefix = f"{self.run_id}-u{u:05d}-"
        # the sampling key leaves out the run id: the same seed and config sample the same tokens in any
        # run folder (a run and its resumed copy, two folders compared)
        key = f"u{u:05d}-"
        episodes = run_group(self.policy, items, run_id=self.run_id, key_prefix=key, open_env=self.open_env)
        apply_rewards(self.cfg.reward_hook, episodes)  # reward_funcs on the graded episodes, before anything learns from them
        for i, ep in enumerate(episodes):
            ep.episode_id = f"{prefix}{i:05d}"
            ep.metadata.update({"update": u, "temperature": self.policy.cfg.temperature})
            resets = self.policy.pop_resets(f"{key}{i}")
            if resets:
                ep.metadata["context_resets"] = [list(r) for r in resets]
        stored = set(self.store.sql("SELECT episode_id FROM episodes WHERE run_id = ? AND episode_id LIKE ?",
                                    [self.run_id, prefix + "%"]).column("episode_id").to_pylist())
        self.store.append([e for e in episodes if e.episode_id not in stored])
        return episodes

    def _row(self, u, episodes, ga, batch, scored, stats, t_roll, t_upd) -> dict[str, Any]:
        gen_tokens = int(batch.mask.sum())
        train_tokens = int(batch.attention.sum()) * self.cfg.epochs
        row: dict[str, Any] = {
            "update": u + 1, **episode_columns(episodes),
            "signal_fraction": ga.signal_fraction, "groups": ga.num_groups,
            "constant_groups": ga.constant_groups, "singleton_groups": ga.singleton_groups,
            "lr": self.scheduler.get_last_lr()[0], "gen_tokens": gen_tokens, "train_tokens": train_tokens,
            "gen_tok_s": gen_tokens / t_roll if t_roll > 0 else 0.0,
            "train_tok_s": train_tokens / t_upd if t_upd > 0 else 0.0,
            "time_rollout_s": t_roll, "time_update_s": t_upd, "precision": self.precision["precision"],
        }
        row.update({k: float(v) for k, v in stats.items()})
        if scored.entropy is not None:  # measured on the scoring pass (pi_old) when there was one
            row["entropy"] = float((scored.entropy * batch.mask).sum() / batch.mask.sum().clamp(min=1))
        row.update(harness_columns(episodes, [h.id for h in self.harnesses]))
        return row

    # -- checkpoints -------------------------------------------------------------------

    def _checkpoint(self) -> None:
        save_checkpoint(self.run_dir, {
            "update": self.update_index, "config": self.cfg.model_dump(mode="json"),
            "weights": trainable_state(self.policy.model),
            "critic": self.critic.state_dict() if self.critic is not None else None,
            "optimizer": self.optimizer.state_dict(), "scheduler": self.scheduler.state_dict(),
            "rng": rng_state(), "metrics": self.metrics.rows,
        })

    def _resume(self) -> None:
        state = load_checkpoint(self.run_dir)
        if state is None:
            return
        check_same_config(self.cfg, state["config"], self.run_dir)
        load_trainable_state(self.policy.model, state["weights"])
        if self.critic is not None:
            self.critic.load_state_dict(state["critic"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.scheduler.load_state_dict(state["scheduler"])
        set_rng_state(state["rng"])
        self.update_index = int(state["update"])
        self.metrics.rows = list(state["metrics"])
        self.metrics.write()


def adamw(params: Any, **kwargs: Any) -> torch.optim.AdamW:
    """AdamW, the fused kernel where this torch build has one for the device (CPU and CUDA do)."""
    try:
        return torch.optim.AdamW(params, fused=True, **kwargs)
    except (RuntimeError, TypeError):
        return torch.optim.AdamW(params, **kwargs)


def _tis_weights(old: torch.Tensor, behaviour: torch.Tensor, mask: torch.Tensor, cap: float,
                 per_sequence: bool) -> torch.Tensor:
    """Truncated importance weights min(pi_old / pi_behaviour, cap): per token, or per sequence (GSPO)."""
    log_w = (old - behaviour) * mask
    if per_sequence:
        log_w = (log_w.sum(-1) / mask.sum(-1).clamp(min=1))[:, None].expand_as(mask)
    return torch.exp(log_w).clamp(max=cap) * mask


def _seed_all(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def _mix(seed: int, u: int, stream: int) -> int:
    """A 63-bit seed from (seed, update, stream) — independent streams without shared state."""
    return int(np.random.SeedSequence([seed, u + 1, stream]).generate_state(2, np.uint32).view(np.uint64)[0] >> 1)


def _lr_factor(cfg: AgentTrainConfig, step: int, total: int) -> float:
    if cfg.warmup_steps and step < cfg.warmup_steps:
        return (step + 1) / cfg.warmup_steps
    frac = (step - cfg.warmup_steps) / max(1, total - cfg.warmup_steps)
    if cfg.scheduler == "linear":
        return max(0.0, 1.0 - frac)
    if cfg.scheduler == "cosine":
        return 0.5 * (1.0 + math.cos(math.pi * min(frac, 1.0)))
    return 1.0
