"""Policies by name, so a command line (and a worker process) can build one from a string.

    --policy oracle                     scripted (oracle, noop, explore, oracle-drop, ...)
    --policy endpoint:MODEL             an OpenAI-compatible endpoint (options: base_url, api_key_env, ...)
    --policy lm:PATH_OR_NAME            a Hugging Face causal LM: a folder, or a name from `harnessrl models list`
                                        (options: any LMConfig field)
    --policy replay:FILE.jsonl          assistant messages from a JSONL file, in order (transcripts, tests)

A `PolicySpec` is plain data (picklable), so process-pool and Ray workers rebuild the same
policy on their side instead of shipping a live object (a model, an HTTP client) across.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any, Callable

from harnessrl.config import ConfigError
from harnessrl.policies.base import Policy

#: name -> "module:callable"; the callable takes (arg, options) and returns a Policy
FACTORIES: dict[str, str] = {
    "endpoint": "harnessrl.policies.endpoint:from_spec",
    "lm": "harnessrl.policies.registry:_lm_from_spec",
    "probe-skill-blind": "harnessrl.policies.skill_probes:blind_from_spec",
    "probe-section-follower": "harnessrl.policies.skill_probes:follower_from_spec",
    "attack": "harnessrl.policies.adversaries:from_spec",
    "replay": "harnessrl.policies.replay:from_spec",
}


@dataclass(frozen=True)
class PolicySpec:
    name: str
    arg: str = ""
    options: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def parse(cls, text: str, options: dict[str, Any] | None = None) -> PolicySpec:
        name, _, arg = text.partition(":")
        return cls(name.strip(), arg.strip(), dict(options or {}))

    def __str__(self) -> str:
        return f"{self.name}:{self.arg}" if self.arg else self.name


def register_policy(name: str, factory: str | Callable[[str, dict[str, Any]], Policy]) -> None:
    FACTORIES[name] = factory  # type: ignore[assignment]


def known_policies() -> list[str]:
    from harnessrl.policies.scripted import POLICIES

    return sorted(set(POLICIES) | set(FACTORIES))


def check_policy(spec: PolicySpec) -> None:
    """Fail early (before workers start) on a policy name nobody registered."""
    from harnessrl.policies.scripted import POLICIES

    if spec.name not in POLICIES and spec.name not in FACTORIES:
        raise ConfigError(f"unknown policy {spec.name!r}; known: {', '.join(known_policies())}")


def make_policy(spec: PolicySpec | str) -> Policy:
    """Build a policy from its spec; unknown names get an error listing the known ones."""
    if isinstance(spec, str):
        spec = PolicySpec.parse(spec)
    from harnessrl.policies.scripted import POLICIES

    if spec.name in POLICIES:
        if spec.arg or spec.options:
            raise ConfigError(f"policy {spec.name!r} takes no argument or options")
        return POLICIES[spec.name]()
    factory = FACTORIES.get(spec.name)
    if factory is None:
        raise ConfigError(f"unknown policy {spec.name!r}; known: {', '.join(known_policies())}")
    if isinstance(factory, str):
        module, _, attr = factory.partition(":")
        factory = getattr(importlib.import_module(module), attr)
    return factory(spec.arg, spec.options)


def _lm_from_spec(arg: str, options: dict[str, Any]) -> Policy:
    if not arg:
        raise ConfigError("policy lm needs a model: --policy lm:PATH_OR_ID")
    from harnessrl.policies.lm import LMConfig, LMPolicy

    # a named policy's weights stand still: keep earlier turns' keys/values (1 GB unless the options say otherwise)
    return LMPolicy.from_config(LMConfig(model=arg, **{"prefix_cache_mb": 1024, **options}))
