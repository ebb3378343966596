"""A policy that follows one skill section, on real coding tasks in real harnesses:
the read graph must show that section read and acted on and no other; an optimizer edit that
adds it must be audited as a real gain with read provenance, while no-op acceptances are not."""

import networkx as nx
import pytest

from harnessrl.analysis.bipa import audit
from harnessrl.analysis.bipa_graph import episode_graph, section_usage
from harnessrl.evaluate.skill_audit import AuditConfig, SkillEvaluator, audit_rollouts
from harnessrl.evaluate.skill_runs import read_log, run_skill
from harnessrl.harness.base import load_spec
from harnessrl.harness.skills import Skill, SkillSection
from harnessrl.policies.skill_probes import SectionFollowerPolicy
from harnessrl.records import RecordStore
from harnessrl.rollout.suites import load_suite, task_id
from harnessrl.train.skill_optimizer import ProposerConfig, SkillOptimizer, SkillOptimizerConfig

pytestmark = pytest.mark.slow

INSPECT = SkillSection("inspect", "Look around first", "Start by running `ls -la /app` to see every file before you open one.")
OTHERS = (
    SkillSection("read-first", "Read before you edit", "Open the file the issue names and read the whole function before changing it."),
    SkillSection("explain", "Say what changed", "End with one sentence that says what was wrong and why the fix works."),
)
WITH = Skill("fix", (OTHERS[0], INSPECT, OTHERS[1]))
WITHOUT = Skill("fix", OTHERS)
TASKS = list(load_suite("code-v1"))


@pytest.mark.parametrize("harness_id", ["openhands", "swe_agent"])
def test_graph_shows_the_followed_section_read_and_acted_on_and_no_other(harness_id):
    policy = SectionFollowerPolicy("inspect", p_with=0.5, p_without=0.5)
    eps = run_skill(policy, load_spec(harness_id), WITH, TASKS[:3], [0, 1, 2], run_id="follow", meta={})
    eps += run_skill(policy, load_spec(harness_id), WITHOUT, TASKS[:2], [0, 1], run_id="follow", meta={})
    skills = {WITH.version: WITH, WITHOUT.version: WITHOUT}
    usage = {u["section"]: u for u in section_usage(eps, skills)}
    assert usage["inspect"]["episodes_in_context"] == 3
    assert usage["inspect"]["episodes_read"] == usage["inspect"]["episodes_acted_on"] == 3
    assert usage["read-first"]["episodes_in_context"] == usage["explain"]["episodes_in_context"] == 5
    assert usage["read-first"]["episodes_read"] == usage["explain"]["episodes_read"] == 0
    g = episode_graph(eps, skills)
    assert nx.is_bipartite(g)
    readers = list(g.neighbors("skill:inspect"))
    assert len(readers) == 3 and all(g.edges[r, "skill:inspect"]["acted_on"] for r in readers)
    assert all(g.nodes[r]["index"] == 0 and g.nodes[r]["skill_version"] == WITH.version for r in readers)  # its first turn, runs it
    assert g.degree("skill:read-first") == 0 and g.degree("skill:explain") == 0


def test_audit_finds_the_real_edit_and_its_provenance(tmp_path):
    """The only proposal that changes anything adds `inspect` (p 0.1 -> 0.9); after it the pool is
    empty and add_section proposes no-ops, whose acceptances are selection."""
    policy = SectionFollowerPolicy("inspect", p_with=0.9, p_without=0.1)
    train, test = TASKS[:3], TASKS[3:6]
    store = RecordStore(tmp_path / "store")
    cfg = SkillOptimizerConfig(iterations=3, seed=1, proposer=ProposerConfig(operators=["add_section"], pool=[["inspect", INSPECT.title, INSPECT.text]]))
    SkillOptimizer(cfg, policy=policy, harness=load_spec("openhands"), seed_skill=WITHOUT, train_tasks=train, test_tasks=test,
                   run_dir=tmp_path / "run", store=store).run()
    log = read_log(tmp_path / "run")
    added = [d["candidate_id"] for d in log.accepted() if log.candidates[d["candidate_id"]]["description"] == "add_section(inspect)"]
    assert len(added) == 1  # (a real improvement can also be rejected on a noisy minibatch first: it was, at iteration 1)
    ev = SkillEvaluator(policy, load_spec("openhands"), {task_id(t): t for t in train + test}, run_id=log.run_id + "-audit", store=store)
    cfg = AuditConfig(replays=2, null_replays=1, fresh_seeds=2)
    result = audit(log, store, audit_rollouts(log, ev, cfg), cfg)
    edit = next(e for e in result.edits if e["candidate"] == added[0])
    assert edit["verdict"] == "real" and edit["fresh_gain_lo"] > 0 and edit["test_gain"] > 0
    assert edit["provenance"] and edit["changed_sections_read"] == "inspect" and edit["sections_added"] == "inspect"
    assert edit["d_skill_chars"] > 0 and edit["d_turns"] > 0  # the edit costs a turn: the agent now runs the command
    noops = [e for e in result.edits if e is not edit]
    assert all(e["verdict"] == "selection" and not e["provenance"] for e in noops)  # no-ops accepted after it, if any
    status = {p["principle"]: p["status"] for p in result.principles}
    assert status["read provenance"] == ("violated" if noops else "ok")
    assert result.summary["test_gain"] > 0 and result.summary["accepted_real"] == 1
