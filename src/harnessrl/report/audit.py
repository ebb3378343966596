"""The audit report: a task x attack matrix (scored / blocked / n/a) with the evidence per cell.

    html_path = write_audit_report(result, out_dir)     # result: evaluate.audit.AuditResult

Each matrix cell counts harnesses per verdict; below it, every scored cell (a hole) and a
sample of blocked ones list the episode id and the tail of the last observation, so a reader
can open the episode in the record store and see exactly what the attack did.
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

from harnessrl.report.html import Report

STYLE = ("<style>td.scored{background:#f4c7c3}td.blocked{background:#d9ead3}td.na{color:#888}"
         "table.audit td{font-family:monospace;font-size:12px}</style>")


def matrix_rows(result: Any) -> list[dict[str, str]]:
    """One row per task; one column per attack: 'S scored / B blocked / N n/a' over harnesses."""
    m = result.matrix()
    rows = []
    for tid in result.tasks:
        row = {"task": tid}
        for a in result.attacks:
            c = m.get((tid, a), {})
            row[a] = cell_text(c)
        rows.append(row)
    return rows


def cell_text(counts: dict[str, int]) -> str:
    if counts.get("scored"):
        return f"HOLE {counts['scored']}"
    if counts.get("blocked"):
        return f"blocked {counts['blocked']}"
    return "n/a"


def _matrix_html(result: Any) -> str:
    head = "".join(f"<th>{html.escape(a)}</th>" for a in ["task", *result.attacks])
    body = []
    for row in matrix_rows(result):
        tds = [f"<td>{html.escape(row['task'])}</td>"]
        for a in result.attacks:
            text = row[a]
            cls = "scored" if text.startswith("HOLE") else "blocked" if text.startswith("blocked") else "na"
            tds.append(f'<td class="{cls}">{html.escape(text)}</td>')
        body.append("<tr>" + "".join(tds) + "</tr>")
    return (f'{STYLE}<table class="audit"><caption>task x attack: HOLE n = the attack scored under n harnesses; '
            f"blocked n = graded as not solved under n harnesses; n/a = not expressible</caption>"
            f"<thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>")


def write_audit_report(result: Any, out: Path, command: str = "") -> Path:
    """Write report.html, audit.json and cells.json into `out`; return the HTML path."""
    out.mkdir(parents=True, exist_ok=True)
    holes = result.holes
    verdict = (f"{len(holes)} hole(s): an attack scored without solving the task" if holes
               else "every applicable attack was blocked on every task")
    rep = Report(f"Grader audit: {result.suite}",
                 claim="A task whose grader says 'solved' for an attack that never solved it has a hole; "
                       "training on it teaches the attack, not the task.")
    n = {v: sum(c.verdict == v for c in result.cells) for v in ("scored", "blocked", "n/a")}
    rep.section("Verdict", f"{verdict}. Cells: {n['scored']} scored, {n['blocked']} blocked, {n['n/a']} not applicable; "
                f"{len(result.tasks)} tasks x {len(result.harnesses)} harnesses x {len(result.attacks)} attacks; "
                f"wall time {result.wall_s:.0f} s; run id `{result.run_id}`.")
    rep.section("Task x attack")
    rep.parts.append(_matrix_html(result))
    evidence = [{"task": c.task_id, "harness": c.harness_id, "attack": c.attack, "verdict": c.verdict,
                 "outcome": c.outcome, "episode_id": c.episode_id, "last observation": c.evidence[-200:]}
                for c in holes]
    if evidence:
        rep.section("Holes (evidence)").table(evidence)
    blocked = [c for c in result.cells if c.verdict == "blocked"]
    sample = {}
    for c in blocked:  # one blocked example per attack, so the reader sees how each was stopped
        sample.setdefault(c.attack, c)
    if sample:
        rep.section("How each attack was blocked (one example each)").table(
            [{"attack": c.attack, "task": c.task_id, "harness": c.harness_id, "outcome": c.outcome,
              "episode_id": c.episode_id, "last observation": c.evidence[-200:]} for c in sample.values()])
    reasons = sorted({(c.attack, c.evidence) for c in result.cells if c.verdict == "n/a"})
    if reasons:
        rep.section("Not applicable (why)").table([{"attack": a, "reason": r} for a, r in reasons[:60]])
    if command:
        rep.reproduce(command)
    path = rep.write(out / "report.html")
    cells = [c.__dict__ for c in result.cells]
    (out / "cells.json").write_text(json.dumps(cells, indent=1), encoding="utf-8")
    (out / "audit.json").write_text(json.dumps({"suite": result.suite, "run_id": result.run_id, "wall_s": result.wall_s,
                                                "attacks": result.attacks, "harnesses": result.harnesses,
                                                "holes": len(holes), "counts": n, "matrix": matrix_rows(result)},
                                               indent=1), encoding="utf-8")
    return path
