"""TRL's GRPOConfig option names are accepted where a config takes the equivalent."""

from __future__ import annotations

import pytest

from harnessrl.config import ConfigError, load_config
from harnessrl.rl.trl_options import from_trl_names

FIELDS = {"clip_low", "clip_high", "dual_clip", "kl_coef", "loss_agg", "objective"}


def test_renames_and_value_translations():
    got = from_trl_names({"epsilon": 0.1, "epsilon_high": 0.3, "delta": 3.0, "beta": 0.04, "loss_type": "dr_grpo",
                          "importance_sampling_level": "token", "seed": 1}, FIELDS)
    assert got == {"clip_low": 0.1, "clip_high": 0.3, "dual_clip": 3.0, "kl_coef": 0.04,
                   "loss_agg": "seq-mean-token-sum-norm", "objective": "grpo", "seed": 1}
    assert from_trl_names({"loss_type": "grpo"}, FIELDS) == {"loss_agg": "seq-mean-token-mean"}
    assert from_trl_names({"loss_type": "bnpo"}, FIELDS) == {"loss_agg": "token-mean"}
    assert from_trl_names({"loss_type": "dapo"}, FIELDS) == {"loss_agg": "token-mean"}


def test_epsilon_alone_is_a_symmetric_range_as_in_trl():
    assert from_trl_names({"epsilon": 0.2}, FIELDS) == {"clip_low": 0.2, "clip_high": 0.2}
    assert from_trl_names({"epsilon": 0.2, "clip_high": 0.28}, FIELDS) == {"clip_low": 0.2, "clip_high": 0.28}


def test_sequence_importance_sampling_is_gspo():
    assert from_trl_names({"importance_sampling_level": "sequence"}, FIELDS) == {"objective": "gspo"}
    assert from_trl_names({"importance_sampling_level": "sequence", "objective": "gspo_token"}, FIELDS)["objective"] == "gspo_token"
    for bad in ({"importance_sampling_level": "sequence", "objective": "ppo"},
                {"importance_sampling_level": "token", "objective": "gspo"},
                {"importance_sampling_level": "sentence"}):
        with pytest.raises(ValueError, match="importance_sampling_level"):
            from_trl_names(bad, FIELDS)


def test_conflicts_and_unknown_values_are_errors_and_untranslatable_names_stay():
    with pytest.raises(ValueError, match="give one of them"):
        from_trl_names({"beta": 0.1, "kl_coef": 0.2}, FIELDS)
    assert from_trl_names({"beta": 0.1, "kl_coef": 0.1}, FIELDS) == {"kl_coef": 0.1}  # the same value twice is fine
    with pytest.raises(ValueError, match="loss_type 'cispo'"):
        from_trl_names({"loss_type": "cispo"}, FIELDS)
    assert from_trl_names({"beta": 0.1}, {"lr"}) == {"beta": 0.1}  # no kl_coef field: the config rejects it


def test_agent_config_reads_trl_names_and_rejects_mixing():
    from harnessrl.train.agent import AgentTrainConfig

    base = {"policy": {"model": "m"}, "harnesses": ["lookup-plain"]}
    cfg = load_config(AgentTrainConfig, base=base, overrides=["epsilon=0.1", "epsilon_high=0.3", "beta=0.04", "delta=3",
                                                            "loss_type=bnpo"])
    assert (cfg.clip_low, cfg.clip_high, cfg.kl_coef, cfg.dual_clip, cfg.loss_agg) == (0.1, 0.3, 0.04, 3.0, "token-mean")
    assert load_config(AgentTrainConfig, base=base, overrides=["importance_sampling_level=sequence"]).objective == "gspo"
    with pytest.raises(ConfigError, match="give one of them"):
        load_config(AgentTrainConfig, base=base, overrides=["epsilon=0.1", "clip_low=0.2"])
    with pytest.raises(ConfigError, match="no dual clip"):
        load_config(AgentTrainConfig, base=base, overrides=["objective=gspo", "delta=3"])


