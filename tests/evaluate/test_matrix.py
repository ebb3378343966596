"""Matrices from episodes: cells, harness summary with CIs, unbiased pass@k, failure modes."""

import math

import numpy as np

from harnessrl.episode import Context, Episode, Turn
from harnessrl.evaluate.matrix import cell_table, failure_modes, harness_summary, pivot
from harnessrl.evaluate.stats import pass_at_k


def ep(task, harness, success, outcome="solved", status="ok", turns=2, tokens=(10, 5), fmt=0):
    return Episode(context=Context(task_id=task, harness_id=harness), turns=[Turn() for _ in range(turns)],
                   success=success, outcome=outcome if not success else "solved", status=status,
                   tokens_in=tokens[0], tokens_out=tokens[1], format_errors=fmt)


def episodes():
    out = []
    # harness A: task t1 solved 3/4, t2 solved 0/4 (requirement dropped twice, format error twice)
    out += [ep("t1", "A", True) for _ in range(3)] + [ep("t1", "A", False, "broke_existing")]
    out += [ep("t2", "A", False, "dropped_requirement") for _ in range(2)]
    out += [ep("t2", "A", False, "dropped_requirement", status="format_error", fmt=4) for _ in range(2)]
    # harness B: everything solved in one turn
    out += [ep(t, "B", True, turns=1, tokens=(100, 20)) for t in ("t1", "t2") for _ in range(4)]
    return out


def test_failure_modes_per_episode():
    assert failure_modes(ep("t", "h", True)) == []
    assert failure_modes(ep("t", "h", False, "dropped_requirement+broke_existing")) == ["dropped_requirement", "broke_existing"]
    assert failure_modes(ep("t", "h", False, "dropped_requirement", status="timeout")) == ["timeout", "dropped_requirement"]
    assert failure_modes(ep("t", "h", False, "test_error")) == ["test_error"]


def test_cells_hold_counts_pass_at_k_and_modes():
    cells = {(r["task_id"], r["harness_id"]): r for r in cell_table(episodes(), ks=(1, 2, 8))}
    a1 = cells[("t1", "A")]
    assert (a1["n"], a1["solved"], a1["pass@1"]) == (4, 3, 0.75)
    assert math.isclose(a1["pass@2"], pass_at_k(4, 3, 2)) and math.isclose(a1["pass@2"], 1.0)  # 1 failure cannot fill 2 draws
    assert math.isnan(a1["pass@8"])  # k > n: undefined, never extrapolated
    assert a1["broke_existing"] == 1 and a1["dropped_requirement"] == 0
    a2 = cells[("t2", "A")]
    assert a2["dropped_requirement"] == 4 and a2["format_error"] == 2 and a2["format_errors"] == 2.0
    assert cells[("t1", "B")]["mean_tokens"] == 120 and cells[("t1", "B")]["mean_turns"] == 1


def test_harness_summary_averages_over_tasks_with_bootstrap_cis():
    rows = {r["harness_id"]: r for r in harness_summary(episodes(), ks=(1, 2))}
    a = rows["A"]
    assert a["tasks"] == 2 and a["episodes"] == 8 and math.isclose(a["pass@1"], (0.75 + 0.0) / 2)
    assert a["pass@1_lo"] <= a["pass@1"] <= a["pass@1_hi"] and a["pass@1_lo"] == 0.0 and a["pass@1_hi"] == 0.75
    assert math.isclose(a["pass@2"], (pass_at_k(4, 3, 2) + pass_at_k(4, 0, 2)) / 2)
    assert math.isclose(a["rate_dropped_requirement"], 4 / 8) and math.isclose(a["rate_format_error"], 2 / 8)
    assert math.isclose(a["format_errors_per_episode"], 1.0)
    b = rows["B"]
    assert b["pass@1"] == b["pass@1_lo"] == b["pass@1_hi"] == 1.0 and b["rate_broke_existing"] == 0.0


def test_pivot_marks_missing_cells():
    tasks, harnesses, grid = pivot(cell_table([ep("t1", "A", True), ep("t2", "B", False, "dropped_requirement")]))
    assert tasks == ["t1", "t2"] and harnesses == ["A", "B"]
    assert grid[0, 0] == 1.0 and grid[1, 1] == 0.0 and np.isnan(grid[0, 1]) and np.isnan(grid[1, 0])
