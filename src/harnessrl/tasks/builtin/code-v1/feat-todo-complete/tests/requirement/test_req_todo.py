import pytest
from todo import TodoList


def test_complete_and_filter():
    todos = TodoList()
    a = todos.add("write")
    todos.add("test")
    c = todos.add("ship")
    todos.complete(c)
    todos.complete(a)
    assert todos.pending() == ["test"]
    assert todos.done() == ["write", "ship"]


def test_unknown_id():
    with pytest.raises(KeyError):
        TodoList().complete(99)
