"""The skill optimizer on the real lookup suite and harness with probe policies: what it logs,
how each acceptance rule decides, LLM rewrites through a policy (valid and malformed)."""

import json

import numpy as np
import pytest

from harnessrl.config import ConfigError
from harnessrl.envs.lookup import lookup_tasks
from harnessrl.evaluate.acceptance import AcceptanceConfig, decide
from harnessrl.evaluate.skill_runs import LOG_NAME, read_log
from harnessrl.harness.base import load_spec
from harnessrl.harness.skills import Skill, SkillSection
from harnessrl.policies.base import Action, Policy
from harnessrl.policies.skill_probes import SkillBlindPolicy
from harnessrl.records import RecordStore
from harnessrl.train.skill_optimizer import ProposerConfig, SkillOptimizer, SkillOptimizerConfig

SKILL = Skill("look", (
    SkillSection("look-first", "Look first", "Always `look` at the object before you answer."),
    SkillSection("answer-words", "Answer", "Answer with the asked values only, nothing else."),
))
TASKS = lookup_tasks(n=40)
TRAIN, VAL, TEST = TASKS[:6], TASKS[6:10], TASKS[10:16]


def optimizer(tmp_path, policy=None, name="run", **cfg):
    store = RecordStore(tmp_path / "store")
    return SkillOptimizer(SkillOptimizerConfig(**cfg), policy=policy or SkillBlindPolicy(0.5), harness=load_spec("lookup-plain"),
                          seed_skill=SKILL, train_tasks=TRAIN, validation_tasks=VAL, test_tasks=TEST,
                          run_dir=tmp_path / name, store=store), store


def test_log_is_complete_chained_and_matches_the_store(tmp_path):
    opt, store = optimizer(tmp_path, iterations=10, seed=3)
    res = opt.run()
    log = read_log(tmp_path / "run")
    assert log.complete and log.end["accepted"] == res.accepted and log.end["episodes"] == res.episodes == 60
    assert len(log.candidates) == 11 and len(log.decisions) == 10 and len(log.evaluations) == 20
    assert log.header["tasks"]["test"] == [t.task_id for t in TEST] and log.header["config"]["seed"] == 3
    eps = {e.episode_id: e for e in store.episodes(f"run_id = '{res.run_id}'")}
    assert set(log.episode_ids()) == set(eps)
    for ev in log.evaluations:  # every evaluation's seeds, tasks and scores are the stored episodes'
        got = [eps[i] for i in ev["episode_ids"]]
        assert [e.context.seed for e in got] == ev["seeds"] and [e.context.task_id for e in got] == ev["task_ids"]
        assert [e.reward for e in got] == ev["scores"]
        assert all(e.metadata["skillopt"]["evaluation"] == ev["evaluation_id"] and e.skill_version == ev["skill_version"] for e in got)
    for d in log.decisions:  # each decision is the rule applied to the logged scores
        p, c = log.evaluation(d["parent_evaluation"]), log.evaluation(d["candidate_evaluation"])
        assert p["task_ids"] == c["task_ids"] and set(p["seeds"]).isdisjoint(c["seeds"])  # same tasks, independent seeds
        assert decide(AcceptanceConfig(), np.array(p["scores"]), np.array(c["scores"])).accepted == d["accepted"]
        assert log.candidates[d["candidate_id"]]["parent_id"] == d["parent_id"]
    # the lineage: each decision's parent is the last accepted candidate
    current = "c0000"
    for d in log.decisions:
        assert d["parent_id"] == current
        current = d["candidate_id"] if d["accepted"] else current
    with pytest.raises(ConfigError, match="already exists"):
        optimizer(tmp_path, iterations=1)[0].run()


def test_tampering_and_crashes_are_detected(tmp_path):
    optimizer(tmp_path, iterations=3)[0].run()
    path = tmp_path / "run" / LOG_NAME
    lines = path.read_text().splitlines(keepends=True)
    torn = tmp_path / "torn"
    torn.mkdir()
    (torn / LOG_NAME).write_text("".join(lines[:5]) + lines[5][:20])  # killed mid-line
    log = read_log(torn)
    assert not log.complete and len(log.evaluations) + len(log.candidates) + len(log.decisions) == 4
    event = json.loads(lines[4])
    event["data"]["accepted"] = not event["data"].get("accepted", False)
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / LOG_NAME).write_text("".join(lines[:4]) + json.dumps(event) + "\n" + "".join(lines[5:]))
    with pytest.raises(ConfigError, match=r"optimizer_log.jsonl:5: the hash chain does not verify"):
        read_log(bad)
    with pytest.raises(ConfigError, match="no optimizer log"):
        read_log(tmp_path / "nowhere")


