"""docs/config.md from the configs themselves: every key of a training run file, its default and description.

    python -m harnessrl.configdoc > docs/config.md      (tests/test_config_docs.py checks the page is current)
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel
from pydantic_core import PydanticUndefined


def _default(field: Any) -> str:
    if field.default_factory is not None:
        try:
            value = field.default_factory()
        except TypeError:  # a factory that needs the other fields
            return "(computed)"
    elif field.default is PydanticUndefined:
        return "required"
    else:
        value = field.default
    if isinstance(value, BaseModel):
        return "(a section)"
    return f"`{json.dumps(value, default=str)}`"


def _rows(model: type[BaseModel], prefix: str = "", skip: tuple[str, ...] = ()) -> list[str]:
    rows = []
    for name, field in model.model_fields.items():
        if name in skip:
            continue
        text = " ".join((field.description or "").split()).replace("|", "\\|")
        rows.append(f"| `{prefix}{name}` | {_default(field)} | {text} |")
    return rows


def render() -> str:
    from harnessrl.engines.trl_config import TRLOptions
    from harnessrl.policies.lm import LMConfig
    from harnessrl.train.agent import AgentTrainConfig

    head = "| key | default | meaning |\n|---|---|---|"
    return "\n".join([
        "# Config keys of a training run",
        "",
        "A run file (YAML or TOML) for `harnessrl train agent -c run.yaml` (or `harnessrl.train(...)`) holds these keys;",
        "`--set KEY=VALUE` overrides any of them (`--set policy.lora_rank=8`, `--set trl.use_vllm=true`). TRL's GRPOConfig",
        "names are accepted where a key has one (`beta` for kl_coef, `epsilon`, `loss_type`, `report_to`, ...).",
        "Unknown keys are errors that name the allowed ones. This page is generated from the code:",
        "`python -m harnessrl.configdoc > docs/config.md`.",
        "",
        "## The run",
        "",
        head, *_rows(AgentTrainConfig, skip=("policy",)),
        "",
        "## `policy`: the model being trained",
        "",
        head, *_rows(LMConfig, "policy."),
        "",
        "## `trl`: only with `--engine trl` (TRL's GRPOTrainer)",
        "",
        head, *_rows(TRLOptions, "trl."),
        "",
    ])


if __name__ == "__main__":
    print(render(), end="")
