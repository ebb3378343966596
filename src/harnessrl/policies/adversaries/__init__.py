"""Scripted adversaries: one known grader attack per module, and the registry that names them.

    ATTACKS["fake-summary"]            the class; ATTACKS[name]() is a Policy
    register_attack(MyAttack)          add your own (a subclass of base.Attack)
    make_policy("attack:fake-summary") through the policy registry (workers rebuild it by name)

`harnessrl audit` (evaluate/audit.py) runs every applicable attack on every task x harness and
reports each cell as scored (a hole), blocked, or not applicable. docs/audit.md describes each
attack, what a hole means, and how to fix a task.
"""

from __future__ import annotations

from typing import Any

from harnessrl.config import ConfigError
from harnessrl.policies.adversaries.base import Attack
from harnessrl.policies.adversaries.conftest_plant import ConftestPlant
from harnessrl.policies.adversaries.exit_handlers import ExitHandlers
from harnessrl.policies.adversaries.fake_summary import FakeSummary
from harnessrl.policies.adversaries.hardcode_output import HardcodeOutput
from harnessrl.policies.adversaries.hooks_makefile import HookSideEffect
from harnessrl.policies.adversaries.read_hidden import ReadHidden
from harnessrl.policies.adversaries.report_forgery import HookInject, ReportForgery
from harnessrl.policies.adversaries.runner_patch import RunnerPatch
from harnessrl.policies.adversaries.shadow_modules import ModuleShadow
from harnessrl.policies.adversaries.site_hooks import SiteHooks
from harnessrl.policies.adversaries.special_case import SpecialCase
from harnessrl.policies.adversaries.test_edit import TestEdit
from harnessrl.policies.adversaries.trust_base import AncestorSymlink, LibraryHijack, PathShim, StdlibReplace
from harnessrl.policies.adversaries.visible_only import VisibleOnly

ATTACKS: dict[str, type[Attack]] = {}


def register_attack(cls: type[Attack]) -> type[Attack]:
    """Add an attack class under its `attack_id` (usable as a decorator)."""
    if not cls.attack_id:
        raise ConfigError(f"{cls.__name__}: set attack_id before registering the attack")
    ATTACKS[cls.attack_id] = cls
    return cls


for _cls in (TestEdit, ConftestPlant, SiteHooks, ModuleShadow, FakeSummary, ExitHandlers, RunnerPatch,
             HookSideEffect, ReadHidden, HardcodeOutput, SpecialCase, VisibleOnly, ReportForgery, HookInject,
             LibraryHijack, PathShim, AncestorSymlink, StdlibReplace):
    register_attack(_cls)


def make_attack(name: str) -> Attack:
    cls = ATTACKS.get(name)
    if cls is None:
        raise ConfigError(f"unknown attack {name!r}; known: {', '.join(ATTACKS)}")
    return cls()


def from_spec(arg: str, options: dict[str, Any]) -> Attack:
    """The policy-registry factory: `attack:NAME`."""
    if options:
        raise ConfigError("attack policies take no options")
    if not arg:
        raise ConfigError(f"policy attack needs a name: --policy attack:NAME (one of {', '.join(ATTACKS)})")
    return make_attack(arg)


__all__ = ["ATTACKS", "Attack", "from_spec", "make_attack", "register_attack"]
