"""A PPO run for the kill/resume test: `python -m tests.train.ppo_child RUN_DIR [resume] [slow]`."""

import sys
import time

import torch

from harnessrl.envs.multicontext import MultiContextVectorEnv, cartpole_contexts
from harnessrl.train.ppo import PPOConfig, train_ppo

CONFIG = dict(total_steps=12 * 4 * 64, num_steps=64, critic="conditioned", reward_norm="context", obs_norm="context",
              checkpoint_every=1, seed=7)


def make_env():
    return MultiContextVectorEnv(cartpole_contexts(["standard", "heavy-4x-reward"]), envs_per_context=2)


def run(run_dir, resume=False, slow=False):
    torch.set_num_threads(1)
    on_update = (lambda i, n, row: time.sleep(0.3)) if slow else None  # leaves time to kill it mid-run
    return train_ppo(PPOConfig(**CONFIG), make_env(), run_dir=run_dir, resume=resume, on_update=on_update)


if __name__ == "__main__":
    run(sys.argv[1], resume="resume" in sys.argv[2:], slow="slow" in sys.argv[2:])
