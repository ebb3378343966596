"""Procgen through envpool (optional extra `procgen`), as a multi-context vector env.

The 200 training levels are split into `num_contexts` disjoint groups; context k is one
envpool instance with `envs_per_context` environments playing only levels
start_level + [k L, (k+1) L). Test envs use a disjoint level range (unseen levels).

envpool resets an ended environment on the *next* step (that step ignores the action). To
keep gymnasium's same-step semantics (and a clean final observation for time-limit
bootstrapping), ended environments are reset explicitly right away with `reset(env_ids)`.

envpool objects cannot be pickled: a checkpoint keeps everything but the env state, and a
resumed Procgen run starts fresh episodes (bit-identical resume holds for gymnasium envs).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium.vector.utils import batch_space

from harnessrl.envs.levels import TEST_LEVEL_OFFSET
from harnessrl.envs.multicontext import EnvConfigError

GAMES = ("bigfish", "bossfight", "caveflyer", "chaser", "climber", "coinrun", "dodgeball", "fruitbot",
         "heist", "jumper", "leaper", "maze", "miner", "ninja", "plunder", "starpilot")


def _envpool():
    try:
        import envpool
    except ImportError:
        raise EnvConfigError("Procgen needs envpool: pip install 'harnessrl[procgen]' (and Debian's libqt5gui5)") from None
    return envpool


def task_id(game: str, distribution_mode: str = "easy") -> str:
    if game not in GAMES:
        raise EnvConfigError(f"unknown Procgen game {game!r}; choose from {', '.join(GAMES)}")
    if distribution_mode not in ("easy", "hard"):
        raise EnvConfigError(f"distribution_mode must be easy or hard; got {distribution_mode!r}")
    return f"{game.capitalize()}{distribution_mode.capitalize()}-v0"


class ProcgenContextVectorEnv:
    """num_contexts envpool instances over disjoint level ranges; same interface as MultiContextVectorEnv."""

    metadata: dict[str, Any] = {}

    def __init__(self, game: str, num_contexts: int = 4, envs_per_context: int = 16, num_levels: int = 200,
                 start_level: int = 0, distribution_mode: str = "easy", seed: int = 0, test: bool = False):
        envpool = _envpool()
        tid = task_id(game, distribution_mode)
        if test:  # unseen levels: one context over a range disjoint from every training range
            ranges = [(TEST_LEVEL_OFFSET + start_level, num_levels)]
        else:
            if num_levels < num_contexts:
                raise EnvConfigError(f"{tid}: {num_levels} levels cannot be split into {num_contexts} contexts")
            bounds = np.linspace(0, num_levels, num_contexts + 1).astype(int)
            ranges = [(start_level + int(a), int(b - a)) for a, b in zip(bounds[:-1], bounds[1:])]
        self.game, self.task_id = game, tid
        self.envs = [envpool.make(tid, env_type="gymnasium", num_envs=envs_per_context, seed=seed + 7919 * k,
                                  start_level=lo, num_levels=n) for k, (lo, n) in enumerate(ranges)]
        self.context_names = [f"levels{lo}-{lo + n - 1}" for lo, n in ranges]
        self.num_contexts = len(ranges)
        self.context = np.repeat(np.arange(self.num_contexts, dtype=np.int64), envs_per_context)
        self.num_envs = len(self.context)
        self._per = envs_per_context
        self.single_observation_space = self.envs[0].observation_space
        self.single_action_space = self.envs[0].action_space
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self._obs = np.zeros((self.num_envs, *self.single_observation_space.shape), dtype=np.uint8)
        self._ep_return = np.zeros(self.num_envs)
        self._ep_length = np.zeros(self.num_envs, dtype=np.int64)
        self.level = np.full(self.num_envs, -1, dtype=np.int64)
        self._finished: list[tuple[int, int, int, float, int]] = []

    def _slice(self, k: int) -> slice:
        return slice(k * self._per, (k + 1) * self._per)

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        for k, env in enumerate(self.envs):
            obs, info = env.reset()
            self._obs[self._slice(k)] = obs
            self.level[self._slice(k)] = info["level_seed"]
        self._ep_return[:] = 0.0
        self._ep_length[:] = 0
        self._finished.clear()
        return self._obs.copy(), {}

    def step(self, actions: np.ndarray):
        rewards = np.zeros(self.num_envs)
        term = np.zeros(self.num_envs, dtype=bool)
        trunc = np.zeros(self.num_envs, dtype=bool)
        played = np.zeros(self.num_envs, dtype=np.int64)
        final = None
        for k, env in enumerate(self.envs):
            sl = self._slice(k)
            obs, r, te, tr, info = env.step(np.asarray(actions[sl], dtype=np.int32))
            rewards[sl], term[sl], trunc[sl], played[sl] = r, te, tr, info["level_seed"]
            ended = np.flatnonzero(te | tr)
            if len(ended):
                final = np.zeros_like(self._obs) if final is None else final
                final[k * self._per + ended] = obs[ended]
                reset_obs, reset_info = env.reset(ended)
                obs = obs.copy()
                obs[reset_info["env_id"]] = reset_obs
                self.level[k * self._per + reset_info["env_id"]] = reset_info["level_seed"]
            self._obs[sl] = obs
        if not np.isfinite(rewards).all():
            raise EnvConfigError(f"env {self.task_id!r} returned a non-finite reward")
        self._ep_return += rewards
        self._ep_length += 1
        info_out: dict[str, Any] = {}
        done = term | trunc
        if done.any():
            info_out = {"final_obs": final, "_final_obs": done}
            for i in np.flatnonzero(done):
                self._finished.append((int(i), int(self.context[i]), int(played[i]), float(self._ep_return[i]),
                                       int(self._ep_length[i])))
            self._ep_return[done], self._ep_length[done] = 0.0, 0
        return self._obs.copy(), rewards, term, trunc, info_out

    def pop_episodes(self) -> list[tuple[int, int, int, float, int]]:
        out, self._finished = self._finished, []
        return out

    def get_state(self) -> bytes:
        return b""  # envpool cannot be pickled; see the module docstring

    def set_state(self, blob: bytes) -> None:
        self.reset()

    def close(self) -> None:
        for env in self.envs:
            env.close()
