"""Resume and workers: idempotent appends, atomic files, workers that die with the recipe, a folder lock.

Real processes and real signals: a recipe killed with SIGKILL while its `-j 2` workers train,
a writer killed between its append and its marker, two writers of one checkpoint.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest

from harnessrl.config import ConfigError
from harnessrl.fileio import atomic_write_text, temp_name
from harnessrl.recipes import conditioned_critic as cc
from harnessrl.recipes.conditioned_critic_report import store_episodes
from harnessrl.recipes.workers import WORKERS_LOCK, folder_lock, run_pool
from harnessrl.records import RecordStore
from harnessrl.train.checkpoint import load_checkpoint
from tests.recipes.pool_jobs import square

ROOT = Path(__file__).resolve().parents[2]
# two bandit PPO runs long enough (80 updates) to be killed mid-training, checkpointed every 2 updates
SETS = ["families=[bandit]", "critics=[shared,conditioned]", "seeds=[0]", "bandit.total_steps=40960",
        "checkpoint_every=2", "value_error_steps=16", "eval_episodes=1"]


def cli(*args: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src") + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.Popen([sys.executable, "-m", "harnessrl.cli", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env=env, start_new_session=True)


def recipe_args(out: Path, store: Path, *extra: str) -> list[str]:
    return ["recipe", "conditioned-critic", "--out", str(out), "--store", str(store), *extra,
            *[x for s in SETS for x in ("--set", s)]]


def stored(store: Path) -> tuple[int, int]:
    rows = RecordStore(store).sql("SELECT count(*) AS n, count(DISTINCT episode_id) AS d FROM episodes").to_pylist()[0]
    return rows["n"], rows["d"]


def expected_episodes(out: Path) -> int:
    return sum(len(r["train_episodes"]) + len(r["test_episodes"])
               for r in (json.loads(p.read_text()) for p in (out / "runs").glob("**/result.json")))


@pytest.mark.slow
def test_kill_9_of_a_j2_run_leaves_no_workers_and_resumes_cleanly(tmp_path):
    out, store = tmp_path / "cc", tmp_path / "store"
    proc = cli(*recipe_args(out, store, "-j", "2"))
    deadline = time.time() + 300
    while len(list((out / "runs").glob("**/checkpoint.pt"))) < 2:  # both workers are training
        assert proc.poll() is None, proc.stdout.read()
        assert time.time() < deadline, "the workers did not checkpoint in 300 s"
        time.sleep(0.05)
    workers = [p for p in psutil.Process(proc.pid).children(recursive=True) if "resource_tracker" not in " ".join(p.cmdline())]
    assert len(workers) >= 2
    assert len(list((out / "runs").glob("**/result.json"))) < 2, "the runs finished before the kill; lengthen them"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    _, alive = psutil.wait_procs(workers, timeout=10)
    assert alive == [], f"workers outlived their recipe: {[p.pid for p in alive]}"

    resumed = cli(*recipe_args(out, store, "-j", "2", "--resume"))  # at once
    text = resumed.communicate(timeout=600)[0]
    assert resumed.returncode == 0, text
    assert len(list((out / "runs").glob("**/result.json"))) == 2
    n, distinct = stored(store)
    assert n == distinct == expected_episodes(out) > 0
    # a worker killed mid-save may leave its own temp file (unique name, never read); the resumed run leaves none
    killed = {str(p.pid) for p in workers}
    assert all(t.name.split(".")[3].split("-")[0] in killed for t in out.glob("runs/**/.checkpoint.pt.*.tmp"))


@pytest.mark.slow
def test_a_kill_between_append_and_marker_appends_nothing_twice(tmp_path):
    """store_episodes killed (SIGKILL) right after its append, before its `stored` marker; then run again."""
    out, store = tmp_path / "cc", tmp_path / "store"
    results = []
    for critic in ("shared", "conditioned"):
        job = {"family": "bandit", "task": "bandit", "critic": critic, "seed": 0}
        results.append({"job": job, "contexts": ["offset0", "offset2"], "value_error": {"mse": [0.5, 0.25]},
                        "train_episodes": [{"context": k % 2, "level": -1, "ret": float(k), "length": 1, "score": 0.1 * k}
                                           for k in range(6)],
                        "test_episodes": []})
        (out / "runs" / f"bandit/bandit/{critic}/seed0").mkdir(parents=True)
    (tmp_path / "results.json").write_text(json.dumps(results))
    script = textwrap.dedent(f"""
        import json, os, signal
        from pathlib import Path
        from harnessrl.recipes import conditioned_critic as cc
        from harnessrl.recipes import conditioned_critic_report as rep
        from harnessrl.records import RecordStore

        real = rep.atomic_write_text
        def die_at_marker(path, text):
            if Path(path).name == "stored" and os.environ.get("DIE") == "1":
                os.kill(os.getpid(), signal.SIGKILL)  # the episodes are in the store, the marker is not
            return real(path, text)
        rep.atomic_write_text = die_at_marker
        cfg = cc.load("small", None, [])
        print(rep.store_episodes(cfg, json.loads(Path({str(tmp_path / 'results.json')!r}).read_text()),
                                 Path({str(out)!r}), RecordStore({str(store)!r})))
    """)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    killed = subprocess.run([sys.executable, "-c", script], env={**env, "DIE": "1"}, capture_output=True, text=True)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert stored(store) == (6, 6) and not list(out.glob("runs/**/stored"))  # one run appended, no marker
    again = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True)
    assert again.returncode == 0, again.stderr
    assert again.stdout.split()[-1] == "6"  # only the second run's episodes were new
    assert stored(store) == (12, 12) and len(list(out.glob("runs/**/stored"))) == 2
    assert store_episodes(cc.load("small", None, []), results, out, RecordStore(store)) == 0  # markers: nothing to do


HOLD = "import fcntl, sys, time; f = open(sys.argv[1], 'a'); fcntl.flock(f, fcntl.LOCK_SH); print('held', flush=True); time.sleep(60)"


def test_resume_is_refused_while_an_earlier_runs_worker_holds_the_folder(tmp_path):
    survivor = subprocess.Popen([sys.executable, "-c", HOLD, str(tmp_path / WORKERS_LOCK)], stdout=subprocess.PIPE, text=True)
    try:
        assert survivor.stdout.readline().strip() == "held"  # a worker of an earlier run, still alive
        with pytest.raises(ConfigError, match="workers of an earlier run"):
            with folder_lock(tmp_path, wait_s=0.5):
                pass
    finally:
        survivor.kill()
        survivor.wait(30)
    with folder_lock(tmp_path, wait_s=0.5):  # the survivor is gone: the folder is free
        with pytest.raises(ConfigError, match="in use by another run"):
            with folder_lock(tmp_path, wait_s=0.2):
                pass


def test_pool_returns_results_in_order_and_forwards_progress(tmp_path):
    seen = []
    assert run_pool(square, [(1,), (2,), (3,)], workers=2, on_message=lambda *m: seen.append(m), lock_dir=tmp_path) == [1, 4, 9]
    assert sorted(seen) == [("job1", 1, 3), ("job2", 2, 3), ("job3", 3, 3)]
    seen.clear()
    assert run_pool(square, [(4,)], workers=2, on_message=lambda *m: seen.append(m)) == [16]  # one job: in process
    assert seen == [("job4", 4, 3)]


SAVE = """
import sys
from harnessrl.train.checkpoint import save_checkpoint
for i in range(30):
    save_checkpoint(sys.argv[1], {"writer": sys.argv[2], "i": i, "pad": b"x" * 100_000})
