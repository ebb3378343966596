"""Evaluation: sealed splits, cross-harness matrices, statistics (bootstrap CIs, IQM).

The package is also the entry point `harnessrl.evaluate(...)` (entry.py; see harnessrl/entrypoint.py)."""

from harnessrl.entrypoint import make_callable

make_callable(__name__, "harnessrl.evaluate.entry:evaluate")
