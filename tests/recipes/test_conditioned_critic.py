"""The conditioned-critic recipe: CLI end to end (process pool, store, report, resume), the mechanism, presets, errors."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from harnessrl.cli import app
from harnessrl.config import ConfigError, load_config
from harnessrl.recipes import conditioned_critic as cc
from harnessrl.records import RecordStore
from tests.report_checks import assert_report_has_content

TINY = ["--set", "families=[bandit,minigrid]", "--set", "seeds=[0,1]", "--set", "critics=[shared,conditioned]",
        "--set", "bandit.total_steps=2048", "--set", "minigrid.env_id=MiniGrid-Empty-Random-5x5-v0",
        "--set", "minigrid.total_steps=1024", "--set", "minigrid.num_contexts=2", "--set", "minigrid.num_train_levels=4",
        "--set", "minigrid.num_test_levels=4", "--set", "minigrid.envs_per_context=1", "--set", "minigrid.ppo={num_steps: 64}",
        "--set", "value_error_steps=16", "--set", "eval_episodes=1", "--set", "checkpoint_every=2"]


@pytest.mark.slow
def test_cli_end_to_end_with_resume(tmp_path):
    out, store = tmp_path / "cc", tmp_path / "store"
    runner = CliRunner()
    res = runner.invoke(app, ["recipe", "conditioned-critic", "--out", str(out), "--store", str(store), "-j", "2", *TINY])
    assert res.exit_code == 0, res.output
    html = (out / "report.html").read_text()
    assert_report_has_content(html)
    for text in ("Per-context value error", "Headline", "Value error of the conditioned critic vs the shared", "IQM",
                 "unseen levels", "How to reproduce", "offset10"):
        assert text in html, text
    assert (out / "value_error.png").stat().st_size > 1000 and (out / "curves_bandit.png").exists()
    st = RecordStore(store)
    n = st.count()
    rows = st.sql("SELECT task_id, policy_id, count(*) AS n FROM episodes GROUP BY ALL ORDER BY ALL").to_pylist()
    assert {"task_id": "bandit/offset10", "policy_id": "ppo-conditioned-critic", "n": 2 * 4} in rows
    assert any(r["task_id"] == "minigrid/test-levels" for r in rows)
    result = json.loads((out / "runs/bandit/bandit/shared/seed0/result.json").read_text())
    assert len(result["value_error"]["mse"]) == 4 and result["history"]
    # again without --resume: refuse to mix; with --resume: nothing retrained, nothing stored twice
    res = runner.invoke(app, ["recipe", "conditioned-critic", "--out", str(out), "--store", str(store), *TINY])
    assert res.exit_code == 2 and "--resume" in res.output
    before = (out / "runs/bandit/bandit/shared/seed0/result.json").stat().st_mtime_ns
    res = runner.invoke(app, ["recipe", "conditioned-critic", "--out", str(out), "--store", str(store), "--resume", *TINY])
    assert res.exit_code == 0, res.output
    assert (out / "runs/bandit/bandit/shared/seed0/result.json").stat().st_mtime_ns == before
    assert RecordStore(store).count() == n


@pytest.mark.slow
def test_conditioning_removes_the_value_conflict_on_the_bandit(tmp_path):
    cfg = load_config(cc.ConditionedCriticConfig, None, [  # the default bandit budget
        "families=[bandit]", "seeds=[0,1]", "critics=[shared,conditioned,multihead]", "workers=1",
        "value_error_steps=128", "eval_episodes=1"])
    results = cc.run_recipe(cfg, tmp_path)
    mse = {(r["job"]["critic"], r["job"]["seed"]): np.array(r["value_error"]["mse"]) for r in results}
    offsets = np.array(cfg.bandit.offsets)
    between = (offsets - offsets.mean()) ** 2  # what averaging over contexts costs each context
    for seed in (0, 1):
        shared, cond, multi = mse[("shared", seed)], mse[("conditioned", seed)], mse[("multihead", seed)]
        assert cond[[0, 3]].max() < 0.5 * shared[[0, 3]].min()  # the extreme contexts
        assert multi[[0, 3]].max() < 0.5 * shared[[0, 3]].min()
        assert shared[3] > 0.5 * between[3]  # the shared head sits near the mean of the offsets


def test_paper_preset_builds_the_full_protocol_without_code_changes():
    cfg = cc.load("paper")
    jobs = cc.jobs(cfg)
    procgen = [j for j in jobs if j.family == "procgen"]
    assert len({j.task for j in procgen}) == 16 and len(procgen) == 16 * 3 * 5
    p = cc.ppo_config(cfg, procgen[0])
    assert p.network == "impala" and p.total_steps == 25_000_000 and p.reward_norm == "context" and p.device == "auto"
    assert cfg.procgen.num_levels == 200 and cfg.cartpole.total_steps == 500_000
    assert cc.ppo_config(cfg, [j for j in jobs if j.family == "cartpole"][0]).reward_norm == "pooled"
    assert {j.task for j in jobs if j.family == "mujoco"} == {"HalfCheetah-v5", "Hopper-v5"}
    pytest.importorskip("envpool", reason="building Procgen envs needs the optional extra harnessrl[procgen]")
    train, test = cc.make_envs(cfg, procgen[0], 0)
    assert train.num_envs == 64 and train.num_contexts == 4 and train.context_names[-1] == "levels150-199"
    assert test.context_names[0].startswith("levels1000000")
    train.close()
    test.close()


def test_partial_overrides_keep_the_family_defaults(tmp_path):
    cfg = cc.load("small", None, ["cartpole.total_steps=1000", "bandit.ppo={learning_rate: 0.01}"])
    cart = cc.ppo_config(cfg, cc.Job("cartpole", "cartpole", "shared", 0))
    bandit = cc.ppo_config(cfg, cc.Job("bandit", "bandit", "conditioned", 1))
    assert (cart.total_steps, cart.reward_norm, cart.clip_vloss) == (1000, "pooled", False)
    assert (bandit.learning_rate, bandit.num_steps, bandit.critic, bandit.seed) == (0.01, 32, "conditioned", 1)
    assert cfg.bandit.envs_per_context == 4 and cfg.cartpole.envs_per_context == 2
    path = tmp_path / "cc.yaml"
    path.write_text("cartpole:\n  envs_per_context: 1\nseeds: [5]\n")
    cfg = cc.load("paper", path)
    assert (cfg.cartpole.envs_per_context, cfg.cartpole.total_steps, cfg.seeds) == (1, 500_000, [5])


def test_bad_settings_fail_before_training(tmp_path):
    with pytest.raises(ConfigError, match="families"):
        load_config(cc.ConditionedCriticConfig, None, ["families=[atari]"])
    cfg = load_config(cc.ConditionedCriticConfig, None, ["families=[cartpole]", "cartpole.ppo={learning_rat: 0.1}"])
    with pytest.raises(ConfigError, match=r"(?s)cartpole\.ppo.*learning_rat: unknown key"):
        cc.run_recipe(cfg, tmp_path)
    with pytest.raises(ConfigError, match="scale"):
        cc.preset("huge")
    res = CliRunner().invoke(app, ["recipe", "conditioned-critic", "--out", str(tmp_path), "--set", "seeds=oops"])
    assert res.exit_code == 2 and "seeds" in res.output
    res = CliRunner().invoke(app, ["recipe", "conditioned-critic", "--out", str(tmp_path / "x"), "--set", "families=[minigrid]",
                                   "--set", "minigrid.env_id=MiniGrid-Nope-v0"])
    assert res.exit_code == 2 and "context 'levels0-7'" in res.output and "MiniGrid-Nope-v0" in res.output
    assert not (tmp_path / "x").exists()  # refused before any run started


def test_multi_task_families_are_aggregated_over_seeds_and_tasks():
    from harnessrl.recipes.conditioned_critic_report import family_rows

    def run(task, critic, seed, score):
        return {"job": {"family": "procgen", "task": task, "critic": critic, "seed": seed},
                "test_episodes": [{"score": score}], "train_episodes": []}

    results = [run(t, c, s, (0.5 if c == "shared" else 0.6) + 0.1 * i)
               for i, t in enumerate(["coinrun", "maze"]) for c in ("shared", "conditioned") for s in (0, 1)]
    rows = {r["critic"]: r for r in family_rows(results)}
    assert rows["shared"]["family"] == "procgen (all 2 tasks)" and rows["shared"]["seeds"] == 2
    assert rows["shared"]["IQM return (unseen levels)"].startswith("0.550")
    assert rows["conditioned"]["IQM return (unseen levels)"].startswith("0.650")
    assert rows["conditioned"]["vs shared"] == "+18.2%" and rows["shared"]["vs shared"] == "+0.0%"


def test_medium_preset_is_the_procgen_question_sized_for_two_cores():
    cfg = cc.load("medium")
    jobs = cc.jobs(cfg)
    assert cfg.families == ["procgen"] and cfg.critics == ["shared", "conditioned"] and cfg.seeds == [0, 1, 2]
    assert sorted({j.task for j in jobs}) == ["fruitbot", "starpilot"] and len(jobs) == 2 * 2 * 3
    s = cfg.procgen
    assert (s.num_levels, s.num_contexts, s.envs_per_context, s.distribution_mode) == (200, 4, 16, "easy")
    p = cc.ppo_config(cfg, jobs[0])
    # cleanrl's procgen PPO settings, on the CPU with the small CNN, at the measured budget
    assert (p.network, p.device, p.total_steps, p.num_steps, p.gamma, p.reward_norm) == (
        "nature-small", "cpu", s.total_steps, 256, 0.999, "context")
    assert 500_000 <= s.total_steps <= 2_000_000
    assert cc.load("medium", None, ["procgen.total_steps=4096"]).procgen.games == ["starpilot", "fruitbot"]  # overrides merge
    with pytest.raises(ConfigError, match="small, medium, paper"):
        cc.preset("large")


def test_medium_scale_runs_end_to_end_and_reports_unseen_levels_next_to_the_paper(tmp_path):
    """The medium preset at a tiny budget through the CLI: 1 game, 1 seed, both critics, real Procgen."""
    pytest.importorskip("envpool", reason="Procgen needs the optional extra harnessrl[procgen] (envpool)")
    out, store = tmp_path / "cc", tmp_path / "store"
    res = CliRunner().invoke(app, [
        "recipe", "conditioned-critic", "--scale", "medium", "--out", str(out), "--store", str(store), "-j", "1",
        "--set", "procgen.games=[starpilot]", "--set", "seeds=[0]", "--set", "procgen.total_steps=128",
        "--set", "procgen.envs_per_context=1", "--set", "procgen.ppo.num_steps=16", "--set", "procgen.ppo.num_minibatches=2",
        "--set", "value_error_steps=8", "--set", "eval_episodes=1"])
    assert res.exit_code == 0, res.output
    result = json.loads((out / "runs/procgen/starpilot/conditioned/seed0/result.json").read_text())
    assert result["global_step"] == 128
    assert result["contexts"] == ["levels0-49", "levels50-99", "levels100-149", "levels150-199"]
    test_levels = {e["level"] for e in result["test_episodes"]}
    assert len(result["test_episodes"]) == 1 and min(test_levels) >= 1_000_000  # unseen: outside 0..199
    rows = RecordStore(store).sql("SELECT policy_id, metadata FROM episodes WHERE task_id = 'procgen/test-levels'").to_pylist()
    assert sorted(r["policy_id"] for r in rows) == ["ppo-conditioned-critic", "ppo-shared-critic"]
    score = {json.loads(r["metadata"])["critic"]: json.loads(r["metadata"])["score"] for r in rows}
    html = (out / "report.html").read_text()
    assert "Procgen: unseen levels, next to the paper" in html and "+40.8%" in html and "nature-small" in html
    assert f"{score['shared']:.3f} [" in html and f"{score['conditioned']:.3f} [" in html  # the stored scores, reported
    assert (out / "procgen_unseen.png").stat().st_size > 1000
