"""LM sampling through the rollout backends depends only on the jobs, not on the worker layout."""

from __future__ import annotations

from harnessrl.harness.base import load_spec
from harnessrl.policies.registry import PolicySpec
from harnessrl.rollout.backends import Job, run_jobs
from harnessrl.train.tasks import load_tasks
from tests import tiny_lm


def test_sampled_lm_episodes_match_between_inline_and_process_pool(tmp_path):
    model = tiny_lm.build(tmp_path)
    spec = PolicySpec("lm", str(model), {"temperature": 1.0, "max_new_tokens": 6})
    tasks = load_tasks("lookup")[:6]
    jobs = [Job(load_spec(h), t, s) for h in ("lookup-plain", "lookup-kv") for t in tasks for s in range(3)]
    one = run_jobs(spec, jobs, workers=1, group_size=4, run_id="a")
    two = run_jobs(spec, jobs, workers=2, group_size=4, run_id="a")
    assert [[t.action for t in e.turns] for e in one] == [[t.action for t in e.turns] for e in two]
    assert len({e.turns[0].action for e in one}) > 3  # really sampled, not one greedy answer
