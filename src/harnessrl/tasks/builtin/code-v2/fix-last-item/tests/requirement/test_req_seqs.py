from seqs import last


def test_last_of_list():
    assert last([1, 2, 3]) == 3


def test_last_of_string():
    assert last("abc") == "c"
