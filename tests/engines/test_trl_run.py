"""The TRL engine end to end on the tiny model: a 3-update LoRA run writes its episodes to the record
store (native schema, engine named), and a run stopped after 2 updates and resumed from TRL's
checkpoint continues exactly as the uninterrupted run (same episodes in update 3)."""

from __future__ import annotations

import numpy as np
import pytest

from harnessrl.config import ConfigError
from harnessrl.engines.trl import TRLEngine
from harnessrl.engines.trl_config import TRLRunConfig
from harnessrl.policies.lm import LMConfig
from harnessrl.records import RecordStore
from tests import tiny_lm
from tests.train import toy

HARNESSES = ["toy-a", "toy-b"]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return tiny_lm.build(tmp_path_factory.mktemp("trl-run"))


def engine(model_dir, run_dir, updates, **kw) -> TRLEngine:
    cfg = TRLRunConfig(policy=LMConfig(model=str(model_dir), max_new_tokens=8, lora_rank=4), run_dir=str(run_dir),
                       harnesses=HARNESSES, group_size=2, tasks_per_update=2, updates=updates, grouping="cross",
                       lr=1e-2, trl={"gradient_checkpointing": False}, **kw)
    return TRLEngine(cfg, tasks=toy.tasks(), harnesses=[toy.harness(h, prompt=f"You are {h}.") for h in HARNESSES],
                     open_env=toy.open_env)


def by_update(store: RecordStore, update: int):
    eps = [e for e in store.episodes() if e.metadata["update"] == update]
    return sorted(eps, key=lambda e: e.episode_id)


def test_three_updates_then_resume_continues_the_run(model_dir, tmp_path):
    # uninterrupted: 3 updates
    full = engine(model_dir, tmp_path / "full", 3)
    rows = full.run()
    assert [r["update"] for r in rows] == [1, 2, 3]
    store = RecordStore(tmp_path / "full" / "store")
    eps = store.episodes()
    assert len(eps) == 3 * 2 * 2 * 2  # updates x tasks x harnesses x group_size
    assert len({e.episode_id for e in eps}) == len(eps)
    assert {e.metadata["engine"] for e in eps} == {"trl"} and {e.metadata["update"] for e in eps} == {0, 1, 2}
    assert all(e.turns and e.turns[0].loss_mask.sum() > 0 and e.run_id == "full" for e in eps)
    # cross: every TRL group holds each harness group_size times
    for g in {(e.metadata["update"], e.metadata["trl_group"]) for e in eps}:
        mine = [e.context for e in eps if (e.metadata["update"], e.metadata["trl_group"]) == g]
        assert len({c.task_id for c in mine}) == 1 and sorted(c.harness_id for c in mine) == ["toy-a", "toy-a", "toy-b", "toy-b"]
    assert (tmp_path / "full" / "final" / "adapter_config.json").exists()
    assert (tmp_path / "full" / "metrics.csv").exists()

    # stopped after 2, resumed to 3
    part = tmp_path / "part"
    engine(model_dir, part, 2).run()
    resumed = engine(model_dir, part, 3)
    with pytest.raises(ConfigError, match="already holds a checkpoint"):
        resumed.run()
    same = resumed.cfg
    resumed.cfg = same.model_copy(update={"lr": 5e-3})
    with pytest.raises(ConfigError, match="different config .lr"):
        resumed.run(resume=True)
    resumed.cfg = same
    rows = resumed.run(resume=True)
    assert resumed.trainer.state.global_step == 3 and rows[-1]["update"] == 3
    a, b = by_update(store, 2), by_update(RecordStore(part / "store"), 2)
    assert len(b) == 8 and RecordStore(part / "store").count() == 24
    for x, y in zip(a, b, strict=True):
        assert x.context == y.context and x.reward == y.reward
        np.testing.assert_array_equal(np.concatenate([t.token_ids for t in x.turns]),
                                      np.concatenate([t.token_ids for t in y.turns]))


def test_an_older_run_folder_resumes_under_the_native_check(model_dir, tmp_path):
    """As in native training (tests/train/test_agent.py): a setting added since the run was started
    counts as its default there; changing it on resume is refused, leaving it alone resumes."""
    import json

    from harnessrl.engines.trl import CONFIG_FILE

    run = tmp_path / "old"
    engine(model_dir, run, 1).run()
    saved = json.loads((run / CONFIG_FILE).read_text())
    del saved["kl_coef"], saved["policy"]["prefix_cache_mb"]  # as written before these settings existed
    (run / CONFIG_FILE).write_text(json.dumps(saved))
    resumed = engine(model_dir, run, 2)
    same = resumed.cfg
    resumed.cfg = same.model_copy(update={"kl_coef": 0.5})
    with pytest.raises(ConfigError, match=r"different config \(kl_coef\)"):
        resumed.run(resume=True)
    resumed.cfg = same
    assert [r["update"] for r in resumed.run(resume=True)][-1] == 2
