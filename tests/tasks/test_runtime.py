"""TaskRuntime as harnesses use it, and the solution helpers oracles replay through each syntax."""

from __future__ import annotations

import time

import pytest

from harnessrl.tasks.base import Replace, Solution, WriteFile
from harnessrl.tasks.loaders import load_suite


def test_replace_line_span_and_final_files():
    text = "a\nb\nc\nd\n"
    assert Replace("f", "b\nc\n", "B\n").line_span(text) == (2, 3)
    assert Replace("f", "a\n", "A\n").line_span(text) == (1, 1)
    with pytest.raises(ValueError):
        Replace("f", "zz\n", "").line_span(text)
    sol = Solution((Replace("f", "b\nc\n", "B\n"), WriteFile("g", "new\n"), Replace("f", "d\n", "D\n")))
    assert sol.final_files({"f": text}) == {"f": "a\nB\nD\n", "g": "new\n"}
    with pytest.raises(ValueError):
        Solution((Replace("f", "a", "x"),)).final_files({"f": "a a"})  # ambiguous


@pytest.mark.sandbox
def test_edit_steps_through_the_workspace_solve_a_code_task(sandbox):
    from harnessrl.tasks.runtime import TaskRuntime

    task = load_suite("code-v1")["fix-merge-intervals"]
    with TaskRuntime(task, sandbox) as rt:
        assert rt.instruction.startswith("`intervals.merge")
        assert rt.workspace.files() == ["intervals.py"]
        for step in task.solution.steps:  # what a str_replace-style oracle does, one call per step
            assert rt.workspace.str_replace(step.path, step.old, step.new) == 1
        assert rt.run("python -c 'import intervals; print(intervals.merge([(3, 4), (1, 3)]))'").stdout == "[(1, 4)]\n"
        assert rt.score().success


@pytest.mark.sandbox
def test_a_terminal_task_solved_by_typing_into_tmux(sandbox):
    from harnessrl.tasks.runtime import TaskRuntime

    task = load_suite("terminal-v1")["count-errors-by-component"]
    with TaskRuntime(task, sandbox) as rt:
        term = rt.terminal()
        keys = f"cat > /tmp/solve.sh <<'HARNESSRL_EOF'\n{task.solution.script}HARNESSRL_EOF\nbash /tmp/solve.sh; echo DONE-$?\n"
        term.send_keys(keys, literal=True)
        deadline = time.monotonic() + 20
        while "DONE-0" not in term.capture(history=True) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert "DONE-0" in term.capture(history=True)
        score = rt.score()  # closes the terminal first
        assert not term.alive
    assert score.success, score.summary()


def _one_off_report_task(root):
    """count-errors-by-component as it was before it became a program task: a solution that
    only writes a report, the effect an edit-only harness can replay as file writes."""
    import shutil

    from harnessrl.tasks.base import BUILTIN_DIR

    (root / "suite.toml").write_text('[suite]\nname = "one-off"\nversion = "1"\n\n[defaults]\nkind = "terminal"\n')
    task = root / "error-report"
    shutil.copytree(BUILTIN_DIR / "terminal-v1" / "count-errors-by-component", task,
                    ignore=shutil.ignore_patterns("heldout", "requirement", "solution"))
    (task / "solution").mkdir()
    (task / "solution" / "solve.sh").write_text(
        "#!/bin/bash\nset -euo pipefail\ncd /app\nawk '$3 == \"ERROR\" {print $4}' logs/app.log | sort | uniq -c"
        " | sort -k1,1nr -k2,2 | awk '{print $2, $1}' > error_counts.txt\n")
    (task / "tests" / "requirement").mkdir()
    (task / "tests" / "requirement" / "test_req_report.py").write_text(
        "from pathlib import Path\n\n\ndef test_report():\n"
        "    assert Path('/app/error_counts.txt').read_text().split() == "
        "['db', '3', 'auth', '2', 'api', '1', 'cache', '1']\n")
    return load_suite(root)["error-report"]


@pytest.mark.sandbox
def test_file_only_solutions_for_edit_only_harnesses(sandbox, tmp_path):
    from harnessrl.tasks.runtime import TaskRuntime, file_only_solution

    report = _one_off_report_task(tmp_path)
    writes = file_only_solution(report, sandbox)
    assert [w.path for w in writes] == ["error_counts.txt"]
    with TaskRuntime(report, sandbox) as rt:
        for w in writes:
            rt.workspace.write_text(w.path, w.content)
        assert rt.score().success  # replayed as plain file writes, no shell
    suite = load_suite("terminal-v1")
    assert file_only_solution(suite["git-amend-message"], sandbox) is None  # rewrites .git
    assert file_only_solution(suite["fix-script-permissions"], sandbox) is None  # chmod (and a new executable)
    assert file_only_solution(suite["backup-script"], sandbox) is None  # a new executable
    assert file_only_solution(suite["count-errors-by-component"], sandbox) is None  # a new executable and its report
