"""`harnessrl recipe <name>`: small-scale reproductions of the six papers (docs/papers.md), each ending in an HTML report."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import typer
from rich.markup import escape

from harnessrl.commands.common import path_arg, check_writable_dir, console, progress, user_errors

app = typer.Typer(help="Small-scale reproductions of the six papers in docs/papers.md (each writes an HTML report).", no_args_is_help=True)


def _deep_update(base: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    for k, v in new.items():
        base[k] = _deep_update(dict(base[k]), v) if isinstance(v, dict) and isinstance(base.get(k), dict) else v
    return base


@app.command("bipa")
def bipa(
    out: Path = typer.Option(None, "--out", "-o", parser=path_arg, help="Output folder (default runs/bipa-<time>)."),
    suite: str = typer.Option(None, "--suite", help="Suite name or folder (default code-v1; code/terminal tasks, or lookup)."),
    harness: str = typer.Option(None, "--harness", "-H", help="Harness id or spec file (default openhands)."),
    policy: str = typer.Option(None, "--policy", "-p",
                               help="Policy spec (default probe-section-follower:inspect): probe-skill-blind | lm:PATH | endpoint:MODEL ..."),
    policy_option: list[str] = typer.Option([], "--policy-option", help="KEY=VALUE for the policy (repeatable)."),
    rewriter: str = typer.Option(None, "--rewriter", help="Policy spec for LLM rewrites (then half the proposals are LLM rewrites)."),
    rule: str = typer.Option(None, "--rule", help="strict_minibatch (GEPA, default) | margin | validation | validation_no_drop"),
    iterations: int = typer.Option(None, "--iterations", min=1, help="Optimizer iterations (default 10)."),
    replays: int = typer.Option(None, "--replays", min=1, help="Replays of each accepted decision (default 6)."),
    fresh_seeds: int = typer.Option(None, "--fresh-seeds", min=1, help="Fresh seeds per task (default 3)."),
    workers: int = typer.Option(None, "--workers", "-j", min=1, help="Audit rollouts in a process pool of this size (default 2)."),
    seed: int = typer.Option(None, "--seed", help="Optimizer seed (default 0)."),
    config: Path = typer.Option(None, "--config", "-c", parser=path_arg, help="A TOML/YAML BipaRecipeConfig; the options above override it."),
) -> None:
    """BiPA: run a skill optimizer on the coding suite, then audit it (replay, fresh/test gains, read graph, cost)."""
    from harnessrl.config import load_config, read_file
    from harnessrl.recipes.bipa import BipaRecipeConfig, run

    with user_errors():
        base = BipaRecipeConfig().model_dump(mode="json")
        if config is not None:
            _deep_update(base, read_file(config))
        given = {"suite": suite, "harness": harness, "policy": policy, "rewriter": rewriter, "optimizer.iterations": iterations,
                 "optimizer.seed": seed, "optimizer.acceptance.rule": rule, "audit.replays": replays,
                 "audit.fresh_seeds": fresh_seeds, "workers": workers}
        overrides = [f"{k}={json.dumps(v)}" for k, v in given.items() if v is not None]
        if policy is not None:  # the default policy's options do not fit another policy
            overrides.append("policy_options={}")
        overrides += [f"policy_options.{kv}" for kv in policy_option]
        if rule and rule.startswith("validation") and not base.get("validation_tasks"):
            overrides.append("validation_tasks=4")
        if rewriter:
            overrides.append("optimizer.proposer.llm_share=0.5")
        if out is not None or base.get("out") == "runs/bipa":
            overrides.append(f"out={json.dumps(str(out or Path('runs') / time.strftime('bipa-%Y%m%d-%H%M%S')))}")
        cfg = load_config(BipaRecipeConfig, None, overrides, base=base)
        check_writable_dir(Path(cfg.out), "--out")
        with progress() as bar:
            opt = bar.add_task("optimize", total=cfg.optimizer.iterations)
            aud = bar.add_task("audit rollouts", total=None, visible=False)

            def tick(stage: str, i: int, n: int | None) -> None:
                if stage == "optimize":
                    bar.update(opt, completed=i)
                else:
                    bar.update(aud, completed=i, visible=True)

            res = run(cfg, progress=tick)
    s = res["summary"]
    console.print(f"[bold]{escape(str(s['verdict']))}[/]", markup=True)
    console.print(f"false-accept rate {s['false_accept_rate']:.3f} [{s['false_accept_lo']:.3f}, {s['false_accept_hi']:.3f}] "
                  f"(model {s['false_accept_predicted']:.3f}); train gain observed {s['observed_train_gain']:+.3f}, "
                  f"fresh {s['fresh_train_gain']:+.3f} [{s['fresh_train_lo']:+.3f}, {s['fresh_train_hi']:+.3f}], "
                  f"test {s['test_gain']:+.3f} [{s['test_lo']:+.3f}, {s['test_hi']:+.3f}]", highlight=False)
    for p in res["principles"]:
        console.print(f"  {p['principle']}: {p['status']} — {p['why']}", highlight=False)
    console.print(f"report: {res['report']}  ({res['runtime_s']:.0f} s)")


from harnessrl.commands.recipe_conditioned_critic import conditioned_critic  # noqa: E402  (one file per recipe)

app.command("conditioned-critic")(conditioned_critic)

from harnessrl.commands.recipe_reward_tilt import reward_tilt  # noqa: E402

app.command("reward-tilt")(reward_tilt)

from harnessrl.commands.recipe_multi_harness import multi_harness  # noqa: E402

app.command("multi-harness")(multi_harness)

from harnessrl.commands.recipe_harness_teacher import harness_teacher  # noqa: E402

app.command("harness-teacher")(harness_teacher)

from harnessrl.commands.recipe_agentic_coding import agentic_coding  # noqa: E402

app.command("agentic-coding")(agentic_coding)
