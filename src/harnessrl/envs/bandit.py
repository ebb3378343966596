"""A k-armed bandit whose arm means shift by context: the conditioned-critic paper's bandit model.

Every context shows the agent the same observation; context c pays arm a a reward drawn from
N(offset_c + arm_means[a], noise^2). The best arm is the same everywhere, so one policy
serves all contexts, but the value of the (single) state differs by offset_c: a shared
critic can only learn the average and hands each context an advantage biased by
offset_c - mean(offset). Episodes are one step long.
"""

from __future__ import annotations

from collections.abc import Sequence

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from harnessrl.envs.multicontext import ContextSpec

BANDIT_ID = "harnessrl/ContextBandit-v0"


class ContextualBandit(gym.Env):
    """One context of the bandit: a constant observation, k arms, Gaussian rewards."""

    metadata = {"render_modes": []}

    def __init__(self, arm_means: Sequence[float] = (0.0, 1.0), offset: float = 0.0, noise: float = 1.0, obs_dim: int = 4):
        self.arm_means = np.asarray(arm_means, dtype=np.float64)
        if self.arm_means.ndim != 1 or len(self.arm_means) < 2:
            raise ValueError(f"arm_means needs at least 2 arms; got {arm_means!r}")
        if noise < 0:
            raise ValueError(f"noise must be >= 0; got {noise}")
        self.offset, self.noise = float(offset), float(noise)
        self.observation_space = spaces.Box(-1.0, 1.0, (obs_dim,), np.float32)
        self.action_space = spaces.Discrete(len(self.arm_means))
        self._obs = np.full(obs_dim, 0.5, dtype=np.float32)  # identical in every context

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        return self._obs.copy(), {}

    def step(self, action):
        a = int(action)
        reward = self.offset + self.arm_means[a] + self.noise * self.np_random.standard_normal()
        return self._obs.copy(), float(reward), True, False, {}

    def expected_value(self, policy_probs: Sequence[float]) -> float:
        """The state's true value under a policy: offset + sum_a pi(a) mean_a."""
        return self.offset + float(np.dot(policy_probs, self.arm_means))


if BANDIT_ID not in gym.registry:
    gym.register(BANDIT_ID, entry_point=ContextualBandit)


def bandit_contexts(offsets: Sequence[float] = (0.0, 2.0, 5.0, 10.0), arm_means: Sequence[float] = (0.0, 1.0),
                    noise: float = 1.0) -> list[ContextSpec]:
    """One ContextSpec per offset: same observation and best arm, conflicting state values."""
    return [
        ContextSpec(name=f"offset{off:g}", env_id=BANDIT_ID,
                    make_kwargs=dict(arm_means=tuple(arm_means), offset=float(off), noise=noise))
        for off in offsets
    ]
