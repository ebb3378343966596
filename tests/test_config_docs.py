"""docs/config.md lists every key of a training run (AgentTrainConfig, its policy and TRL sections) and of the
LM recipes' shared settings, with the description the code carries (generated, and checked here)."""

from pathlib import Path

from harnessrl.configdoc import render

ROOT = Path(__file__).resolve().parents[1]


def test_config_page_is_current():
    page = (ROOT / "docs" / "config.md").read_text()
    assert page == render(), "docs/config.md is out of date: python -m harnessrl.configdoc > docs/config.md"


def test_config_page_has_every_key():
    from harnessrl.engines.trl_config import TRLOptions
    from harnessrl.policies.lm import LMConfig
    from harnessrl.train.agent import AgentTrainConfig

    page = (ROOT / "docs" / "config.md").read_text()
    for model, prefix in ((AgentTrainConfig, ""), (LMConfig, "policy."), (TRLOptions, "trl.")):
        for name in model.model_fields:
            assert f"`{prefix}{name}`" in page, prefix + name
