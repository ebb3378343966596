"""A package that is also a function: `harnessrl.evaluate(...)` and `harnessrl.train(...)`.

Importing the subpackage `harnessrl.evaluate` binds the name `harnessrl.evaluate` to it, which would shadow
a function of that name in `harnessrl`; so the package module itself is made callable instead.
"""

from __future__ import annotations

import importlib
import sys
import types


def make_callable(module_name: str, target: str) -> None:
    """Calling the module `module_name` calls `target` ("module:function", imported on the first call)."""

    class _Entry(types.ModuleType):
        def __call__(self, *args, **kwargs):
            module, _, attr = target.partition(":")
            return getattr(importlib.import_module(module), attr)(*args, **kwargs)

    sys.modules[module_name].__class__ = _Entry
