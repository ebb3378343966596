from seqs import last


def test_other_sequences():
    assert last([42]) == 42
    assert last((4, 5)) == 5
    assert last(range(10)) == 9
