from typing import Literal

import pytest
from pydantic import Field

from harnessrl.config import Config, ConfigError, load_config


class Optim(Config):
    lr: float = Field(2.5e-4, gt=0)
    anneal: bool = True


class Train(Config):
    critic: Literal["shared", "conditioned", "multihead"] = "shared"
    seeds: list[int] = [0]
    steps: int = 1000
    optim: Optim = Optim()


def test_file_and_overrides(tmp_path):
    (tmp_path / "c.yaml").write_text("critic: conditioned\noptim:\n  lr: 0.001\n")
    cfg = load_config(Train, tmp_path / "c.yaml", ["steps=50", "optim.anneal=false", "seeds=[1,2]"])
    assert (cfg.critic, cfg.steps, cfg.optim.lr, cfg.optim.anneal, cfg.seeds) == ("conditioned", 50, 0.001, False, [1, 2])
    (tmp_path / "c.toml").write_text('critic = "multihead"\n[optim]\nlr = 0.01\n')
    assert load_config(Train, tmp_path / "c.toml").optim.lr == 0.01


def test_bad_choice_names_field_value_and_allowed():
    with pytest.raises(ConfigError) as err:
        load_config(Train, overrides=["critic=sharde"])
    msg = str(err.value)
    assert "critic = 'sharde'" in msg and "'shared', 'conditioned' or 'multihead'" in msg


def test_unknown_key_lists_known_keys(tmp_path):
    with pytest.raises(ConfigError) as err:
        load_config(Train, overrides=["optim.learning_rate=3"])
    assert "optim.learning_rate: unknown key" in str(err.value) and "anneal, lr" in str(err.value)


def test_bad_number_and_bad_override_and_bad_file(tmp_path):
    with pytest.raises(ConfigError, match=r"optim.lr = -1: Input should be greater than 0"):
        load_config(Train, overrides=["optim.lr=-1"])
    with pytest.raises(ConfigError, match="expected key=value"):
        load_config(Train, overrides=["critic"])
    (tmp_path / "bad.yaml").write_text("critic: [unclosed\n")
    with pytest.raises(ConfigError, match="bad.yaml: cannot parse"):
        load_config(Train, tmp_path / "bad.yaml")
    with pytest.raises(ConfigError, match="config file not found"):
        load_config(Train, tmp_path / "missing.yaml")
    (tmp_path / "x.ini").write_text("[a]")
    with pytest.raises(ConfigError, match="use .yaml, .yml, .toml or .json"):
        load_config(Train, tmp_path / "x.ini")
    (tmp_path / "saved.json").write_text('{"critic": "conditioned"}')  # the configs runs save load back
    assert load_config(Train, tmp_path / "saved.json").critic == "conditioned"
