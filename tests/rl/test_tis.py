"""Truncated importance sampling between sampler and trainer (rl/tis.py)."""

from __future__ import annotations

import math

import pytest
import torch

from harnessrl.rl.tis import truncated_is_weights


def test_weights_are_one_where_the_log_probs_agree():
    lp = -torch.rand(3, 5)
    mask = torch.tensor([[0, 1, 1, 1, 0], [0, 0, 1, 1, 1], [0, 1, 0, 0, 0]], dtype=torch.float32)
    for level in ("token", "sequence"):
        w, m = truncated_is_weights(lp, lp.clone(), mask, cap=2.0, level=level)
        torch.testing.assert_close(w, mask)
        assert float(m["sampler_abs_dlogp"]) == 0 and float(m["tis_clipfrac"]) == 0 and float(m["tis_weight_mean"]) == 1


def test_hand_made_example_capped_and_metrics():
    # trainer - sampler log-probs on 4 masked tokens: +ln 3 (ratio 3 -> capped at 2), -ln 2 (0.5), 0 (1), +ln 1.5
    sampler = torch.zeros(1, 6)
    train = torch.tensor([[9.0, math.log(3), -math.log(2), 0.0, math.log(1.5), 9.0]])
    mask = torch.tensor([[0, 1, 1, 1, 1, 0]], dtype=torch.float32)
    w, m = truncated_is_weights(train, sampler, mask, cap=2.0)
    torch.testing.assert_close(w, torch.tensor([[0, 2.0, 0.5, 1.0, 1.5, 0]]))
    assert float(m["sampler_abs_dlogp"]) == pytest.approx((math.log(3) + math.log(2) + math.log(1.5)) / 4)
    assert float(m["tis_clipfrac"]) == pytest.approx(0.25)
    assert float(m["tis_weight_mean"]) == pytest.approx(5.0 / 4)


def test_sequence_level_one_weight_per_row():
    sampler = torch.zeros(2, 3)
    train = torch.tensor([[0.0, 0.2, 0.4], [0.0, 3.0, 3.0]])
    mask = torch.tensor([[0, 1, 1], [0, 1, 1]], dtype=torch.float32)
    w, m = truncated_is_weights(train, sampler, mask, cap=2.0, level="sequence")
    torch.testing.assert_close(w, torch.tensor([[0, math.exp(0.3), math.exp(0.3)], [0, 2.0, 2.0]]))
    assert float(m["tis_clipfrac"]) == pytest.approx(0.5)


def test_bad_arguments():
    x = torch.zeros(1, 2)
    with pytest.raises(ValueError, match="cap"):
        truncated_is_weights(x, x, x, cap=0)
    with pytest.raises(ValueError, match="level"):
        truncated_is_weights(x, x, x, level="row")
