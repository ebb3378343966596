"""Which arithmetic an LM policy runs in: `precision: auto | fp32 | bf16` -> a load dtype.

    det = detect(torch.device("cpu"))         # Detection(capability="AVX512", flags=("amx_bf16", "avx512_bf16"), bf16=True)
    res = resolve("auto", "auto", device, lora=True, n_params=134_515_008)
    res.precision, res.dtype                   # "bf16", torch.bfloat16

Why: on a CPU with AVX-512 BF16 / AMX, torch.mm runs ~4x faster in bf16 than in fp32 at a real
model's shapes (benchmarks/cpu_floor.py measures it), and the frozen base weights of a LoRA run
never see an optimizer, so they lose nothing a master copy would have kept. What stays fp32 is
decided elsewhere and does not depend on this module: LoRA weights (PEFT keeps adapters in fp32
over a bf16 base; `LMPolicy.from_config` checks it), the optimizer state (it follows those
weights), log-softmax and log-prob sums (`scoring._scores` and `generation.sample_next` upcast
the logits) and so the loss.

`dtype` (the model-load dtype, older) and `precision` relate so:
  * dtype auto: precision decides (bf16 -> bfloat16, fp32 -> float32);
  * dtype given, precision auto: the dtype decides, and the precision is named after it;
  * both given and in conflict (precision=bf16, dtype=float32): a ConfigError naming both.

`auto` on CPU is bf16 only where all of these hold, else fp32:
  * the CPU has bf16 instructions (/proc/cpuinfo avx512_bf16 or amx_bf16; torch's capability
    string alone says "AVX512" and does not tell);
  * the model trains through LoRA: with full fine-tuning every weight is trained and bf16 weights
    would need fp32 master copies, which this trainer does not keep;
  * the model has at least AUTO_MIN_PARAMS parameters: a tiny model's step is Python-bound, so
    bf16 would buy nothing and cost the bit-exactness its tests rely on.
`auto` on CUDA keeps the earlier rule: bf16 where the GPU supports it.
"""

from __future__ import annotations

import functools
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch

from harnessrl.config import ConfigError

PRECISIONS = ("auto", "fp32", "bf16")
AUTO_MIN_PARAMS = 50_000_000
BF16_FLAGS = ("avx512_bf16", "amx_bf16")
_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
_NAMES = {torch.float32: "fp32", torch.bfloat16: "bf16", torch.float16: "fp16"}


@dataclass(frozen=True)
class Detection:
    """What the device offers for bf16: torch's CPU capability, the bf16 flags found, the verdict."""

    device: str
    capability: str
    flags: tuple[str, ...]
    bf16: bool


@dataclass(frozen=True)
class Resolved:
    """The precision a policy runs in, its load dtype, why, and what the device offered."""

    requested: str
    precision: str  # fp32 | bf16 | fp16
    dtype: torch.dtype
    reason: str
    detection: Detection

    def record(self) -> dict[str, Any]:
        """JSON-able, for a run's summary."""
        return {"requested": self.requested, "precision": self.precision, "dtype": str(self.dtype).replace("torch.", ""),
                "reason": self.reason, "detection": {**asdict(self.detection), "flags": list(self.detection.flags)}}


def run_record(resolved: Resolved | None, model: torch.nn.Module) -> dict[str, Any]:
    """What a run's summary records: the resolved precision, or the model's dtype for a policy built by hand."""
    if resolved is not None:
        return resolved.record()
    dtype = next(model.parameters()).dtype
    return {"requested": None, "precision": _NAMES.get(dtype, "fp32"), "dtype": str(dtype).replace("torch.", ""),
            "reason": "a policy built by the caller", "detection": None}


def cpu_flags(cpuinfo: str | Path = "/proc/cpuinfo") -> tuple[str, ...]:
    """The bf16 flags of the first CPU in `cpuinfo` (empty where the file is absent: not Linux)."""
    try:
        text = Path(cpuinfo).read_text()
    except OSError:
        return ()
    for line in text.splitlines():
        if line.startswith("flags"):
            have = set(line.split(":", 1)[-1].split())
            return tuple(f for f in BF16_FLAGS if f in have)
    return ()


