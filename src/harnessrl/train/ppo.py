"""PPO on a multi-context vector env, with a shared, conditioned or multihead critic.

Reads top to bottom in the order the algorithm runs (cleanrl's ppo.py is the model):
collect `num_steps` steps from every sub-environment, compute old log-probs and values in
one batched pass, GAE with time-limit bootstrapping (rl.advantages.gae), then `update_epochs`
passes of minibatch PPO-clip + clipped value loss + entropy bonus (rl.losses).

Lean by design, because PPO on small envs is all framework overhead: rollout storage is
preallocated numpy arrays shaped (steps, envs); the per-step work is one actor forward and
a sample (for a CPU MLP in numpy, on views of the live torch weights: a few-row forward pass
costs less there than torch's per-op dispatch); values and old log-probs are computed by
torch for the whole rollout at once afterwards (the policy does not change during a
rollout); one torch thread.

Determinism: every random draw comes from the seeded torch generator, the seeded numpy
generator, the env seeds or the seeded parameter init, so a run is bit-identical on one
machine for a given seed. With a `run_dir`, a checkpoint (weights, optimizer, generators,
env and normaliser state, history) is written atomically every `checkpoint_every` updates;
`resume=True` continues from it to the same bits as an uninterrupted run.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal

import numpy as np
import torch
from pydantic import Field, model_validator

from harnessrl.config import Config, ConfigError
from harnessrl.envs.normalize import ObsNormalizer, RewardNormalizer
from harnessrl.rl.advantages import gae
from harnessrl.rl.losses import ppo_loss
from harnessrl.rl.trl_options import from_trl_names
from harnessrl.rl.value import value_loss
from harnessrl.train.checkpoint import load_checkpoint, save_checkpoint
from harnessrl.train.metrics import REPORT_TO_HELP, ReportTo, Trackers
from harnessrl.train.ppo_agent import ActorCritic
from harnessrl.train.ppo_stats import UpdateStats, episode_stats, value_stats


IMAGE_CHUNK = 2048  # rows per forward pass of an image trunk when a whole rollout is evaluated


class CheckpointMismatch(ConfigError, ValueError):
    """--resume with other settings: a user error (the CLI prints it as one line), still a ValueError."""


class PPOConfig(Config):
    """PPO settings; names follow cleanrl's ppo.py.

    TRL's name `epsilon` is accepted for clip_coef (rl.trl_options); the clip is symmetric, so
    `epsilon_high` may only repeat it. clip_coef 0.2 is the default of cleanrl, TRL (epsilon)
    and verl (clip_ratio) alike. There is no KL-to-reference term (target_kl only stops an
    update's epochs early), so TRL's `beta` has no equivalent here and is an unknown key.
    """

    TRL_NAMES: ClassVar[dict[str, str]] = {"epsilon": "clip_coef"}

    total_steps: int = Field(50_000, ge=1, description="environment steps over all sub-environments")
    num_steps: int = Field(128, ge=1, description="rollout length per sub-environment")
    update_epochs: int = Field(4, ge=1)
    num_minibatches: int = Field(4, ge=1)
    learning_rate: float = Field(2.5e-4, gt=0)
    anneal_lr: bool = True
    gamma: float = Field(0.99, ge=0, le=1)
    gae_lambda: float = Field(0.95, ge=0, le=1)
    clip_coef: float = Field(0.2, gt=0)
    clip_vloss: bool = True
    ent_coef: float = 0.01
    vf_coef: float = 0.5
    max_grad_norm: float = 0.5
    norm_adv: bool = True
    target_kl: float | None = None
    bootstrap_truncation: bool = True  # time-limit truncation bootstraps from V(final obs) (SB3); cleanrl does not
    num_contexts: int | None = Field(None, ge=1, description="expected number of env contexts; None = the env's")
    critic: Literal["shared", "conditioned", "multihead"] = "shared"
    critic_conditioning: Literal["onehot", "embedding"] = "onehot"
    network: Literal["mlp", "impala", "nature-small"] = "mlp"
    hidden: tuple[int, ...] = (64, 64)
    obs_norm: Literal["none", "pooled", "context"] = "none"
    reward_norm: Literal["none", "pooled", "context"] = "none"
    seed: int = 0
    torch_threads: int = Field(1, ge=1)
    device: str = Field("cpu", pattern=r"^(cpu|auto|cuda(:\d+)?)$", description="cpu, cuda[:N], or auto (cuda if present)")
    checkpoint_every: int = Field(0, ge=0, description="updates between checkpoints (0 = only at the end when run_dir is set)")
    report_to: ReportTo = Field(default_factory=list, description=REPORT_TO_HELP + " Needs a run_dir.")

    @model_validator(mode="before")
    @classmethod
    def _trl_names(cls, data: Any) -> Any:
        return from_trl_names(data, cls.model_fields, cls.TRL_NAMES)

    @model_validator(mode="after")
    def _minibatches_fit(self) -> "PPOConfig":
        if self.num_minibatches > self.num_steps:
            raise ValueError(f"num_minibatches={self.num_minibatches} exceeds num_steps={self.num_steps}")
        return self


@dataclass
class PPOResult:
    agent: ActorCritic
    history: list[dict[str, float]]  # one row per update
    episodes: list[tuple[int, int, int, float, int, int]]  # env, context, level, return, length, global_step
    global_step: int
    wall_time: float
    obs_norm: ObsNormalizer
    rew_norm: RewardNormalizer
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def device(self) -> torch.device:
        return next(self.agent.parameters()).device

    def policy_fn(self, seed: int = 0, deterministic: bool = False) -> Callable[[np.ndarray], np.ndarray]:
        """obs (N, *obs) as the env returns them -> actions, through the training-time obs normaliser."""
        gen = torch.Generator().manual_seed(seed)
        space = self.extra["action_space"]

        def act(obs: np.ndarray, context: np.ndarray | None = None) -> np.ndarray:
            ctx = np.zeros(len(obs), dtype=np.int64) if context is None else context
            x = torch.from_numpy(self.obs_norm(obs, ctx, update=False)).to(self.device)
            a = self.agent.act(x, gen, deterministic).cpu().numpy()
            return a if self.agent.discrete else np.clip(a, space.low, space.high)
        return act

    def value_fn(self) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
        """(obs (B, *obs), context (B,)) -> critic values in the env's reward units (reward
        normalisation undone with the final running std of each context)."""
        def value(obs: np.ndarray, context: np.ndarray) -> np.ndarray:
            x = torch.from_numpy(self.obs_norm(obs, context, update=False)).to(self.device)
            ctx = torch.from_numpy(np.asarray(context, dtype=np.int64)).to(self.device)
            v = self.agent.predict_value(x, ctx).cpu().numpy()
            return v * self.rew_norm.scale(context)
        return value


def _check_env(env: Any, cfg: PPOConfig) -> None:
    for attr in ("context", "num_contexts", "context_names", "pop_episodes", "get_state", "set_state"):
        if not hasattr(env, attr):
            raise TypeError(f"PPO needs a multi-context vector env (harnessrl.envs.multicontext); {type(env).__name__} "
                            f"has no {attr!r}")
    ctx = np.asarray(env.context)
    if len(ctx) != env.num_envs or ctx.min() < 0 or ctx.max() >= env.num_contexts:
        raise ValueError(f"env.context must hold {env.num_envs} ids in 0..{env.num_contexts - 1}; got {ctx.tolist()}")
    if cfg.num_contexts is not None and cfg.num_contexts != env.num_contexts:
        raise ValueError(f"num_contexts={cfg.num_contexts} but the env has {env.num_contexts} contexts "
                         f"({', '.join(env.context_names)}); fix num_contexts or the env's context list")


def train_ppo(cfg: PPOConfig, env: Any, *, run_dir: str | Path | None = None, resume: bool = False,
              on_update: Callable[[int, int, dict[str, float]], None] | None = None) -> PPOResult:
    """Train PPO on `env` (a MultiContextVectorEnv or compatible); returns the agent and its history."""
    _check_env(env, cfg)
    if cfg.report_to and run_dir is None:
        raise ConfigError(f"report_to {cfg.report_to}: the trackers write into the run folder; give train_ppo a run_dir")
    torch.set_num_threads(cfg.torch_threads)
    N, T = env.num_envs, cfg.num_steps
    batch_size = N * T
    num_updates = max(1, cfg.total_steps // batch_size)

    # -- agent, optimiser, storage --------------------------------------------------------
    dev = torch.device("cuda" if cfg.device == "auto" and torch.cuda.is_available() else
                       "cpu" if cfg.device == "auto" else cfg.device)
    torch.manual_seed(cfg.seed)
    rngs = _Generators(np.random.default_rng(cfg.seed),  # rollout sampling when the actor runs in numpy
                       torch.Generator().manual_seed(cfg.seed))
    obs_space, act_space = env.single_observation_space, env.single_action_space
    agent = ActorCritic(obs_space, act_space, env.num_contexts, critic=cfg.critic, network=cfg.network, hidden=cfg.hidden,
                        critic_kwargs={"conditioning": cfg.critic_conditioning} if cfg.critic == "conditioned" else None).to(dev)
    # fused: one kernel per parameter group instead of ~10 ops per parameter (CPU support since torch 2.4)
    optimizer = torch.optim.Adam(agent.parameters(), lr=cfg.learning_rate, eps=1e-5, fused=True)
    buf = _Buffers.allocate(T, N, obs_space, act_space, agent.discrete, np.float32 if cfg.network == "mlp" else np.uint8)
    context = torch.from_numpy(np.asarray(env.context, dtype=np.int64)).to(dev)
    obs_norm = ObsNormalizer(cfg.obs_norm, env.num_contexts, obs_space.shape)
    rew_norm = RewardNormalizer(cfg.reward_norm, env.num_contexts, N, cfg.gamma)
    np_actor = agent.numpy_policy()

    # -- start fresh or resume --------------------------------------------------------------
    history: list[dict[str, float]] = []
    episodes: list[tuple[int, int, int, float, int, int]] = []
    start_update, global_step, elapsed = 0, 0, 0.0
    state = load_checkpoint(run_dir) if (resume and run_dir is not None) else None
    if state is not None:
        _check_resumable(state, cfg, env, run_dir)
        _restore(state, agent, optimizer, rngs, env, obs_norm, rew_norm)
        next_obs = state["next_obs"]
        history, episodes = state["history"], state["episodes"]
        start_update, global_step, elapsed = state["update"], state["global_step"], state["elapsed"]
    else:
        raw, _ = env.reset(seed=cfg.seed)
        next_obs = obs_norm(raw, env.context)

    t_start = time.perf_counter() - elapsed
    timings = {"rollout": 0.0, "update": 0.0}  # seconds this process spent (not restored on resume)
    trackers = Trackers(run_dir or ".", cfg.report_to, Path(run_dir or ".").name, cfg.model_dump(mode="json"))
    try:
        for update in range(start_update, num_updates):
            if cfg.anneal_lr:
                optimizer.param_groups[0]["lr"] = cfg.learning_rate * (1.0 - update / num_updates)
            t_rollout = time.perf_counter()
            next_obs = _collect(cfg, env, agent, np_actor, buf, next_obs, rngs, obs_norm, rew_norm, dev)
            global_step += batch_size
            first_new = len(episodes)
            for e in env.pop_episodes():
                episodes.append((*e, global_step))
            batch = _advantages(cfg, agent, buf, next_obs, context, dev)
            t_update = time.perf_counter()
            stats = _update(cfg, agent, optimizer, batch, rngs.torch, dev)

            # -- log, checkpoint ----------------------------------------------------------------------
            t_done = time.perf_counter()
            timings["rollout"] += t_update - t_rollout
            timings["update"] += t_done - t_update
            row = stats.row(update, global_step, optimizer.param_groups[0]["lr"])
            row.update(value_stats(batch.values, batch.ret, batch.context, env.num_contexts))
            row.update(episode_stats(episodes[first_new:], env.num_contexts))
            history.append(row)
            elapsed = time.perf_counter() - t_start
            if on_update is not None:
                on_update(update + 1, num_updates, {**row, "sps": global_step / max(elapsed, 1e-9)})
            trackers.log(row, update + 1)
            last = update + 1 == num_updates
            if run_dir is not None and ((cfg.checkpoint_every and (update + 1) % cfg.checkpoint_every == 0) or last):
                save_checkpoint(run_dir, {
                    "config": cfg.model_dump(), "context_names": list(env.context_names), "update": update + 1,
                    "global_step": global_step, "elapsed": elapsed, **_training_state(agent, optimizer, rngs, env, obs_norm, rew_norm),
                    "next_obs": next_obs, "history": history, "episodes": episodes,
                })
    finally:
        trackers.close()
    wall = time.perf_counter() - t_start
    return PPOResult(agent, history, episodes, global_step, wall, obs_norm, rew_norm,
                     extra={"context_names": list(env.context_names), "timings": timings, "action_space": act_space})


@dataclass
class _Generators:
    """Every random draw of a run: numpy for the numpy actor's samples, torch for the rest."""

    numpy: np.random.Generator
    torch: torch.Generator


