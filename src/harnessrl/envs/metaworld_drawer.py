"""Meta-World `drawer-open-v3` with a distractor drawer: the tilt paper's task on its simulator.

Optional: Meta-World pins mujoco 3.3.0 while the rest of harnessrl uses mujoco 4, so this
module lives in its own environment (`make metaworld` builds `.venv-metaworld` with
`pip install -e .[metaworld]`). Select it with `harnessrl recipe reward-tilt --set task=metaworld-drawer`.

The scene is Meta-World's Sawyer arm and drawer (`SawyerDrawerOpenEnvV3`, its physics,
action space and reset) with a second, identical drawer next to the first; only the handle
colour tells them apart (target red, distractor blue), as in the built-in `envs.drawer`. A
layout puts the target left or right and both drawers near or far. Outcomes:

    success       the target drawer is open: Meta-World's own success test (handle within
                  3 cm of the goal 20 cm in front of the closed handle)
    wrong_object  the target is not, the distractor is open by the same test
    miss          neither

Policies see a 12-d state: hand xyz, both handles relative to the hand, both openings, t/T.
Actions are Meta-World's 4-d (hand xyz delta, gripper effort) in [-1, 1]. The demonstrator
is Meta-World's scripted `SawyerDrawerOpenV3Policy` aimed at the intended handle (closed
loop, with Gaussian action noise); frames come from an offscreen camera in front of the
drawers (set MUJOCO_GL=egl, or osmesa, on a machine without a display).
"""

from __future__ import annotations

import hashlib
import os
import re
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np

os.environ.setdefault("MUJOCO_GL", "egl")

import metaworld  # noqa: E402,F401  (registers Meta-World's envs; needs mujoco 3.3)
import mujoco  # noqa: E402
from metaworld.envs.sawyer_drawer_open_v3 import SawyerDrawerOpenEnvV3  # noqa: E402
from metaworld.policies import SawyerDrawerOpenV3Policy  # noqa: E402

from harnessrl.envs.drawer import DrawerBatch  # noqa: E402
from harnessrl.fileio import atomic_write_text  # noqa: E402

NAME = "metaworld-drawer"
HORIZON = 96  # the scripted policy opens a drawer in ~60-90 steps
OBS_DIM = 12
ACTION_DIM = 4
OUTCOMES = ("success", "wrong_object", "miss")
SUCCESS_RADIUS = 0.03  # Meta-World's drawer-open success test
MAX_OPEN = 0.16  # the drawer's slide range
#: layout -> (target x, distractor x, drawer y)
LAYOUTS = np.array([[-0.15, 0.15, 0.9], [0.15, -0.15, 0.9], [-0.15, 0.15, 0.85], [0.15, -0.15, 0.85]])
_HANDLE_RGBA = {"target": ".85 .12 .12 1", "distractor": ".12 .2 .85 1"}


# ----------------------------------------------------------------------------------------
# The scene: Meta-World's drawer XML with a renamed, recoloured second drawer


def scene_path(cache: Path | None = None) -> Path:
    """Write (once) and return the two-drawer model file.

    The model sits in a folder next to links to Meta-World's asset folders, so Meta-World's
    relative include and texture paths resolve unchanged. The folder is per installation
    (Meta-World's version and the assets' path): links into a deleted environment once made every
    later installation of the same version fail, so a dangling link is also made again.
    """
    assets = Path(metaworld.__file__).parent / "assets"
    where = hashlib.sha256(str(assets.resolve()).encode()).hexdigest()[:12]
    base = cache or Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "harnessrl"
    root = base / f"metaworld-{metaworld_version()}-{where}"
    model = root / "harnessrl" / "two_drawers.xml"
    entries = list(assets.iterdir())
    if model.exists() and all((root / e.name).exists() for e in entries):
        return model
    model.parent.mkdir(parents=True, exist_ok=True)
    for entry in entries:
        link = root / entry.name
        if link.is_symlink() and not link.exists():  # its target was removed: link it again
            link.unlink(missing_ok=True)
        if not link.exists():
            try:
                link.symlink_to(entry, target_is_directory=entry.is_dir())
            except FileExistsError:  # another process (a parallel test worker) made the same link first
                pass
    drawer = (assets / "objects" / "assets" / "drawer.xml").read_text()
    for role, suffix in (("target", ""), ("distractor", "_d")):
        text = re.sub(r'name="([^"]+)"', lambda m: f'name="{m.group(1)}{suffix}"', drawer)
        text = text.replace('material="drawer_white" mesh="drawerhandle"', f'material="hrl_handle_{role}" mesh="drawerhandle"')
        atomic_write_text(model.parent / f"drawer_{role}.xml", text)  # a parallel worker may be reading it
    base = (assets / "sawyer_xyz" / "sawyer_drawer.xml").read_text()
    base = base.replace('<include file="../objects/assets/drawer.xml"/>', '<include file="drawer_target.xml"/>')
    extra = (
        '<body name="drawer_d" pos="0.3 0.9 0"><include file="drawer_distractor.xml"/></body>\n'
        '        <camera name="hrl_front" pos="0 0.15 0.25" xyaxes="1 0 0 0 0.236 0.972" fovy="45"/>\n'
        '        <site name="goal"'
    )
    base = base.replace('<site name="goal"', extra, 1)
    materials = "".join(f'<material name="hrl_handle_{r}" rgba="{c}" shininess="1" specular=".5"/>' for r, c in _HANDLE_RGBA.items())
    base = base.replace("<worldbody>", f"<asset>{materials}</asset>\n    <worldbody>", 1)
    # atomic, through a temporary name unique to this process: parallel test workers write the same
    # files at once, and a shared ".tmp" name let one worker's rename take the other's file (ci15)
    atomic_write_text(model, base)
    return model