@functools.cache
def detect(device: str = "cpu") -> Detection:
    """bf16 support of `device` (cached; printed once per process to stderr)."""
    if device.startswith("cuda"):
        ok = torch.cuda.is_available() and torch.cuda.is_bf16_supported()
        det = Detection(device, "cuda", (), bool(ok))
    else:
        flags = cpu_flags()
        det = Detection(device, str(torch.backends.cpu.get_cpu_capability()), flags, bool(flags))
    print(f"harnessrl: {det.device} bf16 support: {'yes' if det.bf16 else 'no'} (capability {det.capability}, "
          f"flags {','.join(det.flags) or 'none'})", file=sys.stderr)
    return det


def check_precision(name: str, field: str = "precision") -> str:
    if name not in PRECISIONS:
        raise ConfigError(f"{field} {name!r}: choose auto, fp32 or bf16")
    return name


def resolve(precision: str, dtype: str, device: torch.device, *, lora: bool, n_params: int | None,
            detection: Detection | None = None) -> Resolved:
    """The precision and load dtype of a policy (rules in the module docstring).

    n_params: the model's parameter count (None: not known yet, counts as large).
    detection: for tests; default `detect(device)`."""
    check_precision(precision)
    if dtype != "auto" and dtype not in _DTYPES:
        raise ConfigError(f"dtype {dtype!r}: choose auto, float32, bfloat16 or float16")
    det = detection or detect(device.type if device.type != "cuda" else str(device))
    if dtype != "auto":
        dt = _DTYPES[dtype]
        if precision != "auto" and precision != _NAMES[dt]:
            raise ConfigError(f"precision {precision!r} conflicts with dtype {dtype!r}: set one of them "
                              "(dtype=auto lets precision decide)")
        return Resolved(precision, _NAMES[dt], dt, f"dtype={dtype}", det)
    if precision == "fp32":
        return Resolved(precision, "fp32", torch.float32, "precision=fp32", det)
    if precision == "bf16":
        return Resolved(precision, "bf16", torch.bfloat16,
                        "precision=bf16" + ("" if det.bf16 else " (no bf16 instructions found: emulated, slow)"), det)
    # auto
    if device.type == "cuda":
        return Resolved(precision, "bf16" if det.bf16 else "fp32", torch.bfloat16 if det.bf16 else torch.float32,
                        "auto: cuda" + (" bf16" if det.bf16 else " without bf16"), det)
    if not det.bf16:
        return Resolved(precision, "fp32", torch.float32, "auto: the CPU has no bf16 instructions", det)
    if not lora:
        return Resolved(precision, "fp32", torch.float32, "auto: full fine-tuning keeps fp32 weights", det)
    if n_params is not None and n_params < AUTO_MIN_PARAMS:
        return Resolved(precision, "fp32", torch.float32, f"auto: {n_params:,} parameters < {AUTO_MIN_PARAMS:,}", det)
    return Resolved(precision, "bf16", torch.bfloat16, "auto: bf16 CPU, LoRA over a frozen base", det)


def count_params(model_dir: str | Path) -> int | None:
    """Parameters of a saved model from its safetensors headers (no weights read); None when unknown."""
    import json
    import struct

    total, found = 0, False
    for f in Path(model_dir).glob("*.safetensors"):
        with open(f, "rb") as fh:
            (n,) = struct.unpack("<Q", fh.read(8))
            header = json.loads(fh.read(n))
        for k, v in header.items():
            if k != "__metadata__":
                size = 1
                for d in v["shape"]:
                    size *= d
                total, found = total + size, True
    return total if found else None


def lora_compute_like_input(model: torch.nn.Module) -> int:
    """Run each LoRA product in its input's dtype (bf16 over a bf16 base) while A and B stay fp32.

    PEFT's default casts every adapted layer's input up to the adapter's fp32 and the sum back down:
    two full-size copies of each of the 7 adapted activations a layer, forward and backward, which in
    a bf16 step cost more than the adapter's products (profiled: aten::copy_ 13% of the step). Here
    the (r x in) and (out x r) weights are cast instead, a few KB each, per call: mixed precision as
    torch.autocast does it (fp32 master weights; the gradient reaches them through the cast, in fp32).
    Returns the number of adapter modules changed."""
    n = 0
    for module in model.modules():
        if not hasattr(module, "cast_input_dtype_enabled"):
            continue
        module.cast_input_dtype_enabled = False
        for name in ("lora_A", "lora_B"):
            for sub in getattr(module, name, {}).values():
                if type(sub) is torch.nn.Linear and sub.bias is None:
                    sub.forward = _forward_in_input_dtype.__get__(sub)
                    n += 1
    return n


def _forward_in_input_dtype(self: torch.nn.Linear, x: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.linear(x, self.weight.to(x.dtype))