def test_classic_ppo_reads_epsilon_as_its_symmetric_clip():
    from harnessrl.train.ppo import PPOConfig

    assert load_config(PPOConfig, overrides=["epsilon=0.1"]) == load_config(PPOConfig, overrides=["clip_coef=0.1"])
    assert PPOConfig(epsilon=0.3, epsilon_high=0.3).clip_coef == 0.3  # TRL's symmetric range, spelled out
    assert PPOConfig(epsilon=0.3, epsilon_high=None).clip_coef == 0.3  # TRL's default epsilon_high
    with pytest.raises(ConfigError, match="give one of them"):
        load_config(PPOConfig, overrides=["epsilon=0.1", "clip_coef=0.2"])
    with pytest.raises(ConfigError, match=r"epsilon_high=0.3 differs from epsilon=0.1.*symmetrically \(clip_coef\)"):
        load_config(PPOConfig, overrides=["epsilon=0.1", "epsilon_high=0.3"])
    with pytest.raises(ConfigError, match="epsilon_high=0.3 differs from epsilon=0.2"):
        load_config(PPOConfig, overrides=["clip_coef=0.2", "epsilon_high=0.3"])
    with pytest.raises(ConfigError, match="beta: unknown key"):  # no KL-to-reference term in this trainer
        load_config(PPOConfig, overrides=["beta=0.1"])


def test_diffusion_ppo_reads_epsilon_and_beta_also_inside_the_reward_tilt_config():
    from harnessrl.recipes.reward_tilt import RewardTiltConfig
    from harnessrl.train.diffusion_pg import PPOConfig

    assert PPOConfig(epsilon=0.1, beta=0.5) == PPOConfig(clip=0.1, kl_coef=0.5)
    assert PPOConfig(epsilon=0.1, beta=0.5) != PPOConfig()
    cfg = load_config(RewardTiltConfig, overrides=["ppo.epsilon=0.1", "ppo.beta=0.5"])
    assert cfg == load_config(RewardTiltConfig, overrides=["ppo.clip=0.1", "ppo.kl_coef=0.5"])
    with pytest.raises(ConfigError, match="beta \\(TRL's name\\) and kl_coef are the same option"):
        load_config(RewardTiltConfig, overrides=["ppo.beta=0.5", "ppo.kl_coef=0.25"])
    with pytest.raises(ValueError, match="symmetrically \\(clip\\)"):  # pydantic's ValidationError
        PPOConfig(epsilon=0.2, epsilon_high=0.28)


def test_lm_recipe_configs_read_beta_and_importance_sampling_level():
    from harnessrl.recipes.harness_teacher import HarnessTeacherConfig
    from harnessrl.recipes.multi_harness import MultiHarnessConfig, preset

    trl = load_config(MultiHarnessConfig, overrides=["beta=0.04", "importance_sampling_level=sequence"])
    assert trl == load_config(MultiHarnessConfig, overrides=["kl_coef=0.04", "objective=gspo"])
    assert (trl.kl_coef, trl.objective) == (0.04, "gspo")
    with pytest.raises(ConfigError, match="give one of them"):
        load_config(MultiHarnessConfig, overrides=["beta=0.04", "kl_coef=0.1"])
    # the paper preset's gspo is a sequence ratio: asking for token-level ratios contradicts it
    with pytest.raises(ConfigError, match="contradicts objective 'gspo'"):
        load_config(MultiHarnessConfig, base=preset("paper"), overrides=["importance_sampling_level=token"])
    with pytest.raises(ConfigError, match="epsilon: unknown key"):  # the recipe has no clip option to translate to
        load_config(MultiHarnessConfig, overrides=["epsilon=0.1"])
    # harness-teacher's own beta (the soft ceiling's KL weight) keeps its meaning
    teacher = load_config(HarnessTeacherConfig, overrides=["beta=0.3", "importance_sampling_level=sequence"])
    # and its RL trains with the KL term at that beta (kl_coef None = beta; issue 21)
    assert (teacher.beta, teacher.kl_coef, teacher.train_kl_coef, teacher.objective) == (0.3, None, 0.3, "gspo")


def test_a_conflict_on_the_command_line_is_one_error_line_and_writes_nothing(tmp_path):
    from typer.testing import CliRunner

    from harnessrl.cli import app

    out = tmp_path / "tilt"
    res = CliRunner().invoke(app, ["recipe", "reward-tilt", "--out", str(out), "--set", "ppo.epsilon=0.1", "--set", "ppo.clip=0.2"])
    assert res.exit_code == 2
    lines = [line for line in res.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:") and "epsilon (TRL's name) and clip" in lines[0], res.output
    assert not out.exists()
