"""Two processes on CPU (torch.distributed, gloo, launched by torchrun) run 2 TRL updates through the
engine's command line on the real lookup suite: both ranks' episodes land in one record store,
none lost or duplicated, and Cross groups span the two ranks (TRL gathers rewards before the baseline)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
import yaml

from harnessrl.records import RecordStore
from tests import tiny_lm

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_two_ranks_write_every_episode_once(tmp_path):
    model = tiny_lm.build(tmp_path)
    run = tmp_path / "run"
    # 3 tasks x 2 harnesses x group_size 1 = 6 rollouts per update, 3 per rank; cross groups of 2
    # (one per harness) so group 1 = global rollouts 2 and 3 sits on both ranks.
    cfg = {"policy": {"model": str(model), "max_new_tokens": 12, "lora_rank": 4}, "run_dir": str(run),
           "suite": "lookup", "tasks": ["lookup/000", "lookup/001", "lookup/002"],
           "harnesses": ["lookup-plain", "lookup-kv"], "max_turns": 2, "grouping": "cross", "group_size": 1,
           "tasks_per_update": 3, "updates": 2, "lr": 1e-3, "trl": {"gradient_checkpointing": False}}
    (tmp_path / "run.yaml").write_text(yaml.safe_dump(cfg))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)]), "OMP_NUM_THREADS": "1",
           "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nnodes", "1", "--nproc_per_node", "2",
           "--master_addr", "127.0.0.1", "--master_port", str(free_port()),
           "-m", "harnessrl.engines.trl", "--config", str(tmp_path / "run.yaml")]
    res = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=540, cwd=tmp_path)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    eps = RecordStore(run / "store").episodes()
    assert len(eps) == 2 * 6, [e.episode_id for e in eps]
    ids = [e.episode_id for e in eps]
    assert len(set(ids)) == len(ids)
    assert Counter(e.metadata["rank"] for e in eps) == {0: 6, 1: 6}
    assert {e.metadata["world_size"] for e in eps} == {2} and {e.metadata["update"] for e in eps} == {0, 1}
    for u in (0, 1):
        mine = sorted((e for e in eps if e.metadata["update"] == u), key=lambda e: e.episode_id)
        assert [int(e.episode_id.rsplit("-", 1)[1]) for e in mine] == list(range(6))  # every slot of the batch
        for g in range(3):
            group = [e for e in mine if e.metadata["trl_group"] == g]
            assert len({e.context.task_id for e in group}) == 1
            assert sorted(e.context.harness_id for e in group) == ["lookup-kv", "lookup-plain"]
        assert {e.metadata["rank"] for e in mine if e.metadata["trl_group"] == 1} == {0, 1}
    assert (run / "final" / "adapter_config.json").exists()
