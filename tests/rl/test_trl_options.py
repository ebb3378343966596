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
