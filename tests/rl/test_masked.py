"""Masked reductions against Python loops (float64, 1e-6)."""

from __future__ import annotations

import math

import numpy as np
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from harnessrl.rl.masked import masked_mean, masked_sum, masked_var, masked_whiten
from tests.rl.strategies import arrays, masks, shapes

TOL = dict(rtol=1e-6, atol=1e-6)
t64 = lambda x: torch.as_tensor(np.asarray(x), dtype=torch.float64)  # noqa: E731


@settings(max_examples=100, deadline=None)
@given(shapes(), st.booleans(), st.data())
def test_masked_reductions_match_loops(shape, unbiased, data):
    x, m = data.draw(arrays(shape)), data.draw(masks(shape))
    vals = [float(v) for v, keep in zip(x.ravel(), m.ravel()) if keep]
    n = len(vals)
    mean = sum(vals) / n if n else 0.0
    torch.testing.assert_close(masked_sum(t64(x), t64(m)), t64(sum(vals)), **TOL)
    torch.testing.assert_close(masked_mean(t64(x), t64(m)), t64(mean), **TOL)
    rows = [sum(float(v) for v, keep in zip(xr, mr) if keep) for xr, mr in zip(x, m)]
    torch.testing.assert_close(masked_sum(t64(x), t64(m), dim=-1), t64(rows), **TOL)
    var = sum((v - mean) ** 2 for v in vals) / max((n - 1 if unbiased else n), 1)
    torch.testing.assert_close(masked_var(t64(x), t64(m), unbiased), t64(var), **TOL)
    white = masked_whiten(t64(x), t64(m))  # whitening uses the unbiased variance
    unbiased_var = sum((v - mean) ** 2 for v in vals) / max(n - 1, 1)
    want = [[(float(v) - mean) / math.sqrt(unbiased_var + 1e-8) if keep else 0.0 for v, keep in zip(xr, mr)]
            for xr, mr in zip(x, m)]
    torch.testing.assert_close(white, t64(want), **TOL)
