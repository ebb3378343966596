"""The audit on the real lookup suite and harness with probe policies of known behaviour.

- A policy that ignores the skill: every accepted gain must be classified as selection and
  the audit must say so.
- A no-op rewrite under strict-minibatch acceptance: accepted at the rate the exact
  Poisson-binomial model predicts, in the optimizer's own run and in the audit's replays.
"""

import itertools

import numpy as np
import pytest
from scipy import stats

from harnessrl.analysis.bipa import audit
from harnessrl.evaluate.skill_audit import AuditConfig, SkillEvaluator, audit_rollouts
from harnessrl.envs.lookup import lookup_tasks
from harnessrl.evaluate.acceptance import AcceptanceConfig, accept_probability, poisson_binomial_pmf
from harnessrl.evaluate.skill_runs import read_log
from harnessrl.harness.base import load_spec
from harnessrl.harness.skills import Skill, SkillSection
from harnessrl.policies.skill_probes import SkillBlindPolicy
from harnessrl.records import RecordStore
from harnessrl.report.bipa import audit_report
from harnessrl.train.skill_optimizer import ProposerConfig, SkillOptimizer, SkillOptimizerConfig

SKILL = Skill("look", (
    SkillSection("look-first", "Look first", "Always `look` at the object before you answer."),
    SkillSection("answer-words", "Answer", "Answer with the asked values only, nothing else."),
))
TASKS = lookup_tasks(n=40)
TRAIN, TEST = TASKS[:6], TASKS[6:12]
P = dict(zip([t.task_id for t in TRAIN + TEST], [0.2, 0.5, 0.8, 0.35, 0.65, 0.5] * 2))


def run(tmp_path, policy, iterations, operators=None, store=True, name="run"):
    st = RecordStore(tmp_path / "store") if store else None
    cfg = SkillOptimizerConfig(iterations=iterations, seed=11, proposer=ProposerConfig(**({"operators": operators} if operators else {})))
    opt = SkillOptimizer(cfg, policy=policy, harness=load_spec("lookup-plain"), seed_skill=SKILL, train_tasks=TRAIN,
                         test_tasks=TEST, run_dir=tmp_path / name, store=st)
    return opt.run(), st


def evaluator(log, policy, store):
    return SkillEvaluator(policy, load_spec("lookup-plain"), {t.task_id: t for t in TRAIN + TEST},
                          run_id=log.run_id + "-audit", store=store)


def test_blind_policy_every_gain_is_selection(tmp_path):
    policy = SkillBlindPolicy(P)
    res, store = run(tmp_path, policy, iterations=14)
    log = read_log(tmp_path / "run")
    assert len(res.accepted) >= 2  # the optimizer did "improve" the skill
    assert all(log.evaluation(d["candidate_evaluation"])["scores"] != log.evaluation(d["parent_evaluation"])["scores"] for d in log.accepted())
    cfg = AuditConfig(replays=8, fresh_seeds=3)
    result = audit(log, store, audit_rollouts(log, evaluator(log, policy, store), cfg), cfg)
    s = result.summary
    assert s["episodes_missing"] == 0 and s["log_complete"]
    assert s["accepted"] == len(res.accepted) and s["accepted_selection"] == s["accepted"] and s["accepted_real"] == 0
    assert all(e["verdict"] == "selection" and e["observed_gain"] > 0 and e["fresh_gain"] == 0 and e["selection_share"] == 1
               for e in result.edits)
    assert s["observed_train_gain"] > 0 and s["fresh_train_gain"] == 0 and s["test_gain"] == 0
    assert s["verdict"].startswith(f"All {s['accepted']} accepted gains are selection noise")
    status = {p["principle"]: p["status"] for p in result.principles}
    assert status["replay-controlled selection"] == "violated" and status["held-out acceptance"] == "violated"
    assert status["read provenance"] == "violated"  # the policy never reads its prompt
    # replayed, the accepted candidates get through no more often than identical ones (same distribution)
    full = [r for r in result.replays if r.accepted]
    cand, null = sum(int(r.candidate_accepts.sum()) for r in full), sum(int(r.null_accepts.sum()) for r in full)
    trials = sum(len(r.null_accepts) for r in full)
    assert stats.fisher_exact([[cand, trials - cand], [null, trials - null]]).pvalue > 1e-3
    assert len(result.replays) == len(log.decisions)  # rejected decisions get null-only replays too
    assert s["false_accept_trials"] == 8 * s["accepted"] + 2 * (len(log.decisions) - s["accepted"])
    paths = result.write(tmp_path / "audit")
    html = audit_report(result, files=paths).write(tmp_path / "audit" / "report.html").read_text()
    assert "selection noise" in html and "data:image/png;base64" in html and (tmp_path / "audit" / "read_graph.graphml").exists()


def test_noop_acceptance_matches_the_binomial_model(tmp_path):
    """300 no-op proposals; each iteration draws 3 of 6 tasks uniformly, so the acceptance count
    is Binomial(300, q) with q the exact no-op acceptance averaged over the 20 minibatches.
    A two-sided exact binomial test at alpha = 0.001 allows about +-3.3 sd = +-0.09 around
    q ~ 0.33 at n = 300; the naive "half the time" model must be rejected at the same level."""
    n = 300
    res, _ = run(tmp_path, SkillBlindPolicy(P), iterations=n, operators=["noop"], store=False)
    rule = AcceptanceConfig()
    ids = [t.task_id for t in TRAIN]
    q = np.mean([accept_probability(rule, np.array([P[ids[i]] for i in c])) for c in itertools.combinations(range(6), 3)])
    k = len(res.accepted)
    assert stats.binomtest(k, n, q).pvalue > 1e-3, (k / n, q)
    assert stats.binomtest(k, n, 0.5).pvalue < 1e-3  # "accept half the time" ignores ties: detectably wrong


def test_audit_replays_match_the_binomial_model(tmp_path):
    """The audit's null replays (parent vs itself on each accepted decision's minibatch): their
    total is Poisson-binomial over the replays' exact acceptance probabilities; the observed
    total must not lie in the model's 0.1% tails."""
    policy = SkillBlindPolicy(P)
    res, store = run(tmp_path, policy, iterations=12, operators=["noop"])
    log = read_log(tmp_path / "run")
    cfg = AuditConfig(replays=40, fresh_seeds=1)
    result = audit(log, store, audit_rollouts(log, evaluator(log, policy, store), cfg), cfg)
    probs = []
    for r in result.replays:
        probs += [accept_probability(AcceptanceConfig(), np.array([P[t] for t in r.task_ids]))] * len(r.null_accepts)
    k = int(sum(r.null_accepts.sum() for r in result.replays))
    pmf = poisson_binomial_pmf(np.array(probs))
    p_two_sided = pmf[pmf <= pmf[k] * (1 + 1e-9)].sum()
    assert len(probs) >= 80 and p_two_sided > 1e-3, (k, len(probs), sum(probs))
    assert result.summary["false_accept_predicted"] == pytest.approx(np.mean(probs), abs=0.12)  # p estimated from the replays
