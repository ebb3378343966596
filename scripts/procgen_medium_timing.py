"""Throughput of one `conditioned-critic --scale medium` Procgen job, stage by stage, and the preset's projected wall time.

Runs one medium job (a game, a critic, seed 0) at a short budget exactly as the recipe does:
train_ppo with the procgen family settings, then the value error, the training-level and the
unseen-level evaluation. Each stage reports process CPU seconds (getrusage: this process and
envpool's threads) and wall seconds. CPU time is what a free core would spend; wall time on a
shared machine can be many times longer. The projection multiplies out the preset's runs:

    runs x (total_steps / training steps per CPU-second + evaluation CPU-s) / workers

    .venv/bin/python scripts/procgen_medium_timing.py [--game starpilot] [--critic shared] [--steps 32768]
"""

from __future__ import annotations

import argparse
import json
import resource
import time

import torch

from harnessrl.evaluate.levels import evaluate_episodes
from harnessrl.evaluate.value_error import measure_value_error
from harnessrl.recipes import conditioned_critic as cc
from harnessrl.train.ppo import train_ppo


def cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--game", default="starpilot")
    ap.add_argument("--critic", default="shared")
    ap.add_argument("--steps", type=int, default=32_768)
    ap.add_argument("--eval-allowance", type=float, default=70.0, help="evaluation CPU-s per run assumed in the projection "
                    "(trained policies play longer episodes than the short run measures)")
    args = ap.parse_args()
    medium = cc.load("medium")
    cfg = cc.load("medium", None, [f"procgen.games=[{args.game}]", f"critics=[{args.critic}]", "seeds=[0]",
                                   f"procgen.total_steps={args.steps}"])
    torch.set_num_threads(1)  # as run_job does
    job = cc.jobs(cfg)[0]
    pcfg = cc.ppo_config(cfg, job)
    stages: dict[str, tuple[float, float]] = {}

    def timed(name, fn):
        c, w = cpu_s(), time.perf_counter()
        out = fn()
        stages[name] = (cpu_s() - c, time.perf_counter() - w)
        return out

    env, test_env = timed("make_envs", lambda: cc.make_envs(cfg, job, 0))
    res = timed("train", lambda: train_ppo(pcfg, env))
    timed("value_error", lambda: measure_value_error(cc.make_envs(cfg, job, 10_000)[0], res.policy_fn(1), res.value_fn(),
                                                     steps=cfg.value_error_steps, gamma=pcfg.gamma, seed=10_000))
    timed("eval_train_levels", lambda: evaluate_episodes(env, res.policy_fn(2), cfg.eval_episodes, seed=20_000))
    timed("eval_unseen_levels", lambda: evaluate_episodes(test_env, res.policy_fn(3), cfg.eval_episodes, seed=30_000))
    per_cpu_s = res.global_step / stages["train"][0]
    runs = len(cc.jobs(medium))
    eval_cpu = max(args.eval_allowance, sum(v[0] for k, v in stages.items() if k != "train"))
    projected_cpu = runs * (medium.procgen.total_steps / per_cpu_s + eval_cpu) + 60.0
    print(json.dumps({
        "game": args.game, "critic": args.critic, "steps": res.global_step, "network": pcfg.network,
        "stage_cpu_wall_s": {k: [round(c, 1), round(w, 1)] for k, (c, w) in stages.items()},
        "train_steps_per_cpu_s": round(per_cpu_s), "train_wall_steps_per_s": round(res.global_step / stages["train"][1]),
        "max_rss_gb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6, 2),
        "medium_runs": runs, "medium_total_steps": medium.procgen.total_steps,
        "projected_cpu_s": round(projected_cpu),
        "projected_wall_min_on_free_cores": round(projected_cpu / medium.workers / 60, 1),
    }, indent=1))


if __name__ == "__main__":
    main()
