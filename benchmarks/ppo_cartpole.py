"""Benchmark: harnessrl PPO vs stable-baselines3 PPO on CartPole-v1, same settings, same run.

Settings (both): 4 envs x 128 steps, 4 epochs x 4 minibatches (batch 128), lr 2.5e-4 linearly
annealed, entropy 0.01, clip 0.2, GAE 0.95, gamma 0.99, grad-norm 0.5, vf_coef 0.5, Adam eps
1e-5, advantage normalisation, separate 64-64 tanh MLPs with orthogonal init, 1 torch thread,
CPU. Value clipping is off by default (SB3's default; the issue's settings do not name it);
`--vf-clip 0.2` turns it on in both (cleanrl's max form in ours, SB3's clipped form in SB3).
Convention difference kept as each library defines it: our value loss is 0.5 (V - R)^2 (cleanrl),
SB3's is (V - R)^2, both times vf_coef.
Seeds are interleaved (ours, SB3, ours, SB3, ...) so both see the same load.

Reported per library: steps/s of the training call (env stepping included, model
construction excluded) and the final mean return: each trained policy, sampling actions,
plays 20 evaluation episodes on the same env seeds. `ratio` = our steps/s / SB3 steps/s
(total steps / total training time over seeds); `cpu_time_ratio` the same per CPU-second of
this process, which a busy shared machine distorts less than wall-clock time. Both libraries
run a short untimed warm-up first, so neither pays the process's first-call costs.

    .venv/bin/python benchmarks/ppo_cartpole.py [--steps 50000] [--seeds 6] [--vf-clip 0.2]
"""

from __future__ import annotations

import argparse
import json
import time

import gymnasium as gym
import numpy as np
import torch
from scipy import stats

from harnessrl.envs.multicontext import ContextSpec, MultiContextVectorEnv
from harnessrl.train.ppo import PPOConfig, train_ppo

ENV_ID = "CartPole-v1"
EVAL_EPISODES = 20


def evaluate(act) -> float:
    """Mean return of `act(obs) -> action` over EVAL_EPISODES episodes with fixed env seeds."""
    env = gym.make(ENV_ID)
    returns = []
    for ep in range(EVAL_EPISODES):
        obs, _ = env.reset(seed=10_000 + ep)
        done, total = False, 0.0
        while not done:
            obs, r, te, tr, _ = env.step(act(obs))
            total += r
            done = te or tr
        returns.append(total)
    env.close()
    return float(np.mean(returns))


def run_ours(steps: int, seed: int, vf_clip: float | None) -> tuple[float, float, float]:
    env = MultiContextVectorEnv([ContextSpec("standard", ENV_ID)], envs_per_context=4)
    cfg = PPOConfig(total_steps=steps, seed=seed, clip_vloss=vf_clip is not None, clip_coef=0.2)
    t0, c0 = time.perf_counter(), time.process_time()
    result = train_ppo(cfg, env)
    elapsed, cpu = time.perf_counter() - t0, time.process_time() - c0
    gen = torch.Generator().manual_seed(seed)
    agent = result.agent
    ret = evaluate(lambda o: int(agent.act(torch.as_tensor(o, dtype=torch.float32)[None], gen)[0]))
    return result.global_step / elapsed, result.global_step / cpu, ret


def run_sb3(steps: int, seed: int, vf_clip: float | None) -> tuple[float, float, float]:
    from stable_baselines3 import PPO
    from stable_baselines3.common.env_util import make_vec_env

    venv = make_vec_env(ENV_ID, n_envs=4, seed=seed)
    model = PPO(
        "MlpPolicy", venv, n_steps=128, batch_size=128, n_epochs=4, learning_rate=lambda progress: 2.5e-4 * progress,
        ent_coef=0.01, clip_range=0.2, clip_range_vf=vf_clip, gae_lambda=0.95, gamma=0.99, max_grad_norm=0.5, vf_coef=0.5,
        normalize_advantage=True, seed=seed, device="cpu", verbose=0,
        policy_kwargs=dict(net_arch=dict(pi=[64, 64], vf=[64, 64]), activation_fn=torch.nn.Tanh, ortho_init=True),
    )
    t0, c0 = time.perf_counter(), time.process_time()
    model.learn(total_timesteps=steps)
    elapsed, cpu = time.perf_counter() - t0, time.process_time() - c0
    ret = evaluate(lambda o: int(model.predict(o, deterministic=False)[0]))
    return model.num_timesteps / elapsed, model.num_timesteps / cpu, ret


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=50_000)
    ap.add_argument("--seeds", type=int, default=6)
    ap.add_argument("--vf-clip", type=float, default=None, help="value clipping in both (default: off)")
    args = ap.parse_args()
    torch.set_num_threads(1)
    run_ours(1024, 0, args.vf_clip), run_sb3(1024, 0, args.vf_clip)  # warm-up (first-call costs), not counted
    ours, sb3 = [], []
    for seed in range(args.seeds):
        order = (("ours", run_ours), ("sb3", run_sb3)) if seed % 2 == 0 else (("sb3", run_sb3), ("ours", run_ours))
        for name, fn in order:
            sps, cpu_sps, ret = fn(args.steps, seed, args.vf_clip)
            (ours if name == "ours" else sb3).append((sps, cpu_sps, ret))
            print(f"seed {seed} {name:5s} {sps:8.0f} steps/s (CPU-time {cpu_sps:8.0f})  final mean return {ret:6.1f}",
                  flush=True)

    def rate(runs: list, i: int) -> float:  # total steps / total time == harmonic mean over equal-step runs
        return len(runs) / sum(1 / r[i] for r in runs)

    ours_sps, sb3_sps, ours_cpu, sb3_cpu = rate(ours, 0), rate(sb3, 0), rate(ours, 1), rate(sb3, 1)
    r_ours, r_sb3 = np.array([r[2] for r in ours]), np.array([r[2] for r in sb3])
    se = lambda x: float(x.std(ddof=1) / np.sqrt(len(x))) if len(x) > 1 else float("nan")  # noqa: E731
    # one-sided Welch test of "ours is worse": a small p would mean a real shortfall
    p_worse = float(stats.ttest_ind(r_ours, r_sb3, equal_var=False, alternative="less").pvalue) if len(r_ours) > 1 else 1.0
    print(f"harnessrl PPO: {ours_sps:.0f} steps/s ({ours_cpu:.0f} per CPU-second), final mean return "
          f"{r_ours.mean():.1f} +- {se(r_ours):.1f}")
    print(f"SB3 PPO:       {sb3_sps:.0f} steps/s ({sb3_cpu:.0f} per CPU-second), final mean return "
          f"{r_sb3.mean():.1f} +- {se(r_sb3):.1f}")
    print(f"P(ours' return is lower, one-sided Welch t-test) p = {p_worse:.3f}")
    print(json.dumps({"benchmark": "ppo_cartpole_steps_per_s", "ours": round(ours_sps), "anchor": round(sb3_sps),
                      "unit": "steps/s", "ratio": round(ours_sps / sb3_sps, 2),
                      "target": ">= 2x SB3 steps/s with final return no worse",
                      "cpu_time_ratio": round(ours_cpu / sb3_cpu, 2),
                      "ours_final_return": round(float(r_ours.mean()), 1), "anchor_final_return": round(float(r_sb3.mean()), 1),
                      "return_se": [round(se(r_ours), 1), round(se(r_sb3), 1)], "p_ours_worse": round(p_worse, 3),
                      "seeds": args.seeds, "steps": args.steps, "vf_clip": args.vf_clip}))


if __name__ == "__main__":
    main()
