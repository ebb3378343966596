"""precision: auto | fp32 | bf16 — resolution rules, what stays fp32, one-line config errors."""

from __future__ import annotations

import pytest
import torch

from harnessrl.config import ConfigError, load_config
from harnessrl.policies.lm import LMConfig, LMPolicy
from harnessrl.policies.precision import Detection, cpu_flags, resolve
from tests import tiny_lm

CPU = torch.device("cpu")
WITH = Detection("cpu", "AVX512", ("avx512_bf16", "amx_bf16"), True)
WITHOUT = Detection("cpu", "AVX2", (), False)


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return tiny_lm.build(tmp_path_factory.mktemp("prec"))


def test_auto_without_bf16_instructions_is_fp32():
    r = resolve("auto", "auto", CPU, lora=True, n_params=135_000_000, detection=WITHOUT)
    assert (r.precision, r.dtype) == ("fp32", torch.float32) and "no bf16" in r.reason


def test_auto_with_bf16_instructions():
    assert resolve("auto", "auto", CPU, lora=True, n_params=135_000_000, detection=WITH).dtype == torch.bfloat16
    # full fine-tuning (no fp32 master weights) and tiny models stay fp32
    assert resolve("auto", "auto", CPU, lora=False, n_params=135_000_000, detection=WITH).precision == "fp32"
    assert resolve("auto", "auto", CPU, lora=True, n_params=3_000_000, detection=WITH).precision == "fp32"


def test_dtype_and_precision_relation():
    assert resolve("auto", "bfloat16", CPU, lora=False, n_params=1, detection=WITHOUT).precision == "bf16"
    assert resolve("bf16", "auto", CPU, lora=False, n_params=1, detection=WITHOUT).dtype == torch.bfloat16
    with pytest.raises(ConfigError, match="precision 'bf16' conflicts with dtype 'float32'"):
        resolve("bf16", "float32", CPU, lora=True, n_params=1, detection=WITH)


def test_cpu_flags(tmp_path):
    f = tmp_path / "cpuinfo"
    f.write_text("processor: 0\nflags\t\t: fpu sse avx512f avx512_bf16 amx_tile\n")
    assert cpu_flags(f) == ("avx512_bf16",)
    assert cpu_flags(tmp_path / "missing") == ()


def test_bad_value_is_one_line_naming_the_field(tmp_path):
    f = tmp_path / "p.yaml"
    f.write_text("model: x\nprecision: bf17\n")
    with pytest.raises(ConfigError) as e:
        load_config(LMConfig, f)
    lines = str(e.value).splitlines()[1:]  # the config system's header, then one line per bad field
    assert lines == ["  precision = 'bf17': Input should be 'auto', 'fp32' or 'bf16'."]


def test_forced_bf16_base_bf16_lora_fp32_loss_fp32(model_dir):
    p = LMPolicy.from_config(LMConfig(model=str(model_dir), lora_rank=4, precision="bf16"))
    assert p.precision.precision == "bf16"
    base = [q for n, q in p.model.named_parameters() if "lora_" not in n]
    lora = [q for n, q in p.model.named_parameters() if "lora_" in n]
    assert lora and all(q.dtype == torch.float32 and q.requires_grad for q in lora)
    assert base and all(q.dtype == torch.bfloat16 and not q.requires_grad for q in base)
    from harnessrl.policies.scoring import token_logprobs

    ids = torch.tensor([[1, 5, 7, 9, 11]])
    mask = torch.tensor([[0, 0, 1, 1, 1]])
    lp = token_logprobs(p.model, ids, torch.ones_like(ids), mask).logprobs
    assert lp.dtype == torch.float32
    lp.sum().backward()
    assert all(q.grad is not None and q.grad.dtype == torch.float32 for q in lora)


def test_merged_bf16_lora_saves_fp32(model_dir, tmp_path):
    p = LMPolicy.from_config(LMConfig(model=str(model_dir), lora_rank=4, precision="bf16"))
    out = p.save_merged(tmp_path / "merged")
    again = LMPolicy.from_config(LMConfig(model=str(out), precision="fp32"))
    assert next(again.model.parameters()).dtype == torch.float32
    import json

    assert json.loads((out / "config.json").read_text()).get("dtype", "float32") == "float32"
