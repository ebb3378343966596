"""The study trains KL-regularised at the beta its analysis uses, and the beta sweep's pieces.
(The sweep end to end, its report section and Chromium check: tests/recipes/test_harness_teacher.py.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from harnessrl.recipes import harness_teacher as recipe
from harnessrl.recipes.harness_teacher_beta import _object_of
from harnessrl.train.tasks import load_tasks


def _train_config(tmp_path: Path, **settings) -> tuple[recipe.HarnessTeacherConfig, object]:
    cfg = recipe.HarnessTeacherConfig.model_validate({"workers": 1, **settings})
    train = load_tasks(cfg.suite)[:4]
    tcfg = recipe.agent_train_config(cfg, tmp_path, ("sft-model", None), cfg.train_harness, cfg.agent_updates, "agent", train)
    return cfg, tcfg


def test_the_study_trains_with_the_analysis_beta(tmp_path):
    cfg, tcfg = _train_config(tmp_path)
    assert cfg.beta == 0.1 and tcfg.kl_coef == cfg.beta  # one value feeds training and analysis, not 0
    assert tcfg.kl_estimator == "k2" and tcfg.adv_scale == "none"  # the combination whose fixed point is the tilt
    cfg, tcfg = _train_config(tmp_path, beta=0.5)
    assert tcfg.kl_coef == 0.5
    # a sweep's agent trains at its own beta; an explicit kl_coef (0 = the old study) is honoured
    assert recipe.agent_train_config(cfg, tmp_path, ("m", None), cfg.train_harness, 1, "x", load_tasks(cfg.suite)[:2],
                                     kl_coef=0.02).kl_coef == 0.02
    assert _train_config(tmp_path, kl_coef=0.0)[1].kl_coef == 0.0


def test_every_rl_run_of_the_study_carries_the_beta(tmp_path, monkeypatch):
    """train_run hands the trainer the config built above (the agent, further rounds, the sweep)."""
    seen = []

    def fake_train_agent(tcfg, train, engine, on_update):
        seen.append(tcfg)
        raise RuntimeError("stop before training")

    monkeypatch.setattr(recipe, "train_agent", fake_train_agent)
    cfg = recipe.HarnessTeacherConfig.model_validate({"workers": 1, "beta": 0.3})
    with pytest.raises(RuntimeError):
        recipe.train_run(cfg, tmp_path, ("m", None), cfg.train_harness, 2, "agent", load_tasks(cfg.suite)[:2])
    with pytest.raises(RuntimeError):
        recipe.train_run(cfg, tmp_path, ("m", None), cfg.train_harness, 2, "agent-beta0.02", load_tasks(cfg.suite)[:2],
                         kl_coef=0.02)
    assert [t.kl_coef for t in seen] == [0.3, 0.02]


def test_betas_are_validated():
    with pytest.raises(ValidationError, match="betas"):
        recipe.HarnessTeacherConfig.model_validate({"betas": [0.1, 0.0]})
    with pytest.raises(ValidationError, match="betas"):
        recipe.HarnessTeacherConfig.model_validate({"betas": [0.1, 0.1]})


def test_paper_preset_names_k3_for_trl():
    assert recipe.preset("paper")["kl_estimator"] == "k3"  # GRPOTrainer has only k3


def test_first_action_object():
    objs = {"book", "stone"}
    assert _object_of(json.dumps([{"name": "look", "args": {"object": "book"}}]), objs) == "book"
    assert _object_of(json.dumps([{"name": "answer", "args": {"text": "42"}}]), objs) is None
    assert _object_of("", objs) is None and _object_of("{not json", objs) is None
