import pytest
from stack import Stack


def test_peek_other_values():
    s = Stack(["a"])
    s.push("b")
    s.push("c")
    assert s.peek() == "c" and len(s) == 3
    s.pop()
    s.pop()
    assert s.peek() == "a"


def test_peek_after_emptying():
    s = Stack([5])
    s.pop()
    assert s.is_empty()
    with pytest.raises(IndexError, match="peek from empty stack"):
        s.peek()
