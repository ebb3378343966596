"""One config for both trainers: every harnessrl key the user sets is mapped onto GRPOConfig / PEFT
or refused with an error naming it — never dropped in silence."""

from __future__ import annotations

import pytest

from harnessrl.config import ConfigError, load_config
from harnessrl.engines.trl import main
from harnessrl.engines.trl_config import TRLRunConfig, translate


def cfg(**kw) -> TRLRunConfig:
    return TRLRunConfig(**{"policy": {"model": "m"}, "harnesses": ["a", "b"], "group_size": 4, "tasks_per_update": 3,
                           **kw})


def test_grpo_within_maps_to_token_level_dapo():
    plan = translate(cfg(lr=3e-5, kl_coef=0.02, updates=7, policy={"model": "m", "lora_rank": 32, "temperature": 0.7}))
    a = plan.args
    assert (a["importance_sampling_level"], a["loss_type"], a["epsilon"], a["epsilon_high"]) == ("token", "dapo", 0.2, 0.28)
    assert a["num_generations"] == 4 and a["generation_batch_size"] == 3 * 2 * 4 and plan.rows_per_update == 6
    assert (a["beta"], a["learning_rate"], a["max_steps"], a["temperature"]) == (0.02, 3e-5, 7, 0.7)
    assert a["use_bias_correction_kl"] is False  # TRL's default multiplies the KL term by the ratio; native k3 does not
    assert plan.lora == {"r": 32, "lora_alpha": 64, "lora_dropout": 0.0, "target_modules": "all-linear", "task_type": "CAUSAL_LM"}


def test_gspo_cross_is_sequence_level_with_groups_over_harnesses():
    plan = translate(cfg(objective="gspo", grouping="cross", clip_high=5e-4), world_size=2)
    a = plan.args
    assert (a["importance_sampling_level"], a["loss_type"], a["epsilon"], a["epsilon_high"]) == ("sequence", "grpo", 3e-4, 5e-4)
    assert a["num_generations"] == 8 and plan.rows_per_update == 3  # a row per task, group_size x harnesses rollouts
    assert a["generation_batch_size"] == 24 and a["per_device_train_batch_size"] == 12 and a["gradient_accumulation_steps"] == 1


def test_minibatches_and_micro_batches_become_steps_per_generation():
    a = translate(cfg(minibatches=2, epochs=2, trl={"per_device_train_batch_size": 3})).args
    shape = ("per_device_train_batch_size", "gradient_accumulation_steps", "steps_per_generation", "num_iterations")
    assert tuple(a[k] for k in shape) == (3, 4, 8, 2)
    assert "generation_batch_size" not in a


@pytest.mark.parametrize("kw, key", [
    ({"objective": "rloo"}, "objective"), ({"objective": "ppo"}, "objective"),
    ({"grouping": "batch", "group_size": 2}, "grouping"), ({"loss_agg": "seq-mean-token-sum-norm"}, "loss_agg"),
    ({"kl_coef": 0.1, "kl_estimator": "k1"}, "kl_estimator"), ({"adv_eps": 1e-6}, "adv_eps"),
    ({"critic": "shared"}, "critic"), ({"micro_batch_tokens": 4096}, "micro_batch_tokens"),
    ({"backend": "ray"}, "backend"), ({"source": "offline", "offline_store": "s"}, "source"),
    ({"log_kl": True}, "log_kl"), ({"policy": {"model": "m", "adapter": "x"}}, "policy.adapter"),
    ({"policy": {"model": "m", "temperature": 0}}, "policy.temperature"),
    ({"policy": {"model": "m", "dtype": "float16"}}, "policy.dtype"),
    ({"tasks_per_update": 1, "group_size": 3}, "tasks_per_update"),  # 6 rollouts on 4 processes
])
def test_keys_without_an_equivalent_are_refused_by_name(kw, key):
    with pytest.raises(ConfigError, match=f"^{key}: .*engine trl"):
        translate(cfg(**kw), world_size=4)


def test_defaults_pass_and_explicit_trl_values_are_accepted():
    translate(cfg(adv_eps=1e-4, log_kl=False))  # the values TRL hard-codes, set explicitly
    assert any("1e-04" in n or "0.0001" in n for n in translate(cfg()).notes)  # the default's change is reported


def test_run_file_errors_are_one_line_exit_2(tmp_path, capsys):
    f = tmp_path / "run.yaml"
    f.write_text("policy: {model: m}\nharnesses: [a]\ntrl: {use_vlm: true}\n")
    with pytest.raises(ConfigError, match="use_vlm"):
        load_config(TRLRunConfig, f, [])
    assert main(["--config", str(f)]) == 2
    err = capsys.readouterr().err  # the project's validation message: the file, then the field and what is allowed
    assert err.startswith("error: invalid config") and "trl.use_vlm" in err and "use_vllm" in err
    f.write_text("policy: {model: m}\nharnesses: [a, b]\nobjective: ppo\n")
    assert main(["--config", str(f)]) == 2
    assert capsys.readouterr().err.startswith("error: objective: 'ppo' has no GRPOTrainer equivalent")


def test_precision_maps_to_trl_mixed_precision_and_tis_to_vllm_importance_sampling():
    for precision, cuda, dtype in (("bf16", False, "bfloat16"), ("fp32", True, "float32"), ("auto", True, "bfloat16"),
                                   ("auto", False, "float32")):
        a = translate(cfg(precision=precision, policy={"model": "m", "lora_rank": 8}), cuda=cuda).args
        assert (a["bf16"], a["fp16"], a["model_init_kwargs"]) == (dtype == "bfloat16", False, {"dtype": dtype}), precision
    with pytest.raises(ConfigError, match="policy.precision"):
        translate(cfg(policy={"model": "m", "lora_rank": 8, "precision": "bf16", "dtype": "float32"}))
    a = translate(cfg(sampler_tis_cap=3.0)).args
    assert (a["vllm_importance_sampling_correction"], a["vllm_importance_sampling_mode"],
            a["vllm_importance_sampling_clip_max"]) == (True, "token_truncate", 3.0)
    assert translate(cfg(objective="gspo")).args["vllm_importance_sampling_mode"] == "sequence_truncate"
    assert translate(cfg(sampler_correction="none")).args["vllm_importance_sampling_correction"] is False