def metaworld_version() -> str:
    from importlib.metadata import version

    return version("metaworld")


class TwoDrawerOpenEnv(SawyerDrawerOpenEnvV3):
    """`SawyerDrawerOpenEnvV3` in the two-drawer scene. Objects: [target handle, distractor handle]."""

    def __init__(self, **kwargs):
        self._model_path = str(scene_path())
        self.layout = 0
        super().__init__(**kwargs)
        self.max_path_length = HORIZON
        self._partially_observable = True
        # Meta-World's task machinery: one fixed task; our layouts replace its random reset
        self._freeze_rand_vec = False
        self._set_task_called = True
        self._last_rand_vec = np.zeros(3)

    @property
    def model_name(self) -> str:
        return self._model_path

    def _get_pos_objects(self) -> np.ndarray:
        offset = np.array([0.0, -0.16, 0.0])
        return np.concatenate([self.get_body_com("drawer_link") + offset, self.get_body_com("drawer_link_d") + offset])

    def _get_quat_objects(self) -> np.ndarray:
        return np.concatenate([self.data.body("drawer_link").xquat, self.data.body("drawer_link_d").xquat])

    def _get_state_rand_vec(self) -> np.ndarray:
        tx, _, y = LAYOUTS[self.layout]
        return np.array([tx, y, 0.0])

    def reset_model(self) -> np.ndarray:
        super().reset_model()  # places the target drawer at _get_state_rand_vec()
        _, dx, y = LAYOUTS[self.layout]
        self.model.body("drawer_d").pos = np.array([dx, y, 0.0])
        self.distractor_goal = np.array([dx, y, 0.0]) + np.array([0.0, -0.16 - self.maxDist, 0.09])
        mujoco.mj_forward(self.model, self.data)
        return self._get_obs()

    def openings(self) -> np.ndarray:
        """(2,) how far [target, distractor] are pulled out, metres."""
        return -np.array([self.data.joint("goal_slidey").qpos[0], self.data.joint("goal_slidey_d").qpos[0]])

    def opened(self) -> np.ndarray:
        """(2,) bool: Meta-World's success test for [target, distractor]."""
        handles = self._get_pos_objects().reshape(2, 3)
        goals = np.stack([self._target_pos, self.distractor_goal])
        return np.linalg.norm(handles - goals, axis=1) <= SUCCESS_RADIUS


def state(env: TwoDrawerOpenEnv, t: int) -> np.ndarray:
    """(OBS_DIM,) float32 policy observation from the env's current state."""
    hand = env.tcp_center
    handles = env._get_pos_objects().reshape(2, 3)
    return np.concatenate([hand, handles[0] - hand, handles[1] - hand, env.openings(), [t / HORIZON]]).astype(np.float32)


# ----------------------------------------------------------------------------------------
# Batches of episodes: a pool of envs stepped in lockstep, one renderer for the final frames


