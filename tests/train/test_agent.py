"""Agent trainer: update direction per objective, loss mask, metrics + store, PPO critic, LoRA
adapters through PEFT, offline training from frozen records, bad input before rollouts."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from harnessrl.config import ConfigError
from harnessrl.episode import Context, Episode, Turn
from harnessrl.policies.lm import LMConfig, LMPolicy, token_logprobs
from harnessrl.records import RecordStore
from harnessrl.train.agent import AgentTrainConfig, AgentTrainer
from harnessrl.train.sequences import NoTokensError, build_batch, episode_rows
from tests import tiny_lm
from tests.train import toy


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return tiny_lm.build(tmp_path_factory.mktemp("agent"))


def make(model_dir, tmp_path, lora_rank=0, harnesses=("toy-a", "toy-b"), **kw) -> AgentTrainer:
    policy = kw.pop("policy_cfg", {})
    cfg = AgentTrainConfig(policy=LMConfig(model=str(model_dir), max_new_tokens=8, lora_rank=lora_rank, **policy),
                           run_dir=str(tmp_path / "run"), harnesses=list(harnesses),
                           **{"group_size": 4, "tasks_per_update": 2, "updates": 2, "lr": 3e-3, **kw})
    hs = [toy.harness(h, prompt=f"You are {h}.") for h in harnesses]
    return AgentTrainer(cfg, tasks=toy.tasks(), harnesses=hs, open_env=toy.open_env)


def row_logprobs(policy: LMPolicy, batch) -> torch.Tensor:
    with torch.no_grad():
        lp = token_logprobs(policy.model, batch.ids, batch.attention, batch.mask).logprobs
    return (lp * batch.mask).sum(-1)


@pytest.mark.parametrize("objective", ["grpo", "gspo", "rloo", "ppo"])
def test_one_update_makes_rewarded_episodes_more_likely(model_dir, tmp_path, objective):
    tr = make(model_dir, tmp_path, objective=objective, grouping="cross", group_size=6, lr=1e-2,
              **({"vf_coef": 0.0} if objective == "ppo" else {}))
    episodes = tr._collect(0)
    batch = build_batch(episodes, tr.policy.pad_token_id)
    rewards = np.array([episodes[e].reward for e in batch.episode.tolist()])
    assert 0 < rewards.mean() < 1, "the toy task must give signal"
    before = row_logprobs(tr.policy, batch)
    tr.frozen = episodes  # train on exactly these episodes
    tr.cfg.offline_correction = "none"
    row = tr.step(0)
    delta = (row_logprobs(tr.policy, batch) - before).numpy()
    assert delta[rewards == 1].mean() > delta[rewards == 0].mean()
    assert row["grad_norm"] > 0 and 0 <= row["clipfrac"] <= 1 and np.isfinite(row["kl"])


def test_run_writes_metrics_store_and_peft_adapter(model_dir, tmp_path):
    tr = make(model_dir, tmp_path, lora_rank=4, grouping="within", updates=2)
    rows = tr.run()
    assert [r["update"] for r in rows] == [1, 2]
    for key in ("reward_mean", "solve_rate", "signal_fraction", "clipfrac", "clipfrac_low", "clipfrac_high", "kl",
                "entropy", "gen_tok_s", "train_tok_s", "solve/toy-a", "reward/toy-b", "turns_mean"):
        assert key in rows[-1], key
    run = tmp_path / "run"
    assert (run / "metrics.csv").exists() and (run / "metrics.parquet").exists()
    store = RecordStore(run / "store")
    assert store.count() == 2 * 2 * 2 * 4  # updates x tasks x harnesses x G
    eps = store.episodes()
    assert all(e.turns[0].loss_mask.sum() > 0 and e.metadata["temperature"] == 1.0 for e in eps)
    assert (run / "final" / "adapter_config.json").exists()
    # the adapter reloads through PEFT and gives the trained policy's log-probs
    again = LMPolicy.from_config(LMConfig(model=str(model_dir), adapter=str(run / "final")))
    batch = build_batch(eps[:4])
    torch.testing.assert_close(row_logprobs(again, batch), row_logprobs(tr.policy, batch), atol=1e-5, rtol=0)
    with tr.policy.reference() as ref:  # the reference is the base model (adapter disabled)
        base = LMPolicy.from_config(LMConfig(model=str(model_dir)))
        torch.testing.assert_close(row_logprobs(type("P", (), {"model": ref})(), batch), row_logprobs(base, batch),
                                   atol=1e-5, rtol=0)


def test_loss_mask_is_generated_tokens_only_and_resets_start_new_rows():
    def turn(obs, gen):
        ids = np.arange(obs + gen) + 10
        return Turn(token_ids=ids, logprobs=np.r_[np.zeros(obs), -np.ones(gen)], loss_mask=np.r_[np.zeros(obs), np.ones(gen)])

    ep = Episode(Context("t", "h"), turns=[turn(5, 3), turn(2, 4), turn(3, 2)], reward=1.0)
    (row,) = episode_rows(ep)
    assert row.mask.tolist() == [0] * 5 + [1] * 3 + [0] * 2 + [1] * 4 + [0] * 3 + [1] * 2
    ep.metadata["context_resets"] = [[2, 4]]  # turn 2 restarted from the first 4 tokens
    rows = episode_rows(ep)
    assert len(rows) == 2 and rows[1].mask.tolist() == [0] * 4 + [0] * 3 + [1] * 2
    assert rows[1].ids[:4].tolist() == rows[0].ids[:4].tolist()
    batch = build_batch([ep, Episode(Context("t", "h"), turns=[turn(4, 1)])])
    assert batch.ids.shape == (3, 14) and batch.episode.tolist() == [0, 0, 1]
    assert batch.mask.sum() == 3 + 4 + 2 + 1
    with pytest.raises(NoTokensError, match="without token ids"):
        episode_rows(Episode(Context("t", "h"), turns=[Turn(action="x")]))


def test_ppo_critic_learns_values(model_dir, tmp_path):
    tr = make(model_dir, tmp_path, objective="ppo", critic="conditioned", updates=3, critic_lr=1e-2)
    rows = tr.run()
    assert all(np.isfinite(r["value_loss"]) for r in rows)
    assert rows[-1]["value_loss"] < rows[0]["value_loss"]


def test_offline_training_from_frozen_records_with_importance_correction(model_dir, tmp_path):
    online = make(model_dir, tmp_path / "a", updates=1)
    online.run()
    frozen = tmp_path / "a" / "run" / "store"
    tr = make(model_dir, tmp_path / "b", source="offline", offline_store=str(frozen), updates=2, offline_correction="tis")
    w0 = [p.detach().clone() for p in tr.policy.trainable_parameters()]
    rows = tr.run()
    assert len(rows) == 2 and rows[0]["episodes"] == 2 * 2 * 4  # the frozen set: 2 tasks x 2 harnesses x G
    assert any(not torch.equal(a, b) for a, b in zip(w0, tr.policy.trainable_parameters()))
    # a temperature other than the behaviour's cannot be corrected
    with pytest.raises(ConfigError, match="temperature"):
        make(model_dir, tmp_path / "c", source="offline", offline_store=str(frozen), policy_cfg={"temperature": 0.5})
    # records without tokens (a scripted policy's) cannot train an LM
    bad = RecordStore(tmp_path / "bad")
    bad.append([Episode(Context("toy/say-a", "toy-a"), turns=[Turn(action="x")], reward=1.0)])
    with pytest.raises(NoTokensError):
        make(model_dir, tmp_path / "d", source="offline", offline_store=str(tmp_path / "bad"))


def test_bad_input_fails_before_rollouts(model_dir, tmp_path):
    with pytest.raises(ValueError, match="group_size=1"):
        AgentTrainConfig(policy=LMConfig(model=str(model_dir)), harnesses=["toy-a"], group_size=1, objective="grpo")
    AgentTrainConfig(policy=LMConfig(model=str(model_dir)), harnesses=["toy-a"], group_size=1, objective="ppo")
    with pytest.raises(ConfigError, match="context"):
        make(model_dir, tmp_path, policy_cfg={"max_context_tokens": 30})
    with pytest.raises(ConfigError, match="no such directory"):
        AgentTrainer(AgentTrainConfig(policy=LMConfig(model=str(tmp_path / "missing")), harnesses=["lookup-plain"]))
    with pytest.raises(ConfigError, match="cannot drive"):
        AgentTrainer(AgentTrainConfig(policy=LMConfig(model=str(model_dir)), harnesses=["lookup-plain"]),
                     tasks=toy.tasks(), open_env=toy.open_env)
    with pytest.raises(ConfigError, match="ray"):
        make(model_dir, tmp_path, backend="ray")
    tr = make(model_dir, tmp_path, updates=1)
    tr.run()
    with pytest.raises(ConfigError, match="already holds a checkpoint"):
        make(model_dir, tmp_path, updates=1).run()
    with pytest.raises(ConfigError, match="different config"):
        make(model_dir, tmp_path, updates=2, lr=1e-4).run(resume=True)


def test_a_checkpoint_older_than_a_new_setting_still_resumes(model_dir, tmp_path):
    """A field added to the config after a checkpoint was written counts as its default there: the run
    resumes, unless the new field is set to something else (then it is a different run)."""
    from harnessrl.train.checkpoint import load_checkpoint, save_checkpoint

    make(model_dir, tmp_path, updates=1).run()
    state = load_checkpoint(tmp_path / "run")
    for name in ("prefix_cache_mb", "gradient_checkpointing"):  # as a checkpoint from before these existed
        del state["config"]["policy"][name]
    save_checkpoint(tmp_path / "run", state)
    rows = make(model_dir, tmp_path, updates=2).run(resume=True)
    assert [r["update"] for r in rows] == [1, 2]
    with pytest.raises(ConfigError, match="different config \\(policy\\)"):
        make(model_dir, tmp_path, updates=3, policy_cfg={"gradient_checkpointing": True}).run(resume=True)


def test_token_budget_ends_episodes_with_token_limit(model_dir, tmp_path):
    """A multi-turn episode whose context outgrows the budget stops with status token_limit (not a crash,
    not a format error), and its tokens still train."""
    cfg = AgentTrainConfig(policy=LMConfig(model=str(model_dir), max_new_tokens=8, max_context_tokens=100),
                           run_dir=str(tmp_path / "run"), harnesses=["toy-long"], group_size=4, tasks_per_update=2,
                           updates=1, lr=1e-3)
    tr = AgentTrainer(cfg, tasks=toy.tasks(), harnesses=[toy.harness("toy-long", max_turns=20)], open_env=toy.open_env)
    rows = tr.run()
    eps = RecordStore(tmp_path / "run" / "store").episodes()
    assert {e.status for e in eps} == {"token_limit"}
    assert all(e.format_errors == 0 and 2 <= e.num_turns < 20 for e in eps)
    assert all(sum(len(t.token_ids) for t in e.turns) <= 100 for e in eps)
    assert rows[0]["gen_tokens"] > 0


def test_train_agent_cli_runs_and_resumes(model_dir, tmp_path):
    from typer.testing import CliRunner

    from harnessrl.cli import app

    args = ["train", "agent", "--model", str(model_dir), "--run-dir", str(tmp_path / "run"),
            "--set", "harnesses=[lookup-plain,lookup-kv]", "--set", "tasks=[lookup/000,lookup/001]",
            "--set", "group_size=2", "--set", "tasks_per_update=1", "--set", "policy.max_new_tokens=6"]
    run = lambda *extra: CliRunner().invoke(app, [*args, *extra], catch_exceptions=False)  # noqa: E731
    res = run("--set", "updates=1")
    assert res.exit_code == 0, res.output
    assert "update 1" in res.output and (tmp_path / "run" / "metrics.csv").exists()
    assert run("--set", "updates=2").exit_code == 2  # a used run folder needs --resume
    res = run("--set", "updates=2", "--resume")
    assert res.exit_code == 0 and "update 2" in res.output and "update 1 " not in res.output
    res = CliRunner().invoke(app, ["train", "agent", "--model", str(tmp_path / "nope"), "--set", "harnesses=[lookup-plain]"])
    assert res.exit_code == 2 and "no such directory" in res.output


def test_tracking_sinks_are_off_by_default_and_explain_a_missing_package(tmp_path):
    import importlib.util

    from harnessrl.train.metrics import MetricsTable

    table = MetricsTable(tmp_path)
    assert table.trackers.tb is None and table.trackers.wb is None
    table.log({"update": 1, "reward_mean": 0.5})
    assert (tmp_path / "metrics.csv").read_text().splitlines()[1] == "1,0.5"
    for tracker in ("wandb", "trackio", "mlflow"):
        if importlib.util.find_spec(tracker) is None:
            with pytest.raises(ConfigError, match=r"harnessrl\[(tracking|wandb)\]"):
                MetricsTable(tmp_path, report_to=[tracker])
    with pytest.raises(ConfigError, match="unknown tracker"):
        MetricsTable(tmp_path, report_to=["comet"])
