"""vLLM server mode with two ranks whose episodes end after different numbers of turns: every
rank gets exactly its own completions, the ranks' prompts travel in one request per round, and
the rank that finishes first drains instead of deadlocking the other (see vllm_lockstep_child.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.engines.test_trl_multiprocess import ROOT, free_port


@pytest.mark.slow
def test_ranks_generate_in_lockstep_rounds_and_drain(tmp_path):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)]), "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nnodes", "1", "--nproc_per_node", "2",
           "--master_addr", "127.0.0.1", "--master_port", str(free_port()),
           "-m", "tests.engines.vllm_lockstep_child", str(tmp_path)]
    res = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    ranks = [json.loads(Path(tmp_path, f"rank{r}.json").read_text()) for r in (0, 1)]
    for r in ranks:
        for prompts, got in zip(r["turns"], r["got"], strict=True):
            assert got == [list(reversed(p)) + [99] for p in prompts]
    # the main process sent one request per round: round 1 holds both ranks' prompts (3 + 2), then rank 0's alone
    assert ranks[0]["requests"] == [5, 1, 1] and ranks[1]["requests"] == []
