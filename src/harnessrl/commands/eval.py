"""`harnessrl eval`: run a policy over a suite under harnesses; print and export the matrices."""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path

import typer
from rich.markup import escape
from rich.table import Table

from harnessrl.commands.common import (
    path_arg, StoreOption, check_store_writable, check_writable_dir, console, default_store, fail, int_list, progress, user_errors,
)


def _split(text: str) -> list[str]:
    return [x.strip() for x in text.split(",") if x.strip()]


def _options(pairs: list[str]) -> dict:
    out = {}
    for p in pairs:
        key, sep, value = p.partition("=")
        if not sep or not key:
            raise fail(f"--policy-option {p!r}: write KEY=VALUE")
        try:
            out[key] = json.loads(value)
        except ValueError:
            out[key] = value
    return out


def _load(name: str, runtime: str | None):
    """The suite as plan_eval takes it: its name, or (with --runtime) the loaded suite."""
    if runtime is None:
        return name
    from harnessrl.tasks.loaders import load_suite

    return load_suite(name, runtime=runtime)


RUN_FILE = "eval.json"  # in --out, written before the first episode: which run the folder belongs to


def _run_id(given: str | None, out: Path | None, resume: bool) -> str | None:
    """The run id to use: --run-id, or the one --out already belongs to (refused without --resume, as the
    recipes refuse a used --out); None: generate one."""
    held = None
    for name in (RUN_FILE, "summary.json") if out is not None else ():  # summary.json: an export from before eval.json
        try:
            held = json.loads((out / name).read_text(encoding="utf-8")).get("run_id")
        except (OSError, ValueError, AttributeError):
            held = None
        if held:
            break
    if held and not resume:
        raise fail(f"{out} holds eval run {held!r}; pass --resume to continue it, or choose another --out")
    if held and given and given != held:
        raise fail(f"--run-id {given} but {out} holds eval run {held!r}; resume that run there, or choose another --out")
    if resume and not (given or held):
        raise fail("--resume needs the run to continue: --run-id RUN, or the --out folder of that run")
    return given or held


def _sealed_suite(sealed: str, seals: Path | None) -> str:
    """The suite a seal was made on: its manifest's `suite`, else the one suite its task ids name."""
    from harnessrl.evaluate.seal import load_seal

    seal = load_seal(sealed, seals)
    if seal.manifest.get("suite"):
        return seal.manifest["suite"]
    named = {tid.split("/", 1)[0] for tid in seal.task_ids if "/" in tid}
    if len(named) == 1:
        return named.pop()
    raise fail(f"--sealed {sealed}: the seal names no suite; give --suite")


