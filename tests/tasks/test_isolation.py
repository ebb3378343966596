"""tasks check and the audit say which tasks' grading leaves the agent's code within the verdict's reach."""

from __future__ import annotations

import dataclasses

from typer.testing import CliRunner

from harnessrl.cli import app
from harnessrl.rollout.suites import load_suite
from harnessrl.tasks.isolation import grading_isolation

from .test_scoring import make_task


def test_builtin_suites_are_all_bridged():
    for name in ("code-v1", "code-v2", "terminal-v1"):
        levels = {t.name: grading_isolation(t).level for t in load_suite(name)}
        assert set(levels.values()) == {"bridged"}, {k: v for k, v in levels.items() if v != "bridged"}


def test_a_test_that_runs_agent_files_itself_is_partial(tmp_path):
    req = "import runpy\n\n\ndef test_sub():\n    ns = runpy.run_path('/app/calc.py')\n    assert ns['sub'](5, 3) == 2\n"
    iso = grading_isolation(make_task(tmp_path, req=req))
    assert iso.level == "partial" and "test_sub.py:5 runpy.run_path" in iso.why, iso
    req = "import pickle\n\n\ndef test_sub():\n    assert pickle.loads(open('/app/out.pkl', 'rb').read()) == 2\n"
    assert grading_isolation(make_task(tmp_path / "p", req=req)).level == "partial"


def test_a_script_task_whose_pytest_imports_agent_code_is_not_isolated(tmp_path):
    task = make_task(tmp_path, req="import pandas\nfrom calc import sub\n\n\ndef test_sub():\n    assert sub(5, 3) == 2\n")
    (task.tests_dir / "test.sh").write_text("#!/bin/bash\npytest /tests -q && echo 1 > /logs/verifier/reward.txt\n")
    iso = grading_isolation(dataclasses.replace(task, test_runner="script", test_script="test.sh"))
    assert iso.level == "script" and "not isolated" in iso.why and "calc" in iso.why and "pandas" in iso.why, iso


def test_tasks_check_prints_the_grading_column(tmp_path):
    task = make_task(tmp_path, req="import runpy\n\n\ndef test_sub():\n    runpy.run_path('/app/calc.py')\n")
    out = CliRunner().invoke(app, ["tasks", "check", str(task.root)], env={"COLUMNS": "200"})
    assert out.exit_code == 0, out.output
    assert "partial" in out.output and "grading" in out.output and "1 task(s) graded" in out.output, out.output


def test_tasks_check_for_images_prints_no_markup_literally():
    """The image table's status cell was printed as `[green]built[/]` (the console has markup off)."""
    from pathlib import Path

    folder = Path(__file__).parent / "fixtures" / "images" / "constructs"
    out = CliRunner().invoke(app, ["tasks", "check", "--runtime", "image", str(folder)], env={"COLUMNS": "200"})
    assert out.exit_code == 0, out.output
    assert "constructs" in out.output and "[/]" not in out.output and "[green]" not in out.output, out.output
