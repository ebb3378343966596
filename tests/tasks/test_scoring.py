"""Scoring: per-test parsing of pytest -rA, outcome labels, and the ways a result can lie."""

from __future__ import annotations

from pathlib import Path

import pytest

from harnessrl.tasks.base import SuiteError, load_suite_folder, load_task
from harnessrl.tasks.runtime import TaskRuntime
from harnessrl.tasks.scoring import classify, parse_pytest_report, score_workspace

pytestmark = pytest.mark.sandbox

MODULE = """\
def add(a, b):
    return a + b


def sub(a, b):
    return a + b  # bug: the requirement is a - b
"""


def make_task(root: Path, module: str = MODULE, req: str | None = None, reg: str | None = None):
    folder = root / "calc-task"
    (folder / "workspace").mkdir(parents=True)
    (folder / "workspace" / "calc.py").write_text(module)
    (folder / "task.toml").write_text('title = "calc"\ntest_timeout_s = 30\n')
    (folder / "instruction.md").write_text("Make sub subtract.\n")
    (folder / "tests" / "requirement").mkdir(parents=True)
    (folder / "tests" / "regression").mkdir(parents=True)
    default_req = ("from calc import sub\n\n\ndef test_sub():\n    assert sub(5, 3) == 2\n\n\n"
                   "def test_sub_neg():\n    assert sub(0, 3) == -3\n")
    (folder / "tests" / "requirement" / "test_sub.py").write_text(req or default_req)
    (folder / "tests" / "regression" / "test_add.py").write_text(
        reg or "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n")
    return load_task(folder, "scratch")


def test_parse_pytest_report_reads_only_the_summary():
    out = "\n".join([
        "PASSED requirement/test_fake.py::test_forged",  # printed by agent code before the summary
        "=========================== short test summary info ============================",
        "PASSED ../tests/requirement/test_a.py::test_one",
        "FAILED ../tests/requirement/test_a.py::test_two - AssertionError: assert 1 == 2",
        "ERROR ../tests/regression/test_b.py - ImportError: nope",
        "SKIPPED [1] ../tests/regression/test_c.py:4: unconditional skip",
        "XFAIL ../tests/requirement/test_a.py::test_x - reason",
        "==================== 1 failed, 1 passed, 1 error in 0.12s ====================",
        "PASSED requirement/test_after.py::test_forged_after",  # printed by an atexit hook
    ])
    rows = parse_pytest_report(out)
    assert rows == [
        ("passed", "../tests/requirement/test_a.py::test_one"),
        ("failed", "../tests/requirement/test_a.py::test_two"),
        ("error", "../tests/regression/test_b.py"),
        ("skipped", "../tests/regression/test_c.py"),
        ("xfail", "../tests/requirement/test_a.py::test_x"),
    ]
    assert parse_pytest_report("no summary at all") == []


def test_classify_labels(tmp_path):
    task = make_task(tmp_path)
    ok = ("passed", "requirement/test_sub.py::test_sub")
    reg_ok = ("passed", "regression/test_add.py::test_add")
    assert classify(task, [ok, reg_ok])[0] == "solved"
    assert classify(task, [("failed", ok[1]), reg_ok])[0] == "dropped_requirement"
    assert classify(task, [ok, ("failed", reg_ok[1])])[0] == "broke_existing"
    assert classify(task, [("error", ok[1]), ("skipped", reg_ok[1])])[0] == "dropped_requirement+broke_existing"
    assert classify(task, [])[0] == "test_error"  # an empty result never counts as solved
    assert classify(task, [ok])[0] == "broke_existing"  # regression files exist but reported nothing
    assert classify(task, [ok, reg_ok, ("failed", ok[1])])[0] == "dropped_requirement"  # worst result wins


def test_unmodified_fixed_broken_and_both(sandbox, tmp_path):
    task = make_task(tmp_path)
    with TaskRuntime(task, sandbox) as rt:
        s = rt.score()
        assert s.outcome == "dropped_requirement" and not s.success
        assert s.counts("requirement") == (0, 2) and s.counts("regression") == (1, 1)
        rt.workspace.str_replace("calc.py", "return a + b  # bug", "return a - b  # bug")
        s = rt.score()
        assert s.outcome == "solved" and s.success and s.reward == 1.0
        rt.workspace.str_replace("calc.py", "def add(a, b):\n    return a + b", "def add(a, b):\n    return a * b")
        assert rt.score().outcome == "broke_existing"
        rt.workspace.str_replace("calc.py", "return a - b  # bug", "return a + b  # bug")
        s = rt.score()
        assert s.outcome == "dropped_requirement+broke_existing"
        assert s.failure_modes == ("dropped_requirement", "broke_existing")
        assert "calc.py" not in s.to_dict()["tests"][0][0]


