from todo import TodoList


def test_add_returns_increasing_ids():
    todos = TodoList()
    assert [todos.add("a"), todos.add("b")] == [1, 2]
    assert todos.titles() == ["a", "b"]
