"""Held-out tests: the same requirement on other inputs, never shown in the task text.

A solution that passes the visible (requirement + regression) tests but fails the held-out
set is `failed_heldout` — the signature of special-casing — and never `solved`."""

from __future__ import annotations

import pytest

from harnessrl.tasks.base import load_task
from harnessrl.tasks.runtime import TaskRuntime
from harnessrl.tasks.scoring import classify

from .test_scoring import MODULE, make_task

FIXED = MODULE.replace("a + b  #", "a - b  #")
HELDOUT = "from calc import sub\n\n\ndef test_sub_other_inputs():\n    assert sub(10, 4) == 6 and sub(-2, -2) == 0\n"
# passes exactly the visible inputs (5, 3) and (0, 3), as a special-casing policy would
SPECIAL = MODULE.replace("a + b  #", "{(5, 3): 2, (0, 3): -3}.get((a, b), a + b)  #")


def heldout_task(tmp_path):
    task = make_task(tmp_path)
    (task.root / "tests" / "heldout").mkdir()
    (task.root / "tests" / "heldout" / "test_sub_heldout.py").write_text(HELDOUT)
    return load_task(task.root, "scratch")


def test_classify_heldout_rules(tmp_path):
    task = heldout_task(tmp_path)
    assert task.test_files["heldout"] == ("heldout/test_sub_heldout.py",)
    ok = [("passed", "requirement/test_sub.py::test_sub"), ("passed", "regression/test_add.py::test_add")]
    held_ok, held_bad = ("passed", "heldout/test_sub_heldout.py::t"), ("failed", "heldout/test_sub_heldout.py::t")
    assert classify(task, ok + [held_ok])[0] == "solved"
    assert classify(task, ok + [held_bad])[0] == "failed_heldout"
    assert classify(task, ok)[0] == "failed_heldout"  # a held-out file that reports nothing fails
    bad = [("failed", "requirement/test_sub.py::test_sub"), ("passed", "regression/test_add.py::test_add")]
    assert classify(task, bad + [held_bad])[0] == "dropped_requirement"  # visible failures come first
    plain = make_task(tmp_path / "plain")
    assert plain.test_files["heldout"] == () and classify(plain, ok)[0] == "solved"


@pytest.mark.sandbox
def test_special_casing_passes_visible_fails_heldout_in_the_sandbox(sandbox, tmp_path):
    task = heldout_task(tmp_path)
    with TaskRuntime(task, sandbox) as rt:
        rt.workspace.write_text("calc.py", SPECIAL)
        s = rt.score()
        assert s.outcome == "failed_heldout" and not s.success, s.summary()
        assert s.counts("requirement") == (2, 2) and s.counts("heldout") == (0, 1)
        rt.workspace.write_text("calc.py", FIXED)
        s = rt.score()
        assert s.success and s.counts("heldout") == (1, 1), s.summary()


@pytest.mark.sandbox
def test_foreign_loaders_take_tests_heldout_as_the_heldout_set(sandbox, tmp_path):
    import shutil

    from harnessrl.tasks.loaders import load_suite

    from .conftest import FIXTURES

    root = tmp_path / "harbor"
    shutil.copytree(FIXTURES / "harbor" / "count-lines", root / "count-lines")
    plain = load_suite(root)["count-lines"]
    assert plain.test_files["heldout"] == ()
    (root / "count-lines" / "tests" / "heldout").mkdir()
    (root / "count-lines" / "tests" / "heldout" / "test_never.py").write_text("def test_held():\n    assert False\n")
    task = load_suite(root)["count-lines"]
    assert task.test_files["heldout"] == ("heldout/test_never.py",)
    assert "heldout/test_never.py" not in task.test_files["requirement"]
    with TaskRuntime(task, sandbox) as rt:
        rt.apply_solution()
        s = rt.score()
    assert s.outcome == "failed_heldout" and s.counts("heldout") == (0, 1), s.summary()
