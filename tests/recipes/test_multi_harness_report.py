"""The multi-harness report's learning curves: each update drawn at its number, a run of one update too."""

import numpy as np

from harnessrl.recipes.multi_harness_report import _curves


def _results(updates: int) -> list[dict]:
    return [{"rule": rule, "metrics": [{"solve/a": 0.5, "signal_fraction": sf} for _ in range(updates)]}
            for rule, sf in (("within", 0.3), ("cross", 1.0))]


def test_a_one_update_run_draws_a_visible_point_per_rule_at_update_one():
    fig = _curves(_results(1), ["within", "cross"], ["a"])
    signal = fig.axes[-1].get_lines()
    assert [line.get_label() for line in signal] == ["within", "cross"]
    for line, y in zip(signal, (0.3, 1.0)):
        assert line.get_marker() not in (None, "", "None")  # a single point has no segment to draw
        assert list(line.get_xdata()) == [1] and list(line.get_ydata()) == [y]
    assert [t for t in fig.axes[-1].get_xticks() if 0.5 <= t <= 1.5] == [1]


def test_a_long_run_is_smoothed_and_each_point_sits_on_the_update_its_window_ends_on():
    fig = _curves(_results(8), ["within", "cross"], ["a"])
    line = fig.axes[0].get_lines()[0]
    assert list(line.get_xdata()) == [5, 6, 7, 8] and np.allclose(line.get_ydata(), 0.5)
