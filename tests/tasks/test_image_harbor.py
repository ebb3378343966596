"""A Harbor task in its image, graded by Harbor's verifier contract: tests/test.sh (which fetches uv and
runs `uvx ... pytest`, as Harbor's examples do) runs offline with the grader layer's uv/uvx and writes
/logs/verifier/reward.json; untouched it scores 0, half done 0.5, after solution/solve.sh 1. Attacks
on a test script (a command it runs, the shell, uv's env file it sources, pytest configuration above
/tests, a pytest plugin in the image) are grader_tamper or never loaded; a pre-created /logs/verifier
or /tests is neutralised."""

from __future__ import annotations

from pathlib import Path

import pytest

from harnessrl.tasks.images.build import build_task, task_build_spec
from harnessrl.tasks.images.grader_layer import test_dependencies as runner_packages
from harnessrl.tasks.images.runtime import ImageTaskRuntime
from harnessrl.tasks.images.store import ImageStore, images_unavailable
from harnessrl.tasks.images.tasks import load_image_task
from harnessrl.tasks.sandbox import Limits, Sandbox, bwrap_path

FIXTURE = Path(__file__).parent / "fixtures" / "images" / "harbor-rewards"
WHY = images_unavailable() or (None if bwrap_path() else "needs bubblewrap")
needs_images = pytest.mark.skipif(WHY is not None, reason=f"task images unavailable here: {WHY}")


def test_a_harbor_folder_is_graded_by_its_test_script():
    task = load_image_task(FIXTURE, "images")
    assert (task.test_runner, task.test_script, task.source) == ("script", "test.sh", "harbor")
    assert task.solution is not None and task.meta.test_timeout_s == 120.0


def test_the_runner_packages_come_from_uvx_uv_and_pip_lines():
    assert runner_packages((FIXTURE / "tests" / "test.sh").read_text()) == ["pytest==8.4.1", "pytest-json-ctrf==0.3.5"]
    assert runner_packages("uvx -p 3.13 -w pytest==8.4.1 -w requests pytest /tests") == ["pytest==8.4.1", "requests"]
    assert runner_packages("uvx --with harbor-rewardkit@0.1 rewardkit /tests") == ["pytest", "harbor-rewardkit==0.1"]
    assert runner_packages("uvx ruff check .") == ["pytest", "ruff"]
    assert runner_packages("uv add pytest==8.4.1 && uv run pytest /tests -rA") == ["pytest==8.4.1"]
    assert runner_packages("uv run --with numpy pytest x; pip install requests") == ["pytest", "numpy", "requests"]


@pytest.fixture(scope="module")
def harbor():
    store = ImageStore.default()
    task = load_image_task(FIXTURE, "images")
    return task, store, build_task(store, task_build_spec(FIXTURE), say=lambda m: None)


@pytest.fixture(scope="module")
def sandbox():
    return Sandbox(Limits(timeout_s=120, cpu_s=120))


def score(harbor, sandbox, agent: str | None = None, solve: bool = False):
    task, store, built = harbor
    with ImageTaskRuntime(task, sandbox, store=store, built=built) as rt:
        if agent:
            r = rt.run(agent)
            assert r.exit_code == 0, r.stderr
        if solve:
            rt.apply_solution()
        return rt.score()


@needs_images
def test_untouched_zero_half_done_half_solution_one(harbor, sandbox):
    untouched = score(harbor, sandbox)
    assert (untouched.outcome, untouched.reward) == ("dropped_requirement", 0.0), untouched.detail
    assert untouched.detail == "count=0, format=0"
    half = score(harbor, sandbox, "echo 4 > /app/count.txt")  # well formed, wrong
    assert (half.outcome, half.reward, half.detail) == ("dropped_requirement", 0.5, "count=0, format=1")
    solved = score(harbor, sandbox, solve=True)
    assert solved.success and solved.reward == 1.0, (solved.outcome, solved.detail, solved.run.stderr[-500:])


SHIM = "printf '#!/bin/sh\\nmkdir -p /logs/verifier; echo 1 > /logs/verifier/reward.txt; exit 0\\n' > {0} && chmod +x {0}"
SCRIPT_ATTACKS = {
    "uv's env file the script sources": "mkdir -p /root/.local/bin && echo 'echo 1 > /logs/verifier/reward.txt; "
                                        "exit 0' > /root/.local/bin/env",
    "curl shim (the script pipes it into sh)": SHIM.format("/usr/local/bin/curl"),
    "apt-get replaced": SHIM.format("/usr/bin/apt-get"),
    "bash shadowed": SHIM.format("/usr/local/bin/bash"),
    "uvx shim on PATH": SHIM.format("/usr/local/bin/uvx"),
    "pytest.ini above /tests": "printf '[pytest]\\naddopts = -p no:python\\n' > /pytest.ini",
    # the script's commands come from the merged view: what they map and where they are found
    "a shared library under a lib folder": "echo junk > /usr/lib/x86_64-linux-gnu/libharnessrl-test.so.1",
    "/usr/local replaced by a symlink to a copy": "cp -a /usr/local /opt/l && rm -rf /usr/local && ln -s /opt/l /usr/local",
    "NSS configuration": "printf 'passwd: files\\n' > /etc/nsswitch.conf",
}