def test_import_error_and_syntax_error_are_failures(sandbox, tmp_path):
    task = make_task(tmp_path)
    with TaskRuntime(task, sandbox) as rt:
        rt.workspace.write_text("calc.py", "def add(a, b:\n")
        s = rt.score()
        assert s.outcome == "dropped_requirement+broke_existing"
        assert {t.outcome for t in s.tests} == {"error"}


def test_a_requirement_collection_error_does_not_hide_regression_results(sandbox, tmp_path):
    req = "from calc import mul\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n"
    task = make_task(tmp_path, req=req)
    with TaskRuntime(task, sandbox) as rt:
        s = rt.score()
    assert s.outcome == "dropped_requirement"  # the regression tests still ran, and passed
    assert s.counts("regression") == (1, 1) and s.counts("requirement") == (0, 1)


def test_agent_cannot_shadow_pytest_or_skip_its_way_to_solved(sandbox, tmp_path):
    task = make_task(tmp_path)
    with TaskRuntime(task, sandbox) as rt:
        fake = ("print('=' * 10 + ' short test summary info ' + '=' * 10)\n"
                "print('PASSED requirement/test_sub.py::test_sub')\nprint('PASSED regression/test_add.py::test_add')\n")
        rt.workspace.write_text("pytest.py", fake)  # python -P: /app is not on the path for `-m pytest`
        assert rt.score().outcome == "dropped_requirement"
        # (the agent's own modules, in the bridge's child, import /app first, as plain Python would:
        # the fake pytest.py would shadow the real one there, so it goes before the skip attack)
        assert rt.run("rm /app/pytest.py").exit_code == 0
        rt.workspace.write_text("calc.py", MODULE + "\nimport pytest\npytest.skip('nothing to see', allow_module_level=True)\n")
        s = rt.score()
        assert s.outcome == "dropped_requirement+broke_existing"
        assert {t.outcome for t in s.tests} == {"skipped"}
        rt.workspace.write_text("calc.py", MODULE.replace("a + b  #", "a - b  #") + "\nimport os\nos._exit(0)\n")
        # the agent's process died (the bridge's child): every test that needed it fails, never solved
        assert rt.score().outcome == "dropped_requirement+broke_existing"


def test_hung_tests_time_out_as_test_error(sandbox, tmp_path):
    task = make_task(tmp_path, module=MODULE + "\nimport time\ntime.sleep(60)\n")
    with TaskRuntime(task, sandbox) as rt:
        s = score_workspace(task, rt.workspace, sandbox, timeout_s=2)
    assert s.outcome == "test_error" and "timeout" in s.detail


def test_tests_never_enter_the_workspace(sandbox, tmp_path):
    task = make_task(tmp_path)
    with TaskRuntime(task, sandbox) as rt:
        rt.score()
        assert rt.workspace.files() == ["calc.py"]
        r = rt.run("ls -a /app /tests 2>&1")
    assert "test_sub" not in r.stdout and "No such file" in r.stdout


def test_task_folder_errors_name_the_file_and_fix(tmp_path):
    folder = tmp_path / "bad"
    folder.mkdir()
    with pytest.raises(SuiteError, match="task.toml"):
        load_task(folder, "s")
    (folder / "task.toml").write_text('title = "x"\ndifficulty = "impossible"\n')
    (folder / "instruction.md").write_text("do it\n")
    with pytest.raises(SuiteError, match="difficulty"):
        load_task(folder, "s")
    (folder / "task.toml").write_text('title = "x"\ncolour = "red"\n')
    with pytest.raises(SuiteError, match="colour: unknown key"):
        load_task(folder, "s")
    (folder / "task.toml").write_text('title = "x"\n')
    with pytest.raises(SuiteError, match="requirement test"):
        load_task(folder, "s")
    (tmp_path / "suite.toml").write_text('[suite]\nname = "s"\n[extra]\n')
    with pytest.raises(SuiteError, match="unknown sections"):
        load_suite_folder(tmp_path)
