"""`harnessrl audit SUITE`: red-team a suite's grader with the scripted attacks; exit 1 on a hole."""

from __future__ import annotations

import time
from pathlib import Path

import typer
from rich.markup import escape
from rich.text import Text
from rich.table import Table

from harnessrl.commands.common import StoreOption, console, default_store, fail, progress, user_errors


def _split(text: str) -> list[str]:
    return [x.strip() for x in text.split(",") if x.strip()]


def run_and_report(suite: str, harnesses: list[str], attacks: list[str] | None, tasks: list[str] | None, store: Path | None,
                   out: Path | None, workers: int, check_html: bool = True, runtime: str | None = None):
    """Run the audit with a progress bar, print the matrix, write the report; the AuditResult.
    `runtime` (Terminal-Bench/Harbor folders, as eval's --runtime): "image" runs every attack episode in
    the task's own image, where the agent may write the interpreter, its libraries and PATH folders."""
    from harnessrl.commands.eval import _load
    from harnessrl.evaluate.audit import audit_plan, run_audit
    from harnessrl.records import RecordStore

    if runtime not in (None, "jail", "image"):
        raise fail(f"--runtime {runtime}: use jail or image")
    loaded = _load(suite, runtime)  # the suite's name, or (with --runtime) the suite loaded for that runtime
    audit_plan(loaded, harnesses, attacks, tasks)  # a bad suite, harness or attack: an error before the store exists
    s = RecordStore(store or default_store())
    with progress() as bar:
        job = bar.add_task("attack episodes", total=None)
        result = run_audit(loaded, s, harnesses=harnesses, attacks=attacks, tasks=tasks, workers=workers,
                           on_progress=lambda n: bar.advance(job, n),
                           on_attack=lambda name, n: bar.update(job, description=f"{name} ({n} cells)"))
    print_audit(result)
    # a crashed episode was never graded: "blocked" there is no evidence about the grader (e.g. terminus in an
    # image without tmux), so it is said apart
    crashed = [c for c in result.cells if c.outcome == "crash"]
    if crashed:
        console.print(Text(f"{len(crashed)} cell(s) crashed before grading (counted blocked, but no evidence): "
                           + ", ".join(f"{c.task_id} x {c.harness_id}: {c.attack}" for c in crashed[:6]), style="yellow"))
    for tid, (level, why) in sorted(result.info.get("not_isolated", {}).items()):
        console.print(Text(f"not isolated ({level}): {tid}: {why}", style="yellow"))
    console.print(f"{sum(c.verdict != 'n/a' for c in result.cells)} attack episodes -> {s.root} (runs {result.run_id}-*), "
                  f"{result.wall_s:.1f} s")
    out = out or Path("runs") / result.run_id
    from harnessrl.report.audit import write_audit_report

    command = (f"harnessrl audit {suite} --harness {','.join(harnesses)}" + (f" --attacks {','.join(attacks)}" if attacks else "")
               + (f" --tasks {','.join(tasks)}" if tasks else "") + (f" --runtime {runtime}" if runtime else ""))
    html_path = write_audit_report(result, out, command)
    console.print(f"report: {html_path}")
    if check_html:
        from harnessrl.report.browser import BrowserError, check_report

        try:
            check = check_report(html_path)
            console.print(f"browser check: {check.summary()}")
            for p in check.problems():
                console.print(Text(str(p), style="red"))
        except BrowserError as err:
            console.print(Text(f"browser check skipped: {err}", style="yellow"))
    return result


def print_audit(result) -> None:
    from harnessrl.report.audit import matrix_rows

    t = Table(title=f"Grader audit: {result.suite} (task x attack; HOLE n = scored under n harnesses)")
    t.add_column("task")
    for a in result.attacks:
        t.add_column(a)
    for row in matrix_rows(result):
        t.add_row(row["task"], *[Text(row[a], style="bold red" if row[a].startswith("HOLE") else "") for a in result.attacks])
    console.print(t)
    print_per_harness(result)
    for c in result.holes:
        console.print(f"[red]HOLE[/] {escape(f'{c.task_id} x {c.harness_id}: {c.attack} scored (episode {c.episode_id})')}", markup=True)
    console.print("[bold green]every applicable attack blocked[/]" if result.passed
                  else f"[bold red]{len(result.holes)} hole(s)[/]: see docs/audit.md for how to fix a task", markup=True)