@dataclass
class _Buffers:
    """Rollout storage, preallocated once: (T steps, N sub-environments)."""

    obs: np.ndarray  # (T, N, *obs)
    act: np.ndarray  # (T, N) discrete, (T, N, *act) continuous
    rew: np.ndarray  # (T, N), normalised when reward_norm is on
    term: np.ndarray  # (T, N) bool
    trunc: np.ndarray  # (T, N) bool
    final_obs: list[tuple[int, np.ndarray, np.ndarray]]  # (step, env ids, their final obs) at truncations

    @classmethod
    def allocate(cls, T: int, N: int, obs_space: Any, act_space: Any, discrete: bool, obs_dtype: Any) -> "_Buffers":
        return cls(obs=np.zeros((T, N, *obs_space.shape), dtype=obs_dtype),
                   act=np.zeros((T, N) if discrete else (T, N, *act_space.shape), dtype=np.int64 if discrete else np.float32),
                   rew=np.zeros((T, N), dtype=np.float32), term=np.zeros((T, N), dtype=bool),
                   trunc=np.zeros((T, N), dtype=bool), final_obs=[])


@dataclass
class _Batch:
    """One rollout flattened for the update, B = T * N rows (time-major)."""

    obs: torch.Tensor  # (B, *obs)
    actions: torch.Tensor  # (B,) discrete, (B, *act) continuous
    context: torch.Tensor  # (B,) context id of each row
    logprobs: torch.Tensor  # (B,) log pi_old(a | s)
    values: torch.Tensor  # (B,) V_old(s)
    adv: torch.Tensor  # (B,) GAE advantages
    ret: torch.Tensor  # (B,) GAE returns (the value targets)


