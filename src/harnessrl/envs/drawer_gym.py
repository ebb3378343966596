"""The drawer task (`envs/drawer.py`) as gymnasium environments: one episode, or a natively vectorised batch."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from harnessrl.envs.drawer import HORIZON, OBS_DIM, DrawerState, observe, outcomes, render, reset_state, step_state


class DrawerEnv(gym.Env):
    """Single-episode gymnasium env. Reward: 1 at the last step if the target drawer is open."""

    metadata = {"render_modes": ["rgb_array"], "render_fps": 10}

    def __init__(self, render_mode: str | None = "rgb_array", image_size: int = 32, layout: int | None = None):
        self.render_mode, self.image_size, self.fixed_layout = render_mode, image_size, layout
        self.observation_space = spaces.Box(-0.5, 1.5, shape=(OBS_DIM,), dtype=np.float32)
        self.action_space = spaces.Box(-1.0, 1.0, shape=(2,), dtype=np.float32)
        self.state: DrawerState | None = None

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        layout = (options or {}).get("layout", self.fixed_layout)
        self.state = reset_state(self.np_random, 1, None if layout is None else [layout])
        return observe(self.state)[0], {"layout": int(self.state.layout[0])}

    def step(self, action):
        assert self.state is not None, "call reset() first"
        self.state = step_state(self.state, np.asarray(action)[None])
        done = bool(self.state.t[0] >= HORIZON)
        label = outcomes(self.state)[0]
        reward = float(done and label == "success")
        info = {"outcome": label, "opening": self.state.opening[0].copy()}
        return observe(self.state)[0], reward, False, done, info

    def render(self):
        return None if self.state is None else render(self.state, self.image_size)[0]


class DrawerVectorEnv(VectorEnv):
    """Natively vectorised drawer envs (next-step autoreset, like gymnasium's CartPoleVectorEnv)."""

    metadata = {"render_modes": ["rgb_array"], "render_fps": 10, "autoreset_mode": AutoresetMode.NEXT_STEP}

    def __init__(self, num_envs: int = 8, render_mode: str | None = "rgb_array", image_size: int = 32):
        self.num_envs, self.render_mode, self.image_size = num_envs, render_mode, image_size
        self.single_observation_space = spaces.Box(-0.5, 1.5, shape=(OBS_DIM,), dtype=np.float32)
        self.single_action_space = spaces.Box(-1.0, 1.0, shape=(2,), dtype=np.float32)
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)
        self.state: DrawerState | None = None
        self.prev_done = np.zeros(num_envs, dtype=bool)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        if seed is not None:
            self._np_random, self._np_random_seed = gym.utils.seeding.np_random(seed)
        self.state = reset_state(self.np_random, self.num_envs, (options or {}).get("layouts"))
        self.prev_done[:] = False
        return observe(self.state), {"layout": self.state.layout.copy()}

    def step(self, actions):
        assert self.state is not None, "call reset() first"
        state = step_state(self.state, actions)
        m = self.prev_done
        if m.any():  # next-step autoreset: finished envs restart and ignore this action
            fresh = reset_state(self.np_random, int(m.sum()))
            gripper, opening, layout, t = state.gripper.copy(), state.opening.copy(), state.layout.copy(), state.t.copy()
            gripper[m], opening[m], layout[m], t[m] = fresh.gripper, 0.0, fresh.layout, 0
            state = DrawerState(gripper, opening, layout, t)
        self.state = state
        labels = outcomes(state)
        truncated = (state.t >= HORIZON) & ~self.prev_done
        reward = (truncated & (labels == "success")).astype(np.float64)
        terminated = np.zeros(self.num_envs, dtype=bool)
        self.prev_done = truncated
        return observe(state), reward, terminated, truncated, {"outcome": labels, "opening": state.opening.copy()}

    def render(self):
        return None if self.state is None else render(self.state, self.image_size)
