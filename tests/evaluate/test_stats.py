import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harnessrl.evaluate.stats import (
    binary_signal_fraction, bootstrap_ci, iqm, pass_at_k, pass_at_k_ci, stratified_bootstrap_ci,
)


@settings(max_examples=200, deadline=None)
@given(n=st.integers(1, 12), data=st.data())
def test_pass_at_k_equals_enumeration(n, data):
    c = data.draw(st.integers(0, n))
    k = data.draw(st.integers(1, n))
    # Brute force: the fraction of k-subsets of n samples that contain at least one pass.
    samples = [1] * c + [0] * (n - c)
    subsets = list(itertools.combinations(range(n), k))
    brute = sum(any(samples[i] for i in s) for s in subsets) / len(subsets)
    assert pass_at_k(n, c, k) == pytest.approx(brute, abs=1e-12)
    assert pass_at_k(n, c, k) == pytest.approx(1 - math.comb(n - c, k) / math.comb(n, k), abs=1e-12)


def test_pass_at_k_vectorised_and_errors():
    out = pass_at_k(np.array([10, 10, 200]), np.array([0, 10, 3]), 5)
    assert out[0] == 0.0 and out[1] == 1.0 and 0 < out[2] < 1
    with pytest.raises(ValueError, match="k <= n"):
        pass_at_k(3, 1, 5)
    assert pass_at_k_ci(np.array([4, 4]), np.array([1, 3]), 1).value == pytest.approx(0.5)


def test_iqm_is_trimmed_mean():
    x = np.arange(8.0)  # middle half: 2, 3, 4, 5
    assert iqm(x) == pytest.approx(3.5)
    assert iqm(np.array([[0, 100], [1, 2], [3, 4], [5, 6]])) == pytest.approx(np.mean([2, 3, 4, 5]))


def test_bootstrap_covers_the_mean_and_handles_degenerate():
    rng = np.random.default_rng(0)
    x = rng.normal(1.0, 1.0, 400)
    est = bootstrap_ci(x)
    assert est.lo < 1.0 < est.hi and est.lo < est.value < est.hi
    assert est.hi - est.lo == pytest.approx(2 * 1.96 / 20, rel=0.2)  # ~ 2 * 1.96 sigma / sqrt(n)
    same = bootstrap_ci(np.ones(5))
    assert (same.value, same.lo, same.hi) == (1.0, 1.0, 1.0)


def test_stratified_bootstrap_keeps_tasks_apart():
    rng = np.random.default_rng(1)
    scores = np.stack([rng.normal(0, 0.01, 10), rng.normal(100, 0.01, 10)], axis=1)  # 10 runs x 2 tasks
    est = stratified_bootstrap_ci(scores, statistic=lambda s: s.mean())
    # Runs are resampled within each task, so every resample keeps both tasks: the mean stays ~50.
    assert est.lo > 49.9 and est.hi < 50.1


def test_signal_fraction_matches_anchor_numbers():
    assert binary_signal_fraction(0.0214, 8) == pytest.approx(0.159, abs=1e-3)
    assert binary_signal_fraction(0.0214, 32) == pytest.approx(0.500, abs=1e-3)
    assert binary_signal_fraction(0.0927, 8) == pytest.approx(0.541, abs=1e-3)
    assert binary_signal_fraction(0.0927, 32) == pytest.approx(0.956, abs=1e-3)