def _check_resumable(state: dict[str, Any], cfg: PPOConfig, env: Any, run_dir: str | Path | None) -> None:
    if state["context_names"] != list(env.context_names):
        raise CheckpointMismatch(f"{run_dir}: the checkpoint was trained on contexts {state['context_names']}, the env has "
                                 f"{list(env.context_names)}; resume with the same env or use a new run directory")
    # where the metrics go is not what is trained (and a checkpoint from before report_to existed has none)
    saved = {k: v for k, v in state["config"].items() if k != "report_to"}
    now = cfg.model_dump(exclude={"report_to"})
    if saved != now:
        diff = sorted(k for k, v in now.items() if saved.get(k) != v)
        raise CheckpointMismatch(f"{run_dir}: the checkpoint was written with a different config ({', '.join(diff)} differ); "
                                 "resume with the same settings or use a new run directory")


def _training_state(agent: ActorCritic, optimizer: torch.optim.Optimizer, rngs: _Generators, env: Any,
                    obs_norm: ObsNormalizer, rew_norm: RewardNormalizer) -> dict[str, Any]:
    """Everything a resumed run needs to continue to the same bits (with the loop's counters and history)."""
    return {"agent": agent.state_dict(), "optimizer": optimizer.state_dict(), "generator": rngs.torch.get_state(),
            "np_rng": rngs.numpy.bit_generator.state, "env": env.get_state(),
            "obs_norm": obs_norm.state_dict(), "rew_norm": rew_norm.state_dict()}


