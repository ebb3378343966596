import itertools

from logparse import read_records


def test_other_lazy_reads():
    pulled = []

    def source():
        for i in range(100):
            pulled.append(i)
            yield f"WARN disk {i}" if i % 3 == 0 else "# skip"

    first = list(itertools.islice(read_records(source()), 3))
    assert first == [{"level": "WARN", "message": f"disk {i}"} for i in (0, 3, 6)]
    assert len(pulled) == 7
