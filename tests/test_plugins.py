"""A harness style, harness spec, policy and suite from outside harnessrl, by `pkg.module:attr` and by entry
point, through `harnessrl eval` with 2 worker processes (the workers import the plugin on their side), on Ray,
and through `train agent --engine trl` and `accelerate launch -m harnessrl.engines.trl`, with a plugin reward."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from harnessrl.config import ConfigError

PLUGIN = {
    "myplug/__init__.py": "",
    "myplug/harness.py": """
        from harnessrl.harness.base import HarnessSpec, load_spec
        from harnessrl.harness.lookup import LookupHarness

        class LoudLookup(LookupHarness):
            '''The lookup style under its own name, defined outside harnessrl (its spec shouts the prompt).'''
            style = "myplug.harness:LoudLookup"

        def _spec():
            data = load_spec("lookup-plain").model_dump()
            data.update(id="loud-plain", style="myplug.harness:LoudLookup",
                        system_prompt=data["system_prompt"].upper())
            return HarnessSpec.model_validate(data)

        LOUD = _spec()
    """,
    "myplug/policy.py": """
        from harnessrl.policies.scripted import Oracle

        def make(arg, options):
            policy = Oracle()
            policy.policy_id = f"myplug-oracle:{arg}"
            return policy
    """,
    "myplug/suite.py": """
        from harnessrl.rollout.suites import load_suite

        def first_three():
            suite = load_suite("lookup")
            return [t for t in suite][:3]
    """,
    "myplug/rewards.py": """
        def replied(prompts, completions, **kwargs):
            return [float(any(m['role'] == 'assistant' for m in c)) for c in completions]
    """,
    # an installed distribution's metadata: entry points by name
    "myplug-0.1.dist-info/METADATA": "Metadata-Version: 2.1\\nName: myplug\\nVersion: 0.1\\n",
    "myplug-0.1.dist-info/entry_points.txt": """
        [harnessrl.harnesses]
        loud = myplug.harness:LOUD
        [harnessrl.policies]
        my-oracle = myplug.policy:make
        [harnessrl.suites]
        lookup3 = myplug.suite:first_three
        [harnessrl.rewards]
        replied = myplug.rewards:replied
    """,
}


@pytest.fixture
def plugin_dir(tmp_path):
    for rel, text in PLUGIN.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip().replace("\\n", "\n"))
    return tmp_path


def harnessrl(cwd: Path, *args: str, pythonpath: str = "") -> subprocess.CompletedProcess:
    """The installed console script (its sys.path does not hold the working folder, unlike `python -m`)."""
    script = Path(sys.executable).with_name("harnessrl")
    src = str(Path(__file__).resolve().parents[1] / "src")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (src, pythonpath) if p), "COLUMNS": "200"}
    return subprocess.run([str(script), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


def _policy_ids(store: Path) -> set[str]:
    from harnessrl.records import RecordStore

    return {e.policy_id for e in RecordStore(store, create=False).episodes()}


def _rewards(store: Path, name: str) -> list[float]:
    from harnessrl.records import RecordStore

    eps = RecordStore(store, create=False).episodes()
    assert all(e.metadata["rewards"][name] == 1.0 for e in eps)
    return [e.reward for e in eps]


def _summary(out: Path) -> dict:
    return json.loads((out / "summary.json").read_text())


@pytest.mark.slow
def test_references_run_through_eval_with_two_workers(plugin_dir):
    r = harnessrl(plugin_dir, "eval", "--policy", "myplug.policy:make:v1", "--suite", "myplug.suite:first_three",
                  "--harness", "myplug.harness:LOUD,lookup-plain", "--workers", "2", "--store", "st", "--out", "out",
                  "--reward-func", "myplug.rewards:replied", "--reward-weight", "0.5")
    assert r.returncode == 0, r.stdout + r.stderr
    data = _summary(plugin_dir / "out")
    assert _policy_ids(plugin_dir / "st") == {"myplug-oracle:v1"}  # built by the plugin factory in the workers
    assert _rewards(plugin_dir / "st", "myplug.rewards:replied") == [1.5] * 6  # verifier 1 + 0.5 x the plugin reward
    assert {row["harness_id"]: row["pass@1"] for row in data["summary"]} == {"loud-plain": 1.0, "lookup-plain": 1.0}
    assert len(data["cells"]) == 6


@pytest.mark.slow
def test_entry_points_run_through_eval_with_two_workers(plugin_dir):
    # the dist-info folder is found on the path, as an installed package's is; the workers look it up again
    r = harnessrl(plugin_dir, "eval", "--policy", "my-oracle:ep", "--suite", "lookup3", "--harness", "loud",
                  "--workers", "2", "--store", "st", "--out", "out", "--reward-func", "replied", pythonpath=str(plugin_dir))
    assert r.returncode == 0, r.stdout + r.stderr
    assert _rewards(plugin_dir / "st", "replied") == [2.0] * 3
    data = _summary(plugin_dir / "out")
    assert _policy_ids(plugin_dir / "st") == {"myplug-oracle:ep"} and [row["harness_id"] for row in data["summary"]] == ["loud-plain"]
    assert {row["pass@1"] for row in data["summary"]} == {1.0} and len(data["cells"]) == 3


def test_a_bad_reference_is_one_line(plugin_dir):
    r = harnessrl(plugin_dir, "eval", "--policy", "oracle", "--suite", "lookup", "--tasks", "0",
                  "--harness", "myplug.harness:NOPE", "--store", "st")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "has no attribute 'NOPE'" in r.stderr


def test_load_object_names_what_failed():
    from harnessrl.plugins import load_object

    with pytest.raises(ConfigError, match="cannot import"):
        load_object("no_such_pkg_xyz.mod:thing", "harness")


@pytest.mark.slow
def test_a_plugin_harness_and_reward_train_through_the_trl_engine(plugin_dir, monkeypatch):
    from typer.testing import CliRunner

    from harnessrl.cli import app
    from harnessrl.records import RecordStore
    from tests import tiny_lm

    monkeypatch.chdir(plugin_dir)
    monkeypatch.syspath_prepend(str(plugin_dir))
    model = tiny_lm.build(plugin_dir / "m")
    r = CliRunner().invoke(app, [
        "train", "agent", "--engine", "trl", "--model", str(model), "--out", "run",
        "--set", 'harnesses=["myplug.harness:LOUD", "lookup-plain"]', "--set", "tasks=[lookup/000]",
        "--set", "group_size=2", "--set", "tasks_per_update=1", "--set", "updates=1", "--set", "policy.max_new_tokens=6",
        "--set", 'reward_funcs=["myplug.rewards:replied"]', "--set", "trl.gradient_checkpointing=false"],
        catch_exceptions=False)
    assert r.exit_code == 0, r.output
    eps = RecordStore(plugin_dir / "run" / "store").episodes()
    assert {ep.context.harness_id for ep in eps} == {"loud-plain", "lookup-plain"}
    assert all(ep.metadata["rewards"]["myplug.rewards:replied"] == 1.0 for ep in eps)
    loud = next(ep for ep in eps if ep.context.harness_id == "loud-plain")
    assert loud.messages[0]["content"].isupper()  # the plugin's system prompt reached the policy


@pytest.mark.slow
def test_a_plugin_harness_and_reward_run_on_ray(plugin_dir):
    """Ray actors import the plugin harness and policy from the working folder; the reward runs on the driver."""
    import shutil
    import tempfile

    if shutil.which("unshare") is None or shutil.which("ip") is None:
        pytest.fail("the Ray test needs util-linux `unshare` and iproute2 `ip` (installed by the set-up)")
    script = Path(sys.executable).with_name("harnessrl")
    src = str(Path(__file__).resolve().parents[1] / "src")
    ray_tmp = tempfile.mkdtemp(prefix="ray", dir="/tmp")  # short: Ray's socket paths have a length limit
    env = {**os.environ, "PYTHONPATH": src, "RAY_USAGE_STATS_ENABLED": "0", "RAY_TMPDIR": ray_tmp, "COLUMNS": "200"}
    cmd = (f"ip link set lo up && exec {script} eval --backend ray --workers 2 --policy myplug.policy:make:ray "
           "--suite myplug.suite:first_three --harness myplug.harness:LOUD,lookup-plain --store st --out out "
           "--reward-func myplug.rewards:replied --reward-weight 0.5")
    try:  # a loopback-only network namespace: the only place harnessrl starts a local Ray cluster
        r = subprocess.run(["unshare", "-n", "sh", "-c", cmd], cwd=plugin_dir, env=env, capture_output=True, text=True,
                           timeout=540)
    finally:
        shutil.rmtree(ray_tmp, ignore_errors=True)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    from harnessrl.records import RecordStore

    eps = RecordStore(plugin_dir / "st", create=False).episodes()
    assert len(eps) == 6 and {e.policy_id for e in eps} == {"myplug-oracle:ray"}
    assert {e.context.harness_id for e in eps} == {"loud-plain", "lookup-plain"}
    assert all(e.success and e.metadata["rewards"]["myplug.rewards:replied"] == 1.0 and e.reward == 1.5 for e in eps)


@pytest.mark.slow
def test_a_plugin_harness_and_reward_train_under_accelerate_launch(plugin_dir):
    """`accelerate launch -m harnessrl.engines.trl` from the plugin's folder: the launched process resolves the
    plugin harness and reward by reference (the working folder is not on its path until harnessrl adds it)."""
    import yaml

    from harnessrl.records import RecordStore
    from tests import tiny_lm

    model = tiny_lm.build(plugin_dir / "m")
    cfg = {"policy": {"model": str(model), "max_new_tokens": 6}, "run_dir": "run", "tasks": ["lookup/000"],
           "harnesses": ["myplug.harness:LOUD", "lookup-plain"], "group_size": 2, "tasks_per_update": 1, "updates": 1,
           "reward_funcs": ["myplug.rewards:replied"], "trl": {"gradient_checkpointing": False}}
    (plugin_dir / "run.yaml").write_text(yaml.safe_dump(cfg))
    src = str(Path(__file__).resolve().parents[1] / "src")
    env = {**os.environ, "PYTHONPATH": src, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "HF_DATASETS_OFFLINE": "1", "ACCELERATE_USE_CPU": "true"}
    cmd = [sys.executable, "-m", "accelerate.commands.launch", "--num_processes", "1", "--num_machines", "1",
           "--mixed_precision", "no", "--dynamo_backend", "no", "--cpu",
           "-m", "harnessrl.engines.trl", "--config", "run.yaml"]
    r = subprocess.run(cmd, cwd=plugin_dir, env=env, capture_output=True, text=True, timeout=540)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    eps = RecordStore(plugin_dir / "run" / "store").episodes()
    assert {ep.context.harness_id for ep in eps} == {"loud-plain", "lookup-plain"} and len(eps) == 4
    assert all(ep.metadata["rewards"]["myplug.rewards:replied"] == 1.0 for ep in eps)
    assert next(ep for ep in eps if ep.context.harness_id == "loud-plain").messages[0]["content"].isupper()
