"""Rows and episodes on TRL's side: slot assignment (within / cross across processes) and the
episode -> (prompt, completion, env_mask, log-probs) split."""

from __future__ import annotations

import json

import numpy as np

from harnessrl.engines.trl_rollout import assign, dataset_rows, episode_to_row
from harnessrl.episode import Context, Episode, Turn


def test_rows_and_slots():
    assert [json.loads(r["prompt"]) for r in dataset_rows(["t1", "t2"], ["a", "b"], "within")] == [
        {"task": "t1", "harness": "a"}, {"task": "t1", "harness": "b"}, {"task": "t2", "harness": "a"},
        {"task": "t2", "harness": "b"}]
    rows = [r["prompt"] for r in dataset_rows(["t1", "t2"], ["a", "b", "c"], "cross")]
    # TRL's sampler: each row num_generations (6) times in a row; process 1 of 2 holds global slots 6..11
    batch = [rows[1]] * 6 + [rows[0]] * 6
    mine = assign(batch[6:], offset=6, num_generations=6, harness_ids=["a", "b", "c"])
    assert [(s.task_id, s.harness_id, s.index, s.member) for s in mine] == [
        ("t1", h, 6 + k, k) for k, h in enumerate("abcabc")]
    within = assign([dataset_rows(["t1"], ["a", "b"], "within")[1]["prompt"]] * 2, 2, 2, ["a", "b"])
    assert {s.harness_id for s in within} == {"b"}


def turn(prompt, gen, lp=0.5):
    ids = np.array(prompt + gen, np.int32)
    return Turn(token_ids=ids, logprobs=np.array([0.0] * len(prompt) + [-lp] * len(gen), np.float32),
                loss_mask=np.array([0] * len(prompt) + [1] * len(gen), np.int8))


def test_episode_to_row_masks_observations_between_turns():
    ep = Episode(Context("t", "h"), turns=[turn([1, 2, 3], [4, 5]), turn([6, 7], [8])])
    row = episode_to_row(ep, filler_id=0)
    assert row.prompt_ids == [1, 2, 3] and row.completion_ids == [4, 5, 6, 7, 8]
    assert row.env_mask == [1, 1, 0, 0, 1] and np.allclose(row.logprobs, [-0.5, -0.5, 0, 0, -0.5])
    assert row.rows_dropped == 0


def test_rewritten_history_trains_its_last_row_and_counts_the_rest():
    ep = Episode(Context("t", "h"), turns=[turn([1, 2], [3]), turn([9], [4])], metadata={"context_resets": [[1, 2]]})
    row = episode_to_row(ep, filler_id=0)
    assert row.prompt_ids == [1, 2, 9] and row.completion_ids == [4] and row.rows_dropped == 1


def test_an_episode_without_generated_tokens_keeps_its_slot_untrained():
    crashed = Episode(Context("t", "h"), status="crash")
    row = episode_to_row(crashed, filler_id=7)
    assert (row.prompt_ids, row.completion_ids, row.env_mask) == ([7], [7], [0])
    stopped = Episode(Context("t", "h"), turns=[Turn(token_ids=np.array([1, 2], np.int32),
                                                     logprobs=np.zeros(2, np.float32), loss_mask=np.zeros(2, np.int8))])
    assert episode_to_row(stopped, 7).prompt_ids == [1, 2] and episode_to_row(stopped, 7).env_mask == [0]


def test_a_first_prompt_longer_than_the_window_fails_before_training(tmp_path):
    import pytest

    from harnessrl.config import ConfigError
    from harnessrl.engines.trl import TRLEngine
    from harnessrl.engines.trl_config import TRLRunConfig
    from harnessrl.policies.lm import LMConfig
    from tests import tiny_lm
    from tests.train import toy

    model = tiny_lm.build(tmp_path)
    cfg = TRLRunConfig(policy=LMConfig(model=str(model), max_new_tokens=500), run_dir=str(tmp_path / "run"),
                       harnesses=["toy-a"], group_size=2, tasks_per_update=1)
    with pytest.raises(ConfigError, match="harness 'toy-a': its first prompt takes .* max_new_tokens=500"):
        TRLEngine(cfg, tasks=toy.tasks(), harnesses=[toy.harness("toy-a")], open_env=toy.open_env)


def test_a_sealed_harness_is_refused_before_any_model_loads(tmp_path):
    import pytest

    from harnessrl.engines.trl import TRLEngine
    from harnessrl.engines.trl_config import TRLRunConfig
    from harnessrl.evaluate.seal import SealedError, create_seal
    from harnessrl.policies.lm import LMConfig
    from tests.train import toy

    hs = [toy.harness("toy-a"), toy.harness("toy-b")]
    create_seal("held-out", harnesses=[hs[1]], directory=tmp_path / "seals")
    cfg = TRLRunConfig(policy=LMConfig(model=str(tmp_path / "no-model-needed")), run_dir=str(tmp_path / "run"),
                       harnesses=["toy-a", "toy-b"], group_size=2, tasks_per_update=1, seals_dir=str(tmp_path / "seals"))
    with pytest.raises(SealedError, match="toy-b"):
        TRLEngine(cfg, tasks=toy.tasks(), harnesses=hs, open_env=toy.open_env)
