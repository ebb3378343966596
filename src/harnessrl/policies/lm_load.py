"""Loading a Hugging Face model for a policy: device, dtype, tokenizer, and the offline-cache check.

    tokenizer = load_tokenizer(path)          # the class the folder was saved with
    check_model_path("smollm2-135m")          # a clear error when it is neither a folder nor cached

Kept apart from `lm.py` (the acting policy) so that loading rules, which tools and the tiny-model
builder share, are in one place.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch

from harnessrl.config import ConfigError


def resolve_device(name: str = "auto") -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)


def resolve_dtype(name: str, device: torch.device) -> torch.dtype:
    if name == "auto":
        return torch.bfloat16 if device.type == "cuda" and torch.cuda.is_bf16_supported() else torch.float32
    try:
        return {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[name]
    except KeyError:
        raise ConfigError(f"dtype {name!r}: choose auto, float32, bfloat16 or float16") from None


def _quiet_transformers() -> None:
    from transformers.utils import logging

    logging.disable_progress_bar()
    logging.set_verbosity_error()


#: Tokenizer classes that mean "the tokenizer.json as it is" (transformers 5 saves the second name).
GENERIC_TOKENIZERS = ("PreTrainedTokenizerFast", "TokenizersBackend")


def load_tokenizer(path: str) -> Any:
    """The tokenizer a model directory was saved with.

    A `tokenizer_config.json` naming `PreTrainedTokenizerFast` is loaded with that class:
    `AutoTokenizer` beside a Qwen2 config would build a Qwen2Tokenizer instead.
    """
    from transformers import AutoTokenizer, PreTrainedTokenizerFast

    cfg = Path(path) / "tokenizer_config.json"
    if cfg.exists() and json.loads(cfg.read_text()).get("tokenizer_class") in GENERIC_TOKENIZERS:
        return PreTrainedTokenizerFast.from_pretrained(path)
    return AutoTokenizer.from_pretrained(path)


def save_tokenizer(tokenizer: Any, out: Path) -> None:
    """save_pretrained, keeping a generic fast tokenizer's class explicit (see `load_tokenizer`)."""
    tokenizer.save_pretrained(out)
    cfg = out / "tokenizer_config.json"
    if cfg.exists() and type(tokenizer).__name__ in GENERIC_TOKENIZERS:
        data = json.loads(cfg.read_text())
        data["tokenizer_class"] = "PreTrainedTokenizerFast"
        cfg.write_text(json.dumps(data, indent=2))


def check_model_path(name: str) -> None:
    """A clear error for a model that is neither a local directory nor in the offline HF cache."""
    p = Path(name)
    if p.exists():
        if not (p / "config.json").exists():
            raise ConfigError(f"model {name!r}: the directory has no config.json; give a folder saved with save_pretrained")
        return
    looks_like_path = name.startswith((".", "/", "~")) or name.count("/") > 1
    if not looks_like_path:
        try:
            from huggingface_hub import try_to_load_from_cache

            if isinstance(try_to_load_from_cache(name, "config.json"), str):
                return
        except Exception:  # an invalid repo id is reported below
            pass
    raise ConfigError(
        f"model {name!r}: no such directory, and not in the local Hugging Face cache (the hub is offline); "
        "give the path of a model saved with save_pretrained (harnessrl.policies.tiny builds one)"
    )
