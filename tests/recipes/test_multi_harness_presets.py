"""The multi-harness presets for real agent programs (config files beside the recipe): each loads over
`--scale real-programs` with SmolLM2, trains through three programs with the fourth sealed, compares
Within and Cross, samples the start model for the ceiling decomposition, and states its cost."""

from pathlib import Path

import pytest

from harnessrl.config import ConfigError, load_config
from harnessrl.harness.base import program_specs
from harnessrl.recipes import multi_harness as recipe

PRESETS = Path(recipe.__file__).parent / "presets"
FILES = sorted(PRESETS.glob("multi-harness-programs-*.yaml"))


def load(path: Path | None, *sets: str) -> recipe.MultiHarnessConfig:
    return load_config(recipe.MultiHarnessConfig, path, ["model=smollm2-135m", *sets], base=recipe.preset("real-programs"))


def test_there_is_a_smollm2_cpu_and_a_one_gpu_preset():
    assert {p.stem for p in FILES} == {"multi-harness-programs-smollm2-cpu", "multi-harness-programs-1gpu"}


@pytest.mark.parametrize("path", [None, *FILES], ids=lambda p: p.stem if p else "scale-real-programs")
def test_three_real_programs_train_and_the_fourth_is_sealed(path):
    cfg = load(path)
    programs = set(program_specs())
    assert len(cfg.train_harnesses) == 3 and set(cfg.train_harnesses) <= programs
    assert cfg.sealed_harness in programs and cfg.sealed_harness not in cfg.train_harnesses
    assert cfg.rules == ["within", "cross"] and cfg.ref_samples >= 2 and cfg.oracle_records
    train, held_out = recipe.tasks_of(cfg)  # the split fits the suite
    assert train and held_out and not {t.id for t in train} & {t.id for t in held_out}
    if path is not None:
        text = path.read_text()
        assert ("Estimated cost (an estimate" in text or "Measured: one run of the command above took" in text)
        assert "--warm-start" in text
        assert cfg.max_context_tokens <= 8192  # SmolLM2's window: the -8k program specs fit it


def test_an_unknown_scale_and_a_missing_warm_start_are_refused(tmp_path):
    with pytest.raises(ConfigError, match="real-programs"):
        recipe.preset("programs")
    from harnessrl.recipes.multi_harness_programs import start_model

    with pytest.raises(ConfigError, match="warm_start_model"):
        start_model(str(tmp_path / "nope"), None, tmp_path)
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError, match="neither config.json"):
        start_model(str(tmp_path / "empty"), None, tmp_path)


def test_tasks_named_by_id_replace_the_split_and_must_be_disjoint_and_known():
    cfg = load(None, "suite=code-v2", "train_task_ids=[fix-largest-negative, code-v2/fix-truncate-length]",
               "eval_task_ids=[fix-is-even]")
    train, held_out = recipe.tasks_of(cfg)
    assert [t.id for t in train] == ["code-v2/fix-largest-negative", "code-v2/fix-truncate-length"]
    assert [t.id for t in held_out] == ["code-v2/fix-is-even"]
    with pytest.raises(ConfigError, match="both trained on and held out"):
        recipe.tasks_of(load(None, "suite=code-v2", "train_task_ids=[fix-is-even]", "eval_task_ids=[fix-is-even]"))
    with pytest.raises(ConfigError, match="train_task_ids.*no-such-task"):
        recipe.tasks_of(load(None, "suite=code-v2", "train_task_ids=[no-such-task]"))


def test_a_lone_training_job_gets_every_core_and_parallel_jobs_share_them():
    assert recipe.job_threads(1, 2) == 2 and recipe.job_threads(1, 16) == 16
    assert recipe.job_threads(2, 2) == 1 and recipe.job_threads(4, 16) == 4
    assert recipe.job_threads(3, 2) == 1 and recipe.job_threads(1, None) == 1
