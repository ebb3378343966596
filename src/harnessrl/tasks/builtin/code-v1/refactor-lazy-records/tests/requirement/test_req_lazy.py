import inspect
import itertools

from logparse import read_records


def test_is_generator():
    assert inspect.isgeneratorfunction(read_records)


def test_reads_only_what_is_needed():
    pulled = []

    def source():
        for i in range(1000):
            pulled.append(i)
            yield "# comment" if i % 2 else f"INFO line {i}"

    first = list(itertools.islice(read_records(source()), 2))
    assert first == [{"level": "INFO", "message": "line 0"}, {"level": "INFO", "message": "line 2"}]
    assert len(pulled) == 3
