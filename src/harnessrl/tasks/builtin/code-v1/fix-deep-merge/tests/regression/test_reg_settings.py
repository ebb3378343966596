from settings import deep_merge, load


def test_flat_override():
    assert deep_merge({"a": 1, "b": 2}, {"b": 3}) == {"a": 1, "b": 3}


def test_new_keys_and_scalars_replace_dicts():
    assert load({"debug": True})["debug"] is True
    assert deep_merge({"x": {"y": 1}}, {"x": 5}) == {"x": 5}
