"""`harnessrl eval` and `harnessrl seal` from the command line."""

import json

import pytest
from typer.testing import CliRunner

from harnessrl.cli import app
from tests.harness.agent_fixtures import make_suite

pytestmark = pytest.mark.sandbox
runner = CliRunner()


@pytest.fixture
def suite(tmp_path):
    return make_suite(tmp_path / "suite", {"fix-add": {}, "count-lines": {
        "kind": "terminal", "needs_shell": True, "files": {"data.txt": "a\nb\n"}, "edits": "",
        "req": "def test_count():\n    assert open('/app/count.txt').read().strip() == '2'\n",
        "reg": "def test_kept():\n    assert open('/app/data.txt').read() == 'a\\nb\\n'\n",
        "script": "wc -l < data.txt > count.txt\n"}})


def test_eval_prints_and_exports_the_matrices(suite, tmp_path):
    out = tmp_path / "out"
    r = runner.invoke(app, ["eval", "--policy", "oracle", "--suite", str(suite.root), "--harness", "aider,openhands",
                            "--seeds", "2", "--k", "2", "--workers", "2", "--store", str(tmp_path / "st"), "--out", str(out)])
    assert r.exit_code == 0, r.output
    assert "Harness summary (oracle)" in r.output and "Task x harness" in r.output
    assert "out of scope (1 cells): task needs shell; harness 'aider' has only edit" in r.output
    data = json.loads((out / "summary.json").read_text())
    assert {row["harness_id"]: row["pass@1"] for row in data["summary"]} == {"aider": 1.0, "openhands": 1.0}
    assert {row["harness_id"]: row["pass@2"] for row in data["summary"]} == {"aider": 1.0, "openhands": 1.0}
    assert data["out_of_scope"] == [{"task_id": "t-v1/count-lines", "harness_id": "aider",
                                     "reason": "task needs shell; harness 'aider' has only edit"}]
    for name in ("cells.csv", "summary.csv", "matrix.png", "report.html"):
        assert (out / name).stat().st_size > 100
    assert len((out / "cells.csv").read_text().splitlines()) == 1 + 3  # header + 3 cells in scope
    r = runner.invoke(app, ["records", "list", "--store", str(tmp_path / "st")])
    assert r.exit_code == 0 and "6 episodes" in r.output


@pytest.mark.parametrize("args,message", [
    (["--policy", "wizard"], "unknown policy 'wizard'"),
    (["--policy", "oracle", "--k", "3"], "--k 3 needs at least that many episodes"),
    (["--policy", "oracle", "--harness", "nope"], "unknown harness 'nope'"),
    (["--policy", "oracle", "--tasks", "ghost"], "has no task(s) ['ghost']"),
])
def test_eval_bad_input_gets_a_clear_error(suite, tmp_path, args, message):
    r = runner.invoke(app, ["eval", "--suite", str(suite.root), "--store", str(tmp_path / "st"), *args])
    assert r.exit_code == 2 and message in r.output.replace("\n", " "), r.output


def test_seal_cli_create_eval_once_verify_and_detect_tampering(suite, tmp_path):
    seals, store = str(tmp_path / "seals"), str(tmp_path / "st")
    r = runner.invoke(app, ["seal", "--name", "final", "--suite", str(suite.root), "--tasks", "fix-add",
                            "--harness", "swe_agent", "--seals", seals])
    assert r.exit_code == 0 and "sealed 1 tasks and 1 harnesses" in r.output, r.output
    r = runner.invoke(app, ["eval", "--policy", "oracle", "--suite", str(suite.root), "--harness", "swe_agent",
                            "--seals", seals, "--store", store])
    assert r.exit_code == 2 and "refusing to use sealed items" in r.output.replace("\n", " ")
    r = runner.invoke(app, ["eval", "--policy", "oracle", "--suite", str(suite.root), "--sealed", "final",
                            "--seals", seals, "--store", store, "--workers", "1"])
    assert r.exit_code == 0 and "sealed evaluation written once" in r.output, r.output
    r = runner.invoke(app, ["eval", "--policy", "oracle", "--suite", str(suite.root), "--sealed", "final",
                            "--seals", seals, "--store", store])
    assert r.exit_code == 2 and "evaluated once" in r.output
    r = runner.invoke(app, ["seal", "list", "--seals", seals])
    assert r.exit_code == 0 and "final" in r.output and "yes" in r.output
    r = runner.invoke(app, ["seal", "verify", "final", "--seals", seals, "--store", store])
    assert r.exit_code == 0 and "intact" in r.output, r.output
    eval_file = tmp_path / "seals" / "final.eval.json"
    eval_file.write_text(eval_file.read_text().replace('"success": true', '"success": false', 1))
    r = runner.invoke(app, ["seal", "verify", "final", "--seals", seals, "--store", store])
    assert r.exit_code == 1 and "TAMPERED" in r.output


