"""Tests of the Meta-World extra, run by `make test` in .venv-metaworld (Meta-World pins mujoco 3.3.0)."""

import os

os.environ.setdefault("MUJOCO_GL", "egl")  # offscreen rendering without a display; before mujoco is imported
for key in ("HF_HUB_OFFLINE", "HF_HUB_DISABLE_TELEMETRY", "TRANSFORMERS_OFFLINE", "RAY_USAGE_STATS_ENABLED"):
    os.environ.setdefault(key, "0" if key == "RAY_USAGE_STATS_ENABLED" else "1")

import pytest  # noqa: E402
import torch  # noqa: E402

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def task():
    from harnessrl.envs import drawer

    t = drawer.task("metaworld-drawer")
    yield t
    t.close()
