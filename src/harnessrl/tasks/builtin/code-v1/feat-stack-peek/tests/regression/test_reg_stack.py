import pytest
from stack import Stack


def test_push_pop_order():
    s = Stack()
    for i in range(3):
        s.push(i)
    assert [s.pop(), s.pop(), s.pop()] == [2, 1, 0]


def test_pop_empty():
    with pytest.raises(IndexError):
        Stack().pop()