def _restore(state: dict[str, Any], agent: ActorCritic, optimizer: torch.optim.Optimizer, rngs: _Generators, env: Any,
             obs_norm: ObsNormalizer, rew_norm: RewardNormalizer) -> None:
    """The inverse of _training_state: load a checkpoint's weights, optimiser, generators, env and normalisers."""
    agent.load_state_dict(state["agent"])
    optimizer.load_state_dict(state["optimizer"])
    rngs.torch.set_state(state["generator"])
    rngs.numpy.bit_generator.state = state["np_rng"]
    env.set_state(state["env"])
    obs_norm.load_state_dict(state["obs_norm"])
    rew_norm.load_state_dict(state["rew_norm"])


def _collect(cfg: PPOConfig, env: Any, agent: ActorCritic, np_actor: Any, buf: _Buffers, next_obs: np.ndarray,
             rngs: _Generators, obs_norm: ObsNormalizer, rew_norm: RewardNormalizer, dev: torch.device) -> np.ndarray:
    """Fill `buf` with T steps of every sub-environment, one actor forward and one sample per step;
    returns the observation after the last step (what the next rollout starts from)."""
    on_cpu = dev.type == "cpu"  # the rollout loop skips device transfers then
    low, high = (None, None) if agent.discrete else (env.single_action_space.low, env.single_action_space.high)
    ctx_np, norm_obs, norm_rew = np.asarray(env.context), cfg.obs_norm != "none", cfg.reward_norm != "none"
    buf.final_obs.clear()
    with torch.no_grad():
        for step in range(cfg.num_steps):
            buf.obs[step] = next_obs
            if np_actor is not None:
                action = agent.numpy_sample(np_actor(buf.obs[step]), rngs.numpy)
            else:
                x = torch.from_numpy(buf.obs[step])
                action = agent.sample(agent.policy_out(agent.features(x if on_cpu else x.to(dev))), rngs.torch)
                action = (action if on_cpu else action.cpu()).numpy()
            buf.act[step] = action
            raw, reward, term, trunc, info = env.step(action if low is None else np.clip(action, low, high))
            buf.rew[step] = rew_norm(reward, ctx_np, term | trunc) if norm_rew else reward
            buf.term[step], buf.trunc[step] = term, trunc
            if info and cfg.bootstrap_truncation:  # info is empty unless an episode ended
                ids = np.flatnonzero(trunc & ~term)
                if len(ids):
                    buf.final_obs.append((step, ids, obs_norm(info["final_obs"][ids], ctx_np[ids], update=False)))
            next_obs = obs_norm(raw, ctx_np) if norm_obs else raw.astype(buf.obs.dtype, copy=False)
    return next_obs


