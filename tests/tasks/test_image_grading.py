"""Grading in a task image: fails untouched, passes after the reference solution, and every attack on
the grader through the image (preload, start-up hooks, shims, stdlib, runner layer) is grader_tamper;
a pre-created /tests, /logs/verifier or a stray conftest.py is neutralised (the verdict is unchanged)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harnessrl.tasks.base import Task
from harnessrl.tasks.images.build import build_task, task_build_spec
from harnessrl.tasks.images.grading import grade_in_image, scan_upper
from harnessrl.tasks.images.rootfs import EpisodeRoot
from harnessrl.tasks.images.store import ImageStore, images_unavailable
from harnessrl.tasks.sandbox import Limits, Sandbox, bwrap_path
from harnessrl.tasks.workspace import Workspace

FIXTURE = Path(__file__).parent / "fixtures" / "images" / "constructs"
WHY = images_unavailable() or (None if bwrap_path() else "needs bubblewrap")
pytestmark = pytest.mark.skipif(WHY is not None, reason=f"task images unavailable here: {WHY}")
TASK = Task(id="images/constructs", name="constructs", suite="images", instruction="count lines\n", root=FIXTURE,
            workspace_dir=None, tests_dir=FIXTURE / "tests",
            test_files={"requirement": ("test_outputs.py",), "regression": (), "heldout": ()}, solution=None)
SOLVE = (FIXTURE / "solution.sh").read_text()


@pytest.fixture(scope="module")
def built():
    store = ImageStore.default()
    return store, build_task(store, task_build_spec(FIXTURE), say=lambda m: None)


@pytest.fixture(scope="module")
def sandbox():
    return Sandbox(Limits(timeout_s=60, cpu_s=60))


def episode(built, sandbox, script: str | None):
    """Run `script` as the agent in a fresh episode, then grade it."""
    store, b = built
    with Workspace.create(None, quota_mb=64) as ws:
        root = EpisodeRoot.create(store, b.image, ws)
        sandbox.attach_image(ws, root)
        if script:
            run = sandbox.run(script, ws, cwd=root.workdir)
            assert run.exit_code == 0, run.stderr
        return grade_in_image(TASK, store, b, ws, root, sandbox, timeout_s=60)


def test_fails_untouched_and_passes_after_the_reference_solution(built, sandbox):
    untouched = episode(built, sandbox, None)
    assert untouched.status == "graded" and not untouched.solved, untouched.why
    assert untouched.report["results"] == [("failed", "test_outputs.py::test_count")]
    solved = episode(built, sandbox, SOLVE)
    assert solved.status == "graded" and solved.solved, solved.why


ATTACKS = {
    "ld.so.preload": "echo /tmp/evil.so > /etc/ld.so.preload",
    "sitecustomize": "echo 'import sys' > /usr/lib/python3/dist-packages/sitecustomize.py",
    ".pth": "mkdir -p /usr/local/lib/python3.13/dist-packages && echo 'import os' > /usr/local/lib/python3.13/dist-packages/zz.pth",
    "usercustomize (user site)": "mkdir -p /root/.local/lib/python3.13/site-packages && echo 'import os' > "
                                 "/root/.local/lib/python3.13/site-packages/usercustomize.py",
    "python3 shim": "printf '#!/bin/sh\\nexit 0\\n' > /usr/local/bin/python3 && chmod +x /usr/local/bin/python3",
    "pytest shim": "printf '#!/bin/sh\\nexit 0\\n' > /usr/local/bin/pytest && chmod +x /usr/local/bin/pytest",
    "stdlib edit": "echo 'PASS = 1' >> /usr/lib/python3.13/json/__init__.py",
    "stdlib deletion (a whiteout)": "rm /usr/lib/python3.13/json/decoder.py",
    "runner layer": "mkdir -p /opt/harnessrl/grader && echo 'raise SystemExit(0)' > /opt/harnessrl/grader/pytest.py",
}


@pytest.mark.parametrize("name", list(ATTACKS))
def test_each_attack_on_the_grader_is_grader_tamper(built, sandbox, name):
    verdict = episode(built, sandbox, ATTACKS[name])
    assert verdict.status == "grader_tamper", (name, verdict.status, verdict.why)
    assert verdict.report is None and verdict.tamper


FORCE_PASS = "import pytest\n@pytest.hookimpl(tryfirst=True)\ndef pytest_runtest_call(item):\n    item.runtest = lambda: None\n"


@pytest.mark.parametrize("where", ["/tests/conftest.py", "/conftest.py", "/app/conftest.py", "/logs/verifier/reward.txt"])
def test_precreated_tests_conftest_and_verifier_are_neutralised(built, sandbox, where):
    body = "1" if where.endswith("reward.txt") else FORCE_PASS
    script = f"mkdir -p {Path(where).parent} && printf %s '{body}' > {where}" + (
        " && printf '[pytest]\\naddopts = -p no:python\\n' > /tests/pytest.ini" if where.startswith("/tests") else "")
    verdict = episode(built, sandbox, script)
    assert verdict.status == "graded" and not verdict.solved, (verdict.status, verdict.why)
    if where != "/app/conftest.py":  # under /app: outside --confcutdir, neither reported nor read
        assert verdict.neutralised


def test_scan_names_the_path_and_its_rule(tmp_path):
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "ld.so.preload").write_text("")
    assert scan_upper(tmp_path)[0] == [("/etc/ld.so.preload", "dynamic loader preload or search path")]
