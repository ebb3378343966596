"""harnessrl: train agents with RL across harnesses, and measure what the training context taught them.

The public API is what `__all__` names (documented in docs/api.md); modules and names with a leading
underscore are private and may change. Names are imported on first use, so `import harnessrl` stays light.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

#: public name -> "module:attribute" where it lives
_PUBLIC = {
    # the record type and the store
    "Episode": "harnessrl.episode:Episode", "Turn": "harnessrl.episode:Turn", "Context": "harnessrl.episode:Context",
    "RecordStore": "harnessrl.records:RecordStore",
    # tasks and suites
    "Task": "harnessrl.tasks.base:Task", "Suite": "harnessrl.tasks.base:Suite",
    "load_suite": "harnessrl.rollout.suites:load_suite", "register_suite": "harnessrl.rollout.suites:register_suite",
    # harnesses and their sessions
    "Harness": "harnessrl.harness.base:Harness", "Session": "harnessrl.harness.base:Session",
    "HarnessSpec": "harnessrl.harness.base:HarnessSpec", "StepResult": "harnessrl.harness.base:StepResult",
    "Verdict": "harnessrl.harness.base:Verdict", "ToolCall": "harnessrl.harness.base:ToolCall",
    "FormatError": "harnessrl.harness.base:FormatError", "Intent": "harnessrl.harness.base:Intent",
    "CodeHarness": "harnessrl.harness._common:CodeHarness", "CodeSession": "harnessrl.harness._common:CodeSession",
    "register_style": "harnessrl.harness.base:register_style", "load_spec": "harnessrl.harness.base:load_spec",
    "make_harness": "harnessrl.harness.base:make_harness",
    # policies
    "Policy": "harnessrl.policies.base:Policy", "Action": "harnessrl.policies.base:Action",
    "AgentState": "harnessrl.policies.base:AgentState", "PolicySpec": "harnessrl.policies.registry:PolicySpec",
    "make_policy": "harnessrl.policies.registry:make_policy", "register_policy": "harnessrl.policies.registry:register_policy",
    # rewards, configs, errors
    "RewardHook": "harnessrl.rewards:RewardHook", "AgentTrainConfig": "harnessrl.train.agent:AgentTrainConfig",
    "ConfigError": "harnessrl.config:ConfigError",
    # entry points
    # (the packages harnessrl.evaluate and harnessrl.train are callable: evaluate/entry.py, train/entry.py)
    "evaluate": "harnessrl.evaluate", "train": "harnessrl.train",
}

__all__ = ["__version__", *_PUBLIC]


def __getattr__(name: str) -> Any:
    if name not in _PUBLIC:
        raise AttributeError(f"module 'harnessrl' has no attribute {name!r}")
    import importlib

    module, _, attr = _PUBLIC[name].partition(":")
    value = getattr(importlib.import_module(module), attr) if attr else importlib.import_module(module)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_PUBLIC))
