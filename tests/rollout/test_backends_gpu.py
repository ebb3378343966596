"""GPU-aware Ray actors: what each actor asks Ray for (the placement itself is Ray's)."""

import pytest

from harnessrl.config import ConfigError
from harnessrl.policies.registry import PolicySpec
from harnessrl.rollout.backends import run_jobs, worker_gpus


def test_lm_actors_ask_for_a_gpu_when_the_cluster_has_one():
    lm = PolicySpec("lm", "runs/tiny")
    assert worker_gpus(lm, None, 8.0) == 1.0
    assert worker_gpus(lm, None, 0.0) == 0.0  # a CPU cluster: the LM runs on the actor's CPU
    assert worker_gpus(PolicySpec("oracle"), None, 8.0) == 0.0  # scripted policies never hold a GPU
    assert worker_gpus(lm, 0.5, 1.0) == 0.5  # two actors share a GPU when asked
    with pytest.raises(ConfigError, match="gpus_per_worker=2 but the Ray cluster has 1 GPU"):
        worker_gpus(lm, 2, 1.0)


def test_gpus_per_worker_needs_ray():
    with pytest.raises(ConfigError, match="gpus_per_worker=1: GPUs are requested per Ray actor"):
        run_jobs(PolicySpec("oracle"), [], backend="local", gpus_per_worker=1)
