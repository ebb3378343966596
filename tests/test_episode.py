import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harnessrl.episode import SCHEMA, Context, Episode, Turn, from_arrow, to_arrow
from tests.helpers import make_episode


def assert_same(a: Episode, b: Episode) -> None:
    for name in Episode.__slots__:
        if name != "turns":
            assert getattr(a, name) == getattr(b, name), name
    assert len(a.turns) == len(b.turns)
    for ta, tb in zip(a.turns, b.turns):
        for name in Turn.__slots__:
            va, vb = getattr(ta, name), getattr(tb, name)
            if isinstance(va, np.ndarray):
                assert va.dtype == vb.dtype and np.array_equal(va, vb), name
            else:
                assert va == vb, name


def test_round_trip_every_field():
    eps = [make_episode(i) for i in range(10)] + [Episode(context=Context())]
    table = to_arrow(eps)
    assert table.schema.equals(SCHEMA)
    back = from_arrow(table)
    for a, b in zip(eps, back):
        assert_same(a, b)


def test_round_trip_of_a_slice():
    eps = [make_episode(i) for i in range(10)]
    back = from_arrow(to_arrow(eps).slice(3, 4))
    for a, b in zip(eps[3:7], back):
        assert_same(a, b)


text = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=40)


@settings(max_examples=50, deadline=None)
@given(
    obs=st.lists(text, max_size=4),
    tokens=st.lists(st.lists(st.integers(0, 2**31 - 1), max_size=20), min_size=4, max_size=4),
    meta=st.dictionaries(text, st.integers() | text | st.booleans(), max_size=3),
    level=st.none() | st.integers(-(2**62), 2**62),
)
def test_round_trip_arbitrary(obs, tokens, meta, level):
    turns = [Turn(observation=o, action=o[::-1], token_ids=tokens[i], loss_mask=[1] * len(tokens[i])) for i, o in enumerate(obs)]
    ep = Episode(context=Context(task_id="t", level=level), turns=turns, metadata=meta)
    assert_same(ep, from_arrow(to_arrow([ep]))[0])


def test_bad_fields_are_named():
    with pytest.raises(ValueError, match="Turn arrays must align"):
        Turn(token_ids=[1, 2], logprobs=[0.1], loss_mask=[1, 1])
    with pytest.raises(ValueError, match="Episode.status='weird'; allowed: ok"):
        Episode(context=Context(), status="weird")
    with pytest.raises(ValueError, match="Turn.status"):
        Turn(status="nope")
