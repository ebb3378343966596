import inspect
import itertools

from logparse import read_records


def test_is_generator():
    assert inspect.isgeneratorfunction(read_records)


def test_works_on_endless_input():
    endless = itertools.cycle(["INFO a", "# c", "WARN b"])
    first = list(itertools.islice(read_records(endless), 3))
    assert [r["level"] for r in first] == ["INFO", "WARN", "INFO"]