@torch.no_grad()
def _advantages(cfg: PPOConfig, agent: ActorCritic, buf: _Buffers, next_obs: np.ndarray, context: torch.Tensor,
                dev: torch.device) -> _Batch:
    """Old log-probs, values and bootstrap values in one batched forward (the policy did not change
    during the rollout), then GAE with time-limit bootstrapping. context: (N,) per sub-environment."""
    T, N = buf.rew.shape
    b_obs = torch.from_numpy(buf.obs).reshape(T * N, *buf.obs.shape[2:]).to(dev)
    b_actions = torch.from_numpy(buf.act).reshape(T * N, *buf.act.shape[2:]).to(dev)
    b_context = context.repeat(T)
    if cfg.network == "mlp":
        feats = agent.features(b_obs)
    else:  # image trunks in chunks: one pass over a 64-env x 256-step Procgen rollout would hold GBs of activations
        feats = torch.cat([agent.features(b_obs[i:i + IMAGE_CHUNK]) for i in range(0, T * N, IMAGE_CHUNK)])
    b_logprobs, _ = agent.log_prob_entropy(agent.policy_out(feats), b_actions)
    values = agent.value(feats, b_context).reshape(T, N)  # validates the context ids once per rollout
    last_values = agent.value(agent.features(torch.from_numpy(next_obs).to(dev)), context)
    final_values = torch.zeros(T, N, device=dev)
    if buf.final_obs:
        steps = np.concatenate([np.full(len(ids), s) for s, ids, _ in buf.final_obs])
        ids = np.concatenate([ids for _, ids, _ in buf.final_obs])
        fobs = torch.from_numpy(np.concatenate([o for _, _, o in buf.final_obs])).to(dev)
        final_values[steps, ids] = agent.value(agent.features(fobs), context[ids])
    # GAE along time: the (T, N) buffers are viewed as (N, T)
    rewards, term, trunc = (torch.from_numpy(x).to(dev) for x in (buf.rew, buf.term, buf.trunc))
    if not cfg.bootstrap_truncation:  # cleanrl: a truncation ends the episode like a termination
        term, trunc = term | trunc, torch.zeros_like(trunc)
    adv, ret = gae(rewards.T, values.T, gamma=cfg.gamma, lam=cfg.gae_lambda, terminated=term.T, truncated=trunc.T,
                   final_values=final_values.T, last_values=last_values)
    return _Batch(b_obs, b_actions, b_context, b_logprobs, values.reshape(-1), adv.T.reshape(-1), ret.T.reshape(-1))


