"""`harnessrl recipe bipa` end to end (small config) on the built-in coding suite, then
`harnessrl bipa audit` on the run it left, and the CLI's errors."""

import json

import pytest
from typer.testing import CliRunner

from harnessrl.cli import app
from tests.report_checks import assert_report_has_content

pytestmark = pytest.mark.slow
runner = CliRunner()


def test_recipe_writes_report_and_the_run_can_be_audited_again(tmp_path):
    cfg = tmp_path / "small.toml"
    cfg.write_text("train_tasks = 3\ntest_tasks = 2\nworkers = 1\n[audit]\nnull_replays = 1\n[optimizer.proposer]\n"
                   'operators = ["add_section", "rephrase"]\n')
    out = tmp_path / "bipa"
    res = runner.invoke(app, ["recipe", "bipa", "--config", str(cfg), "--out", str(out), "--iterations", "3",
                              "--replays", "2", "--fresh-seeds", "1"])
    assert res.exit_code == 0, res.output
    html = (out / "report.html").read_text()
    assert_report_has_content(html)
    for needle in ("BiPA audit of", "Design principles", "held-out acceptance", "replay-controlled selection",
                   "cost accounting", "read provenance", "Acceptance replay", "data:image/png;base64"):
        assert needle in html, needle
    audit = json.loads((out / "audit" / "audit.json").read_text())
    s = audit["summary"]
    assert s["iterations"] == 3 and s["episodes_missing"] == 0 and s["log_complete"]
    assert s["false_accept_trials"] == 2 * s["accepted"] + (3 - s["accepted"])  # replays=2, null_replays=1 (from the file)
    assert "report:" in res.output and "false-accept rate" in res.output
    assert (out / "audit" / "read_graph.graphml").exists() and (out / "lineage.png").exists()
    # the merged config kept the recipe's section pool although the file set other proposer keys
    header = json.loads((out / "run" / "optimizer_log.jsonl").read_text().splitlines()[0])["data"]
    assert header["config"]["proposer"]["operators"] == ["add_section", "rephrase"]
    assert [row[0] for row in header["config"]["proposer"]["pool"]][0] == "inspect"
    assert header["policy"]["name"] == "probe-section-follower" and header["suite"] == "code-v1"

    again = runner.invoke(app, ["bipa", "audit", str(out / "run"), "--store", str(out / "store"), "--out", str(tmp_path / "a2"),
                                "--replays", "1", "--null-replays", "0", "--fresh-seeds", "1", "--json"])
    assert again.exit_code == 0, again.output
    summary = json.loads(again.output[again.output.index("{"):])
    assert summary["iterations"] == 3 and summary["false_accept_trials"] == s["accepted"]
    assert (tmp_path / "a2" / "report.html").exists()


def test_cli_errors_are_clear(tmp_path):
    res = runner.invoke(app, ["bipa", "audit", str(tmp_path / "nothing")])
    assert res.exit_code == 2 and "no optimizer log" in res.output
    res = runner.invoke(app, ["recipe", "bipa", "--out", str(tmp_path / "x"), "--rule", "best_guess"])
    assert res.exit_code == 2 and "rule" in res.output
