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
        "## `report_to` in the other trainers and recipes",
        "",
        "Every trainer and recipe takes `report_to` (TRL's name and values: a list of `tensorboard`, `trackio`, `mlflow`,",
        "`wandb`, or `all` / `none`). All four log offline by default: TensorBoard event files, trackio's local SQLite store",
        "(`<out>/trackio`, or `TRACKIO_DIR`; one store per process, since trackio reads it once), an MLflow `mlruns` folder",
        "(or `MLFLOW_TRACKING_URI`), W&B offline mode (unless `WANDB_MODE`). `pip install 'harnessrl[tracking]'` installs",
        "the first three, `harnessrl[wandb]` the last. metrics.csv is written whatever `report_to` says.",
        "",
        "| trainer or recipe | key | one tracker run per | steps |",
        "|---|---|---|---|",
        *[f"| {who} | `{key}` | {per} | {steps} |" for who, key, per, steps in REPORT_TO_PLACES],
        "",
    ])


#: where each trainer and recipe opens its tracker runs (tests/train/test_report_to_everywhere.py runs each)
REPORT_TO_PLACES = [
    ("`harnessrl train agent` (both engines)", "report_to", "run folder", "updates"),
    ("`recipe harness-teacher`, `multi-harness`, `agentic-coding`", "report_to", "RL run of the recipe", "updates"),
    ("`recipe conditioned-critic` (PPO)", "report_to", "job: `runs/<family>/<task>/<critic>/seed<N>`", "PPO updates"),
    ("`recipe reward-tilt`", "report_to", "fine-tuning run: `runs/<optimizer>-<kind>-s<seed>`", "rounds"),
    ("`recipe bipa` (skill optimizer)", "report_to (or optimizer.report_to)", "optimizer run: `run/`", "iterations"),
    ("`harnessrl.train.ppo.train_ppo` (library)", "PPOConfig.report_to", "its run_dir (required)", "PPO updates"),
]


if __name__ == "__main__":
    print(render(), end="")
