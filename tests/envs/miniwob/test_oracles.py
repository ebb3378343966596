"""Scripted oracles on real pages: every oracle task solved on a few seeds here (the full
20-seed validation is `harnessrl eval --suite miniwob --policy oracle --harness miniwob-html,miniwob-axtree
--seeds 20`), records keep both rewards."""

from __future__ import annotations

import pytest

from harnessrl.envs.miniwob import ORACLES, Click, Page, get_oracle, run_oracle_episode
from harnessrl.records import RecordStore

pytestmark = pytest.mark.browser

SEEDS = (101, 202)  # other seeds than the validation script's 0..19


def test_at_least_fifteen_oracles():
    assert len(ORACLES) >= 15
    with pytest.raises(KeyError, match="no scripted oracle"):
        get_oracle("drag-box")


@pytest.mark.slow
def test_every_oracle_solves_its_task(pool):
    jobs = [(task, seed) for task in sorted(ORACLES) for seed in SEEDS]
    episodes = pool.map(lambda env, seed: run_oracle_episode(env, seed), jobs)
    failed = [(e.context.task_id, e.context.seed, e.outcome) for e in episodes if not e.success]
    assert failed == []
    for e in episodes:
        assert e.raw_reward == 1.0 and 0.0 < e.reward < 1.0  # discounted by the time taken
        assert e.status == "ok" and e.num_turns >= 1 and e.turns[-1].tool_call


def test_a_wrong_policy_fails_and_is_recorded_as_failed(pool, tmp_path):
    def wrong(page: Page):  # clicks the other button
        other = "TWO" if page.field("target") == "ONE" else "ONE"
        return Click(next(e for e in page.elements if e.text == other).ref)

    def give_up(page: Page):
        return None

    with pool.env("click-test-2") as env:
        bad = run_oracle_episode(env, 7, oracle=wrong)
        stuck = run_oracle_episode(env, 7, oracle=give_up)
        good = run_oracle_episode(env, 7)
    assert not bad.success and bad.raw_reward == -1.0 and bad.reward == -1.0 and bad.outcome.startswith("failed")
    assert not stuck.success and stuck.raw_reward is None and stuck.outcome == "oracle_gave_up"
    assert good.success
    store = RecordStore(tmp_path / "store")
    store.append([bad, stuck, good])
    back = {e.episode_id: e for e in store.episodes()}
    assert back[good.episode_id].raw_reward == 1.0 and back[good.episode_id].reward == pytest.approx(good.reward)
    assert back[bad.episode_id].raw_reward == -1.0 and back[stuck.episode_id].raw_reward is None
    assert back[good.episode_id].context.task_id == "miniwob/click-test-2"
