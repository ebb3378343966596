"""Policies by name, so a command line (and a worker process) can build one from a string.

    --policy oracle                     scripted (oracle, noop, explore, oracle-drop, ...)
    --policy endpoint:MODEL             an OpenAI-compatible endpoint (options: base_url, api_key_env, ...)
    --policy forward:URL                forward mode: programs' calls go to an OpenAI-compatible server as sent,
                                        its token ids and log-probs recorded (options: model, sampling, tokens, ...)
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
    "forward": "harnessrl.policies.endpoint:forward_from_spec",
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


#: policies whose options are the fields of one config model: their options are checked before workers start
OPTION_MODELS: dict[str, str] = {
    "lm": "harnessrl.policies.lm:LMConfig",
    "endpoint": "harnessrl.policies.endpoint:EndpointConfig",
    "forward": "harnessrl.policies.endpoint:ForwardConfig",
}


def check_policy(spec: PolicySpec) -> None:
    """Fail early (before workers start) on a policy name nobody registered, or on an option its config
    does not have or cannot take (a one-line ConfigError naming the key, not a worker's traceback)."""
    from harnessrl.policies.scripted import POLICIES

    if spec.name not in POLICIES and spec.name not in FACTORIES and _plugin_factory(spec) is None:
        raise ConfigError(f"unknown policy {spec.name!r}; known: {', '.join(known_policies())} (or a plugin: "
                          "--policy pkg.module:factory[:ARG], an entry point of harnessrl.policies)")
    if spec.name in OPTION_MODELS:
        module, _, attr = OPTION_MODELS[spec.name].partition(":")
        model = getattr(importlib.import_module(module), attr)
        # the required fields the spec supplies elsewhere (the model from `lm:PATH`, a URL from the environment)
        # get stand-ins, so that only what the user gave is judged here
        stand_in = {k: v for k, v in {"model": spec.arg or "m", "base_url": "http://127.0.0.1/v1"}.items() if k in model.model_fields}
        _validate_options(model, {**stand_in, **spec.options}, spec.name)


def _validate_options(model, data: dict[str, Any], name: str):
    from pydantic import ValidationError

    from harnessrl.config import format_validation_error

    try:
        return model.model_validate(data)
    except ValidationError as err:
        raise ConfigError(format_validation_error(err, model, f"--policy-option of policy {name}")) from None


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
    arg = spec.arg
    if factory is None:
        plugin = _plugin_factory(spec)
        if plugin is None:
            raise ConfigError(f"unknown policy {spec.name!r}; known: {', '.join(known_policies())}")
        factory, arg = plugin
    if isinstance(factory, str):
        module, _, attr = factory.partition(":")
        factory = getattr(importlib.import_module(module), attr)
    return factory(arg, spec.options)


def _plugin_factory(spec: PolicySpec) -> tuple[Callable[[str, dict[str, Any]], Policy], str] | None:
    """(factory, its ARG) of a policy from outside harnessrl: `--policy pkg.module:factory[:ARG]` (parsed as name
    pkg.module, arg factory[:ARG]; the module path needs a dot: mypkg.policies) or an entry point of harnessrl.policies (`--policy NAME[:ARG]`); None if neither."""
    from harnessrl import plugins

    attr, _, arg = spec.arg.partition(":")
    if "." in spec.name and plugins.is_reference(f"{spec.name}:{attr}"):  # a module path: never a built-in name
        return plugins.load_object(f"{spec.name}:{attr}", "policy"), arg
    factory = plugins.from_entry_point("harnessrl.policies", spec.name)
    return (factory, spec.arg) if factory is not None else None


def _lm_from_spec(arg: str, options: dict[str, Any]) -> Policy:
    if not arg:
        raise ConfigError("policy lm needs a model: --policy lm:PATH_OR_ID")
    from harnessrl.policies.lm import LMConfig, LMPolicy

    # a named policy's weights stand still: keep earlier turns' keys/values (1 GB unless the options say otherwise)
    return LMPolicy.from_config(_validate_options(LMConfig, {"model": arg, "prefix_cache_mb": 1024, **options}, "lm"))
