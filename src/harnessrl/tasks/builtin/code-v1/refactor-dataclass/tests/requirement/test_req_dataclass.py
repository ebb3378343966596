import dataclasses

import pytest
from points import Point


def test_is_frozen_dataclass():
    assert dataclasses.is_dataclass(Point)
    assert [f.name for f in dataclasses.fields(Point)] == ["x", "y"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        Point(1, 2).x = 5


def test_hashable():
    assert len({Point(1, 2), Point(1, 2), Point(2, 1)}) == 2