def eval_command(
    policy: str = typer.Option(..., "--policy", "-p", help="oracle | noop | explore | oracle-drop | oracle-break | oracle-malformed | endpoint:MODEL | lm:PATH"),
    suite: str = typer.Option(None, "--suite", help="Suite names (code-v1, terminal-v1, miniwob, lookup, ...) or suite folders, "
                              "comma-separated (with --sealed: the seal's suite unless given)."),
    harness: str = typer.Option("all", "--harness", "-H", help="'all', or harness ids / spec files, comma-separated."),
    tasks: str = typer.Option(None, "--tasks", help="Only these tasks (names or ids, comma-separated)."),
    seeds: int = typer.Option(1, "--seeds", min=1, help="Episodes per task x harness cell (seeds 0..N-1)."),
    k: str = typer.Option("1", "--k", help="pass@k values to report, comma-separated (each <= --seeds)."),
    backend: str = typer.Option("local", "--backend", help="local (process pool) | ray"),
    workers: int = typer.Option(2, "--workers", "-j", min=1, help="Parallel workers (processes or Ray actors)."),
    group_size: int = typer.Option(1, "--group-size", min=1, help="Episodes stepped in lockstep per worker call (batching LM policies)."),
    ray_address: str = typer.Option(None, "--ray-address", help="An existing Ray cluster (default: start a local one)."),
    policy_option: list[str] = typer.Option([], "--policy-option", help="KEY=VALUE passed to the policy (repeatable)."),
    run_id: str = typer.Option(None, "--run-id", help="Run id recorded in every episode (default: generated)."),
    out: Path = typer.Option(None, "--out", "-o", parser=path_arg, help="Folder for cells.csv, summary.csv, summary.json, matrix.png, report.html."),
    sealed: str = typer.Option(None, "--sealed", help="Run THE one evaluation of this seal (cells come from its manifest)."),
    seals: Path = typer.Option(None, "--seals", parser=path_arg, help="Seals folder [env HARNESSRL_SEALS, default runs/seals]."),
    reward_func: list[str] = typer.Option([], "--reward-func", help="A reward function added to the verifier's reward "
                                          "(TRL reward_funcs shape; pkg.module:function or a harnessrl.rewards plugin; repeatable)."),
    reward_weight: list[float] = typer.Option([], "--reward-weight", help="Its weight (one per --reward-func; default 1.0 each)."),
    verifier_weight: float = typer.Option(1.0, "--verifier-weight", help="The verifier reward's weight in the sum."),
    store: Path = StoreOption,
    runtime: str = typer.Option(None, "--runtime", help="Terminal-Bench/Harbor folders: jail (replayed on the host, "
                                "default) or image (each task's own Dockerfile, built once; docs/task-images.md)."),
    resume: bool = typer.Option(False, "--resume", help="Continue a run (--run-id, or the one --out holds): cells it "
                                "already stored are kept, only the missing ones run. Without it a used run id is refused."),
) -> None:
    """Evaluate a policy on a suite under one or more harnesses; episodes go to the record store."""
    from harnessrl.evaluate.resume import check_resumable, stored
    from harnessrl.evaluate.run import default_run_id, plan_eval, run_eval
    from harnessrl.fileio import atomic_write_text
    from harnessrl.rollout.suites import check_oracle_tasks
    from harnessrl.policies.registry import PolicySpec, check_policy
    from harnessrl.records import RecordStore

    with user_errors():
        if tasks is not None and not _split(tasks):  # `--tasks ""` (an empty shell variable) once ran every task
            raise fail(f"--tasks {tasks!r} names no task: give task names or ids, comma-separated, or leave --tasks out "
                       "to run every task")
        tasks = tasks or ""
        ks = sorted(set(int_list(k, "--k")) | {1})
        if min(ks) < 1:
            raise fail(f"--k {k!r}: pass@k needs k >= 1")
        if max(ks) > seeds:
            raise fail(f"--k {max(ks)} needs at least that many episodes per cell; use --seeds {max(ks)} or more")
        # every place this command writes is checked before the first episode runs
        check_store_writable(store or default_store())
        if out is not None:
            check_writable_dir(out, "--out")
        if sealed:
            from harnessrl.evaluate.seal import seals_dir

            check_writable_dir(seals_dir(seals), "--seals")
        spec = PolicySpec.parse(policy, _options(policy_option))
        check_policy(spec)
        from harnessrl.rewards import RewardHook, check as check_rewards

        hook = RewardHook(tuple(reward_func), tuple(reward_weight) if reward_weight else None, verifier_weight)
        check_rewards(hook)
        if suite is None:
            suite = _sealed_suite(sealed, seals) if sealed else ""
        suites = list(dict.fromkeys(_split(suite)))
        if not suites:
            raise fail("--suite is empty: name a suite (code-v1, miniwob, lookup, ...) or a suite folder")
        if len(suites) > 1 and (tasks or sealed):
            raise fail(f"--{'tasks' if tasks else 'sealed'} applies to one suite; with --suite {suite!r} run one suite at a time")
        # every suite is planned (and checked) before the first episode of any of them runs
        if runtime not in (None, "jail", "image"):
            raise fail(f"--runtime {runtime}: use jail or image")
        plans = [plan_eval(_load(name, runtime), _split(harness), seeds, tasks=_split(tasks) or None, sealed=sealed,
                           seals_dir=seals) for name in suites]
        for plan in plans:
            check_oracle_tasks(str(spec), plan.tasks)  # the oracle list limits only oracle policies
        run_id = _run_id(run_id, out, resume) or default_run_id(spec)  # one run id across the suites
        s = RecordStore(store or default_store())
        have = stored(s, run_id)
        if have.episodes and not resume:  # a second copy of each cell would be stored (records verify flags it)
            raise fail(f"run {run_id!r} already has {have.episodes} episodes in {s.root}; pass --resume to run only "
                       "its missing cells, or choose another --run-id")
        if resume:
            check_resumable(have, str(spec))
        if out is not None:  # before the first episode: a killed run's --out names the run to resume
            out.mkdir(parents=True, exist_ok=True)
            atomic_write_text(out / RUN_FILE, json.dumps({"run_id": run_id, "policy": str(spec), "suites": suites}) + "\n")
        console.print(f"run {escape(run_id)}" + (f": resuming, {have.episodes} episodes already stored" if resume else ""))
        for plan in plans:
            console.print(f"[bold]{escape(str(spec))}[/] on {escape(str(plan.suite_name))}: {len(plan.tasks)} tasks x {len(plan.harnesses)} harnesses "
                          f"= {len(plan.cells)} cells in scope ({len(plan.out_of_scope)} out of scope) x {len(plan.seeds)} seeds "
                          f"= {plan.episodes} episodes, backend {backend}, {workers} workers", markup=True)
        total = sum(p.episodes for p in plans)
        if workers > 1 and (workers > total or workers > (os.cpu_count() or 1)):  # say so, then run anyway
            console.print(f"note: --workers {workers} but {total} episode(s) and {os.cpu_count()} core(s): at most "
                          f"{min(total, os.cpu_count() or 1)} worker(s) can be busy at once")
        results = []
        with progress() as bar:
            task = bar.add_task("episodes", total=total)
            for plan in plans:
                results.append(run_eval(spec, plan, s, backend=backend, workers=workers, group_size=group_size, run_id=run_id,
                                        ks=ks, address=ray_address, on_progress=lambda n: bar.advance(task, n),
                                        rewards=hook if hook.active else None, resume=resume))
    for result in results:
        print_result(result)
        kept = result.info.get("resumed", 0)
        console.print(f"{len(result.episodes)} episodes -> {s.root} (run {result.run_id}"
                      + (f"; {kept} of them stored before, not run again" if kept else "") + f"), {result.wall_s:.1f} s")
        if result.sealed_record:
            console.print(f"sealed evaluation written once: {result.sealed_record}")
    if out is not None:
        with user_errors():
            again = reproduce_command(policy, policy_option, suites, tasks, harness, seeds, ks, group_size, sealed, seals)
            again += "".join(f" --reward-func {f}" for f in reward_func) + "".join(f" --reward-weight {w:g}" for w in reward_weight)
            again += f" --verifier-weight {verifier_weight:g}" if verifier_weight != 1.0 else ""
            if len(results) == 1:
                export(results[0], out, again)
            else:
                export_suites(results, out, again)
        console.print(f"exported to {out}/")


