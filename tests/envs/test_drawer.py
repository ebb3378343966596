"""The drawer task: dynamics, outcome labels, rendering, the scripted demonstrator, gymnasium APIs, records."""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from harnessrl.envs import drawer as D
from harnessrl.envs import drawer_gym
from harnessrl.records import RecordStore


def state_at(gripper, opening=(0.0, 0.0), layout=0, t=0) -> D.DrawerState:
    return D.DrawerState(np.array([gripper], float), np.array([opening], float), np.array([layout]), np.array([t]))


def test_motion_is_clipped_and_scaled() -> None:
    s = D.step_state(state_at([0.5, 0.2]), np.array([[3.0, -0.5]]))
    np.testing.assert_allclose(s.gripper[0], [0.5 + D.MAX_STEP, 0.2 - 0.5 * D.MAX_STEP])
    assert s.t[0] == 1 and (s.opening == 0).all()


def test_pulling_a_held_handle_opens_it_and_pushing_closes() -> None:
    tx, dx, hy = D.LAYOUTS[0]
    s = state_at([tx, hy - 0.02])  # at the target handle
    for _ in range(3):
        s = D.step_state(s, np.array([[0.0, -1.0]]))
    assert s.opening[0, 0] == pytest.approx(3 * D.MAX_STEP)
    assert s.opening[0, 1] == 0
    assert D.outcomes(s)[0] == "success"
    s = D.step_state(s, np.array([[0.0, 1.0]]))
    assert s.opening[0, 0] == pytest.approx(2 * D.MAX_STEP)
    # the same pull away from any handle does nothing
    far = state_at([0.5, 0.3])
    for _ in range(3):
        far = D.step_state(far, np.array([[0.0, -1.0]]))
    assert (far.opening == 0).all() and D.outcomes(far)[0] == "miss"


def test_opening_the_distractor_is_a_wrong_object_failure() -> None:
    tx, dx, hy = D.LAYOUTS[1]  # target on the right, distractor on the left
    s = state_at([dx, hy], layout=1)
    for _ in range(4):
        s = D.step_state(s, np.array([[0.0, -1.0]]))
    assert s.opening[0, 1] >= D.OPEN_THRESHOLD and D.outcomes(s)[0] == "wrong_object"
    both = state_at([0.5, 0.5], opening=(0.2, 0.2))
    assert D.outcomes(both)[0] == "success"  # the target open wins


def test_observation_is_relative_to_the_gripper() -> None:
    s = state_at([0.4, 0.3], opening=(0.1, 0.0), layout=2)
    o = D.observe(s)[0]
    tx, dx, hy = D.LAYOUTS[2]
    np.testing.assert_allclose(o, [0.4, 0.3, tx - 0.4, hy - 0.1 - 0.3, dx - 0.4, hy - 0.3, 0.1, 0.0, 0.0], atol=1e-6)


def test_render_shows_handle_colours_and_the_opening() -> None:
    closed = state_at([0.5, 0.15])
    opened = state_at([0.5, 0.15], opening=(0.25, 0.0))
    a, b = D.render(closed)[0], D.render(opened)[0]
    assert a.shape == (32, 32, 3) and a.dtype == np.uint8
    red = lambda im: int(((im[..., 0] > 180) & (im[..., 1] < 80)).sum())  # noqa: E731
    blue = lambda im: int(((im[..., 2] > 180) & (im[..., 0] < 80)).sum())  # noqa: E731
    assert red(a) > 0 and blue(a) > 0
    assert (a != b).any(axis=-1).sum() > 20  # an open drawer changes many pixels
    # red handle moved down by the opening (rows grow downwards)
    rows_a = np.flatnonzero(((a[..., 0] > 180) & (a[..., 1] < 80)).any(1))
    rows_b = np.flatnonzero(((b[..., 0] > 180) & (b[..., 1] < 80)).any(1))
    assert rows_b.mean() - rows_a.mean() == pytest.approx(0.25 * 32, abs=1.5)


@pytest.mark.parametrize("intent,label", [(0, "success"), (1, "wrong_object"), (2, "miss")])
def test_noise_free_demonstrator_does_what_it_intends(intent: int, label: str) -> None:
    rng = np.random.default_rng(0)
    demo = D.Demonstrator(noise=0.0)
    for chunk in (4, 12):
        batch = D.run_episodes(lambda obs: demo.chunk(obs, np.full(len(obs), intent), chunk, rng), 64, rng, chunk=chunk)
        assert (batch.outcome == label).mean() == 1.0