def test_eval_runs_the_lookup_suite_by_name(tmp_path):
    """`lookup` (the recipes' training environment) is an evaluation suite too: tasks by number,
    the oracle solves them through its harnesses; an unknown task is one error line, exit 2."""
    out = tmp_path / "out"
    r = runner.invoke(app, ["eval", "--policy", "oracle", "--suite", "lookup", "--harness", "lookup-plain,lookup-brief",
                            "--tasks", "0,7,399", "--store", str(tmp_path / "st"), "--out", str(out)])
    assert r.exit_code == 0, r.output
    data = json.loads((out / "summary.json").read_text())
    assert {row["harness_id"]: (row["episodes"], row["pass@1"]) for row in data["summary"]} == {
        "lookup-plain": (3, 1.0), "lookup-brief": (3, 1.0)}
    r = runner.invoke(app, ["eval", "--policy", "oracle", "--suite", "lookup", "--harness", "lookup-plain", "--tasks", "400",
                            "--store", str(tmp_path / "st2")])
    assert r.exit_code == 2 and "lookup/399" in r.output
    r = runner.invoke(app, ["eval", "--policy", "oracle", "--suite", "lookup", "--harness", "lookup-plain", "--tasks", "lamp",
                            "--store", str(tmp_path / "st2")])
    assert r.exit_code == 2 and "unknown lookup task 'lamp'" in r.output


def test_eval_runs_several_suites_in_one_command(suite, tmp_path):
    """`--suite a,b`: every suite is planned before any runs, all episodes share one run id, and
    --out gets each suite's export in its own folder plus one summary.csv with a suite column."""
    out, store = tmp_path / "out", str(tmp_path / "st")
    r = runner.invoke(app, ["eval", "--policy", "oracle", "--suite", f"lookup,{suite.root}", "--harness", "lookup-plain,aider",
                            "--workers", "1", "--run-id", "both", "--store", store, "--out", str(out)])
    assert r.exit_code == 0, r.output
    rows = (out / "summary.csv").read_text().splitlines()
    assert rows[0].startswith("suite,harness_id")
    assert sorted(row.split(",")[:2] for row in rows[1:]) == [["lookup", "lookup-plain"], ["t-v1", "aider"]]
    for name in ("lookup", "t-v1"):
        assert (out / name / "report.html").stat().st_size > 100
    from harnessrl.records import RecordStore

    eps = RecordStore(store, create=False).episodes()
    assert {e.run_id for e in eps} == {"both"} and len(eps) == 400 + 1  # 400 lookup tasks + fix-add (count-lines: no shell)
    # --tasks names tasks of one suite: refused before anything runs
    r = runner.invoke(app, ["eval", "--policy", "oracle", "--suite", f"lookup,{suite.root}", "--tasks", "0",
                            "--store", str(tmp_path / "st2")])
    assert r.exit_code == 2 and "run one suite at a time" in r.output.replace("\n", " ")
    assert not (tmp_path / "st2").exists() or not RecordStore(str(tmp_path / "st2"), create=False).episodes()
    # a bad second suite is caught before the first one runs
    r = runner.invoke(app, ["eval", "--policy", "oracle", "--suite", "lookup,no-such-suite", "--store", str(tmp_path / "st3")])
    assert r.exit_code == 2 and "no-such-suite" in r.output
    assert not (tmp_path / "st3").exists() or not RecordStore(str(tmp_path / "st3"), create=False).episodes()


@pytest.mark.parametrize("policy", ["oracle", "noop", "explore", "oracle-drop", "oracle-break", "oracle-malformed", "oracle-typo"])
def test_every_scripted_policy_runs_on_the_lookup_suite(tmp_path, policy):
    """Lookup has no `finish` action: its final message is the answer. noop/explore/oracle-drop
    used to crash the command (`lookup cannot express a 'finish' intent`); now they answer
    their final message and score 0, and the oracle still scores 1."""
    out = tmp_path / "out"
    r = runner.invoke(app, ["eval", "--policy", policy, "--suite", "lookup", "--harness", "all", "--tasks", "0,1",
                            "--workers", "1", "--store", str(tmp_path / "st"), "--out", str(out)])
    assert r.exit_code == 0, r.output
    rates = {row["harness_id"]: row["pass@1"] for row in json.loads((out / "summary.json").read_text())["summary"]}
    assert set(rates) == {"lookup-plain", "lookup-kv", "lookup-brief", "lookup-json"}
    if policy in ("noop", "explore", "oracle-drop", "oracle-malformed"):
        assert set(rates.values()) == {0.0}
    if policy == "oracle":
        assert set(rates.values()) == {1.0}


def test_sealed_eval_needs_no_suite(suite, tmp_path):
    """The seal's manifest names its suite: `eval --sealed NAME` runs without --suite."""
    seals, store = str(tmp_path / "seals"), str(tmp_path / "st")
    r = runner.invoke(app, ["seal", "--name", "final", "--suite", str(suite.root), "--tasks", "fix-add", "--seals", seals])
    assert r.exit_code == 0, r.output
    r = runner.invoke(app, ["eval", "--policy", "oracle", "--sealed", "final", "--harness", "aider", "--seals", seals,
                            "--store", store, "--workers", "1"])
    assert r.exit_code == 0 and "sealed evaluation written once" in r.output, r.output
    r = runner.invoke(app, ["eval", "--policy", "oracle", "--store", store])
    assert r.exit_code == 2 and "--suite is empty" in r.output
