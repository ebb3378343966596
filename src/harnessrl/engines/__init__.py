"""Adapters that run harnessrl rollouts inside an existing distributed trainer (TRL GRPOTrainer)."""