SHORT = {"format_error": "fmt", "timeout": "time", "turn_limit": "turns", "dropped_requirement": "drop",
         "broke_existing": "broke", "failed_heldout": "heldout", "test_error": "test", "crash": "crash"}


def print_result(result) -> None:
    from harnessrl.evaluate.matrix import FAILURE_MODES

    ks = [k for k in result.ks if k > 1]
    t = Table(title=f"Harness summary ({result.policy})")
    for col in ["harness", "tasks", "eps", "pass@1 [95% CI]"] + [f"pass@{k}" for k in ks] + ["turns", "tokens", "fmt/ep", "failure modes (rate)"]:
        t.add_column(col)
    for r in result.summary:
        modes = " ".join(f"{SHORT[m]} {r['rate_' + m]:.2f}" for m in FAILURE_MODES if r["rate_" + m] > 0) or "-"
        t.add_row(r["harness_id"], str(r["tasks"]), str(r["episodes"]), f"{r['pass@1']:.2f} [{r['pass@1_lo']:.2f},{r['pass@1_hi']:.2f}]",
                  *[f"{r[f'pass@{k}']:.2f}" for k in ks], f"{r['mean_turns']:.1f}", f"{r['mean_tokens']:.0f}",
                  f"{r['format_errors_per_episode']:.2f}", modes)
    console.print(t)
    cells = {(r["task_id"], r["harness_id"]): r for r in result.cells}
    oos = {(tid, hid): reason for tid, hid, reason in result.out_of_scope}
    harnesses = [h.id for h in result.plan.harnesses] + sorted({h for _, h, _ in result.out_of_scope} - {h.id for h in result.plan.harnesses})
    m = Table(title="Task x harness: solved/episodes (n/a = out of scope)")
    m.add_column("task")
    for h in harnesses:
        m.add_column(h)
    for task in result.plan.tasks:
        tid = getattr(task, "task_id", None) or task.id
        row = []
        for h in harnesses:
            c = cells.get((tid, h))
            row.append("n/a" if (tid, h) in oos else f"{c['solved']}/{c['n']}" if c else "-")
        m.add_row(getattr(task, "name", tid), *row)
    console.print(m)
    for reason in sorted({reason for _, _, reason in result.out_of_scope}):
        n = sum(1 for _, _, r in result.out_of_scope if r == reason)
        console.print(f"out of scope ({n} cells): {reason}")


