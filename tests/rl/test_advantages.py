"""Advantage estimators against slow Python-loop references (float64, 1e-6), plus semantics."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from harnessrl.rl import advantages as A
from tests.rl import reference as ref
from tests.rl.strategies import gae_batches, grouped_rewards

TOL = dict(rtol=1e-6, atol=1e-6)
t64 = lambda x: torch.as_tensor(np.asarray(x), dtype=torch.float64)  # noqa: E731


def _run_gae(batch, use_mask: bool):
    return A.gae(
        t64(batch["rewards"]), t64(batch["values"]), t64(batch["mask"]) if use_mask else None,
        gamma=batch["gamma"], lam=batch["lam"],
        terminated=torch.as_tensor(batch["terminated"]), truncated=torch.as_tensor(batch["truncated"]),
        final_values=t64(batch["final_values"]), last_values=t64(batch["last_values"]),
    )


def _ref_gae(batch):
    b = {k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in batch.items()}
    return ref.gae(b["rewards"], b["values"], b["mask"], b["gamma"], b["lam"], b["terminated"],
                   b["truncated"], b["final_values"], b["last_values"])


@settings(max_examples=150, deadline=None)
@given(gae_batches(masked=False))
def test_gae_dense_matches_reference(batch):
    adv, ret = _run_gae(batch, use_mask=False)
    radv, rret = _ref_gae(batch)
    torch.testing.assert_close(adv, t64(radv), **TOL)
    torch.testing.assert_close(ret, t64(rret), **TOL)


@settings(max_examples=150, deadline=None)
@given(gae_batches(masked=True))
def test_gae_masked_matches_reference(batch):
    adv, ret = _run_gae(batch, use_mask=True)
    radv, rret = _ref_gae(batch)
    torch.testing.assert_close(adv, t64(radv), **TOL)
    torch.testing.assert_close(ret, t64(rret), **TOL)
    off = ~torch.as_tensor(batch["mask"])
    assert torch.all(adv[off] == 0) and torch.all(ret[off] == 0)


@settings(max_examples=50, deadline=None)
@given(gae_batches(masked=False))
def test_gae_all_ones_mask_equals_dense(batch):
    dense = _run_gae(batch, use_mask=False)
    masked = _run_gae(batch, use_mask=True)
    for x, y in zip(dense, masked):
        torch.testing.assert_close(x, y, **TOL)


def test_gae_masked_tool_tokens_are_skipped():
    # actions at t=0 and t=3; t=1,2 are tool output. The recursion links 0 -> 3 directly.
    r = t64([[0.0, 0.5, 0.0, 1.0]])
    v = t64([[0.2, 9.0, 9.0, 0.4]])  # values on tool tokens must be ignored
    m = t64([[1, 0, 0, 1]])
    adv, _ = A.gae(r, v, m, gamma=0.9, lam=0.8)
    a3 = 1.0 - 0.4
    a0 = (0.0 + 0.5) + 0.9 * 0.4 - 0.2 + 0.9 * 0.8 * a3  # tool reward 0.5 credited to the action at t=0
    torch.testing.assert_close(adv, t64([[a0, 0.0, 0.0, a3]]))


def test_truncation_bootstraps_and_termination_does_not():
    r, v = t64([[1.0], [1.0]]), t64([[0.5], [0.5]])
    final = t64([[10.0], [10.0]])
    term = torch.tensor([[True], [False]])
    trunc = torch.tensor([[False], [True]])
    adv, ret = A.gae(r, v, gamma=0.9, lam=0.95, terminated=term, truncated=trunc, final_values=final,
                     last_values=t64([100.0, 100.0]))
    torch.testing.assert_close(ret[:, 0], t64([1.0, 1.0 + 0.9 * 10.0]))  # never the next episode's 100


def test_gae_errors_are_clear():
    r = torch.zeros(2, 3)
    with pytest.raises(ValueError, match="final_values"):
        A.gae(r, r, truncated=torch.ones(2, 3, dtype=torch.bool))
    with pytest.raises(ValueError, match="masked step"):
        A.gae(r, r, torch.zeros(2, 3), terminated=torch.ones(2, 3, dtype=torch.bool))
    with pytest.raises(ValueError, match="shape"):
        A.gae(r, torch.zeros(2, 4))


@settings(max_examples=200, deadline=None)
@given(grouped_rewards(), st.sampled_from(["group", "batch", "none"]), st.sampled_from([1e-6, 1e-4]))
def test_grpo_matches_reference(data, scale, eps):
    rewards, keys = data
    out = A.group_advantages(t64(rewards), keys, rule="within", estimator="grpo", scale=scale, eps=eps)
    torch.testing.assert_close(out.advantages, t64(ref.grpo(rewards.tolist(), keys, scale, eps)), **TOL)
    groups = ref.groups(keys).values()
    signal = [g for g in groups if len(g) > 1 and len({rewards[i] for i in g}) > 1]
    assert out.num_groups == len(groups)
    assert out.signal_groups == len(signal)
    assert out.singleton_groups == sum(len(g) == 1 for g in groups)
    assert out.constant_groups == len(groups) - len(signal) - out.singleton_groups
    assert out.signal_fraction == pytest.approx(len(signal) / len(groups))


@settings(max_examples=200, deadline=None)
@given(grouped_rewards(), st.sampled_from(["within", "cross", "batch"]))
def test_rloo_and_dr_grpo_match_reference(data, rule):
    rewards, keys = data
    rule_keys = [{"within": k, "cross": k[0], "batch": 0}[rule] for k in keys]
    out = A.group_advantages(t64(rewards), keys, rule=rule, estimator="rloo")
    torch.testing.assert_close(out.advantages, t64(ref.rloo(rewards.tolist(), rule_keys)), **TOL)
    dr = A.group_advantages(t64(rewards), keys, rule=rule, estimator="dr_grpo")
    torch.testing.assert_close(dr.advantages, t64(ref.grpo(rewards.tolist(), rule_keys, "none", 0.0)), **TOL)


def test_every_group_estimator_takes_the_same_keywords():
    rewards = t64([1.0, 0.0, 1.0, 1.0])
    keys = [("a", "x"), ("a", "x"), ("b", "x"), ("b", "x")]
    for est in ("grpo", "rloo", "dr_grpo"):
        A.group_advantages(rewards, keys, estimator=est, eps=1e-4)  # used by grpo, accepted by all
        A.group_advantages(rewards, keys, estimator=est, scale="none", eps=1e-4)
    rloo = A.group_advantages(rewards, keys, estimator="rloo", eps=0.5).advantages
    assert rloo.tolist() == [1.0, -1.0, 0.0, 0.0]  # eps does not enter the leave-one-out baseline
    for est in ("rloo", "dr_grpo"):
        with pytest.raises(ValueError, match="scale"):
            A.group_advantages(rewards, keys, estimator=est, scale="group")


def test_singleton_and_constant_groups_get_zero_not_the_raw_reward():
    rewards = t64([5.0, 1.0, 1.0, 0.0, 1.0])
    keys = [("a", "x"), ("b", "x"), ("b", "x"), ("c", "x"), ("c", "x")]
    for est in ("grpo", "rloo", "dr_grpo"):
        out = A.group_advantages(rewards, keys, estimator=est)
        assert out.advantages[:3].tolist() == [0.0, 0.0, 0.0]
        assert (out.singleton_groups, out.constant_groups, out.signal_groups) == (1, 1, 1)
        assert out.signal_fraction == pytest.approx(1 / 3)


def test_within_vs_cross_exact_values():
    # reward = task effect + harness effect + within-pair noise (+-1). Harness h2 is 2 better.
    task = {"t1": 10.0, "t2": 20.0}
    harness = {"h1": 0.0, "h2": 2.0}
    keys, rewards = [], []
    for t in task:
        for h in harness:
            for e in (+1.0, -1.0):
                keys.append((t, h))
                rewards.append(task[t] + harness[h] + e)
    order = [5, 0, 7, 2, 4, 1, 6, 3]  # shuffled: grouping must key on context, not position
    keys, rewards = [keys[i] for i in order], t64([rewards[i] for i in order])
    noise = t64([+1.0 if i % 2 == 0 else -1.0 for i in order])
    harness_effect = t64([harness[keys[j][1]] - 1.0 for j in range(8)])  # h - mean_h = -1 / +1

    within = A.group_advantages(rewards, keys, rule="within", estimator="dr_grpo").advantages
    cross = A.group_advantages(rewards, keys, rule="cross", estimator="dr_grpo").advantages
    assert within.tolist() == noise.tolist()  # harness main effect removed
    assert cross.tolist() == (noise + harness_effect).tolist()  # harness main effect kept
    # Scaled (GRPO): within each group std = sqrt(2), so A = +-1/sqrt(2); cross std over 4 = sqrt(8/3)
    w = A.group_advantages(rewards, keys, rule="within", estimator="grpo", eps=0.0).advantages
    c = A.group_advantages(rewards, keys, rule="cross", estimator="grpo", eps=0.0).advantages
    torch.testing.assert_close(w, noise / 2**0.5)
    torch.testing.assert_close(c, (noise + harness_effect) / (8 / 3) ** 0.5)


@dataclass
class Ctx:
    task_id: str
    harness_id: str


def test_group_index_accepts_tuples_mappings_objects_columns_and_callables():
    rows = [("a", "x"), ("a", "y"), ("b", "x"), ("a", "x")]
    expect = {"within": [0, 1, 2, 0], "cross": [0, 0, 1, 0], "batch": [0, 0, 0, 0]}
    forms = [rows, [dict(task_id=t, harness_id=h) for t, h in rows], [Ctx(t, h) for t, h in rows],
             {"task_id": [t for t, _ in rows], "harness_id": [h for _, h in rows]}]
    for rule, want in expect.items():
        for form in forms:
            idx, n = A.group_index(form, rule)
            assert idx.tolist() == want and n == max(want) + 1
    idx, n = A.group_index(rows, lambda c: c[1])  # a user rule: group by harness
    assert idx.tolist() == [0, 1, 0, 0] and n == 2
    with pytest.raises(KeyError, match="within"):
        A.group_index(rows, "withn")
    with pytest.raises(ValueError, match="harness_id"):
        A.group_index(["a", "b"], "within")
    with pytest.raises(ValueError, match="contexts"):
        A.group_advantages(t64([1.0, 2.0]), rows)


def test_to_tokens_broadcasts_and_masks():
    out = A.to_tokens(t64([1.0, -2.0]), torch.tensor([[1, 0, 1], [0, 1, 1]]))
    assert out.tolist() == [[1.0, 0.0, 1.0], [0.0, -2.0, -2.0]]
