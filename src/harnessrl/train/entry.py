"""`harnessrl.train(...)`: RL for an LM through harnesses from Python (what `harnessrl train agent` runs).

    rows = harnessrl.train({"policy": {"model": "runs/tiny"}, "harnesses": ["lookup-plain"], "updates": 2})
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


#: engine -> ("module:trainer class", "module:config class"), by name like policies.registry.FACTORIES: an engine
#: (engines/ sits above train) is imported only when it is asked for
ENGINES: dict[str, tuple[str, str]] = {
    "native": ("harnessrl.train.agent:AgentTrainer", "harnessrl.train.agent:AgentTrainConfig"),
    "trl": ("harnessrl.engines.trl:TRLEngine", "harnessrl.engines.trl_config:TRLRunConfig"),
}


def _load(ref: str) -> Any:
    import importlib

    module, _, attr = ref.partition(":")
    return getattr(importlib.import_module(module), attr)


def train(config: Any, *, engine: str = "native", resume: bool = False) -> list[dict[str, Any]]:
    """RL for an LM through harnesses: `config` is an AgentTrainConfig, a dict of its fields or a YAML/TOML run
    file; engine "native" (this process) or "trl" (TRL's GRPOTrainer). Returns one metrics row per update."""
    from harnessrl.config import ConfigError, load_config
    from harnessrl.rewards import check

    if engine not in ENGINES:
        raise ConfigError(f"engine {engine!r}: choose {' or '.join(ENGINES)}")
    trainer_cls, cls = (_load(ref) for ref in ENGINES[engine])
    if isinstance(config, (str, Path)):
        cfg = load_config(cls, config)
    elif isinstance(config, dict):
        cfg = cls.model_validate(config)
    else:
        cfg = config if isinstance(config, cls) else cls.model_validate(config.model_dump())
    check(cfg.reward_hook)
    return trainer_cls(cfg).run(resume=resume)
