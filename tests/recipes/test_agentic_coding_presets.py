"""The agentic-coding presets (config files beside the recipe): each loads over the small scale with
a real model, warm-starts, runs >= 2 GSPO seeds, splits code-v2 so the held-out tasks are sealed apart
from the training ones, states its cost as an estimate, and the multi-GPU one is a TRL run whose
global batch divides by 8 processes."""

from pathlib import Path

import pytest

from harnessrl.config import load_config
from harnessrl.recipes import agentic_coding as recipe

PRESETS = Path(recipe.__file__).parent / "presets"
FILES = sorted(PRESETS.glob("agentic-coding-*.yaml"))


def load(path: Path, *sets: str) -> recipe.AgenticCodingConfig:
    return load_config(recipe.AgenticCodingConfig, path, ["model=smollm2-135m", "harnesses=[swe_agent]", *sets],
                       base=recipe.preset("small"))


def test_there_is_a_cpu_a_one_gpu_and_a_multi_gpu_preset():
    assert {p.stem for p in FILES} == {"agentic-coding-smollm2-cpu", "agentic-coding-1gpu", "agentic-coding-trl-multigpu"}


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_preset_is_a_warm_started_two_seed_run_on_a_sealed_split(path):
    cfg = load(path)
    assert cfg.warm_start and len(cfg.rl_seeds) >= 2 and cfg.suite == "code-v2"
    assert cfg.heldout_tasks >= 12 and "heldout" in cfg.eval_suites
    harnesses, train, suites = recipe.check(cfg)  # the split fits the suite; every harness drives every task
    assert not {t.id for t in train} & {t.id for t in suites["heldout"]}
    # every preset states its cost: measured where a whole run was made, else marked as an estimate
    assert "Estimated cost (an estimate" in path.read_text() or "Measured: one run of the command above took" in path.read_text()
    assert "harnessrl recipe agentic-coding --model" in path.read_text()


def test_multi_gpu_preset_is_trl_with_a_batch_that_divides_by_8():
    cfg = load(PRESETS / "agentic-coding-trl-multigpu.yaml")
    assert cfg.engine == "trl" and cfg.objective == "gspo" and cfg.lora_rank == 32
    assert (cfg.tasks_per_update * len(cfg.harnesses) * cfg.group_size) % 8 == 0


def test_cpu_preset_fits_the_smollm2_window_and_a_small_memory_budget():
    cfg = load(PRESETS / "agentic-coding-smollm2-cpu.yaml")
    assert cfg.max_context_tokens <= 8192 and cfg.gradient_checkpointing and cfg.micro_batch_tokens <= 2048
    assert cfg.n_updates() * len(cfg.rl_seeds) <= 4  # the CPU budget: 2 updates per seed
