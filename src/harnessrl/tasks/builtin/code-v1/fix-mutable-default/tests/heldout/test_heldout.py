from tags import add_tag


def test_other_calls_independent():
    results = [add_tag(t) for t in ("p", "q", "r")]
    assert results == [["p"], ["q"], ["r"]]
    assert len({id(r) for r in results}) == 3
