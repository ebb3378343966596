from filters import evens


def test_other_lists():
    assert evens([0, -2, -3, 7]) == [0, -2]
    assert evens([1, 3]) == []
