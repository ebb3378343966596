"""Level-based generalisation and the other context families: MiniGrid, MuJoCo, BipedalWalker.

A *level* is a seed that fixes an episode's layout (MiniGrid generates the grid, the agent's
start and the objects from the reset seed). Training levels and test levels are disjoint by
construction: train levels are 0 .. n-1, test levels start at `TEST_LEVEL_OFFSET`. Training
levels are partitioned across contexts, so context k's sub-environments only ever play
level group k — its index tells the critic which layouts it is on. Procgen through envpool
lives in `envs.procgen` (an optional extra).

MuJoCo (HalfCheetah, Hopper) and BipedalWalker are optional extras (gymnasium[mujoco],
gymnasium[box2d]); their contexts differ in reward weights, which changes every state's value.
"""

from __future__ import annotations

from collections.abc import Sequence

import gymnasium as gym
import numpy as np

from harnessrl.envs.multicontext import WRAPPERS, ContextSpec, EnvConfigError

TEST_LEVEL_OFFSET = 1_000_000
DEFAULT_MINIGRID = "MiniGrid-DoorKey-5x5-v0"


class MiniGridFlat(gym.ObservationWrapper):
    """MiniGrid's dict observation -> float32 vector: the 7x7x3 egocentric view scaled to [0, 1]
    per channel (object, colour, state) and a one-hot facing direction. (151,)"""

    SCALE = np.array([10.0, 5.0, 2.0], dtype=np.float32)  # max object index, colour index, door state

    def __init__(self, env: gym.Env):
        super().__init__(env)
        image = env.observation_space["image"]
        self._size = int(np.prod(image.shape))
        self.observation_space = gym.spaces.Box(0.0, 1.0, (self._size + 4,), np.float32)

    def observation(self, obs):
        out = np.empty(self._size + 4, dtype=np.float32)
        out[: self._size] = (obs["image"].astype(np.float32) / self.SCALE).ravel()
        out[self._size:] = 0.0
        out[self._size + int(obs["direction"])] = 1.0
        return out


WRAPPERS["minigrid_flat"] = MiniGridFlat


def _require_minigrid() -> None:
    try:
        import minigrid  # noqa: F401  (registers the MiniGrid-* ids)
    except ImportError:
        raise EnvConfigError("MiniGrid is not installed: pip install 'harnessrl[minigrid]'") from None


def level_split(num_train: int, num_test: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Disjoint level seeds: train 0..num_train-1, test TEST_LEVEL_OFFSET.. (+num_test)."""
    if num_train < 1 or num_test < 0:
        raise EnvConfigError(f"need num_train >= 1 and num_test >= 0; got {num_train}, {num_test}")
    return tuple(range(num_train)), tuple(range(TEST_LEVEL_OFFSET, TEST_LEVEL_OFFSET + num_test))


def partition(levels: Sequence[int], num_contexts: int) -> list[tuple[int, ...]]:
    """Split levels into num_contexts contiguous, disjoint, near-equal groups."""
    if num_contexts < 1 or num_contexts > len(levels):
        raise EnvConfigError(f"cannot split {len(levels)} levels into {num_contexts} contexts (need 1 <= contexts <= levels)")
    return [tuple(int(x) for x in part) for part in np.array_split(np.asarray(levels), num_contexts)]


def minigrid_contexts(env_id: str = DEFAULT_MINIGRID, num_contexts: int = 4, num_train_levels: int = 32) -> list[ContextSpec]:
    """num_contexts ContextSpecs, context k playing the k-th group of the training levels."""
    _require_minigrid()
    train, _ = level_split(num_train_levels, 0)
    return [ContextSpec(name=f"levels{part[0]}-{part[-1]}", env_id=env_id, levels=part, wrappers=("minigrid_flat",))
            for part in partition(train, num_contexts)]


def minigrid_test_context(env_id: str = DEFAULT_MINIGRID, num_test_levels: int = 50) -> ContextSpec:
    """One ContextSpec over unseen test levels (for evaluation only)."""
    _require_minigrid()
    _, test = level_split(1, num_test_levels)
    return ContextSpec(name="test-levels", env_id=env_id, levels=test, wrappers=("minigrid_flat",))


# ----------------------------------------------------------------------------------------
# Continuous control (optional extras)

MUJOCO_WEIGHTS = (0.5, 1.0, 2.0, 4.0)


def mujoco_contexts(env_id: str = "HalfCheetah-v5", forward_weights: Sequence[float] = MUJOCO_WEIGHTS) -> list[ContextSpec]:
    """HalfCheetah/Hopper variants that weigh forward progress differently (same dynamics)."""
    try:
        import mujoco  # noqa: F401
    except ImportError:
        raise EnvConfigError("MuJoCo is not installed: pip install 'harnessrl[mujoco]'") from None
    return [ContextSpec(name=f"forward{w:g}", env_id=env_id, make_kwargs=dict(forward_reward_weight=float(w)))
            for w in forward_weights]


def bipedal_contexts(env_id: str = "BipedalWalker-v3", reward_scales: Sequence[float] = MUJOCO_WEIGHTS) -> list[ContextSpec]:
    """BipedalWalker variants with scaled rewards (same dynamics, values differ by the scale)."""
    try:
        import Box2D  # noqa: F401
    except ImportError:
        raise EnvConfigError("Box2D is not installed: pip install 'harnessrl[box2d]'") from None
    return [ContextSpec(name=f"scale{s:g}", env_id=env_id, reward_scale=float(s)) for s in reward_scales]
