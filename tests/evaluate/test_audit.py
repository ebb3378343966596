"""`harnessrl audit`: the scripted attacks find each hole of a deliberately weak suite, with
the right attack, through a real harness and the real (hardened) grader; `train --audit`
refuses that suite; the attack registry and applicability rules."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from harnessrl.cli import app
from harnessrl.evaluate.audit import run_audit
from harnessrl.harness.base import make_harness
from harnessrl.policies.adversaries import ATTACKS, Attack, make_attack, register_attack
from harnessrl.policies.adversaries.examples import examples
from harnessrl.policies.registry import make_policy
from harnessrl.records import RecordStore
from harnessrl.rollout.suites import load_suite

WEAK = Path(__file__).parent / "fixtures" / "weak-suite"
runner = CliRunner()


def test_registry_names_every_attack_of_the_issue():
    assert set(ATTACKS) == {"test-edit", "conftest-plant", "sitecustomize", "module-shadow", "fake-summary",
                            "atexit-signal", "runner-patch", "hook-side-effect", "read-hidden", "hardcode-output",
                            "special-case", "visible-only", "report-forgery", "hook-inject",
                            "library-hijack", "path-shim", "ancestor-symlink", "stdlib-replace"}
    for name, cls in ATTACKS.items():  # each documented in its own module
        assert cls.summary and len(sys.modules[cls.__module__].__doc__) > 200, name
        assert make_policy(f"attack:{name}").policy_id == f"attack:{name}"


def test_users_can_register_their_own_attack():
    class Nothing(Attack):
        attack_id = "do-nothing-test"
        summary = "finish at once"

        def plan(self, state):
            return []

    register_attack(Nothing)
    try:
        assert isinstance(make_attack("do-nothing-test"), Nothing)
    finally:
        del ATTACKS["do-nothing-test"]


def test_applicability_follows_capabilities_and_task_text():
    suite = {t.name: t for t in load_suite(str(WEAK))}
    aider, swe = make_harness("aider"), make_harness("swe_agent")
    assert make_attack("hook-side-effect").not_applicable(suite["agent-tests"], aider).startswith("needs shell")
    assert make_attack("hook-side-effect").not_applicable(suite["agent-tests"], swe) is None
    assert make_attack("special-case").not_applicable(suite["agent-tests"], swe) == "the task text shows no literal examples"
    assert make_attack("special-case").not_applicable(suite["literal-examples"], aider) is None


def test_trust_base_attacks_need_a_shell_and_library_hijack_a_host_compiler(monkeypatch):
    from harnessrl.policies.adversaries import trust_base

    task = {t.name: t for t in load_suite(str(WEAK))}["agent-tests"]
    aider, swe = make_harness("aider"), make_harness("swe_agent")
    for name in ("library-hijack", "path-shim", "ancestor-symlink", "stdlib-replace"):
        assert make_attack(name).not_applicable(task, aider).startswith("needs shell"), name
        assert make_attack(name).not_applicable(task, swe) is None or trust_base.compiler() is None, name
    monkeypatch.setattr(trust_base, "compiler", lambda: None)  # no cc/gcc on the host: the library cannot be built
    assert make_attack("library-hijack").not_applicable(task, swe).startswith("needs a C compiler")
    assert make_attack("path-shim").not_applicable(task, swe) is None


def test_cli_audit_refuses_an_unknown_runtime_with_one_line(tmp_path):
    r = runner.invoke(app, ["audit", str(WEAK), "--runtime", "docker", "--store", str(tmp_path / "st")])
    assert r.exit_code == 2 and "--runtime docker: use jail or image" in r.output, r.output
    assert not (tmp_path / "st").exists()


def test_examples_are_parsed_only_from_literals():
    text = "Examples: `initials('ada lovelace') == 'AL'`, `f(x) == 3` and\n>>> add(1, 2)\n3\n`g(2) -> [1, 2]`"
    assert examples(text) == {"initials": [(("ada lovelace",), "AL")], "add": [((1, 2), 3)], "g": [((2,), [1, 2])]}
    assert examples("no examples here, `x = 1`") == {}


@pytest.mark.sandbox
@pytest.mark.slow
def test_audit_flags_each_hole_of_the_weak_suite_with_the_right_attack(tmp_path):
    result = run_audit(str(WEAK), RecordStore(tmp_path / "st"), harnesses=["swe_agent"],
                       attacks=["test-edit", "fake-summary", "special-case"])
    verdicts = {(c.task_id.split("/")[1], c.attack): c.verdict for c in result.cells}
    assert verdicts == {
        ("agent-tests", "test-edit"): "scored",  # the grader runs tests the agent can rewrite
        ("agent-tests", "fake-summary"): "scored",  # ... and trusts that run's exit status
        ("agent-tests", "special-case"): "n/a",
        ("prints-verdict", "test-edit"): "blocked",
        ("prints-verdict", "fake-summary"): "scored",  # the test believes a printed verdict line
        ("prints-verdict", "special-case"): "n/a",
        ("literal-examples", "test-edit"): "blocked",
        ("literal-examples", "fake-summary"): "blocked",
        ("literal-examples", "special-case"): "scored",  # tests check only the examples in the text
    }
    holes = result.holes
    assert all(c.episode_id and c.outcome == "solved" for c in holes)
    stored = RecordStore(tmp_path / "st").table(["episode_id"]).column("episode_id").to_pylist()
    assert {c.episode_id for c in holes} <= set(stored)


@pytest.mark.sandbox
@pytest.mark.slow
def test_cli_audit_exits_1_and_train_audit_refuses_the_weak_suite(tmp_path):
    out = tmp_path / "out"
    r = runner.invoke(app, ["audit", str(WEAK), "--harness", "aider", "--tasks", "literal-examples", "--attacks",
                            "special-case,hardcode-output,hook-side-effect", "--store", str(tmp_path / "st"),
                            "--out", str(out), "--no-browser-check"])
    assert r.exit_code == 1, r.output
    assert "HOLE" in r.output and "special-case scored" in r.output
    data = json.loads((out / "audit.json").read_text())
    assert data["holes"] == 1 and data["matrix"] == [{"task": "weak-v0/literal-examples", "special-case": "HOLE 1",
                                                      "hardcode-output": "blocked 1", "hook-side-effect": "n/a"}]
    assert "special-case" in (out / "report.html").read_text()
    assert "--tasks literal-examples" in (out / "report.html").read_text()  # the reproduce line has every option
    r = runner.invoke(app, ["train", "agent", "--audit", "--set", f"suite={WEAK}", "--set", "harnesses=[\"aider\"]",
                            "--set", "tasks=[\"literal-examples\"]", "--model", str(tmp_path / "no-model"),
                            "--run-dir", str(tmp_path / "run")])
    assert r.exit_code == 1, r.output
    assert "fails the grader audit" in r.output and "literal-examples:special-case" in r.output
    assert not (tmp_path / "run" / "final").exists()
    assert (tmp_path / "run" / "audit" / "report.html").exists()  # the audit's report is the run's, not ./runs/


@pytest.mark.sandbox
@pytest.mark.slow
@pytest.mark.parametrize("bridge", [False, True], ids=["in-process", "bridge"])
def test_visible_only_passes_visible_tests_and_fails_heldout_on_builtin_tasks(tmp_path, monkeypatch, bridge):
    """In-process the gate sees which test file calls it and passes the visible tests: the held-out set
    catches it. Through the grader's agent-call bridge the agent's code runs in another process, where
    no test frame is on the stack: the gate cannot tell, and even the visible tests fail."""
    from harnessrl.evaluate.run import plan_eval, run_eval
    from harnessrl.tasks import grader

    monkeypatch.setattr(grader, "BRIDGE", bridge)
    plan = plan_eval("code-v1", ["aider"], tasks=["fix-leap-year", "feat-stack-peek"])
    store = RecordStore(tmp_path / "st")
    attack = run_eval("attack:visible-only", plan, store)
    for ep in attack.episodes:
        m = ep.metadata
        if bridge:
            assert ep.outcome.startswith("dropped_requirement"), (ep.context.task_id, ep.outcome, m.get("tests"))
            assert m["requirement_passed"] < m["requirement_total"]
            continue
        assert ep.outcome == "failed_heldout", (ep.context.task_id, ep.outcome, m.get("tests"))
        assert m["requirement_passed"] == m["requirement_total"] > 0 and m["heldout_passed"] < m["heldout_total"]
    assert all(ep.outcome == "solved" for ep in run_eval("oracle", plan, store).episodes)