def per_harness_counts(result) -> dict[tuple[str, str], dict[str, int]]:
    """(harness id, attack) -> {verdict: number of tasks}: what each harness (a real program or a
    reconstruction) ran of every attack, and how each ended."""
    from harnessrl.evaluate.audit import VERDICTS

    out = {(h, a): dict.fromkeys(VERDICTS, 0) for h in result.harnesses for a in result.attacks}
    for c in result.cells:
        out.setdefault((c.harness_id, c.attack), dict.fromkeys(VERDICTS, 0))[c.verdict] += 1
    return out


def print_per_harness(result) -> None:
    """One row per harness, one column per attack: `blocked/ran` (and the holes), n/a counted apart."""
    counts = per_harness_counts(result)
    t = Table(title="Per harness: attack episodes blocked / run (n/a: not expressible or out of scope)")
    t.add_column("harness")
    for a in result.attacks:
        t.add_column(a)
    t.add_column("total")
    for h in result.harnesses:
        cells, ran, blocked = [], 0, 0
        for a in result.attacks:
            c = counts[(h, a)]
            n = c["scored"] + c["blocked"]
            ran, blocked = ran + n, blocked + c["blocked"]
            text = (f"{c['blocked']}/{n}" if n else "-") + (f" HOLE {c['scored']}" if c["scored"] else "") \
                + (f" ({c['n/a']} n/a)" if c["n/a"] else "")
            cells.append(Text(text, style="bold red" if c["scored"] else ""))
        t.add_row(h, *cells, f"{blocked}/{ran}")
    console.print(t)


def audit_command(
    suite: str = typer.Argument(..., help="A suite name (code-v1, terminal-v1) or a suite folder."),
    harness: str = typer.Option("all", "--harness", "-H", help="'all', or harness ids, comma-separated."),
    attacks: str = typer.Option("", "--attacks", help="Only these attacks, comma-separated (default: all registered)."),
    tasks: str = typer.Option("", "--tasks", help="Only these tasks (names or ids, comma-separated)."),
    workers: int = typer.Option(2, "--workers", "-j", min=1, help="Parallel rollout workers."),
    out: Path = typer.Option(None, "--out", help="Folder for report.html, audit.json, cells.json [runs/<run id>]."),
    no_browser: bool = typer.Option(False, "--no-browser-check", help="Skip the headless-Chromium check of the report."),
    store: Path = StoreOption,
    runtime: str = typer.Option(None, "--runtime", help="Terminal-Bench/Harbor folders: jail (replayed on the host, "
                                "default) or image (each task's own Dockerfile, built once; docs/task-images.md)."),
) -> None:
    """Run every applicable scripted attack on every task x harness; exit 1 if any attack scores."""
    with user_errors():
        started = time.time()
        result = run_and_report(suite, _split(harness), _split(attacks) or None, _split(tasks) or None, store, out,
                                workers, check_html=not no_browser, runtime=runtime)
    console.print(f"wall time {time.time() - started:.0f} s")
    if not result.passed:
        raise typer.Exit(1)


def require_clean_audit(suite: str, harnesses: list[str], tasks: list[str] | None, store: Path | None,
                        runtime: str | None = None, attacks: list[str] | None = None, out: Path | None = None) -> None:
    """For `train --audit`: run the audit (every attack unless `attacks`) and refuse (exit 1) a suite with any hole.
    `out`: where its report goes (the run's own folder: nothing lands in the working directory's runs/)."""
    result = run_and_report(suite, harnesses, attacks, tasks, store, out, workers=1, check_html=False, runtime=runtime)
    if not result.passed:
        holes = sorted({f"{c.task_id}:{c.attack}" for c in result.holes})
        raise fail(f"suite {suite!r} fails the grader audit ({len(holes)} hole(s): {', '.join(holes[:6])}); "
                   "fix those tasks (docs/audit.md) or train without --audit", code=1)
