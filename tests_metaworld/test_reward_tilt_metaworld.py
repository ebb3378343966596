"""`harnessrl recipe reward-tilt --task metaworld-drawer` end to end at a tiny scale."""

import json

from typer.testing import CliRunner

from harnessrl.cli import app
from harnessrl.records import RecordStore

TINY = [
    "demos.episodes=48", "bc.steps=60", "reward.aimed=32", "reward.random=8", "reward.steps=20",
    "finetune.rounds=2", "finetune.samples_per_round=32", "finetune.steps_per_round=10", "finetune.eval_episodes=32",
    "base_episodes=48", "n_boot=20", "learned_seeds=[1]", "verifier_seeds=[1]", "control=false",
]


def test_recipe_runs_on_metaworld_and_records_its_episodes(tmp_path):
    out = tmp_path / "mw"
    args = ["recipe", "reward-tilt", "--task", "metaworld-drawer", "--out", str(out), "--store", str(out / "store")]
    for s in TINY:
        args += ["--set", s]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    html = (out / "report.html").read_text()
    assert "Meta-World" in html and "Predicted vs observed outcome frequencies per" in html
    assert (out / "predicted_vs_observed.png").stat().st_size > 1000
    store = RecordStore(out / "store")
    rows = store.sql("SELECT policy_id, env_id, count(*) AS n FROM episodes GROUP BY ALL").to_pylist()
    assert {r["env_id"] for r in rows} == {"metaworld-drawer"}
    n = {r["policy_id"]: r["n"] for r in rows}
    assert n["bc"] == 48 and n["rwr-learned-s1-r2"] == 32 and n["rwr-verified-s1-r2"] == 32  # Meta-World runs RWR (optimizer=rwr)
    # the policy saw Meta-World's 12-d state and acted in its 4-d action space
    turn = store.episodes()[0].turns[0]
    assert len(json.loads(turn.observation)) == 12 and len(json.loads(turn.action)[0]) == 4


def test_chunk_must_divide_the_metaworld_horizon(tmp_path):
    result = CliRunner().invoke(app, ["recipe", "reward-tilt", "--task", "metaworld-drawer", "--out", str(tmp_path),
                                      "--store", str(tmp_path / "s"), "--set", "policy.chunk=7"])
    assert result.exit_code == 2
    assert "policy.chunk=7" in result.output and "metaworld-drawer horizon 96" in result.output


def test_ppo_on_metaworld_is_refused_with_a_clear_error(tmp_path):
    # the PPO chain recorder needs every episode in each policy call; Meta-World acts in sub-batches
    result = CliRunner().invoke(app, ["recipe", "reward-tilt", "--task", "metaworld-drawer", "--out", str(tmp_path / "o"),
                                      "--set", "optimizer=ppo"])
    assert result.exit_code == 2, result.output
    assert "error:" in result.output and "optimizer=rwr" in result.output
