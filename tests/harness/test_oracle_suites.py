"""The oracle solves every in-scope task x harness cell of the built-in suites, through each
harness's own syntax; deliberately faulty oracles are classified as the fault they inject.

Runs on the local process pool with 2 workers (the slowest test of the agent stack: every cell
is a real sandboxed episode scored by its hidden tests)."""

import pytest

from harnessrl.evaluate.matrix import failure_modes
from harnessrl.evaluate.run import plan_eval, run_eval
from harnessrl.policies.scripted import BreakExisting
from harnessrl.records import RecordStore
from harnessrl.rollout.suites import load_suite

pytestmark = [pytest.mark.sandbox, pytest.mark.slow]
SIX = ["answer_tag", "aider", "aider_whole", "swe_agent", "openhands", "qwen_code", "terminus"]


@pytest.mark.parametrize("suite_name", ["code-v1", "code-v2", "terminal-v1"])
def test_oracle_solves_every_cell_it_claims(suite_name, tmp_path):
    suite = load_suite(suite_name)
    assert len(suite) >= {"code-v1": 40, "code-v2": 30, "terminal-v1": 20}[suite_name]
    plan = plan_eval(suite, SIX, seeds=1)
    # the claim, stated: a cell is out of scope exactly when the task needs a shell the harness lacks
    for task_id, harness_id, reason in plan.out_of_scope:
        assert suite[task_id].needs_shell and harness_id in ("aider", "aider_whole"), (task_id, harness_id, reason)
        assert reason == f"task needs shell; harness '{harness_id}' has only edit"
    assert len(plan.cells) + len(plan.out_of_scope) == len(suite) * len(SIX)
    result = run_eval("oracle", plan, RecordStore(tmp_path / "store"), workers=2)
    failed = [(e.context.task_id, e.context.harness_id, e.outcome, e.status, e.metadata.get("crash", "")[-300:])
              for e in result.episodes if not e.success]
    assert not failed, failed
    assert all(r["pass@1"] == 1.0 for r in result.summary) and len(result.episodes) == len(plan.cells)


FAULTY_TASKS = ["fix-median-even", "fix-fahrenheit", "fix-binary-search"]


def test_faulty_oracles_are_classified_as_the_fault_they_inject(tmp_path):
    store = RecordStore(tmp_path / "store")
    code = load_suite("code-v1")
    plan = plan_eval(code, SIX, seeds=1, tasks=FAULTY_TASKS)
    assert all(BreakExisting().injected_fault(code[t]) == "broke_existing" for t in FAULTY_TASKS)

    drop = run_eval("oracle-drop", plan, store, workers=2)
    assert all(failure_modes(e) == ["dropped_requirement"] for e in drop.episodes), [
        (e.context.harness_id, e.outcome) for e in drop.episodes]
    assert all(r["rate_dropped_requirement"] == 1.0 and r["rate_broke_existing"] == 0.0 for r in drop.summary)

    broke = run_eval("oracle-break", plan, store, workers=2)
    assert all(failure_modes(e) == ["broke_existing"] for e in broke.episodes), [
        (e.context.task_id, e.context.harness_id, e.outcome) for e in broke.episodes]
    assert all(r["rate_broke_existing"] == 1.0 and r["rate_dropped_requirement"] == 0.0 for r in broke.summary)

    short = plan_eval(code, SIX, seeds=1, tasks=FAULTY_TASKS[:1])
    bad = run_eval("oracle-malformed", short, store, workers=2)
    for e in bad.episodes:
        assert e.status == "format_error" and "format_error" in failure_modes(e) and e.format_errors >= 1, (
            e.context.harness_id, e.status, e.format_errors)
        assert all(t.status in ("format_error", "blocked") for t in e.turns)
    typo = run_eval("oracle-typo", short, store, workers=2)
    assert all(e.success and e.format_errors == 1 for e in typo.episodes), [
        (e.context.harness_id, e.outcome, e.format_errors) for e in typo.episodes]

    # the store holds every episode with its failure modes queryable per run
    runs = store.sql("SELECT run_id, count(*) AS n FROM episodes GROUP BY run_id").to_pylist()
    assert sorted(r["n"] for r in runs) == sorted([21, 21, 7, 7])
