"""Meta-World drawer-open-v3 with a distractor drawer: scene, outcomes, frames, records."""

import numpy as np
import pytest

from harnessrl.envs import drawer, metaworld_drawer as mw
from harnessrl.records import RecordStore


def test_it_is_metaworld_on_mujoco_3_3(task):
    import metaworld
    import mujoco

    assert mujoco.__version__.startswith("3.3.")
    assert mw.metaworld_version().startswith("3.1.")
    env = task._pool(1)[0]
    assert isinstance(env, metaworld.envs.sawyer_drawer_open_v3.SawyerDrawerOpenEnvV3)
    assert env.action_space.shape == (4,)
    names = {env.model.body(i).name for i in range(env.model.nbody)}
    assert {"drawer", "drawer_link", "drawer_d", "drawer_link_d"} <= names


@pytest.mark.parametrize("layout", range(len(mw.LAYOUTS)))
def test_scripted_expert_opens_the_drawer_it_aims_at(task, layout):
    rng = np.random.default_rng(layout)
    out = task.scripted(np.array([0, 1, 2]), rng, chunk=12, noise=0.0, layouts=np.full(3, layout))
    assert (out.layout == layout).all()
    assert list(out.outcome) == ["success", "wrong_object", "miss"], (out.outcome, out.opening)
    assert out.opening[0, 0] > 0.15 and abs(out.opening[0, 1]) < 0.01
    assert out.opening[1, 1] > 0.15 and abs(out.opening[1, 0]) < 0.01


def test_target_outcome_is_metaworlds_own_success_test(task):
    env = task._pool(1)[0]
    expert = mw.SawyerDrawerOpenV3Policy()
    for layout in range(len(mw.LAYOUTS)):
        env.layout = layout
        obs, _ = env.reset()
        agree = 0
        for t in range(mw.HORIZON):
            obs, _, _, _, info = env.step(np.clip(expert.get_action(obs), -1, 1).astype(np.float32))
            agree += bool(info["success"]) == bool(env.opened()[0])
        assert agree == mw.HORIZON  # every step, not only the last
        assert info["success"] and not env.opened()[1]


def test_layouts_place_the_target_left_or_right(task):
    env = task._pool(1)[0]
    for layout, (tx, dx, y) in enumerate(mw.LAYOUTS):
        env.layout = layout
        env.reset()
        handles = env._get_pos_objects().reshape(2, 3)
        assert handles[0, 0] == pytest.approx(tx, abs=1e-6) and handles[1, 0] == pytest.approx(dx, abs=1e-6)
        obs = mw.state(env, 0)
        assert obs.shape == (mw.OBS_DIM,) and np.allclose(obs[3:6], handles[0] - env.tcp_center, atol=1e-5)


def test_frames_show_which_drawer_is_open_and_no_goal_marker(task):
    rng = np.random.default_rng(0)
    out = task.scripted(np.array([0, 1, 2, 0, 1, 2]), rng, chunk=12, noise=0.0)
    f = out.frames.astype(float)
    assert f.shape == (6, 32, 32, 3) and out.frames.dtype == np.uint8
    red = (f[..., 0] > 150) & (f[..., 1] < 80) & (f[..., 2] < 80)
    blue = (f[..., 2] > 150) & (f[..., 0] < 80) & (f[..., 1] < 100)
    assert red.any(axis=(1, 2)).all() and blue.any(axis=(1, 2)).all()  # both handles in view
    # the goal site is bright green in Meta-World's default rendering; it must not show here
    green = (f[..., 1] > 180) & (f[..., 0] < 60) & (f[..., 2] < 60)
    assert not green.any()
    # an open drawer changes the picture: success and wrong-object frames differ from a miss
    for i in (0, 1):
        assert np.abs(f[i] - f[2]).mean() > 3


def test_policy_chunks_are_executed_and_recorded(task):
    rng = np.random.default_rng(1)
    calls = []

    def act(obs):
        calls.append(obs.copy())
        return np.tile(np.array([0.0, 1.0, 0.0, -1.0]), (len(obs), 8, 1))

    out = task.run_episodes(act, 5, rng, chunk=8)
    assert out.obs.shape == (5, mw.HORIZON // 8, mw.OBS_DIM) and out.chunks.shape == (5, mw.HORIZON // 8, 8, 4)
    assert len(calls) == mw.HORIZON // 8
    assert np.allclose(out.chunks[..., 1], 1.0)
    hand_y = out.obs[:, :, 1]
    assert (np.diff(hand_y, axis=1) >= -1e-4).all() and (hand_y[:, -1] > hand_y[:, 0] + 0.05).all()  # moving +y
    assert set(out.outcome) <= set(mw.OUTCOMES)
    with pytest.raises(ValueError, match="expected"):
        task.run_episodes(lambda obs: np.zeros((len(obs), 8, 2)), 2, rng, chunk=8)
    with pytest.raises(ValueError, match="must divide"):
        task.run_episodes(act, 2, rng, chunk=7)


def test_episodes_go_to_the_record_store(task, tmp_path):
    rng = np.random.default_rng(2)
    out = task.scripted(np.array([0, 1]), rng, chunk=12, noise=0.0)
    store = RecordStore(tmp_path / "store")
    store.append(drawer.to_episodes(out, np.array([1.0, 0.5]), policy_id="scripted", run_id="t", env_id=mw.NAME))
    eps = store.episodes()
    assert [e.outcome for e in eps] == ["success", "wrong_object"]
    assert all(e.context.env_id == "metaworld-drawer" and e.context.task_id.startswith("metaworld-drawer/layout-") for e in eps)
    assert len(eps[0].turns) == mw.HORIZON // 12


def test_the_scene_cache_survives_a_deleted_installation(tmp_path):
    """Links into a removed environment (a deleted venv of the same Meta-World version) once broke
    every later run; the cache is per installation and a dangling link is made again."""
    model = mw.scene_path(cache=tmp_path)
    root = model.parent.parent
    scene = root / "scene"
    assert scene.is_symlink() and scene.exists()
    scene.unlink()
    scene.symlink_to(tmp_path / "deleted-venv" / "scene", target_is_directory=True)  # dangling
    assert not scene.exists()
    again = mw.scene_path(cache=tmp_path)
    assert again == model and scene.exists() and (scene / "basic_scene.xml").exists()
    import mujoco

    assert mujoco.MjModel.from_xml_path(str(again)).nbody > 0  # the model's includes resolve


def _write_scene(args):
    cache, barrier = args
    barrier.wait()  # every process writes the same files at the same moment
    import mujoco

    path = mw.scene_path(cache=cache)
    return mujoco.MjModel.from_xml_path(str(path)).nbody


def test_parallel_workers_write_the_scene_cache_at_once(tmp_path):
    """pytest -n 2 workers wrote the scene into one fresh cache together: with a shared `.tmp` name
    one worker's rename took the other's file (FileNotFoundError, ci15), and a drawer file rewritten
    in place was read empty by the other ("XML Error: Empty file 'drawer_target.xml'"). Each round:
    6 processes, released together, into a new cache; every one must get a model MuJoCo loads."""
    import multiprocessing as mp

    ctx = mp.get_context("spawn")
    with ctx.Manager() as manager, ctx.Pool(6) as pool:
        for r in range(4):
            barrier = manager.Barrier(6)
            bodies = pool.map(_write_scene, [(tmp_path / f"round{r}", barrier)] * 6)
            assert len(set(bodies)) == 1 and bodies[0] > 0
