"""Hypothesis strategies for random RL batches: shapes, masks, episode ends, ragged groups."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

FLOATS = st.floats(-5.0, 5.0, allow_nan=False, allow_infinity=False, width=64)
LOGPS = st.floats(-3.0, 0.0, allow_nan=False, allow_infinity=False, width=64)


@st.composite
def shapes(draw, max_b: int = 6, max_t: int = 10):
    return draw(st.integers(1, max_b)), draw(st.integers(1, max_t))


def arrays(shape, elements=FLOATS):
    return hnp.arrays(np.float64, shape, elements=elements)


def masks(shape, min_on: float = 0.0):
    return hnp.arrays(np.bool_, shape)


@st.composite
def gae_batches(draw, masked: bool):
    B, T = draw(shapes())
    rewards = draw(arrays((B, T)))
    values = draw(arrays((B, T)))
    final_values = draw(arrays((B, T)))
    last = draw(arrays((B,)))
    mask = draw(masks((B, T))) if masked else np.ones((B, T), bool)
    ends = draw(masks((B, T))) & mask
    kind = draw(masks((B, T)))  # True = terminated, False = truncated
    return dict(
        rewards=rewards, values=values, mask=mask, terminated=ends & kind, truncated=ends & ~kind,
        final_values=final_values, last_values=last,
        gamma=draw(st.floats(0.0, 1.0)), lam=draw(st.floats(0.0, 1.0)),
    )


@st.composite
def grouped_rewards(draw, max_groups: int = 6, max_size: int = 5):
    """Ragged groups in shuffled order; rewards drawn from a small set so ties and constant groups occur."""
    sizes = draw(st.lists(st.integers(1, max_size), min_size=1, max_size=max_groups))
    tasks = [f"task-{i % 3}" for i in range(len(sizes))]
    harnesses = [f"h{i}" for i in range(len(sizes))]
    keys = [(tasks[g], harnesses[g]) for g, n in enumerate(sizes) for _ in range(n)]
    order = draw(st.permutations(range(len(keys))))
    keys = [keys[i] for i in order]
    value = st.one_of(st.sampled_from([0.0, 1.0, 0.5]), FLOATS)
    rewards = np.array(draw(st.lists(value, min_size=len(keys), max_size=len(keys))), dtype=np.float64)
    return rewards, keys


@st.composite
def policy_batches(draw, max_b: int = 5, max_t: int = 8):
    B, T = draw(shapes(max_b, max_t))
    logp = draw(arrays((B, T), LOGPS))
    # old log-probs near the new ones so that ratios land on both sides of the clip range
    delta = draw(arrays((B, T), st.floats(-0.5, 0.5, width=64)))
    adv = draw(arrays((B, T)))
    mask = draw(masks((B, T)))
    return dict(logp=logp, old=logp + delta, adv=adv, mask=mask)
