"""Trainers: classic PPO, the multi-turn LM agent trainer, checkpoint/resume, rollout backends (local, Ray).

The package is also the entry point `harnessrl.train(...)` (entry.py): a subpackage import binds the name
`harnessrl.train` to this module, so the module itself is made callable rather than shadowing a function.
"""

import sys
import types


class _Entry(types.ModuleType):
    def __call__(self, *args, **kwargs):
        from harnessrl.train.entry import train

        return train(*args, **kwargs)


sys.modules[__name__].__class__ = _Entry
