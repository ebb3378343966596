"""Evaluation: sealed splits, cross-harness matrices, statistics (bootstrap CIs, IQM)."""
