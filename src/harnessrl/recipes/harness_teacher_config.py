"""The study's settings (harness-teacher recipe): which harnesses, how much RL, the analysis's
beta and the KL term that makes training share it; and the small / paper presets."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from harnessrl.config import ConfigError
from harnessrl.recipes.lm_base import LMRecipeConfig

CLAIM = ("Under KL-regularised control a trained policy's log-odds carry its training harness's action preferences; "
         "changing the harness changes both the achievable return (ceiling) and the policy's mismatch, so comparing "
         "agents across harnesses conflates the two; ceiling and mismatch predict the gains of further training.")


#: The MiniWoB++ preset's tasks: one-page tasks whose oracle needs 1-2 actions, so a tiny LM can
#: learn them from a few hundred demonstrations (docs/harness-teacher.md "On MiniWoB++").
MINIWOB_TASKS = ["click-test-2", "click-link", "click-dialog", "click-widget", "focus-text", "click-option"]
#: Harness variants of the preset: each changes one thing of miniwob-html (specs/variants/README.md).
MINIWOB_HARNESSES = ["miniwob-html", "miniwob-html-sys", "miniwob-html-noclass", "miniwob-html-blind",
                     "miniwob-html-1turn", "miniwob-axtree"]


class HarnessTeacherConfig(LMRecipeConfig):
    scale: Literal["small", "miniwob", "paper"] = "small"
    tasks: list[str] | None = Field(None, description="The suite's tasks to use (names or ids; None: all).")
    held_out: Literal["tasks", "seeds"] = Field(
        "tasks", description="tasks: the last eval_tasks tasks are held out. seeds: every task trains and is "
        "evaluated, on instances (env seeds) training never drew (MiniWoB++: a page per seed).")
    backend: Literal["local", "ray"] = Field("local", description="Where evaluation rollouts run (RL generation stays local).")
    ray_address: str | None = Field(None, description="An existing Ray cluster (ray://host:10001 or host:6379) for --backend ray.")
    train_harness: str = "lookup-plain"
    harnesses: list[str] = Field(["lookup-plain", "lookup-obs", "lookup-sys", "lookup-ask", "lookup-noobj", "lookup-partial",
                                  "lookup-kv"], description="Evaluated harnesses (variants differ in syntax, prompt or ceiling).")
    sealed_harness: str | None = "lookup-json"
    calibration_harnesses: list[str] = Field(["lookup-sys", "lookup-noobj"], min_length=1,
                                             description="Further-trained to fit kappa in dS = kappa (C - S).")
    eval_tasks: int = Field(32, ge=2, description="Held-out tasks (the last ones of the suite).")
    sft_seeds: int = Field(20, ge=1, description="Demonstrations per training task (a lookup world per seed).")
    agent_updates: int = Field(12, ge=1, description="RL updates of the agent in the training harness.")
    further_updates: int = Field(20, ge=1, description="RL updates of each round of further training.")
    group_size: int = Field(16, ge=2, description="Samples per (task, harness) in an RL batch.")
    tasks_per_update: int = Field(8, ge=1)
    lr: float = 1e-4
    epochs: int = Field(2, ge=1, description="Passes over each RL batch.")
    minibatches: int = Field(4, ge=1, description="Optimizer steps per pass.")
    ref_samples: int = Field(32, ge=2, description="Reference samples per task and harness (the ceiling's k).")
    eval_samples: int = Field(16, ge=1, description="Samples of a trained policy per task and harness (its score).")
    beta: float = Field(0.1, gt=0, description="The beta of KL-regularised control: the RL's KL weight (unless kl_coef "
                        "is set) and the soft ceiling's and mismatch's beta.")
    kl_coef: float | None = Field(None, ge=0, description="Weight of the RL's KL term to the reference; None = beta, so "
                                  "training and analysis share one beta (0 with adv_scale=group: the earlier, unregularised study).")
    kl_estimator: Literal["k1", "k2", "k3"] = Field(
        "k2", description="KL estimator of the RL loss term. k2 (x^2/2, x = log pi - log pi_ref) is the one whose "
        "on-policy gradient is that of KL(pi || pi_ref), so RL heads for the tilt pi_ref exp(r/beta)/Z; as loss terms "
        "k1 has zero expected gradient and k3 follows KL(pi_ref || pi) (tests/analysis/test_beta_sweep.py).")
    adv_scale: Literal["group", "batch", "none"] = Field(
        "none", description="none keeps rewards in their units, so kl_coef is the objective's beta; group (GRPO's "
        "std division) would make the effective beta kl_coef x the group's reward std.")
    betas: list[float] = Field([], description="beta sweep: one agent per beta (KL weight and analysis beta alike), "
                               "sampled under every harness, with the exact solver's prediction at that beta. "
                               "Empty = no sweep. The agent of the main study is reused for beta = kl_coef.")
    n_boot: int = Field(1000, ge=10)
    seed: int = 0

    @model_validator(mode="after")
    def _check(self) -> "HarnessTeacherConfig":
        if self.train_harness not in self.harnesses:
            raise ValueError(f"train_harness {self.train_harness!r} must be one of harnesses {self.harnesses}")
        missing = [h for h in self.calibration_harnesses if h not in self.harnesses]
        if missing:
            raise ValueError(f"calibration_harnesses {missing} must be among harnesses {self.harnesses}")
        if self.sealed_harness and self.sealed_harness in self.harnesses:
            raise ValueError(f"sealed_harness {self.sealed_harness!r} is also in harnesses; a sealed harness is unseen")
        if any(b <= 0 for b in self.betas) or len(set(self.betas)) != len(self.betas):
            raise ValueError(f"betas {self.betas} must be distinct and > 0")
        if self.held_out == "seeds" and self.tasks is not None and self.eval_tasks > len(self.tasks):
            raise ValueError(f"eval_tasks={self.eval_tasks} with held_out=seeds: at most the {len(self.tasks)} tasks given")
        if not self.candidates:
            raise ValueError("no harness is left to predict a gain for: harnesses minus the training and calibration ones")
        return self

    @property
    def train_kl_coef(self) -> float:
        """The KL weight every RL run of the study trains with: beta unless kl_coef is set."""
        return self.beta if self.kl_coef is None else self.kl_coef

    @property
    def candidates(self) -> list[str]:
        return [h for h in self.harnesses if h != self.train_harness and h not in self.calibration_harnesses]


def preset(scale: str) -> dict[str, Any]:
    """small: a tiny LM on the lookup suite (minutes on 2 CPU cores). miniwob: a tiny LM on 6 MiniWoB++
    tasks in headless Chromium through 6 harness variants + a sealed one (<= 45 min on 2 cores).
    paper: terminal tasks through the coding harnesses, for a real model on a GPU (--model NAME --lora-rank 32)."""
    if scale == "small":
        return {"scale": "small"}
    if scale == "paper":
        return {"scale": "paper", "suite": "terminal-v1", "train_harness": "terminus",
                "harnesses": ["terminus", "openhands", "qwen_code", "swe_agent", "qwen_code_3turns", "openhands_editor_only"],
                "calibration_harnesses": ["openhands", "qwen_code_3turns"], "sealed_harness": "swe_agent_window30",
                "eval_tasks": 8, "sft_seeds": 1, "sft_epochs": 2, "sft_lr": 1e-4, "sft_batch": 8, "lora_rank": 32,
                "agent_updates": 100, "further_updates": 50, "group_size": 8, "tasks_per_update": 4, "lr": 1e-5,
                "epochs": 1, "minibatches": 4,
                "objective": "gspo", "ref_samples": 32, "eval_samples": 8, "max_new_tokens": 1024,
                "max_context_tokens": 32768, "workers": 1, "engine": "trl",
                "kl_estimator": "k3"}  # TRL's GRPOTrainer has only k3 (see kl_estimator)
    if scale == "miniwob":
        # ~2,500 browser episodes in all; measured wall time in docs/harness-teacher.md
        return {"scale": "miniwob", "suite": "miniwob", "tasks": list(MINIWOB_TASKS), "held_out": "seeds",
                "train_harness": "miniwob-html", "harnesses": list(MINIWOB_HARNESSES),
                "calibration_harnesses": ["miniwob-html-sys", "miniwob-html-blind"], "sealed_harness": "miniwob-html-instsys",
                "eval_tasks": len(MINIWOB_TASKS), "sft_seeds": 40, "sft_epochs": 16, "max_new_tokens": 16,
                "max_context_tokens": 1536, "agent_updates": 12, "further_updates": 8, "group_size": 8,
                "tasks_per_update": 6, "ref_samples": 16, "eval_samples": 8,
                # at the default 1e-4 twelve updates left the agent where SFT put it (training solve rate flat)
                "lr": 5e-4}
    raise ConfigError(f"scale {scale!r}: choose small, miniwob or paper")
