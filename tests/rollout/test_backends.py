"""Rollout backends: inline, local process pool and Ray actors give the same episodes for the
same seeds. Ray runs in a subprocess inside a loopback-only network namespace (HARNESSRL's
rule: Ray probes outside addresses when it starts), with usage stats off and a private tmp dir."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

from harnessrl.config import ConfigError
from harnessrl.harness.base import make_harness
from harnessrl.policies.registry import PolicySpec
from harnessrl.rollout.backends import Job, chunks, loopback_only, run_jobs
from tests.harness.agent_fixtures import make_suite

pytestmark = pytest.mark.sandbox
ROOT = Path(__file__).resolve().parents[2]


def jobs_for(suite):
    specs = [make_harness(h).spec for h in ("openhands", "swe_agent", "qwen_code")]
    return [Job(spec, task, seed) for spec in specs for task in suite for seed in (0, 1)]


def fingerprint(episodes):
    return [[e.context.task_id, e.context.harness_id, e.context.seed, e.success, e.outcome, e.status,
             [t.action for t in e.turns], [t.observation for t in e.turns]] for e in episodes]


@pytest.fixture(scope="module")
def suite(tmp_path_factory):
    return make_suite(tmp_path_factory.mktemp("s"), {"fix-add": {}, "fix-add-2": {}})


def test_process_pool_matches_inline_run(suite):
    jobs = jobs_for(suite)
    seen = []
    inline = run_jobs(PolicySpec.parse("oracle"), jobs, workers=1, run_id="a")
    pooled = run_jobs(PolicySpec.parse("oracle"), jobs, workers=2, run_id="b", on_chunk=seen.append)
    assert fingerprint(inline) == fingerprint(pooled) and all(e.success for e in pooled)
    assert sum(len(c) for c in seen) == len(jobs) and {e.run_id for e in pooled} == {"b"}
    assert len({e.episode_id for e in inline + pooled}) == 2 * len(jobs)


def test_chunks_and_bad_arguments(suite):
    jobs = [Job(j.harness, j.task, j.seed, i) for i, j in enumerate(jobs_for(suite))]
    parts = chunks(jobs, 3)
    assert [len(p) for p in parts] == [3, 1, 3, 1, 3, 1] and all(len({j.harness.id for j in p}) == 1 for p in parts)
    with pytest.raises(ConfigError, match="unknown backend"):
        run_jobs(PolicySpec.parse("oracle"), jobs, backend="slurm")
    with pytest.raises(ConfigError, match="at least 1"):
        run_jobs(PolicySpec.parse("oracle"), jobs, workers=0)
    with pytest.raises(ConfigError, match="unknown policy"):
        run_jobs(PolicySpec.parse("wizard"), jobs[:1])


def test_local_ray_is_refused_outside_a_loopback_only_namespace(suite, monkeypatch):
    monkeypatch.delenv("HARNESSRL_RAY_ALLOW_NETWORK", raising=False)
    if loopback_only():  # already isolated (e.g. CI runs the suite in a netns): nothing to refuse
        return
    with pytest.raises(ConfigError, match="loopback-only network namespace"):
        run_jobs(PolicySpec.parse("oracle"), jobs_for(suite)[:1], backend="ray", workers=1)


RAY_SCRIPT = textwrap.dedent('''
    import json, sys
    sys.path.insert(0, {root!r})
    from harnessrl.rollout.backends import loopback_only, run_jobs
    from harnessrl.policies.registry import PolicySpec
    from harnessrl.tasks.base import load_suite_folder
    from tests.rollout.test_backends import fingerprint, jobs_for
    assert loopback_only(), "not in a loopback-only namespace"
    suite = load_suite_folder({suite!r})
    episodes = run_jobs(PolicySpec.parse("oracle"), jobs_for(suite), backend="ray", workers=2, run_id="ray")
    print("RESULT " + json.dumps(fingerprint(episodes)))
''')


@pytest.mark.slow
def test_ray_actors_match_local_results_in_a_loopback_only_namespace(suite, tmp_path):
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        pytest.fail("the Ray test needs util-linux `unshare` and iproute2 `ip` (installed by the set-up)")
    script = tmp_path / "ray_run.py"
    script.write_text(RAY_SCRIPT.format(root=str(ROOT), suite=str(suite.root)))
    ray_tmp = tempfile.mkdtemp(prefix="ray", dir="/tmp")  # short: Ray's socket paths have a length limit
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "RAY_TMPDIR": ray_tmp, "PYTHONPATH": str(ROOT)}
    try:
        proc = subprocess.run(["unshare", "-n", "sh", "-c", f"ip link set lo up && exec {sys.executable} {script}"],
                              env=env, capture_output=True, text=True, timeout=540)
    finally:
        shutil.rmtree(ray_tmp, ignore_errors=True)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, proc.stdout[-2000:] + proc.stderr[-4000:]
    ray_result = json.loads(lines[-1][len("RESULT "):])
    local = json.loads(json.dumps(fingerprint(run_jobs(PolicySpec.parse("oracle"), jobs_for(suite), workers=1))))
    assert ray_result == local and all(row[3] for row in ray_result)