def test_paired_seeds_never_accept_a_noop_for_a_blind_policy(tmp_path):
    opt, _ = optimizer(tmp_path, iterations=15, paired_seeds=True, proposer=ProposerConfig(operators=["noop"]))
    res = opt.run()
    log = read_log(tmp_path / "run")
    assert res.accepted == [] and all("not >" in d["reason"] for d in log.decisions)
    opt, _ = optimizer(tmp_path, name="run2", iterations=15, proposer=ProposerConfig(operators=["noop"]))
    assert opt.run().accepted  # independent seeds: the same no-op gets through


def test_validation_and_margin_rules(tmp_path):
    opt, _ = optimizer(tmp_path, iterations=6, acceptance=AcceptanceConfig(rule="validation"))
    opt.run()
    log = read_log(tmp_path / "run")
    assert [e["role"] for e in log.evaluations][:1] == ["validation"] and log.evaluations[0]["candidate_id"] == "c0000"
    bar = {"c0000": np.mean(log.evaluations[0]["scores"])}
    for d in log.decisions:
        c = log.evaluation(d["candidate_evaluation"])
        assert c["role"] == "validation" and c["task_ids"] == [t.task_id for t in VAL]
        assert d["parent_score"] == pytest.approx(bar[d["parent_id"]])
        assert d["accepted"] == (np.mean(c["scores"]) > bar[d["parent_id"]])
        if d["accepted"]:
            bar[d["candidate_id"]] = np.mean(c["scores"])
    opt, _ = optimizer(tmp_path, name="m", iterations=8, acceptance=AcceptanceConfig(rule="margin", margin=2))
    opt.run()
    for d in read_log(tmp_path / "m").decisions:
        assert d["accepted"] == (d["candidate_score"] >= d["parent_score"] + 2)


class Rewriter(Policy):
    """A rewriting 'LLM' through the Policy interface: returns fixed text and records what it was asked."""

    policy_id = "rewriter"

    def __init__(self, text):
        self.text, self.seen = text, []

    def act(self, states):
        self.seen.append(states[0].messages)
        return [Action(self.text)]


def test_llm_rewrites_valid_and_malformed(tmp_path):
    good = Rewriter("Sure! Here it is:\n# Skill: whatever\n## [look-first] Look first\nAlways `look` first.\n## [new-one] Check\nRe-read the question.")
    store = RecordStore(tmp_path / "store")
    opt = SkillOptimizer(SkillOptimizerConfig(iterations=2, proposer=ProposerConfig(llm_share=1.0, operators=[])),
                         policy=SkillBlindPolicy(0.5), harness=load_spec("lookup-plain"), seed_skill=SKILL, train_tasks=TRAIN,
                         run_dir=tmp_path / "good", store=store, rewriter=good)
    opt.run()
    log = read_log(tmp_path / "good")
    cand = log.candidates["c0001"]
    assert cand["operator"] == "llm_rewrite" and log.skill("c0001").section_ids == ["look-first", "new-one"]
    assert log.skill("c0001").name == "look"  # the parent's name is kept
    assert "[look-first]" in good.seen[0][1]["content"] and "task lookup/" in good.seen[0][1]["content"]  # skill + minibatch feedback
    bad = Rewriter("I would simply tell the agent to try harder.")
    opt = SkillOptimizer(SkillOptimizerConfig(iterations=2, proposer=ProposerConfig(llm_share=1.0, operators=[])),
                         policy=SkillBlindPolicy(0.5), harness=load_spec("lookup-plain"), seed_skill=SKILL, train_tasks=TRAIN,
                         run_dir=tmp_path / "bad", store=store, rewriter=bad)
    res = opt.run()
    log = read_log(tmp_path / "bad")
    assert res.accepted == [] and all(c.get("status") == "format_error" for c in list(log.candidates.values())[1:])
    assert all(d["reason"] == "rewrite did not parse (format error)" for d in log.decisions)


