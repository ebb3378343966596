"""An eval report's "How to reproduce" is a command that evaluates the same cells again: every option that
changes them (policy options, --tasks, the suite folder, seeds, k), plus the git commit and versions."""

from __future__ import annotations

import csv
import html
import re
import shlex

import pytest

from typer.testing import CliRunner

from harnessrl.cli import app
from harnessrl.report.html import source_commit
from tests import tiny_lm


def _reproduce_command(report: str) -> str:
    section = report[report.index("How to reproduce"):]
    return html.unescape(re.search(r"<pre>(.*?)</pre>", section, re.S).group(1)).strip()


def _cells(path) -> list[dict]:
    return sorted(csv.DictReader(path.open()), key=lambda r: (r["task_id"], r["harness_id"]))


@pytest.mark.slow
def test_the_printed_command_of_an_eval_report_gives_the_same_cells(tmp_path, monkeypatch):
    model = tiny_lm.build(tmp_path / "m")
    monkeypatch.chdir(tmp_path)  # the model and suite are given relative to here: the command prints them absolute
    runner = CliRunner()
    first = ["eval", "--policy", f"lm:{model.relative_to(tmp_path)}", "--policy-option", "temperature=1.0", "--policy-option", "max_new_tokens=6",
             "--suite", "lookup", "--tasks", "3,7,11", "--harness", "lookup-plain,lookup-kv", "--seeds", "3", "--k", "2",
             "--workers", "1", "--store", "s1", "--out", "out1"]
    r = runner.invoke(app, first)
    assert r.exit_code == 0, r.output
    report = (tmp_path / "out1" / "report.html").read_text()
    command = _reproduce_command(report)
    for needle in (f"--policy lm:{model}", "--policy-option temperature=1.0", "--policy-option max_new_tokens=6", "--tasks 3,7,11", "--seeds 3", "--k 1,2"):
        assert needle in command, (needle, command)
    assert f"git commit <code>{source_commit()}</code>" in report and "torch" in report
    args = shlex.split(command)
    assert args[0] == "harnessrl"
    r = runner.invoke(app, [*args[1:], "--workers", "1", "--store", "s2", "--out", "out2"])
    assert r.exit_code == 0, r.output
    cells = _cells(tmp_path / "out1" / "cells.csv")
    assert _cells(tmp_path / "out2" / "cells.csv") == cells
    assert len(cells) == 6 and len({c["solved"] for c in cells} | {c["mean_tokens"] for c in cells}) > 1  # not all alike


def test_a_suite_folder_is_printed_as_an_absolute_path(tmp_path, monkeypatch):
    from harnessrl.commands.eval import reproduce_command

    (tmp_path / "my-suite").mkdir()
    monkeypatch.chdir(tmp_path)
    cmd = reproduce_command("oracle", [], ["my-suite", "code-v1"], "", "all", 1, [1], 1, None, None)
    assert f"--suite {tmp_path / 'my-suite'},code-v1" in cmd
