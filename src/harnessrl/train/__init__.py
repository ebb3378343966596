"""Trainers: classic PPO, the multi-turn LM agent trainer, checkpoint/resume, rollout backends (local, Ray)."""
