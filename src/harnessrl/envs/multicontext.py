"""Multi-context vector environments: parallel sub-environments that each carry a context id.

A *context* is one environment variant (different reward scale/offset, physics, or a set of
levels). The same observation can be worth different returns in different contexts, which
is what a shared critic cannot represent. The vector env exposes `context` (num_envs,) so a
trainer can feed it to a conditioned critic and split statistics by it.

It implements gymnasium's `VectorEnv` API with same-step autoreset: when a sub-environment
ends, the returned observation is already the next episode's first one, and the final
observation is in `info["final_obs"]` (mask `info["_final_obs"]`) so time-limit truncation
can bootstrap from it. Stepping is a plain loop over preallocated arrays (no per-step info
dicts); finished episodes are collected and handed out by `pop_episodes()`.

Bad input fails early with `EnvConfigError` naming the env id and context: unknown env ids,
sub-environments whose spaces differ, non-finite observations or rewards (checked on a short
random pre-flight before training and on every step).
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

#: Named observation wrappers a ContextSpec can ask for (filled by envs.levels and others).
WRAPPERS: dict[str, Callable[[gym.Env], gym.Env]] = {}


class EnvConfigError(ValueError):
    """A multi-context environment cannot be built or returned bad data; the message names env and context."""


@dataclass(frozen=True)
class ContextSpec:
    """One environment variant.

    env_id: a registered gymnasium id. make_kwargs: passed to gym.make. physics: attributes set
    on env.unwrapped after construction (CartPole: gravity, length, masspole, force_mag...).
    reward_scale/offset: r' = scale * r + offset. levels: seeds to draw each episode's layout
    from (MiniGrid levels); None = the env's own RNG. wrappers: names in WRAPPERS, applied in order.
    """

    name: str
    env_id: str
    make_kwargs: dict[str, Any] = field(default_factory=dict)
    physics: dict[str, float] = field(default_factory=dict)
    reward_scale: float = 1.0
    reward_offset: float = 0.0
    levels: tuple[int, ...] | None = None
    wrappers: tuple[str, ...] = ()


def make_env(spec: ContextSpec) -> gym.Env:
    """Build one sub-environment for `spec`, with a clear error for unknown ids and attributes."""
    try:
        env = gym.make(spec.env_id, disable_env_checker=True, **spec.make_kwargs)
    except gym.error.Error as err:  # NameNotFound, VersionNotFound, DependencyNotInstalled, ...
        raise EnvConfigError(f"context {spec.name!r}: cannot make env {spec.env_id!r}: {err}") from None
    except TypeError as err:
        msg = f"context {spec.name!r}: env {spec.env_id!r} rejected make_kwargs {spec.make_kwargs}: {err}"
        raise EnvConfigError(msg) from None
    base = env.unwrapped
    for key, value in spec.physics.items():
        if not hasattr(base, key):
            raise EnvConfigError(f"context {spec.name!r}: env {spec.env_id!r} has no physics attribute {key!r}")
        setattr(base, key, value)
    if spec.physics and hasattr(base, "polemass_length"):  # CartPole caches derived quantities
        base.total_mass = base.masspole + base.masscart
        base.polemass_length = base.masspole * base.length
    for name in spec.wrappers:
        if name not in WRAPPERS:
            raise EnvConfigError(f"context {spec.name!r}: unknown wrapper {name!r}; choose from {sorted(WRAPPERS)}")
        env = WRAPPERS[name](env)
    return env


class MultiContextVectorEnv(VectorEnv):
    """`envs_per_context` sub-environments per ContextSpec, stepped in one process.

    context: (num_envs,) int64, fixed per sub-environment: env i runs specs[context[i]].
    """

    metadata = {"autoreset_mode": AutoresetMode.SAME_STEP}

    def __init__(self, specs: Sequence[ContextSpec], envs_per_context: int = 1, *, preflight_steps: int = 4):
        if not specs:
            raise EnvConfigError("a multi-context env needs at least one ContextSpec")
        if envs_per_context < 1:
            raise EnvConfigError(f"envs_per_context must be >= 1; got {envs_per_context}")
        names = [s.name for s in specs]
        if len(set(names)) != len(names):
            raise EnvConfigError(f"context names must be unique; got {names}")
        self.specs = list(specs)
        self.context_names = names
        self.num_contexts = len(specs)
        self.context = np.repeat(np.arange(self.num_contexts, dtype=np.int64), envs_per_context)
        self.num_envs = len(self.context)
        if preflight_steps:
            preflight(self.specs, preflight_steps)
        self.envs = [make_env(self.specs[c]) for c in self.context]
        self.single_observation_space = self.envs[0].observation_space
        self.single_action_space = self.envs[0].action_space
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self._scale = np.array([self.specs[c].reward_scale for c in self.context], dtype=np.float64)
        self._offset = np.array([self.specs[c].reward_offset for c in self.context], dtype=np.float64)
        shape, dtype = self.single_observation_space.shape, self.single_observation_space.dtype
        self._obs = np.zeros((self.num_envs, *shape), dtype=dtype)
        self._final_obs = np.zeros_like(self._obs)
        self._raw = np.zeros(self.num_envs, dtype=np.float64)
        self._term = np.zeros(self.num_envs, dtype=bool)
        self._trunc = np.zeros(self.num_envs, dtype=bool)
        self._ep_return = np.zeros(self.num_envs, dtype=np.float64)
        self._ep_length = np.zeros(self.num_envs, dtype=np.int64)
        self.level = np.full(self.num_envs, -1, dtype=np.int64)
        self._level_rng = [np.random.default_rng(i) for i in range(self.num_envs)]
        self._finished: list[tuple[int, int, int, float, int]] = []  # env, context, level, return, length

    # -- reset / step ----------------------------------------------------------------------

    def _reset_one(self, i: int, seed: int | None = None) -> Any:
        levels = self.specs[self.context[i]].levels
        if levels is not None:
            level = int(levels[self._level_rng[i].integers(len(levels))])
            self.level[i] = level
            obs, _ = self.envs[i].reset(seed=level)
        else:
            obs, _ = self.envs[i].reset(seed=seed)
        return obs

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        """Reset every sub-environment; env i is seeded with seed + i (and draws its levels from that seed)."""
        for i in range(self.num_envs):
            if seed is not None:
                self._level_rng[i] = np.random.default_rng(seed + i)
            self._obs[i] = self._reset_one(i, None if seed is None else seed + i)
        self._ep_return[:] = 0.0
        self._ep_length[:] = 0
        self._finished.clear()
        self._check_finite(self._obs, "observation")
        return self._obs.copy(), {}

    def step(self, actions: np.ndarray):
        """actions: (num_envs, ...) -> obs, rewards (float64), terminated, truncated, info."""
        ended = []
        if isinstance(actions, np.ndarray) and actions.ndim == 1 and actions.dtype.kind in "iu":
            actions = actions.tolist()  # Discrete.contains checks a Python int several times faster
        for i, env in enumerate(self.envs):
            obs, r, te, tr, _ = env.step(actions[i])
            self._raw[i], self._term[i], self._trunc[i] = r, te, tr
            if te or tr:
                self._final_obs[i] = obs
                ended.append((i, int(self.level[i])))  # the level it played, before reset draws the next
                obs = self._reset_one(i)
            self._obs[i] = obs
        rewards = self._raw * self._scale + self._offset
        self._check_finite(self._obs, "observation")
        self._check_finite(rewards, "reward")
        self._ep_return += rewards
        self._ep_length += 1
        info: dict[str, Any] = {}
        if ended:
            mask = self._term | self._trunc
            self._check_finite(self._final_obs[mask], "final observation", np.flatnonzero(mask))
            info = {"final_obs": self._final_obs.copy(), "_final_obs": mask.copy()}
            for i, level in ended:
                self._finished.append((i, int(self.context[i]), level, float(self._ep_return[i]), int(self._ep_length[i])))
                self._ep_return[i], self._ep_length[i] = 0.0, 0
        return self._obs.copy(), rewards, self._term.copy(), self._trunc.copy(), info

    def pop_episodes(self) -> list[tuple[int, int, int, float, int]]:
        """Episodes finished since the last call: (env index, context, level (-1 if none), return, length)."""
        out, self._finished = self._finished, []
        return out

    def _check_finite(self, values: np.ndarray, what: str, rows: np.ndarray | None = None) -> None:
        if values.dtype.kind != "f" or np.isfinite(values).all():
            return
        bad = np.flatnonzero(~np.isfinite(values.reshape(len(values), -1)).all(axis=1))[0]
        i = int(bad if rows is None else rows[bad])
        spec = self.specs[self.context[i]]
        raise EnvConfigError(
            f"env {spec.env_id!r} (context {spec.name!r}, sub-env {i}) returned a non-finite {what}: "
            f"{values[bad]!r}. Fix the environment or its reward_scale/offset; training cannot use NaN/inf."
        )

    # -- checkpoint support ------------------------------------------------------------------

    def get_state(self) -> bytes:
        """Everything needed to continue bit-identically: sub-env states and RNGs, accumulators."""
        return pickle.dumps({
            "envs": self.envs, "level_rng": self._level_rng, "obs": self._obs, "level": self.level,
            "ep_return": self._ep_return, "ep_length": self._ep_length, "finished": self._finished,
        })

    def set_state(self, blob: bytes) -> None:
        state = pickle.loads(blob)
        for env in self.envs:
            env.close()
        self.envs, self._level_rng = state["envs"], state["level_rng"]
        self._obs[:], self.level[:] = state["obs"], state["level"]
        self._ep_return[:], self._ep_length[:] = state["ep_return"], state["ep_length"]
        self._finished = list(state["finished"])

    def current_obs(self) -> np.ndarray:
        return self._obs.copy()

    def close_extras(self, **kwargs: Any) -> None:
        for env in getattr(self, "envs", []):
            env.close()


def preflight(specs: Sequence[ContextSpec], steps: int = 4, seed: int = 12345) -> None:
    """Build each context once, check its spaces agree with the first and a few random steps are finite."""
    first: tuple[gym.Space, gym.Space] | None = None
    for spec in specs:
        env = make_env(spec)
        try:
            spaces = (env.observation_space, env.action_space)
            if first is None:
                first = spaces
            elif spaces != first:
                raise EnvConfigError(
                    f"context {spec.name!r} ({spec.env_id}) has spaces {spaces[0]} / {spaces[1]}, but context "
                    f"{specs[0].name!r} has {first[0]} / {first[1]}: all contexts of one vector env must match"
                )
            obs, _ = env.reset(seed=seed if spec.levels is None else spec.levels[0])
            env.action_space.seed(seed)
            for _ in range(steps):
                _require_finite(spec, obs, "observation")
                obs, r, te, tr, _ = env.step(env.action_space.sample())
                _require_finite(spec, np.asarray(r, dtype=np.float64) * spec.reward_scale + spec.reward_offset, "reward")
                if te or tr:
                    obs, _ = env.reset()
        finally:
            env.close()


def _require_finite(spec: ContextSpec, x: Any, what: str) -> None:
    arr = np.asarray(x)
    if arr.dtype.kind == "f" and not np.isfinite(arr).all():
        raise EnvConfigError(f"env {spec.env_id!r} (context {spec.name!r}) returned a non-finite {what} {arr!r} "
                             "in the pre-flight check; training cannot use NaN/inf.")


# ----------------------------------------------------------------------------------------
# CartPole variants: the classic conflicting-values testbed


CARTPOLE_VARIANTS: dict[str, dict[str, Any]] = {
    # name: reward per step and physics. Values differ by up to 8x for the same state.
    "standard": dict(reward_scale=1.0),
    "double-reward": dict(reward_scale=2.0),
    "long-pole-half-reward": dict(reward_scale=0.5, physics=dict(length=0.75)),
    "heavy-4x-reward": dict(reward_scale=4.0, physics=dict(gravity=12.0)),
}


def cartpole_contexts(names: Sequence[str] | None = None, env_id: str = "CartPole-v1") -> list[ContextSpec]:
    """ContextSpecs for the named CartPole variants (default: all of CARTPOLE_VARIANTS)."""
    names = list(CARTPOLE_VARIANTS) if names is None else list(names)
    out = []
    for name in names:
        if name not in CARTPOLE_VARIANTS:
            raise EnvConfigError(f"unknown CartPole variant {name!r}; choose from {sorted(CARTPOLE_VARIANTS)}")
        out.append(ContextSpec(name=name, env_id=env_id, **CARTPOLE_VARIANTS[name]))
    return out
