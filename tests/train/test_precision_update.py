"""A bf16 update on the tiny LM runs, its loss is close to fp32's, and the run records its precision;
the sampler/trainer TIS metrics reach each update's row."""

from __future__ import annotations

import json

import pytest
import torch

from harnessrl.config import ConfigError
from harnessrl.policies.lm import LMConfig
from harnessrl.train import lm_update
from harnessrl.train.agent import AgentTrainConfig, AgentTrainer
from harnessrl.train.sequences import build_batch
from tests import tiny_lm
from tests.train import toy


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return tiny_lm.build(tmp_path_factory.mktemp("bf16"))


def make(model_dir, run_dir, precision, **kw) -> AgentTrainer:
    cfg = AgentTrainConfig(policy=LMConfig(model=str(model_dir), max_new_tokens=8, lora_rank=4), precision=precision,
                           run_dir=str(run_dir), harnesses=["toy-a", "toy-b"], group_size=4, tasks_per_update=2,
                           updates=1, lr=3e-3, grouping="cross", **kw)
    hs = [toy.harness(h, prompt=f"You are {h}.") for h in ("toy-a", "toy-b")]
    return AgentTrainer(cfg, tasks=toy.tasks(), harnesses=hs, open_env=toy.open_env)


def test_bf16_update_runs_and_matches_fp32(model_dir, tmp_path):
    fp = make(model_dir, tmp_path / "fp32", "fp32")
    episodes = fp._collect(0)  # one set of episodes, scored and trained in both precisions
    batch = build_batch(episodes, fp.policy.pad_token_id)
    adv = torch.linspace(-1, 1, len(episodes))
    out = {}
    for name in ("fp32", "bf16"):
        tr = fp if name == "fp32" else make(model_dir, tmp_path / name, name)
        assert tr.precision["precision"] == name
        scored = lm_update.score_batch(tr.policy, batch, 4096, with_ref=False, need_old=False)
        tok_adv, _ = lm_update.token_advantages("grpo", adv, batch, torch.zeros(len(episodes)), scored)
        out[name] = lm_update.update(tr.policy, tr.optimizer, tr.scheduler, batch, scored, tok_adv, tr.settings,
                                     torch.Generator().manual_seed(0))
    assert out["bf16"]["loss"] == pytest.approx(out["fp32"]["loss"], rel=0.05, abs=1e-3)
    assert out["bf16"]["grad_norm"] == pytest.approx(out["fp32"]["grad_norm"], rel=0.1)
    # the sampler ran in fp32; bf16 training sees a larger mismatch than fp32 training, which sees rounding only
    assert out["fp32"]["sampler_abs_dlogp"] < 1e-4 and out["fp32"]["sampler_abs_dlogp"] < out["bf16"]["sampler_abs_dlogp"] < 0.5
    assert 0 <= out["bf16"]["tis_clipfrac"] <= 1


def test_run_records_the_resolved_precision(model_dir, tmp_path):
    rows = make(model_dir, tmp_path / "run", "bf16").run()
    rec = json.loads((tmp_path / "run" / "precision.json").read_text())
    assert rec["precision"] == "bf16" and rec["requested"] == "bf16" and "bf16" in rec["detection"]
    assert rows[-1]["precision"] == "bf16"
    for key in ("sampler_abs_dlogp", "tis_clipfrac", "tis_weight_mean"):
        assert key in rows[-1], key
    assert "sampler_abs_dlogp" in (tmp_path / "run" / "metrics.csv").read_text().splitlines()[0]


def test_sampler_correction_off_and_bf16_needs_lora(model_dir, tmp_path):
    rows = make(model_dir, tmp_path / "off", "fp32", sampler_correction="none").run()
    assert "tis_clipfrac" not in rows[-1]
    with pytest.raises((ConfigError, ValueError), match="precision=bf16 trains through LoRA"):
        AgentTrainConfig(policy=LMConfig(model=str(model_dir)), precision="bf16", harnesses=["toy-a"])
