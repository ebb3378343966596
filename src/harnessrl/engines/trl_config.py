"""One config for both trainers: harnessrl's agent-training keys -> TRL's `GRPOConfig` + PEFT.

    cfg = load_config(TRLRunConfig, "run.yaml")          # the native AgentTrainConfig keys + a `trl:` block
    plan = translate(cfg, world_size=2)                   # TRLPlan: GRPOConfig kwargs, LoraConfig, row layout

A run file written for `harnessrl train agent` runs unchanged under the TRL engine when every key
it sets has a TRL equivalent (the table in docs/scale.md). Every key is mapped, accepted only at
the value TRL hard-codes (adv_eps 1e-4, kl_estimator k3), or refused with a `ConfigError` naming
the key and the fix. A key the user never set keeps its meaning through its default; a key the
user *did* set is never dropped in silence.

Grouping on TRL's rows: TRL puts `num_generations` consecutive rollouts of one dataset row in an
advantage group. `within` makes one row per (task, harness) with `group_size` rollouts; `cross`
makes one row per task with `group_size x harnesses` rollouts, the k-th going to harness
k mod H — both give the same work per update as the native trainer (tasks_per_update x H x G).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import Field

from harnessrl.config import Config, ConfigError
from harnessrl.rl.objectives import OBJECTIVES
from harnessrl.train.agent import AgentTrainConfig

#: harnessrl aggregation -> TRL loss_type that aggregates the same way. dapo normalises by the
#: generation batch's trained tokens across processes: the global token-mean, as ours.
LOSS_TYPES = {"token-mean": "dapo", "seq-mean-token-mean": "grpo"}
#: TRL divides centred rewards by (std + 1e-4); the native default eps is 1e-6.
TRL_ADV_EPS = 1e-4


class TRLOptions(Config):
    """Settings only the TRL engine has (the `trl:` block of a run file)."""

    use_vllm: bool = Field(False, description="Generate with vLLM (weights synced by TRL before each rollout).")
    vllm_mode: Literal["colocate", "server"] = Field(
        "colocate", description="colocate: in each training process; server: `trl vllm-serve`.")
    vllm_server_base_url: str | None = Field(None, description="server mode: e.g. http://127.0.0.1:8000")
    vllm_gpu_memory_utilization: float = Field(0.3, gt=0, le=1)
    gradient_checkpointing: bool = Field(True, description="Recompute activations in backward (TRL's default).")
    per_device_train_batch_size: int | None = Field(
        None, ge=1, description="Rollouts per forward/backward on one device; default the device's whole minibatch "
        "(smaller values accumulate gradients).")
    save_steps: int = Field(1, ge=1, description="Checkpoint every N updates (resume with --resume).")
    save_total_limit: int | None = Field(2, ge=1)
    logging_steps: int = Field(1, ge=1)
    max_completion_length: int | None = Field(None, ge=1, description="vLLM's per-turn token cap; default policy.max_new_tokens.")


class TRLRunConfig(AgentTrainConfig):
    """An AgentTrainConfig (same keys, same meaning) plus the TRL-only settings."""

    trl: TRLOptions = Field(default_factory=TRLOptions)


@dataclass
class TRLPlan:
    """What `translate` decided: GRPOConfig kwargs, the LoRA config (or None) and the row layout."""

    args: dict[str, Any]
    lora: dict[str, Any] | None
    grouping: str  # within | cross
    num_generations: int
    rows_per_update: int  # dataset rows in one generation batch
    notes: list[str] = field(default_factory=list)


def _set(cfg: Config) -> set[str]:
    return set(cfg.model_fields_set)


def _refuse(key: str, why: str) -> ConfigError:
    return ConfigError(f"{key}: {why} (engine trl)")


def translate(cfg: TRLRunConfig, world_size: int = 1, *, cuda: bool = False) -> TRLPlan:
    """Map a run config onto GRPOConfig keyword arguments; refuse what has no equivalent."""
    given, pgiven = _set(cfg), _set(cfg.policy)
    notes: list[str] = []
    # 1. Objectives, grouping and sources TRL's GRPOTrainer does not have.
    obj = OBJECTIVES.get(cfg.objective)  # its defaults and TRL importance_sampling_level, as the native trainer's
    if obj.trl_level is None:
        trl = ", ".join(n for n in OBJECTIVES.names() if OBJECTIVES.get(n).trl_level)
        raise _refuse("objective", f"{cfg.objective!r} has no GRPOTrainer equivalent; use {trl} "
                      "(or the native trainer: harnessrl train agent)")
    if cfg.grouping not in ("within", "cross"):
        raise _refuse("grouping", f"{cfg.grouping!r}: TRL groups the rollouts of one dataset row, so only within "
                      "(a row per task x harness) and cross (a row per task) map; use one of those or the native trainer")
    if cfg.source != "online":
        raise _refuse("source", "offline training from frozen records is native-only; use source=online")
    if cfg.backend != "local":
        raise _refuse("backend", "rollouts run in each training process under the TRL engine; use backend=local "
                      "(scale rollouts by launching more processes with accelerate)")
    unused = {"offline_store", "offline_where", "offline_correction", "tis_cap", "critic", "critic_lr", "vf_coef",
              "vf_clip", "gamma", "lam", "micro_batch_tokens"}
    for key in sorted(unused & given):
        fix = ("use trl.per_device_train_batch_size to bound memory" if key == "micro_batch_tokens"
               else f"it has no meaning for {cfg.objective} under GRPOTrainer; remove it")
        raise _refuse(key, fix)
    if cfg.kl_coef and cfg.kl_estimator != "k3":
        raise _refuse("kl_estimator", f"{cfg.kl_estimator!r}: GRPOTrainer's KL term is the k3 estimator; use k3")
    if "log_kl" in given and cfg.log_kl and not cfg.kl_coef:
        raise _refuse("log_kl", "GRPOTrainer computes KL only when beta (kl_coef) > 0; set kl_coef or remove log_kl")
    if "adv_eps" in given and abs(cfg.adv_eps - TRL_ADV_EPS) > 1e-12:
        raise _refuse("adv_eps", f"GRPOTrainer divides by (std + {TRL_ADV_EPS}); set adv_eps={TRL_ADV_EPS} or remove it")
    if "adv_eps" not in given:
        notes.append(f"advantages divide by (std + {TRL_ADV_EPS}) as in TRL (native default {cfg.adv_eps})")
    if cfg.policy.adapter:
        raise _refuse("policy.adapter", "continuing a saved adapter is native-only for now; merge it "
                      "(LMPolicy.save_merged) and give the merged folder as policy.model")
    if cfg.policy.temperature <= 0:
        raise _refuse("policy.temperature", "RL needs sampling; set a temperature > 0 (e.g. 1.0)")
    if "device" in pgiven and cfg.policy.device != "auto":
        raise _refuse("policy.device", "accelerate places each process on its device; remove policy.device")
    # 2. Loss.
    agg = cfg.loss_agg or obj.agg
    if agg not in LOSS_TYPES:
        raise _refuse("loss_agg", f"{agg!r} has no GRPOTrainer loss_type that aggregates the same way (dr_grpo "
                      "divides by max_completion_length, not the longest row); use token-mean or seq-mean-token-mean")
    clip_low, clip_high = cfg.clip_low or obj.clip[0], cfg.clip_high or obj.clip[1]
    # 3. Rows and batch shape.
    H = len(cfg.harnesses)
    G = cfg.group_size if cfg.grouping == "within" else cfg.group_size * H
    if G < 2:
        raise _refuse("group_size", f"{cfg.grouping} grouping with group_size={cfg.group_size} gives TRL groups of "
                      f"{G}; GRPOTrainer needs at least 2 rollouts per row")
    rows = cfg.tasks_per_update * (H if cfg.grouping == "within" else 1)
    batch = rows * G  # = tasks_per_update x H x group_size, the native trainer's episodes per update
    if batch % world_size:
        raise _refuse("tasks_per_update", f"an update has {batch} rollouts, which {world_size} processes cannot "
                      "share evenly; change tasks_per_update or group_size, or the number of processes")
    per_rank = batch // world_size
    if per_rank % cfg.minibatches:
        raise _refuse("minibatches", f"{per_rank} rollouts per process do not split into {cfg.minibatches} minibatches")
    per_step = per_rank // cfg.minibatches
    micro = cfg.trl.per_device_train_batch_size or per_step
    if per_step % micro:
        raise _refuse("trl.per_device_train_batch_size", f"{micro} does not divide the {per_step} rollouts each "
                      "process trains on per optimizer step")
    accum = per_step // micro
    # 4. Precision, schedule, logging.
    dtype, precision = cfg.policy.dtype, cfg.policy.precision
    if dtype == "auto":  # as the native policy: precision decides (auto on CPU stays fp32 under TRL's autocast rules)
        dtype = {"bf16": "bfloat16", "fp32": "float32"}.get(precision, "bfloat16" if cuda else "float32")
    elif precision != "auto" and {"bf16": "bfloat16", "fp32": "float32"}[precision] != dtype:
        raise _refuse("policy.precision", f"{precision!r} conflicts with policy.dtype={dtype!r}; set one of them")
    if dtype == "float16":
        raise _refuse("policy.dtype", "float16 training is not supported by this engine; use bfloat16 or float32")
    sched = {"constant": "constant_with_warmup" if cfg.warmup_steps else "constant", "linear": "linear",
             "cosine": "cosine"}[cfg.scheduler]
    report = list(cfg.report_to) or ["none"]  # tensorboard/wandb booleans are folded into report_to by the config
    args: dict[str, Any] = {
        "output_dir": cfg.run_dir, "max_steps": cfg.updates, "seed": cfg.seed,
        "learning_rate": cfg.lr, "weight_decay": cfg.weight_decay, "max_grad_norm": cfg.max_grad_norm,
        "lr_scheduler_type": sched, "warmup_steps": cfg.warmup_steps,
        "num_generations": G, "generation_batch_size": batch, "per_device_train_batch_size": micro,
        "gradient_accumulation_steps": accum, "num_iterations": cfg.epochs,
        "importance_sampling_level": obj.trl_level, "loss_type": LOSS_TYPES[agg],
        "epsilon": clip_low, "epsilon_high": clip_high, "beta": cfg.kl_coef, "scale_rewards": cfg.adv_scale,
        # Pinned so the loss stays the native one if TRL's defaults move (1.16 already multiplies the KL term
        # by the ratio by default: the same value, another gradient; ours is plain k3).
        "use_bias_correction_kl": False, "mask_truncated_completions": False, "top_entropy_quantile": 1.0,
        "entropy_coef": 0.0, "off_policy_mask_threshold": None, "delta": None,
        "multi_objective_aggregation": "sum_then_normalize",
        "temperature": cfg.policy.temperature, "top_p": cfg.policy.top_p, "top_k": cfg.policy.top_k,
        "max_completion_length": cfg.trl.max_completion_length or cfg.policy.max_new_tokens,
        "bf16": dtype == "bfloat16", "fp16": False, "use_cpu": not cuda,
        # sampler/trainer mismatch (rl/tis.py): TRL's truncated IS against vLLM's log-probs, same cap and level
        "vllm_importance_sampling_correction": cfg.sampler_correction == "tis",
        "vllm_importance_sampling_mode": f"{obj.trl_level}_truncate",
        "vllm_importance_sampling_clip_max": cfg.sampler_tis_cap,
        "model_init_kwargs": {"dtype": dtype},
        "gradient_checkpointing": cfg.trl.gradient_checkpointing,
        "use_vllm": cfg.trl.use_vllm, "vllm_mode": cfg.trl.vllm_mode,
        "vllm_gpu_memory_utilization": cfg.trl.vllm_gpu_memory_utilization,
        "save_strategy": "steps", "save_steps": cfg.trl.save_steps, "save_total_limit": cfg.trl.save_total_limit,
        "logging_steps": cfg.trl.logging_steps, "report_to": report, "remove_unused_columns": False,
        "shuffle_dataset": True, "log_completions": False, "disable_tqdm": True,
    }
    if "trackio" in report:  # TRL's own trackio callback: harnessrl's project, a local store only, never a Space
        args.update(project="harnessrl", trackio_space_id=None, trackio_static_space_id=False)
    if cfg.trl.vllm_server_base_url:
        args["vllm_server_base_url"] = cfg.trl.vllm_server_base_url
    if cfg.minibatches > 1:
        args["steps_per_generation"] = cfg.minibatches * accum
        del args["generation_batch_size"]  # TRL derives it; both together are refused
    lora = None
    if cfg.policy.lora_rank:
        lora = {"r": cfg.policy.lora_rank, "lora_alpha": cfg.policy.lora_alpha or 2 * cfg.policy.lora_rank,
                "lora_dropout": cfg.policy.lora_dropout, "target_modules": cfg.policy.lora_target_modules,
                "task_type": "CAUSAL_LM"}
    return TRLPlan(args, lora, cfg.grouping, G, rows, notes)
