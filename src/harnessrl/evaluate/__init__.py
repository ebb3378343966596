"""Evaluation: sealed splits, cross-harness matrices, statistics (bootstrap CIs, IQM).

The package is also the entry point `harnessrl.evaluate(...)` (entry.py): a subpackage import binds the name
`harnessrl.evaluate` to this module, so the module itself is made callable rather than shadowing a function.
"""

import sys
import types


class _Entry(types.ModuleType):
    def __call__(self, *args, **kwargs):
        from harnessrl.evaluate.entry import evaluate

        return evaluate(*args, **kwargs)


sys.modules[__name__].__class__ = _Entry
