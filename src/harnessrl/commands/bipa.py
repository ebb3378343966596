"""`harnessrl bipa`: run a skill optimizer, and audit one (acceptance replay, fresh re-evaluation,
read graphs, cost, design principles)."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.markup import escape
from rich.text import Text
from rich.table import Table

from harnessrl.commands.common import (
    path_arg, StoreOption, check_store_writable, check_writable_dir, console, default_store, fail, progress, user_errors,
)

app = typer.Typer(help="Skill optimizers and their BiPA audit.", no_args_is_help=True)


def _print_audit(result, report: Path | None) -> None:
    s = result.summary
    console.print(f"[bold]{escape(str(s['verdict']))}[/]", markup=True)
    t = Table(title=f"BiPA audit of {result.run_id}")
    for col in ("quantity", "value", "95% CI"):
        t.add_column(col)
    t.add_row("false-accept rate (identical candidates)", f"{s['false_accept_rate']:.3f}",
              f"[{s['false_accept_lo']:.3f}, {s['false_accept_hi']:.3f}]  n={s['false_accept_trials']}, model {s['false_accept_predicted']:.3f}")
    t.add_row("train gain, as the optimizer saw it", f"{s['observed_train_gain']:+.3f}", "")
    t.add_row("train gain, fresh paired seeds", f"{s['fresh_train_gain']:+.3f}", f"[{s['fresh_train_lo']:+.3f}, {s['fresh_train_hi']:+.3f}]")
    t.add_row("held-out test gain", f"{s['test_gain']:+.3f}", f"[{s['test_lo']:+.3f}, {s['test_hi']:+.3f}]")
    t.add_row("accepted edits: real / selection", f"{s['accepted_real']} / {s['accepted_selection']}", "")
    t.add_row("extra skill chars / turns per accepted edit", f"{s['extra_skill_chars_per_edit']:+.0f} / {s['extra_turns_per_edit']:+.2f}", "")
    console.print(t)
    p = Table(title="Design principles")
    for col in ("principle", "status", "why"):
        p.add_column(col)
    for row in result.principles:
        p.add_row(row["principle"], Text(row["status"], style="green" if row["status"] == "ok" else "red"), row["why"])
    console.print(p)
    if report is not None:
        console.print(f"report: {report}")


@app.command("audit")
def audit_command(
    run: Path = typer.Argument(..., parser=path_arg, help="The optimizer's run directory (holds optimizer_log.jsonl)."),
    store: Path = StoreOption,
    out: Path = typer.Option(None, "--out", parser=path_arg, help="Audit folder (default RUN/audit)."),
    replays: int = typer.Option(10, "--replays", min=1, help="Replays of each accepted decision."),
    null_replays: int = typer.Option(2, "--null-replays", min=0, help="Identical-candidate replays of each rejected decision."),
    fresh_seeds: int = typer.Option(4, "--fresh-seeds", min=1, help="Fresh seeds per task for the re-evaluation."),
    seed: int = typer.Option(None, "--seed", help="Audit seed (default: derived from the run's seed)."),
    workers: int = typer.Option(1, "--workers", "-j", min=1, help="Audit rollouts in a process pool of this size."),
    backend: str = typer.Option("local", "--backend", help="local | ray"),
    as_json: bool = typer.Option(False, "--json", help="Print the audit summary as JSON."),
) -> None:
    """Audit a skill-optimizer run: replay its acceptance rule on identical candidates, re-evaluate the
    accepted skills on fresh seeds and held-out tasks, build the turn-text read graph, count cost."""
    from harnessrl.analysis.bipa import AuditConfig
    from harnessrl.evaluate.skill_runs import read_log
    from harnessrl.recipes.bipa import run_audit
    from harnessrl.records import RecordStore
    from harnessrl.report.bipa import audit_report

    with user_errors():
        try:
            log = read_log(run)
        except UnicodeDecodeError:
            raise fail(f"{run}: the optimizer log is not UTF-8 text; give the run directory a skill optimizer wrote") from None
        if not log.complete:
            console.print("[yellow]warning:[/] the optimizer log has no end event (the run crashed or is still going); auditing what it holds", markup=True)
        root = store or (Path(log.header["store"]) if log.header.get("store") else default_store())
        out = out or (Path(run) / "audit")
        check_writable_dir(out, "--out")
        check_store_writable(root)  # the audit's rollouts are stored too
        st = RecordStore(root, create=False)
        cfg = AuditConfig(replays=replays, null_replays=null_replays, fresh_seeds=fresh_seeds, seed=seed)
        with progress() as bar:
            task = bar.add_task("audit rollouts", total=None)
            result, files = run_audit(run, st, cfg, out, progress=lambda n: bar.advance(task, n), workers=workers, backend=backend)
        report = audit_report(result, files=files, config=cfg, store=str(root),
                              reproduce=[f"harnessrl bipa audit {run} --store {root} --replays {replays} --fresh-seeds {fresh_seeds}"]
                              ).write(out / "report.html")
    if as_json:
        console.print_json(json.dumps(result.summary, default=float))
    else:
        _print_audit(result, report)


@app.command("optimize")
def optimize_command(
    suite: str = typer.Option("code-v1", "--suite", help="Suite name or folder."),
    harness: str = typer.Option("openhands", "--harness", "-H", help="Harness id or spec file."),
    policy: str = typer.Option(..., "--policy", "-p", help="Policy spec: lm:PATH | endpoint:MODEL | probe-section-follower:SECTION | ..."),
    skill: Path = typer.Option(None, "--skill", parser=path_arg, help="Seed skill (Markdown: `# Skill: NAME`, `## [id] Title` sections) (default: the recipe's)."),
    rewriter: str = typer.Option(None, "--rewriter", help="Policy spec that writes LLM rewrites (e.g. endpoint:MODEL)."),
    llm_share: float = typer.Option(0.0, "--llm-share", min=0, max=1, help="Share of iterations proposed by the rewriter."),
    rule: str = typer.Option("strict_minibatch", "--rule", help="strict_minibatch | margin | validation | validation_no_drop"),
    minibatch: int = typer.Option(3, "--minibatch", min=1),
    margin: float = typer.Option(1.0, "--margin", min=0),
    iterations: int = typer.Option(10, "--iterations", min=1),
    train: int = typer.Option(6, "--train", min=1, help="Train tasks."),
    validation: int = typer.Option(0, "--validation", min=0, help="Validation tasks (validation rules)."),
    test: int = typer.Option(6, "--test", min=0, help="Held-out test tasks (never seen by the optimizer)."),
    seed: int = typer.Option(0, "--seed"),
    out: Path = typer.Option(..., "--out", parser=path_arg, help="A new run directory for the optimizer log."),
    store: Path = StoreOption,
) -> None:
    """Run the skill optimizer baseline; episodes go to the store, decisions to OUT/optimizer_log.jsonl."""
    from harnessrl.evaluate.acceptance import AcceptanceConfig
    from harnessrl.harness.base import load_spec
    from harnessrl.harness.skills import load_skill
    from harnessrl.policies.registry import PolicySpec, make_policy
    from harnessrl.recipes.bipa import SEED_SKILL, split_tasks
    from harnessrl.records import RecordStore
    from harnessrl.train.skill_optimizer import ProposerConfig, SkillOptimizer, SkillOptimizerConfig

    with user_errors():
        try:
            cfg = SkillOptimizerConfig(iterations=iterations, seed=seed,
                                       acceptance=AcceptanceConfig(rule=rule, minibatch_size=minibatch, margin=margin),
                                       proposer=ProposerConfig(llm_share=llm_share))
        except Exception as err:  # pydantic names the field
            raise fail(str(err)) from None
        root = store or default_store()
        check_writable_dir(out, "--out")
        check_store_writable(root)
        pspec = PolicySpec.parse(policy)
        tr, rest = split_tasks(suite, train, validation + test, seed)
        opt = SkillOptimizer(cfg, policy=make_policy(pspec), harness=load_spec(harness),
                             seed_skill=load_skill(skill) if skill else SEED_SKILL, train_tasks=tr,
                             validation_tasks=rest[:validation], test_tasks=rest[validation:], run_dir=out,
                             store=RecordStore(root), rewriter=make_policy(rewriter) if rewriter else None,
                             describe={"policy": {"name": pspec.name, "arg": pspec.arg, "options": pspec.options}, "suite": suite})
        with progress() as bar:
            task = bar.add_task("optimize", total=iterations)
            res = opt.run(progress=lambda i, n: bar.update(task, completed=i))
    console.print(f"run {res.run_id}: {len(res.accepted)} of {iterations} candidates accepted "
                  f"({', '.join(res.accepted) or 'none'}); final skill {res.best_skill.version}; {res.episodes} episodes")
    console.print(f"audit it: harnessrl bipa audit {out} --store {root}")
