"""Plugins: a harness style, policy, suite or reward defined outside harnessrl, named in any spec.

    --harness mypkg.harnesses:PATCH_SPEC        a `module:attribute` reference (a HarnessSpec, or a Harness
    style = "mypkg.harnesses:PatchHarness"        class as a spec's style), imported where it is used
    --policy mypkg.policies:make_policy:ARG      a policy factory (arg, options) -> Policy
    --suite mypkg.suites:load                    a suite loader () -> suite
    reward_funcs = ["mypkg.rewards:brevity"]     a reward function (see harnessrl.rewards)

or by name, through the package metadata entry points `harnessrl.harnesses`, `harnessrl.policies`,
`harnessrl.suites`, `harnessrl.rewards` and `harnessrl.programs` (an installed package's
`[project.entry-points."harnessrl.policies"]`). A `harnessrl.programs` entry point names a real agent
program (a `harnessrl.programs.Program`: its pin, launch, tool table and harness specs), found by
`harnessrl.programs.program(name)` and run as `--harness ID` with the ids of its spec files.

Worker processes (the rollout pools, Ray actors) resolve the same reference again on their side. They find it
because a reference that does not import from the current path is retried with the working folder on the path
(as `python -m` would), and that folder is then kept on `sys.path` and in `PYTHONPATH`, which the process pools
and any subprocess inherit.
"""

from __future__ import annotations

import importlib
import importlib.metadata as md
import os
import re
import sys
from typing import Any

from harnessrl.config import ConfigError

GROUPS = ("harnessrl.harnesses", "harnessrl.policies", "harnessrl.suites", "harnessrl.rewards", "harnessrl.programs")
REFERENCE = re.compile(r"[A-Za-z_][\w]*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")


def is_reference(text: str) -> bool:
    """`pkg.module:attr` (not a path, not a built-in name)."""
    return bool(REFERENCE.fullmatch(str(text)))


def _add_working_folder() -> bool:
    """Put the working folder on sys.path and PYTHONPATH (for workers); False if it already was."""
    cwd = os.getcwd()
    if cwd in sys.path:
        return False
    sys.path.insert(0, cwd)
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if cwd not in paths:
        os.environ["PYTHONPATH"] = os.pathsep.join([cwd, *paths])
    return True


def load_object(ref: str, what: str = "plugin") -> Any:
    """The object a `pkg.module:attr` reference names; a ConfigError naming the reference if it cannot be had."""
    module_name, _, attr = ref.partition(":")
    try:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as err:
            if err.name != module_name.split(".")[0] or not _add_working_folder():
                raise
            module = importlib.import_module(module_name)
    except ImportError as err:
        raise ConfigError(f"{what} {ref!r}: cannot import {module_name} ({err}); install the package that has it, or run "
                          "from the folder that holds it") from None
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise ConfigError(f"{what} {ref!r}: {module_name} has no attribute {attr!r}")
        obj = getattr(obj, part)
    return obj


def entry_point_names(group: str) -> list[str]:
    return sorted({ep.name for ep in md.entry_points(group=group)})


def from_entry_point(group: str, name: str) -> Any | None:
    """The object an installed package registered as `name` in `group`, or None."""
    for ep in md.entry_points(group=group):
        if ep.name == name:
            try:
                return ep.load()
            except Exception as err:  # a broken plugin names itself, not a traceback from deep in a worker
                raise ConfigError(f"{group} plugin {name!r} ({ep.value}) cannot be loaded: {err}") from None
    return None


def resolve(group: str, name: str, what: str) -> Any | None:
    """A `pkg.module:attr` reference or an entry point of `group`; None when `name` is neither."""
    if is_reference(name):
        return load_object(name, what)
    return from_entry_point(group, name)