"""


@pytest.mark.slow
def test_two_writers_of_one_checkpoint_never_collide(tmp_path):
    assert temp_name(tmp_path / "a.json") != temp_name(tmp_path / "a.json")
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    procs = [subprocess.Popen([sys.executable, "-c", SAVE, str(tmp_path), str(k)], env=env, stderr=subprocess.PIPE, text=True)
             for k in (0, 1)]
    errors = [p.communicate(timeout=300)[1] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], errors
    assert load_checkpoint(tmp_path)["i"] == 29 and not list(tmp_path.glob(".*.tmp"))
    atomic_write_text(tmp_path / "r.json", "{}")
    assert (tmp_path / "r.json").read_text() == "{}" and not list(tmp_path.glob(".*.tmp"))


def test_conditioned_critic_resume_with_other_settings_is_refused(tmp_path):
    cfg = cc.load("small", None, ["families=[bandit]", "critics=[shared]", "seeds=[0]", "bandit.total_steps=512",
                                  "value_error_steps=16", "eval_episodes=1", "workers=1"])
    cc.run_recipe(cfg, tmp_path)
    other = cc.load("small", None, ["families=[bandit]", "critics=[shared]", "seeds=[0]", "bandit.total_steps=8000",
                                    "bandit.ppo={learning_rate: 0.5}", "value_error_steps=16", "eval_episodes=1", "workers=2"])
    with pytest.raises(ConfigError, match=r"bandit\.total_steps: 512 -> 8000.*bandit\.ppo\.learning_rate: None -> 0\.5"):
        cc.run_recipe(other, tmp_path, resume=True)
    same = cc.load("small", None, ["families=[bandit]", "critics=[shared]", "seeds=[0]", "bandit.total_steps=512",
                                   "value_error_steps=16", "eval_episodes=1", "workers=2"])  # workers may change
    assert cc.run_recipe(same, tmp_path, resume=True)[0]["global_step"] >= 512
