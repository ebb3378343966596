import pytest

import pricing


def test_other_totals():
    assert pricing.calculate_total([2.0, 3.0], tax_rate=0.1) == pytest.approx(5.5)
    with pytest.warns(DeprecationWarning, match="calculate_total"):
        assert pricing.calcTotal([1.0, 2.0, 3.0]) == pytest.approx(6.0)
