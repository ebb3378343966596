import pytest
from todo import TodoList


def test_other_order():
    todos = TodoList()
    ids = [todos.add(t) for t in ("a", "b", "c", "d")]
    todos.complete(ids[1])
    assert todos.pending() == ["a", "c", "d"]
    assert todos.done() == ["b"]


def test_other_unknown_id():
    todos = TodoList()
    todos.add("x")
    with pytest.raises(KeyError):
        todos.complete(12345)
