import pytest
from pages import page_count, paginate


def test_page_count():
    assert page_count(10, 3) == 4
    assert page_count(0, 5) == 1


def test_page_zero_rejected():
    with pytest.raises(ValueError):
        paginate([1, 2], 0, 1)


def test_past_the_end_is_empty():
    assert paginate(list(range(10)), 9, 3) == []