class MetaWorldDrawerTask:
    """The task interface `train.diffusion_rl` and `train.drawer_reward` use (see `drawer.DrawerTask`)."""

    name = NAME
    horizon = HORIZON
    obs_dim = OBS_DIM
    action_dim = ACTION_DIM
    open_threshold = MAX_OPEN * 0.9  # pulls that reliably pass the success test
    pull_range = (0.02, MAX_OPEN)

    def __init__(self, pool: int = 64, image_size: int = 32):
        self.pool_size, self.image_size = pool, image_size
        self._envs: list[TwoDrawerOpenEnv] = []
        self._renderer: mujoco.Renderer | None = None

    def _pool(self, n: int) -> list[TwoDrawerOpenEnv]:
        while len(self._envs) < min(n, self.pool_size):
            self._envs.append(TwoDrawerOpenEnv())
        return self._envs[:n]

    def close(self) -> None:
        if self._renderer is not None:
            self._renderer.close()
            self._renderer = None
        for env in self._envs:
            env.close()
        self._envs = []

    def render(self, env: TwoDrawerOpenEnv) -> np.ndarray:
        """(image_size, image_size, 3) uint8 from the front camera."""
        if self._renderer is None:
            try:
                self._renderer = mujoco.Renderer(env.model, self.image_size, self.image_size)
            except mujoco.FatalError as e:
                raise RuntimeError(f"MuJoCo cannot render offscreen ({e}): set MUJOCO_GL=egl (or osmesa) before "
                                   "anything imports mujoco; on Debian/Ubuntu install libegl1 and libgl1-mesa-dri") from e
            self._scene_option = mujoco.MjvOption()
            self._scene_option.sitegroup[:] = 0  # the goal marker would tell the target apart
        self._renderer.update_scene(env.data, camera="hrl_front", scene_option=self._scene_option)
        # shadows and reflections cost most of a software-rendered frame and carry no task information
        self._renderer.scene.flags[mujoco.mjtRndFlag.mjRND_SHADOW] = 0
        self._renderer.scene.flags[mujoco.mjtRndFlag.mjRND_REFLECTION] = 0
        return self._renderer.render().copy()

    def run_episodes(self, act: Callable[[np.ndarray], np.ndarray], n: int, rng: np.random.Generator, *, chunk: int = 12,
                     layouts: np.ndarray | None = None, step_fn: Callable | None = None) -> DrawerBatch:
        """Roll `act` ((B, OBS_DIM) -> (B, chunk, 4)) for n episodes, each chunk open-loop.

        `step_fn(episode, env, t) -> action` lets a closed-loop demonstrator replace the planned
        action at every step; the executed actions are what the batch records.
        """
        if HORIZON % chunk:
            raise ValueError(f"chunk={chunk} must divide HORIZON={HORIZON}")
        layout = rng.integers(0, len(LAYOUTS), n) if layouts is None else np.asarray(layouts, dtype=np.int64)
        obs_all = np.zeros((n, HORIZON // chunk, OBS_DIM), np.float32)
        chunks_all = np.zeros((n, HORIZON // chunk, chunk, ACTION_DIM))
        opening, opened = np.zeros((n, 2)), np.zeros((n, 2), bool)
        frames = np.zeros((n, self.image_size, self.image_size, 3), np.uint8)
        for start in range(0, n, self.pool_size):
            idx = np.arange(start, min(n, start + self.pool_size))
            envs = self._pool(len(idx))
            for env, i in zip(envs, idx):
                env.layout = int(layout[i])
                env.reset()
            for c in range(HORIZON // chunk):
                obs = np.stack([state(env, c * chunk) for env in envs])
                planned = np.asarray(act(obs), dtype=np.float64)
                if planned.shape != (len(idx), chunk, ACTION_DIM):
                    raise ValueError(f"policy returned actions of shape {planned.shape}; expected {(len(idx), chunk, ACTION_DIM)}")
                for j in range(chunk):
                    for b, env in enumerate(envs):
                        a = planned[b, j] if step_fn is None else step_fn(idx[b], env, c * chunk + j)
                        a = np.clip(a, -1.0, 1.0)
                        chunks_all[idx[b], c, j] = a
                        env.step(a.astype(np.float32))
                obs_all[idx, c] = obs
            for env, i in zip(envs, idx):
                opening[i], opened[i] = env.openings(), env.opened()
                frames[i] = self.render(env)
        outcome = np.where(opened[:, 0], "success", np.where(opened[:, 1], "wrong_object", "miss")).astype(object)
        return DrawerBatch(obs_all, chunks_all, layout, opening, frames, outcome)

    def scripted(self, intent: np.ndarray, rng: np.random.Generator, *, chunk: int, noise: float,
                 pull: np.ndarray | None = None, layouts: np.ndarray | None = None) -> DrawerBatch:
        """Meta-World's scripted policy per episode: intent 0 = target, 1 = distractor, 2 = fumble
        (aims 9 cm beside the target handle); stops pulling once the drawer is out `pull` metres."""
        expert = SawyerDrawerOpenV3Policy()
        n = len(intent)

        def step(i: int, env: TwoDrawerOpenEnv, t: int) -> np.ndarray:
            handles = env._get_pos_objects().reshape(2, 3)
            aim = handles[1] if intent[i] == 1 else handles[0] + (np.array([0.09, 0.0, 0.0]) if intent[i] == 2 else 0.0)
            which = int(intent[i] == 1)
            if pull is not None and env.openings()[which] >= pull[i]:
                a = np.array([0.0, 0.0, 0.0, -1.0])  # hold still: the drawer is out far enough
            else:
                obs = np.concatenate([env.tcp_center, [0.0], aim, np.zeros(32)])
                with warnings.catch_warnings():  # "Constant(s) may be too high": its gains saturate by design
                    warnings.simplefilter("ignore", UserWarning)
                    a = np.clip(expert.get_action(obs), -1, 1)
            a[:3] += rng.normal(0.0, noise, 3)
            return a

        return self.run_episodes(lambda obs: np.zeros((len(obs), chunk, ACTION_DIM)), n, rng, chunk=chunk, layouts=layouts, step_fn=step)

