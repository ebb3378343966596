"""Benchmark: harnessrl PPO vs stable-baselines3 PPO on CartPole-v1, same settings, same run.

Settings (both): 4 envs x 128 steps, 4 epochs x 4 minibatches (batch 128), lr 2.5e-4 linearly
annealed, entropy 0.01, clip 0.2, value clip 0.2, GAE 0.95, gamma 0.99, grad-norm 0.5, Adam
eps 1e-5, advantage normalisation, separate 64-64 tanh MLPs with orthogonal init, 1 torch
thread, CPU. Seeds are interleaved (ours, SB3, ours, SB3, ...) so both see the same load.

Reported per library: steps/s of the training call (env stepping included, model
construction excluded) and the final mean return: each trained policy, sampling actions,
plays 20 evaluation episodes on the same env seeds. `ratio` = our steps/s / SB3 steps/s
(total steps / total training time over seeds); `cpu_time_ratio` the same per CPU-second of
this process, which a busy shared machine distorts less than wall-clock time.

    .venv/bin/python benchmarks/ppo_cartpole.py [--steps 50000] [--seeds 3]
"""

from __future__ import annotations

import argparse
import json
import time

import gymnasium as gym
import numpy as np
import torch

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


def run_ours(steps: int, seed: int) -> tuple[float, float, float]:
    env = MultiContextVectorEnv([ContextSpec("standard", ENV_ID)], envs_per_context=4)
    cfg = PPOConfig(total_steps=steps, seed=seed)
    t0, c0 = time.perf_counter(), time.process_time()
    result = train_ppo(cfg, env)
    elapsed, cpu = time.perf_counter() - t0, time.process_time() - c0
    gen = torch.Generator().manual_seed(seed)
    agent = result.agent
    ret = evaluate(lambda o: int(agent.act(torch.as_tensor(o, dtype=torch.float32)[None], gen)[0]))
    return result.global_step / elapsed, result.global_step / cpu, ret


def run_sb3(steps: int, seed: int) -> tuple[float, float, float]:
    from stable_baselines3 import PPO
    from stable_baselines3.common.env_util import make_vec_env

    venv = make_vec_env(ENV_ID, n_envs=4, seed=seed)
    model = PPO(
        "MlpPolicy", venv, n_steps=128, batch_size=128, n_epochs=4, learning_rate=lambda progress: 2.5e-4 * progress,
        ent_coef=0.01, clip_range=0.2, clip_range_vf=0.2, gae_lambda=0.95, gamma=0.99, max_grad_norm=0.5, vf_coef=0.5,
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
    ap.add_argument("--seeds", type=int, default=3)
    args = ap.parse_args()
    torch.set_num_threads(1)
    ours, sb3 = [], []
    for seed in range(args.seeds):
        order = (("ours", run_ours), ("sb3", run_sb3)) if seed % 2 == 0 else (("sb3", run_sb3), ("ours", run_ours))
        for name, fn in order:
            sps, cpu_sps, ret = fn(args.steps, seed)
            (ours if name == "ours" else sb3).append((sps, cpu_sps, ret))
            print(f"seed {seed} {name:5s} {sps:8.0f} steps/s (CPU-time {cpu_sps:8.0f})  final mean return {ret:6.1f}",
                  flush=True)

    def rate(runs: list, i: int) -> float:  # total steps / total time == harmonic mean over equal-step runs
        return len(runs) / sum(1 / r[i] for r in runs)

    ours_sps, sb3_sps, ours_cpu, sb3_cpu = rate(ours, 0), rate(sb3, 0), rate(ours, 1), rate(sb3, 1)
    ours_ret, sb3_ret = float(np.mean([r[2] for r in ours])), float(np.mean([r[2] for r in sb3]))
    print(f"harnessrl PPO: {ours_sps:.0f} steps/s ({ours_cpu:.0f} per CPU-second), final mean return {ours_ret:.1f}")
    print(f"SB3 PPO:       {sb3_sps:.0f} steps/s ({sb3_cpu:.0f} per CPU-second), final mean return {sb3_ret:.1f}")
    print(json.dumps({"benchmark": "ppo_cartpole_steps_per_s", "ours": round(ours_sps), "anchor": round(sb3_sps),
                      "unit": "steps/s", "ratio": round(ours_sps / sb3_sps, 2),
                      "target": ">= 2x SB3 steps/s with final return no worse",
                      "cpu_time_ratio": round(ours_cpu / sb3_cpu, 2),
                      "ours_final_return": round(ours_ret, 1), "anchor_final_return": round(sb3_ret, 1),
                      "seeds": args.seeds, "steps": args.steps}))


if __name__ == "__main__":
    main()