def test_noisy_demonstrations_mix_the_outcomes() -> None:
    batch, intent = D.demonstrations(600, np.random.default_rng(1))
    freq = {lab: (batch.outcome == lab).mean() for lab in D.OUTCOMES}
    assert 0.3 < freq["success"] < 0.7 and 0.1 < freq["wrong_object"] < 0.3 and 0.15 < freq["miss"] < 0.55
    assert (batch.outcome[intent == 1] != "success").all()
    assert batch.obs.shape == (600, 2, D.OBS_DIM) and batch.chunks.shape == (600, 2, 12, 2)
    assert batch.frames.shape == (600, 32, 32, 3)


def test_run_episodes_rejects_bad_policies() -> None:
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="expected"):
        D.run_episodes(lambda obs: np.zeros((len(obs), 3, 2)), 4, rng, chunk=4)
    with pytest.raises(ValueError, match="must divide"):
        D.run_episodes(lambda obs: np.zeros((len(obs), 5, 2)), 4, rng, chunk=5)
    with pytest.raises(ValueError, match="layouts"):
        D.reset_state(rng, 2, [0, 7])


def test_gymnasium_env_passes_the_checker_and_pays_on_success() -> None:
    env = drawer_gym.DrawerEnv()
    check_env(env, skip_render_check=False)
    obs, info = env.reset(seed=0, options={"layout": 0})
    tx, _, hy = D.LAYOUTS[0]
    total, done = 0.0, False
    while not done:  # a closed-loop reach-and-pull controller
        rel = obs[2:4]
        a = np.array([0.0, -1.0]) if np.linalg.norm(rel) < 0.03 else np.clip(rel / D.MAX_STEP, -1, 1)
        obs, r, term, trunc, info = env.step(a.astype(np.float32))
        total += r
        done = term or trunc
    assert info["outcome"] == "success" and total == 1.0
    assert env.render().shape == (32, 32, 3)


def test_vector_env_autoresets_on_the_next_step() -> None:
    env = drawer_gym.DrawerVectorEnv(num_envs=3)
    obs, info = env.reset(seed=1)
    assert obs.shape == (3, D.OBS_DIM) and env.render().shape == (3, 32, 32, 3)
    for t in range(D.HORIZON):
        obs, r, term, trunc, info = env.step(np.zeros((3, 2), np.float32))
    assert trunc.all() and not term.any() and (r == 0).all()
    obs, r, term, trunc, info = env.step(np.ones((3, 2), np.float32))  # ignored: the envs restart
    assert not trunc.any() and (obs[:, -1] == 0).all()


def test_episodes_round_trip_through_the_store(tmp_path) -> None:
    rng = np.random.default_rng(2)
    batch, _ = D.demonstrations(20, rng)
    r = rng.random(20)
    eps = D.to_episodes(batch, r, policy_id="bc", run_id="run", metadata={"round": 0}, per_episode={"learned_reward": r})
    store = RecordStore(tmp_path / "s")
    store.append(eps)
    back = {e.episode_id: e for e in store.episodes()}
    for e in eps:
        b = back[e.episode_id]
        assert b.context.env_id == "drawer" and b.context.task_id == f"drawer/layout-{b.context.level}"
        assert b.outcome in D.OUTCOMES and b.success == (b.outcome == "success")
        assert b.num_turns == 2 and b.metadata["learned_reward"] == pytest.approx(b.reward)
        assert b.context.harness_id == "state-chunk12"


def test_metaworld_task_names_its_environment_when_missing() -> None:
    """The main environment has mujoco 4, so Meta-World (mujoco 3.3) is not importable here: the
    error says how to get it. (tests_metaworld/ runs the task itself in .venv-metaworld.)"""
    import importlib.util

    from harnessrl.envs import drawer

    if importlib.util.find_spec("metaworld") is not None:  # a user's combined environment
        assert drawer.task("metaworld-drawer").name == "metaworld-drawer"
        return
    with pytest.raises(ImportError, match="make metaworld"):
        drawer.task("metaworld-drawer")
    with pytest.raises(ValueError, match="choose one of drawer, metaworld-drawer"):
        drawer.task("cabinet")
    assert drawer.task("drawer") is drawer.TASK
