"""Rollout: run (policy x harness x task x seed) into Episodes, locally or on Ray.

This stage sits between the agent stack (tasks, envs, harness, policies) and its consumers
(train, evaluate): both need rollouts, and evaluate must not import train, so the episode
loop and its backends live here rather than in train/.
"""
