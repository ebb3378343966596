"""Ceiling / mismatch / decomposition / gain-prediction estimators on synthetic records with known truth."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from harnessrl.analysis import ceiling as cl
from harnessrl.analysis.klcontrol import binary_soft_value
from harnessrl.analysis.samples import Samples
from harnessrl.episode import Context, Episode, Turn
from harnessrl.evaluate.stats import pass_at_k
from harnessrl.records import RecordStore

BETA = 0.25
K = 50


def bern_kl(q: np.ndarray, p: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.where(q > 0, q * np.log(q / p), 0.0)
        b = np.where(q < 1, (1 - q) * np.log((1 - q) / (1 - p)), 0.0)
    return a + b


def synthetic(rng: np.random.Generator, p: dict[str, np.ndarray], q: dict[str, np.ndarray], n_ref: int, n_pol: int) -> tuple[Samples, Samples]:
    """Binary-outcome tasks: the trajectory is its outcome, so log-probs are log p / log q."""
    ref, pol = [], []
    for h in p:
        for t, (pt, qt) in enumerate(zip(p[h], q[h])):
            ys = rng.random(n_ref) < pt
            ref += [(f"t{t}", h, "base", float(y), np.log(pt if y else 1 - pt)) for y in ys]
            ys = rng.random(n_pol) < qt
            pol += [(f"t{t}", h, "trained", float(y), np.log(qt if y else 1 - qt), np.log(pt if y else 1 - pt)) for y in ys]

    def cols(rows, with_ref):
        z = list(zip(*rows))
        kw = dict(task=z[0], harness=z[1], policy=z[2], reward=z[3], logprob=z[4])
        if with_ref:
            kw["ref_logprob"] = z[5]
        else:
            kw["ref_logprob"] = z[4]
        return Samples.from_columns(**kw)

    return cols(ref, False), cols(pol, True)


@pytest.fixture(scope="module")
def world():
    rng = np.random.default_rng(0)
    T = 30
    p_wide = np.where(rng.random(T) < 0.2, 0.0, rng.uniform(0.03, 0.6, T))
    p_narrow = np.where(rng.random(T) < 0.45, 0.0, p_wide * 0.5)
    p = {"narrow": p_narrow, "wide": p_wide}
    q = {h: np.clip(v * 1.6, 0, 0.95) for h, v in p.items()}
    ref, pol = synthetic(rng, p, q, n_ref=200, n_pol=200)
    truth = {}
    for h in p:
        e = np.exp(1 / BETA)
        p_star = p[h] * e / (1 - p[h] + p[h] * e)  # the harness-optimal success probability
        truth[h] = {
            "hard_ceiling": np.mean(1 - (1 - p[h]) ** K),
            "soft_ceiling": np.mean(binary_soft_value(p[h], BETA)),
            "score": np.mean(q[h]),
            "kl_ref": np.mean(bern_kl(q[h], p[h])),
            "mismatch": np.mean(bern_kl(q[h], p_star)),
        }
    grid = cl.build_grid(ref, pol, beta=BETA, k=K, n_boot=400, seed=1)
    return grid, truth


def test_expected_max_is_the_subset_average_and_pass_at_k() -> None:
    rng = np.random.default_rng(2)
    x = rng.normal(size=7)
    for k in range(1, 8):
        brute = np.mean([max(c) for c in itertools.combinations(x, k)])
        assert float(cl.expected_max_at_k(x, k)) == pytest.approx(brute, rel=1e-12)
    y = (rng.random(40) < 0.1).astype(float)
    for k in (1, 5, 20, 40):
        assert float(cl.expected_max_at_k(y, k)) == pytest.approx(pass_at_k(40, int(y.sum()), k), abs=1e-12)
    with pytest.raises(ValueError, match="k <= n"):
        cl.expected_max_at_k(y, 41)


def test_estimates_cover_the_known_truth(world) -> None:
    grid, truth = world
    rows = {r["harness"]: r for r in cl.harness_table(grid)}
    for h, t in truth.items():
        for q, true in t.items():
            r = rows[h]
            assert r[f"{q}_lo"] <= true <= r[f"{q}_hi"], (h, q, true, r[q], r[f"{q}_lo"], r[f"{q}_hi"])
            assert r[q] == pytest.approx(true, abs=0.03 if q != "mismatch" else 0.1)
    # the identity J = V* - beta M holds for the estimates themselves
    for r in rows.values():
        assert r["objective"] == pytest.approx(r["soft_ceiling"] - BETA * r["mismatch"], abs=1e-9)
        assert r["headroom"] == pytest.approx(r["hard_ceiling"] - r["score"], abs=1e-12)


def test_decomposition_adds_up_in_every_replicate(world) -> None:
    grid, truth = world
    rows = {r["term"].split()[0] + " " + r["term"].split()[1]: r for r in cl.decomposition(grid, "narrow", "wide")}
    assert rows["score change"]["value"] == pytest.approx(rows["ceiling change"]["value"] - rows["headroom change"]["value"])
    dS = grid.harness_level("score")[1] - grid.harness_level("score")[0]
    dC = grid.harness_level("hard_ceiling")[1] - grid.harness_level("hard_ceiling")[0]
    dG = grid.harness_level("headroom")[1] - grid.harness_level("headroom")[0]
    np.testing.assert_allclose(dS, dC - dG, atol=1e-12)
    true_dC = truth["wide"]["hard_ceiling"] - truth["narrow"]["hard_ceiling"]
    assert rows["ceiling change"]["lo"] <= true_dC <= rows["ceiling change"]["hi"]
    assert rows["ceiling change"]["lo"] > 0  # the wide harness really has the higher ceiling


def test_reference_scored_against_itself_has_mismatch_kl_to_optimum() -> None:
    rng = np.random.default_rng(3)
    p = np.array([0.1, 0.4, 0.0, 0.7])
    ref, _ = synthetic(rng, {"h": p}, {"h": p}, n_ref=4000, n_pol=1)
    grid = cl.build_grid(ref, None, beta=0.5, k=10, n_boot=200)
    row = cl.harness_table(grid)[0]
    e = np.exp(1 / 0.5)
    p_star = p * e / (1 - p + p * e)
    assert row["kl_ref"] == 0.0
    assert row["mismatch"] == pytest.approx(np.mean(bern_kl(p, p_star)), abs=0.02)
    assert row["score"] == pytest.approx(p.mean(), abs=0.02)


def test_mismatch_is_nan_without_logprobs_and_cells_are_reported() -> None:
    rng = np.random.default_rng(4)
    ref = Samples.from_columns(task=["a"] * 20 + ["b"] * 20, harness=["h"] * 40, reward=(rng.random(40) < 0.3).astype(float))
    pol = Samples.from_columns(task=["a"] * 10 + ["b"] * 10, harness=["h"] * 20, reward=np.ones(20))
    grid = cl.build_grid(ref, pol, beta=0.2, n_boot=50)
    row = cl.harness_table(grid)[0]
    assert np.isnan(row["mismatch"]) and np.isnan(row["kl_ref"])
    assert row["soft_gap"] == pytest.approx(row["soft_ceiling"] - 1.0)
    cells = cl.cell_table(grid)
    assert [(c["task"], c["n_ref"], c["n_policy"]) for c in cells] == [("a", 20, 10), ("b", 20, 10)]
    assert grid.k == 20


def test_clear_errors() -> None:
    ref = Samples.from_columns(task=["a", "a", "b"], harness=["h", "h", "h"], reward=[0.0, 1.0, 1.0])
    with pytest.raises(ValueError, match="k=3 exceeds .* task 'b'"):
        cl.build_grid(ref, k=3, n_boot=10)
    with pytest.raises(ValueError, match="no reference samples for harness"):
        cl.build_grid(ref, harnesses=["h", "zzz"], n_boot=10)


def _gain_world(rng, kappa_rule):
    T, n = 25, 120
    scales = {"h1": 1.0, "h2": 0.6, "h3": 0.3, "h4": 0.8}
    base_p = rng.uniform(0.0, 0.5, T) * (rng.random(T) < 0.8)
    ref_rows, after_rows = [], []
    for h, s in scales.items():
        p = base_p * s
        c = 1 - (1 - p) ** 40
        q_after = kappa_rule(h, p, c)
        for t in range(T):
            ref_rows += [(f"t{t}", h, float(y)) for y in rng.random(n) < p[t]]
            after_rows += [(f"t{t}", h, float(y)) for y in rng.random(n) < q_after[t]]
    mk = lambda rows, pid: Samples.from_columns(task=[r[0] for r in rows], harness=[r[1] for r in rows], reward=[r[2] for r in rows], policy=[pid] * len(rows))  # noqa: E731
    return mk(ref_rows, "base"), mk(after_rows, "after")


def test_gain_prediction_recovers_kappa_and_predicts_the_held_out_harness() -> None:
    rng = np.random.default_rng(5)
    ref, after = _gain_world(rng, lambda h, p, c: p + 0.3 * (c - p))
    gp = cl.gain_prediction(ref, ref, after, holdout=["h4"], k=40, n_boot=300)
    assert gp.fit_on == ["h1", "h2", "h3"]
    assert gp.kappa.lo <= 0.3 <= gp.kappa.hi
    row = gp.rows[0]
    assert row["observed_lo"] <= row["predicted_gain"] <= row["observed_hi"]
    assert row["error_lo"] <= 0 <= row["error_hi"]


def test_gain_prediction_can_fail() -> None:
    """When gains ignore the headroom, the held-out error interval excludes zero."""
    rng = np.random.default_rng(6)
    ref, after = _gain_world(rng, lambda h, p, c: p + (0.25 if h == "h4" else 0.5) * (c - p) + (0.2 if h == "h4" else 0.0))
    gp = cl.gain_prediction(ref, ref, after, holdout=["h4"], k=40, n_boot=300)
    assert gp.rows[0]["error_lo"] > 0


def test_samples_from_store_matches_from_episodes(tmp_path) -> None:
    eps = []
    for i in range(12):
        lp = -float(i) * 0.1
        eps.append(
            Episode(
                context=Context(task_id=f"t{i % 3}", harness_id="h" if i % 2 else "g", level=i % 4),
                turns=[Turn(token_ids=[1, 2, 3], logprobs=[-0.5, lp, -0.25], loss_mask=[0, 1, 1])] if i % 5 else [],
                reward=float(i % 2),
                success=bool(i % 2),
                outcome="ok" if i % 2 else "miss",
                policy_id="p",
                metadata={"ref_logprob": -1.0} if i % 3 else {},
            )
        )
    store = RecordStore(tmp_path / "s")
    store.append(eps)
    a, b = Samples.from_store(store), Samples.from_episodes(eps)
    order_a, order_b = np.argsort([e for e in a.task], kind="stable"), np.argsort(b.task, kind="stable")
    for col in ("task", "harness", "outcome", "success", "level"):
        assert list(getattr(a, col)[order_a]) == list(getattr(b, col)[order_b])
    np.testing.assert_allclose(a.logprob[order_a], b.logprob[order_b], atol=1e-6)
    np.testing.assert_allclose(a.ref_logprob[order_a], b.ref_logprob[order_b])
    assert np.isnan(b.logprob[0]) and b.logprob[1] == pytest.approx(-0.35)
