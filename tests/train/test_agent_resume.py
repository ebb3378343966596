"""kill -9 in the middle of a run, then --resume: the same weights, metrics and records as a run
that was never interrupted."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import torch

from harnessrl.records import RecordStore
from harnessrl.train.checkpoint import load_checkpoint
from harnessrl.train.metrics import TIMING_COLUMNS
from tests import tiny_lm

ROOT = Path(__file__).resolve().parents[2]
UPDATES = 8

SCRIPT = textwrap.dedent("""
    import sys
    import torch
    torch.set_num_threads(1)
    sys.path.insert(0, {root!r})
    from harnessrl.policies.lm import LMConfig
    from harnessrl.train.agent import AgentTrainConfig, AgentTrainer
    from tests.train import toy

    run_dir, resume = sys.argv[1], sys.argv[2] == "resume"
    cfg = AgentTrainConfig(policy=LMConfig(model={model!r}, max_new_tokens=8, lora_rank=4, lora_dropout=0.1),
                           run_dir=run_dir, harnesses=["toy-a", "toy-b"], group_size=4, tasks_per_update=2,
                           updates={updates}, lr=3e-3, objective="grpo", grouping="cross", epochs=2, minibatches=2,
                           scheduler="cosine", seed=11)
    hs = [toy.harness("toy-a"), toy.harness("toy-b", prompt="Be a toy.")]
    AgentTrainer(cfg, tasks=toy.tasks(), harnesses=hs, open_env=toy.open_env).run(resume=resume)
""")


def launch(script: Path, run_dir: Path, mode: str) -> subprocess.Popen:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONHASHSEED": "0"}
    return subprocess.Popen([sys.executable, str(script), str(run_dir), mode], cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def finish(proc: subprocess.Popen) -> None:
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err.decode()[-3000:]


@pytest.mark.slow
def test_resume_after_kill_9_is_identical(tmp_path):
    model = tiny_lm.build(tmp_path)
    script = tmp_path / "train.py"
    script.write_text(SCRIPT.format(root=str(ROOT), model=str(model), updates=UPDATES))

    straight, killed = tmp_path / "straight", tmp_path / "killed"
    a = launch(script, straight, "fresh")
    b = launch(script, killed, "fresh")
    # kill -9 once the run is past its third checkpoint, wherever it is in the fourth update
    deadline = time.time() + 300
    while time.time() < deadline:
        state = load_checkpoint(killed) if (killed / "checkpoint.pt").exists() else None
        if state is not None and state["update"] >= 3:
            break
        assert b.poll() is None, "the run ended before it could be killed"
        time.sleep(0.05)
    assert b.poll() is None
    b.send_signal(signal.SIGKILL)  # lands somewhere in update 4: rollout, store append, update or checkpoint write
    b.wait()
    assert load_checkpoint(killed)["update"] < UPDATES
    finish(launch(script, killed, "resume"))
    finish(a)

    s, k = load_checkpoint(straight), load_checkpoint(killed)
    assert s["update"] == k["update"] == UPDATES
    for name, w in s["weights"].items():
        assert torch.equal(w, k["weights"][name]), name
    strip = lambda rows: [{c: v for c, v in r.items() if c not in TIMING_COLUMNS} for r in rows]  # noqa: E731
    assert strip(s["metrics"]) == strip(k["metrics"])
    # the record store holds every episode exactly once, with the same outcomes
    q = ("SELECT split_part(episode_id, '-', 2) || '-' || split_part(episode_id, '-', 3) AS id, reward, num_turns, "
         "tokens_out, seed FROM episodes ORDER BY id")
    rs, rk = RecordStore(straight / "store").sql(q).to_pylist(), RecordStore(killed / "store").sql(q).to_pylist()
    assert len(rs) == UPDATES * 2 * 2 * 4 and len({r["id"] for r in rk}) == len(rk)
    assert rs == rk
