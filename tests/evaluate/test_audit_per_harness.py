"""The audit's per-harness table: what each harness (a real program or a reconstruction) ran of
every attack, and how each ended; counted from the cells, holes shown as holes."""

from __future__ import annotations

from harnessrl.commands.audit import per_harness_counts, print_per_harness
from harnessrl.commands.common import console
from harnessrl.evaluate.audit import AuditCell, AuditResult


def _result() -> AuditResult:
    cells = [AuditCell("t1", "qwen-code-cli", "fake-summary", "blocked"),
             AuditCell("t2", "qwen-code-cli", "fake-summary", "blocked"),
             AuditCell("t1", "aider-cli", "fake-summary", "scored"),
             AuditCell("t2", "aider-cli", "fake-summary", "blocked"),
             AuditCell("t1", "qwen-code-cli", "test-edit", "n/a"),
             AuditCell("t1", "aider-cli", "test-edit", "blocked")]
    return AuditResult("s", "r", ["fake-summary", "test-edit"], ["aider-cli", "qwen-code-cli"], ["t1", "t2"], cells, 1.0)


def test_counts_per_harness_and_attack():
    c = per_harness_counts(_result())
    assert c[("qwen-code-cli", "fake-summary")] == {"scored": 0, "blocked": 2, "n/a": 0}
    assert c[("aider-cli", "fake-summary")] == {"scored": 1, "blocked": 1, "n/a": 0}
    assert c[("qwen-code-cli", "test-edit")] == {"scored": 0, "blocked": 0, "n/a": 1}
    assert c[("aider-cli", "test-edit")] == {"scored": 0, "blocked": 1, "n/a": 0}


def test_the_table_shows_blocked_over_run_and_holes():
    with console.capture() as cap:
        print_per_harness(_result())
    out = cap.get()
    rows = {line.split("│")[1].strip(): line for line in out.splitlines() if line.count("│") > 3}
    assert "1/2 HOLE 1" in rows["aider-cli"] and "2/3" in rows["aider-cli"]
    assert "2/2" in rows["qwen-code-cli"] and "(1 n/a)" in rows["qwen-code-cli"]
