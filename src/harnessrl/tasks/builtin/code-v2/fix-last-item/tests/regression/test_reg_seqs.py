from seqs import first


def test_first():
    assert first([9, 8]) == 9