def _update(cfg: PPOConfig, agent: ActorCritic, optimizer: torch.optim.Optimizer, batch: _Batch, generator: torch.Generator,
            dev: torch.device) -> UpdateStats:
    """`update_epochs` passes of minibatch PPO-clip + clipped value loss + entropy bonus; stops
    early once an epoch's approximate KL exceeds target_kl."""
    batch_size = batch.adv.shape[0]
    minibatch_size = batch_size // cfg.num_minibatches
    stats = UpdateStats()
    for _epoch in range(cfg.update_epochs):
        perm = torch.randperm(batch_size, generator=generator).to(dev)
        for start in range(0, batch_size - minibatch_size + 1, minibatch_size):
            mb = perm[start:start + minibatch_size]
            feats = agent.features(batch.obs[mb])
            newlogprob, entropy = agent.log_prob_entropy(agent.policy_out(feats), batch.actions[mb])
            newvalue = agent.value(feats, batch.context[mb], check=False)
            mb_adv = batch.adv[mb]
            if cfg.norm_adv:
                std, mean = torch.std_mean(mb_adv)
                mb_adv = (mb_adv - mean) / (std + 1e-8)
            pg = ppo_loss(newlogprob[:, None], batch.logprobs[mb, None], mb_adv, clip_low=cfg.clip_coef)
            vl = value_loss(newvalue, batch.ret[mb], old_values=batch.values[mb], clip=cfg.clip_coef if cfg.clip_vloss else None)
            ent = entropy.mean()
            loss = pg.loss - cfg.ent_coef * ent + cfg.vf_coef * vl.loss
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(agent.parameters(), cfg.max_grad_norm)
            optimizer.step()
        # diagnostics of the epoch's last minibatch (as cleanrl logs them); computing them is lazy
        stats.add(pg.loss, vl.loss, ent, pg.metrics["approx_kl"], pg.metrics["clipfrac"])
        if cfg.target_kl is not None and stats.last_kl > cfg.target_kl:
            break
    return stats
