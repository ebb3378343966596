"""A small continuous-control drawer task: open the red-handled drawer, not the blue one.

Two drawers hang side by side in a unit square (y up). A point gripper starts below them
and moves by `MAX_STEP * action` per step (action in [-1, 1]^2). A drawer whose handle is
within `GRASP_RADIUS` of the gripper is held: pulling down (negative y) opens it by the
pulled distance, pushing up closes it. Episodes last `HORIZON` steps. The outcome label:

    success       the target (red) drawer is open at least OPEN_THRESHOLD
    wrong_object  the target is not, the distractor (blue) drawer is
    miss          neither

A layout (the context `level`) fixes which side the target is on and the handles' height.
Frames render to small RGB images for a learned visual reward; the drawers look alike
except for the handle colour, so an image model can mistake one open drawer for the other.

Everything is vectorised over a batch of episodes in numpy (`reset_state`, `step_state`,
`observe`, `render`); `envs/drawer_gym.py` exposes it through gymnasium.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from harnessrl.episode import Context, Episode, Turn

HORIZON = 24
MAX_STEP = 0.07
GRASP_RADIUS = 0.08
MAX_OPEN = 0.3
OPEN_THRESHOLD = 0.15
OUTCOMES = ("success", "wrong_object", "miss")
OBS_DIM = 9  # gripper xy, target and distractor handle relative to the gripper, openings (2), time fraction

#: layout -> (target x, distractor x, handle height)
LAYOUTS = np.array([[0.25, 0.75, 0.72], [0.75, 0.25, 0.72], [0.25, 0.75, 0.8], [0.75, 0.25, 0.8]])


@dataclass(frozen=True)
class DrawerState:
    """A batch of B episodes. gripper (B, 2); opening (B, 2) as [target, distractor]; layout, t (B,)."""

    gripper: np.ndarray
    opening: np.ndarray
    layout: np.ndarray
    t: np.ndarray

    @property
    def handles(self) -> np.ndarray:
        """(B, 2, 2): current [target, distractor] handle positions (they move down as drawers open)."""
        lay = LAYOUTS[self.layout]
        x = lay[:, :2]
        y = lay[:, 2:3] - self.opening
        return np.stack([x, y], axis=-1)


def reset_state(rng: np.random.Generator, n: int, layouts: np.ndarray | list[int] | None = None) -> DrawerState:
    """n fresh episodes; layouts drawn uniformly unless given (one per episode)."""
    layout = rng.integers(0, len(LAYOUTS), n) if layouts is None else np.asarray(layouts, dtype=np.int64)
    if layout.shape != (n,) or layout.min(initial=0) < 0 or layout.max(initial=0) >= len(LAYOUTS):
        raise ValueError(f"layouts must be {n} integers in [0, {len(LAYOUTS)})")
    gripper = np.stack([0.5 + rng.uniform(-0.06, 0.06, n), 0.15 + rng.uniform(-0.04, 0.04, n)], axis=1)
    return DrawerState(gripper, np.zeros((n, 2)), layout, np.zeros(n, dtype=np.int64))


def step_state(state: DrawerState, action: np.ndarray) -> DrawerState:
    """One step for every episode; actions (B, 2) are clipped to [-1, 1]."""
    move = MAX_STEP * np.clip(np.asarray(action, dtype=np.float64), -1.0, 1.0)
    handles = state.handles
    dist = np.linalg.norm(handles - state.gripper[:, None, :], axis=-1)  # (B, 2)
    nearest = dist.argmin(1)
    held = dist[np.arange(len(dist)), nearest] < GRASP_RADIUS
    opening = state.opening.copy()
    rows = np.flatnonzero(held)
    opening[rows, nearest[rows]] = np.clip(opening[rows, nearest[rows]] - move[rows, 1], 0.0, MAX_OPEN)
    gripper = np.clip(state.gripper + move, 0.0, 1.0)
    return DrawerState(gripper, opening, state.layout, state.t + 1)


def observe(state: DrawerState) -> np.ndarray:
    """(B, OBS_DIM) float32: [gripper xy, target handle - gripper, distractor handle - gripper, openings, t/T].

    Handle positions are relative to the gripper: the quantity a reaching controller needs.
    """
    h = state.handles - state.gripper[:, None, :]
    return np.concatenate(
        [state.gripper, h[:, 0], h[:, 1], state.opening, (state.t / HORIZON)[:, None]], axis=1
    ).astype(np.float32)


def outcomes(state: DrawerState) -> np.ndarray:
    """(B,) object array of labels from OUTCOMES."""
    target, distractor = state.opening[:, 0] >= OPEN_THRESHOLD, state.opening[:, 1] >= OPEN_THRESHOLD
    return np.where(target, "success", np.where(distractor, "wrong_object", "miss")).astype(object)


# ----------------------------------------------------------------------------------------
# Rendering: drawers look alike except for the handle colour

_BACKGROUND = np.array([225, 225, 215], dtype=np.float32)
_CABINET = np.array([120, 85, 50], dtype=np.float32)
_INTERIOR = np.array([60, 40, 25], dtype=np.float32)
_FRONT = np.array([175, 130, 80], dtype=np.float32)
_HANDLE = np.array([[210, 40, 40], [40, 60, 210]], dtype=np.float32)  # target red, distractor blue
_GRIPPER = np.array([20, 20, 20], dtype=np.float32)


def render(state: DrawerState, size: int = 32) -> np.ndarray:
    """(B, size, size, 3) uint8 images, row 0 at the top."""
    B = len(state.layout)
    c = (np.arange(size) + 0.5) / size
    X = c[None, None, :]
    Y = c[::-1][None, :, None]  # image row 0 is y = 1
    img = np.broadcast_to(_BACKGROUND, (B, size, size, 3)).copy()

    def paint(mask: np.ndarray, colour: np.ndarray) -> None:
        img[mask] = colour

    # The gripper is drawn first so that it never hides a handle's colour.
    g = state.gripper[:, :, None, None]
    paint((X - g[:, 0]) ** 2 + (Y - g[:, 1]) ** 2 <= 0.03**2, _GRIPPER)
    lay = LAYOUTS[state.layout]
    for d in range(2):
        cx = lay[:, d][:, None, None]
        top = lay[:, 2][:, None, None]  # closed handle height
        o = state.opening[:, d][:, None, None]
        inside_x = np.abs(X - cx) <= 0.13
        paint(inside_x & (Y >= top - 0.04) & (Y <= top + 0.16), _CABINET)
        paint((np.abs(X - cx) <= 0.1) & (Y >= top - o) & (Y <= top + 0.02), _INTERIOR)  # the open box
        paint((np.abs(X - cx) <= 0.11) & (Y >= top - o - 0.04) & (Y <= top - o + 0.03), _FRONT)
        paint((np.abs(X - cx) <= 0.05) & (np.abs(Y - (top - o)) <= 0.025), _HANDLE[d])
    return img.astype(np.uint8)


# ----------------------------------------------------------------------------------------
# Scripted, noisy demonstrator (privileged: it knows its intent for the episode)


@dataclass(frozen=True)
class Demonstrator:
    """Reaches a handle, then pulls it down. Intent per episode: the target, the distractor
    (a confused demonstrator, probability p_wrong) or a fumble (aims beside the handle, p_fumble).
    Gaussian action noise `noise`; plans each chunk open-loop on its own kinematics model.
    """

    p_wrong: float = 0.2
    p_fumble: float = 0.3
    noise: float = 0.3
    pull: float = 0.28

    def intents(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """(n,) 0 = target, 1 = distractor, 2 = fumble."""
        return rng.choice(3, size=n, p=[1 - self.p_wrong - self.p_fumble, self.p_wrong, self.p_fumble])

    def chunk(self, obs: np.ndarray, intent: np.ndarray, length: int, rng: np.random.Generator, pull: np.ndarray | None = None) -> np.ndarray:
        """(B, OBS_DIM) -> (B, length, 2) actions; `pull` (B,) overrides how far each episode pulls."""
        g = obs[:, 0:2].astype(np.float64).copy()
        which = np.where(intent == 1, 1, 0)
        handle = g + np.where(which[:, None] == 0, obs[:, 2:4], obs[:, 4:6]).astype(np.float64)
        opened = obs[:, 6:8][np.arange(len(obs)), which].astype(np.float64)
        aim = handle + np.where(intent[:, None] == 2, [[0.14, 0.0]], [[0.0, 0.0]])
        goal_open = self.pull if pull is None else np.asarray(pull, dtype=np.float64)
        out = np.zeros((len(obs), length, 2))
        for j in range(length):
            pulling = np.linalg.norm(aim - g, axis=1) < 0.03
            a = np.clip((aim - g) / MAX_STEP, -1, 1)
            remaining = goal_open - opened
            pull_a = np.stack([np.zeros(len(g)), -np.clip(remaining / MAX_STEP, 0, 1)], axis=1)
            a = np.where(pulling[:, None], pull_a, a)
            moved = MAX_STEP * a
            g = g + moved
            # the handle travels with the gripper while pulling (the model the plan assumes)
            aim = np.where(pulling[:, None], aim + np.stack([np.zeros(len(g)), moved[:, 1]], axis=1), aim)
            opened = np.where(pulling, opened - moved[:, 1], opened)
            out[:, j] = a
        return np.clip(out + rng.normal(0, self.noise, out.shape), -1, 1)


# ----------------------------------------------------------------------------------------
# Running chunked policies on a batch of episodes


@dataclass
class DrawerBatch:
    """What a batch of episodes produced. obs (B, C, obs_dim) at chunk starts; chunks (B, C, L, action_dim);
    opening (B, 2) final [target, distractor] openings."""

    obs: np.ndarray
    chunks: np.ndarray
    layout: np.ndarray
    opening: np.ndarray
    frames: np.ndarray  # (B, size, size, 3) final frames
    outcome: np.ndarray  # (B,) labels

    @property
    def success(self) -> np.ndarray:
        return self.outcome == "success"


ChunkPolicy = Callable[[np.ndarray], np.ndarray]  # (B, OBS_DIM) -> (B, L, 2)


def run_episodes(act: ChunkPolicy, n: int, rng: np.random.Generator, *, chunk: int = 12, layouts: np.ndarray | None = None, image_size: int = 32) -> DrawerBatch:
    """Roll `act` for n episodes of HORIZON steps, executing each chunk open-loop."""
    if HORIZON % chunk:
        raise ValueError(f"chunk={chunk} must divide HORIZON={HORIZON}")
    state = reset_state(rng, n, layouts)
    obs_seq, chunk_seq = [], []
    for _ in range(HORIZON // chunk):
        obs = observe(state)
        actions = np.asarray(act(obs), dtype=np.float64)
        if actions.shape != (n, chunk, 2):
            raise ValueError(f"policy returned actions of shape {actions.shape}; expected {(n, chunk, 2)}")
        for j in range(chunk):
            state = step_state(state, actions[:, j])
        obs_seq.append(obs)
        chunk_seq.append(actions)
    return DrawerBatch(np.stack(obs_seq, 1), np.stack(chunk_seq, 1), state.layout, state.opening, render(state, image_size), outcomes(state))


def demonstrations(n: int, rng: np.random.Generator, demonstrator: Demonstrator | None = None, *, chunk: int = 12,
                   task: DrawerTask | None = None) -> tuple[DrawerBatch, np.ndarray]:
    """n noisy scripted episodes of `task` (default: this one) and their intents.

    The demonstrator gives the intent probabilities and the action noise; its `pull` is in this
    task's units, so other tasks (Meta-World) pull with their own expert's default.
    """
    demo = demonstrator or Demonstrator()
    task = task or TASK
    intent = demo.intents(rng, n)
    pull = np.full(n, demo.pull) if isinstance(task, DrawerTask) else None
    return task.scripted(intent, rng, chunk=chunk, noise=demo.noise, pull=pull), intent


# ----------------------------------------------------------------------------------------
# The task interface the diffusion-policy trainer and the reward-model trainer use


class DrawerTask:
    """A two-drawer task with outcomes OUTCOMES, run in batches of chunked episodes.

    This built-in one and `envs.metaworld_drawer.MetaWorldDrawerTask` (Meta-World's Sawyer
    scene, an optional extra) implement the same attributes and methods; `task(name)` picks one.
    """

    name = "drawer"
    horizon = HORIZON
    obs_dim = OBS_DIM
    action_dim = 2
    open_threshold = OPEN_THRESHOLD
    pull_range = (0.04, MAX_OPEN)  # how far the reward-data collector pulls: both sides of the threshold
    image_size = 32

    def run_episodes(self, act: ChunkPolicy, n: int, rng: np.random.Generator, *, chunk: int = 12, layouts: np.ndarray | None = None) -> DrawerBatch:
        return run_episodes(act, n, rng, chunk=chunk, layouts=layouts, image_size=self.image_size)

    def scripted(self, intent: np.ndarray, rng: np.random.Generator, *, chunk: int, noise: float, pull: np.ndarray | None = None,
                 layouts: np.ndarray | None = None) -> DrawerBatch:
        """The scripted demonstrator per episode: intent 0 = target, 1 = distractor, 2 = fumble; `pull` (B,) how far."""
        demo = Demonstrator(noise=noise)
        return run_episodes(lambda obs: demo.chunk(obs, intent, chunk, rng, pull=pull), len(intent), rng, chunk=chunk,
                            layouts=layouts, image_size=self.image_size)

    def close(self) -> None:
        pass


TASK = DrawerTask()
TASKS = ("drawer", "metaworld-drawer")


def task(name: str) -> DrawerTask:
    """The task called `name`: "drawer" (built in) or "metaworld-drawer" (needs the metaworld extra)."""
    if name == "drawer":
        return TASK
    if name == "metaworld-drawer":
        try:
            from harnessrl.envs import metaworld_drawer
        except ImportError as e:
            raise ImportError(
                f"task=metaworld-drawer needs Meta-World ({e}). It pins mujoco 3.3.0, so it lives in its own "
                "environment: run `make metaworld` (builds .venv-metaworld with `pip install -e .[metaworld]`) "
                "and use .venv-metaworld/bin/harnessrl"
            ) from e
        return metaworld_drawer.MetaWorldDrawerTask()
    raise ValueError(f"task={name!r}: choose one of {', '.join(TASKS)}")


# ----------------------------------------------------------------------------------------
# Records


def to_episodes(
    batch: DrawerBatch,
    reward: np.ndarray,
    *,
    policy_id: str,
    run_id: str,
    harness_id: str = "",
    env_id: str = "drawer",
    metadata: dict[str, Any] | None = None,
    per_episode: dict[str, np.ndarray] | None = None,
) -> list[Episode]:
    """One `Episode` per drawer episode: context (layout as task and level), one turn per chunk.

    reward: (B,) the reward the producing run optimised; per_episode: extra (B,) arrays put in
    each episode's metadata (e.g. the learned reward next to a gated one).
    """
    harness_id = harness_id or f"state-chunk{batch.chunks.shape[2]}"
    out = []
    for i in range(len(batch.outcome)):
        turns = [
            Turn(
                observation=json.dumps(np.round(batch.obs[i, c], 4).tolist()),
                action=json.dumps(np.round(batch.chunks[i, c], 4).tolist()),
                reward=float(reward[i]) if c == batch.obs.shape[1] - 1 else 0.0,
            )
            for c in range(batch.obs.shape[1])
        ]
        meta = dict(metadata or {})
        meta["opening"] = np.round(batch.opening[i], 4).tolist()
        for key, values in (per_episode or {}).items():
            meta[key] = values[i].item() if hasattr(values[i], "item") else values[i]
        layout = int(batch.layout[i])
        out.append(
            Episode(
                context=Context(task_id=f"{env_id}/layout-{layout}", harness_id=harness_id, env_id=env_id, level=layout),
                turns=turns,
                reward=float(reward[i]),
                success=bool(batch.outcome[i] == "success"),
                outcome=str(batch.outcome[i]),
                policy_id=policy_id,
                run_id=run_id,
                metadata=meta,
            )
        )
    return out