def test_config_errors_name_the_problem(tmp_path):
    kw = dict(policy=SkillBlindPolicy(), harness=load_spec("lookup-plain"), seed_skill=SKILL, run_dir=tmp_path, store=None)
    with pytest.raises(ConfigError, match="minibatch_size=3 needs at least 3 train tasks"):
        SkillOptimizer(SkillOptimizerConfig(), train_tasks=TRAIN[:2], **kw)
    with pytest.raises(ConfigError, match="needs validation tasks"):
        SkillOptimizer(SkillOptimizerConfig(acceptance=AcceptanceConfig(rule="validation")), train_tasks=TRAIN, **kw)
    with pytest.raises(ConfigError, match="also train tasks"):
        SkillOptimizer(SkillOptimizerConfig(), train_tasks=TRAIN, test_tasks=TRAIN[:1], **kw)
    with pytest.raises(ConfigError, match="needs a rewriter"):
        SkillOptimizer(SkillOptimizerConfig(proposer=ProposerConfig(llm_share=0.5)), train_tasks=TRAIN, **kw)
    with pytest.raises(Exception, match="unknown operators"):
        ProposerConfig(operators=["swap"])


# ---------------------------------------------------------------------------------------
# Real policy kinds: an OpenAI-compatible endpoint on loopback, and a tiny local LM


@pytest.fixture()
def fake_endpoint(monkeypatch):
    """A chat-completions server on 127.0.0.1: rewrites skills (adds a section) and answers lookup questions
    with `answer unknown`; usage counts prompt characters / 4 as tokens."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            msgs = body["messages"]
            if "You improve a skill" in msgs[0]["content"]:
                text = "# Skill: x\n## [look-first] Look first\nAlways `look` first.\n## [double-check] Double-check\nRead the question twice."
            else:
                text = "answer unknown"
            prompt = sum(len(m["content"]) for m in msgs) // 4
            out = json.dumps({"id": "c", "object": "chat.completion", "created": 0, "model": body["model"],
                              "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                              "usage": {"prompt_tokens": prompt, "completion_tokens": 3, "total_tokens": prompt + 3}}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()


def test_endpoint_policy_acts_and_rewrites(tmp_path, fake_endpoint):
    from harnessrl.policies.registry import make_policy, PolicySpec

    endpoint = make_policy(PolicySpec("endpoint", "fake", {"base_url": fake_endpoint, "max_retries": 0}))
    store = RecordStore(tmp_path / "store")
    opt = SkillOptimizer(SkillOptimizerConfig(iterations=2, proposer=ProposerConfig(llm_share=1.0, operators=[])),
                         policy=endpoint, harness=load_spec("lookup-plain"), seed_skill=SKILL, train_tasks=TRAIN,
                         run_dir=tmp_path / "run", store=store, rewriter=endpoint)
    opt.run()
    log = read_log(tmp_path / "run")
    assert log.skill("c0001").section_ids == ["look-first", "double-check"] and log.candidates["c0001"]["operator"] == "llm_rewrite"
    by = {e["evaluation_id"]: e for e in log.evaluations}
    d = log.decisions[0]
    parent_tokens, cand_tokens = by[d["parent_evaluation"]]["tokens_in"], by[d["candidate_evaluation"]]["tokens_in"]
    assert all(t > 0 for t in parent_tokens)  # the endpoint's usage is recorded as input tokens
    assert sum(cand_tokens) != sum(parent_tokens)  # the rewritten skill changes what every turn reads


def test_lm_policy_runs_the_optimizer_and_the_audit(tmp_path):
    """A tiny random LM (mostly unparseable text: counted format errors) through the whole
    optimizer + audit pipeline, with its token ids and input tokens recorded."""
    from harnessrl.analysis.bipa import audit
    from harnessrl.evaluate.skill_audit import AuditConfig, SkillEvaluator, audit_rollouts
    from harnessrl.policies.registry import make_policy, PolicySpec
    from tests import tiny_lm

    lm = make_policy(PolicySpec("lm", str(tiny_lm.build(tmp_path)), {"max_new_tokens": 8}))
    store = RecordStore(tmp_path / "store")
    SkillOptimizer(SkillOptimizerConfig(iterations=2), policy=lm, harness=load_spec("lookup-plain"), seed_skill=SKILL,
                   train_tasks=TRAIN[:3], test_tasks=TEST[:2], run_dir=tmp_path / "run", store=store).run()
    log = read_log(tmp_path / "run")
    eps = store.episodes()
    assert eps and all(e.tokens_in > 0 for e in eps) and all(len(t.token_ids) for e in eps for t in e.turns)
    ev = SkillEvaluator(lm, load_spec("lookup-plain"), {t.task_id: t for t in TRAIN[:3] + TEST[:2]}, run_id="lm-audit", store=store)
    cfg = AuditConfig(replays=1, null_replays=1, fresh_seeds=1)
    result = audit(log, store, audit_rollouts(log, ev, cfg), cfg)
    assert result.summary["false_accept_trials"] == 2 and result.summary["log_complete"]
    assert len(result.lineage) == 1 + result.summary["accepted"]