def reproduce_command(policy: str, policy_option: list[str], suites: list[str], tasks: str, harness: str, seeds: int,
                      ks: list[int], group_size: int, sealed: str | None, seals: Path | None) -> str:
    """The `harnessrl eval` line that evaluates the same cells again, with every option that changes them (a suite
    folder as an absolute path, so it runs from anywhere); --store and --out are left for the reader to choose."""
    import shlex

    def arg(value: str) -> str:
        return shlex.quote(str(Path(value).absolute()) if Path(value).exists() else value)

    name, sep, target = policy.partition(":")
    if sep and Path(target).exists():  # lm:PATH -> the model folder from anywhere
        policy = f"{name}:{Path(target).absolute()}"
    parts = ["harnessrl eval", "--policy", shlex.quote(policy)]
    parts += [f"--policy-option {shlex.quote(kv)}" for kv in policy_option]
    parts += ["--suite", ",".join(arg(s) for s in suites), "--harness", shlex.quote(harness), "--seeds", str(seeds)]
    if tasks:
        parts += ["--tasks", shlex.quote(tasks)]
    if ks != [1]:
        parts += ["--k", ",".join(map(str, ks))]
    if group_size != 1:
        parts += ["--group-size", str(group_size)]
    if sealed:
        parts += ["--sealed", shlex.quote(sealed)] + (["--seals", arg(str(seals))] if seals else [])
    return " ".join(parts)


def export(result, out: Path, command: str | None = None) -> None:
    from harnessrl.evaluate.matrix import heatmap
    from harnessrl.report.html import Report

    out.mkdir(parents=True, exist_ok=True)
    for name, rows in (("cells", result.cells), ("summary", result.summary)):
        _write_csv(out / f"{name}.csv", rows)
    data = {"run_id": result.run_id, "policy": result.policy, "suite": result.plan.suite_name, "seeds": result.plan.seeds,
            "summary": result.summary, "cells": result.cells,
            "out_of_scope": [{"task_id": t, "harness_id": h, "reason": r} for t, h, r in result.out_of_scope]}
    (out / "summary.json").write_text(json.dumps(data, indent=2, default=str), encoding="utf-8")
    fig = heatmap(result.cells, result.out_of_scope)
    rep = Report(f"Evaluation: {result.policy} on {result.plan.suite_name}",
                 claim="pass@1 and unbiased pass@k per harness with bootstrap 95% CIs over tasks; failure modes per episode.")
    rep.section("Harness summary").table(result.summary)
    rep.figure(fig, "pass@1 per task x harness (grey: out of scope)", name="matrix")
    rep.section("Task x harness cells").table(result.cells)
    if result.out_of_scope:
        rep.section("Out of scope").table([{"task_id": t, "harness_id": h, "reason": r} for t, h, r in result.out_of_scope])
    rep.reproduce(command or f"harnessrl eval --policy {result.policy} --suite {result.plan.suite_name} "
                  f"--harness {','.join(h.id for h in result.plan.harnesses)} --seeds {len(result.plan.seeds)}",
                  seeds=result.plan.seeds)
    rep.write(out / "report.html")
    fig.savefig(out / "matrix.png", dpi=110)


def _slug(name: str) -> str:
    """A suite name (or folder path) as one safe folder name."""
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in Path(name).name) or "suite"


def export_suites(results, out: Path, command: str | None = None) -> None:
    """Several suites: each suite's full export in out/<suite>/, and one summary.csv over all
    of them (a `suite` column first) so the whole matrix reads as one table."""
    rows = []
    for result in results:
        export(result, out / _slug(result.plan.suite_name), command)
        rows += [{"suite": result.plan.suite_name, **r} for r in result.summary]
    _write_csv(out / "summary.csv", rows)


def _write_csv(path: Path, rows: list[dict]) -> None:
    """Rows as CSV; the columns are every row's keys in first-seen order (suites may differ)."""
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=list(dict.fromkeys(k for r in rows for k in r)))
        w.writeheader()
        w.writerows(rows)