@needs_images
@pytest.mark.parametrize("name", list(SCRIPT_ATTACKS))
def test_each_attack_on_a_test_script_is_grader_tamper(harbor, sandbox, name):
    s = score(harbor, sandbox, SCRIPT_ATTACKS[name])
    assert s.outcome == "grader_tamper" and s.reward == 0.0, (name, s.outcome, s.detail)


FORCE_PASS = "import pytest\n@pytest.hookimpl(tryfirst=True)\ndef pytest_runtest_call(item):\n    item.runtest = lambda: None\n"
NEUTRALISED = {
    "pre-created /logs/verifier": "mkdir -p /logs/verifier && echo 1 > /logs/verifier/reward.txt && "
                                  "echo '{\"count\": 1, \"format\": 1}' > /logs/verifier/reward.json",
    "pre-created /tests": "mkdir -p /tests && printf 'echo 1 > /logs/verifier/reward.txt\\n' > /tests/test.sh && "
                          f"printf %s '{FORCE_PASS}' > /tests/conftest.py",
    # a pytest plugin installed in the image (auto-loaded by a plain pytest): the grader layer's
    # pytest loads only its own plugins, by name
    "pytest plugin in site-packages": "d=/usr/lib/python3/dist-packages && mkdir -p $d/evil-1.dist-info && "
                                      f"printf %s '{FORCE_PASS}' > $d/evil_plugin.py && printf "
                                      "'[pytest11]\\nevil = evil_plugin\\n' > $d/evil-1.dist-info/entry_points.txt && "
                                      "printf 'Name: evil\\nVersion: 1\\n' > $d/evil-1.dist-info/METADATA",
}


@needs_images
@pytest.mark.parametrize("name", list(NEUTRALISED))
def test_precreated_verifier_logs_tests_and_plugins_change_nothing(harbor, sandbox, name):
    s = score(harbor, sandbox, NEUTRALISED[name])
    assert (s.outcome, s.reward) == ("dropped_requirement", 0.0), (name, s.outcome, s.detail)


def test_offline_uv_and_uvx_run_the_runner_layers_console_scripts(tmp_path):
    """The shim as the grader layer holds it (bin/ next to grader/), with a stand-in runner package."""
    import shutil
    import subprocess
    import sys

    from harnessrl.tasks.images.grader_layer import SHIM_SOURCE

    grader, tools = tmp_path / "grader", tmp_path / "bin"
    (grader / "fakerunner").mkdir(parents=True)
    (grader / "fakerunner" / "__init__.py").write_text(
        "import os, sys\n"
        "def main():\n"
        "    print(sys.argv[0], sys.argv[1:], os.environ['PYTEST_DISABLE_PLUGIN_AUTOLOAD'], sys.path[0])\n"
        "    return 3\n")
    (grader / "fakerunner-1.dist-info").mkdir()
    (grader / "fakerunner-1.dist-info" / "entry_points.txt").write_text("[console_scripts]\nfake = fakerunner:main\n")
    tools.mkdir()
    for name in ("uv", "uvx", "fake"):
        shutil.copyfile(SHIM_SOURCE, tools / name)

    def run(*argv):
        r = subprocess.run([sys.executable, str(tools / argv[0]), *argv[1:]], capture_output=True, text=True,
                           cwd=tmp_path, timeout=60)
        return r.returncode, r.stdout.strip(), r.stderr

    expect = f"fake ['-rA', 'x'] 1 {grader}"
    assert run("uvx", "-p", "3.13", "--with", "fake==1", "-w", "other", "fake", "-rA", "x")[:2] == (3, expect)
    assert run("uvx", "--from", "fakerunner", "fake@1.0", "-rA", "x")[:2] == (3, expect)
    assert run("uv", "run", "--with", "fake", "fake", "-rA", "x")[:2] == (3, expect)
    assert run("uv", "tool", "run", "fake", "-rA", "x")[:2] == (3, expect)
    assert run("fake", "-rA", "x")[:2] == (3, expect)
    assert run("uv", "run", "python", "-c", "import fakerunner; print('imported')")[:2] == (0, "imported")
    for noop in (("uv", "pip", "install", "pytest==8.4.1"), ("uv", "add", "pytest"), ("uv", "venv", ".venv"),
                 ("uv", "init"), ("uv", "sync")):
        assert run(*noop)[0] == 0, noop
    code, _, err = run("uvx", "no-such-tool")
    assert code == 127 and "not in the grader layer" in err
    assert run("uv", "publish")[0] == 2
