import pytest
from stack import Stack


def test_peek_does_not_remove():
    s = Stack([1, 2])
    assert s.peek() == 2
    assert s.pop() == 2 and s.peek() == 1


def test_peek_empty():
    with pytest.raises(IndexError, match="peek from empty stack"):
        Stack().peek()


def test_len_and_is_empty():
    s = Stack()
    assert len(s) == 0 and s.is_empty()
    s.push("x")
    assert len(s) == 1 and not s.is_empty()
