"""Trainers: classic PPO, the multi-turn LM agent trainer, checkpoint/resume, rollout backends (local, Ray).

The package is also the entry point `harnessrl.train(...)` (entry.py; see harnessrl/entrypoint.py)."""

from harnessrl.entrypoint import make_callable

make_callable(__name__, "harnessrl.train.entry:train")
