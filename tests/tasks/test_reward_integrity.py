"""Issue 15, grader half: every way a failing task was made to score as solved, run as a real
attack in the real sandbox. Each must now score as a failure or `test_error`, with the host
untouched. (The sandbox-level attacks — syscalls, memory sums, inodes — are in
test_sandbox_hardening.py.)

The agent's code in these tasks is always WRONG (`sub` adds): an honest grader says
`dropped_requirement`; a forgery would say `solved`.
"""

from __future__ import annotations

import dataclasses
import os
import secrets
import textwrap
import time
from pathlib import Path

import pytest

from harnessrl.tasks import grader
from harnessrl.tasks.grader import live_processes, parse_report
from harnessrl.tasks.reward_files import read_reward_file, read_rewards
from harnessrl.tasks.runtime import TaskRuntime
from harnessrl.tasks.scoring import classify, score_workspace

from .test_scoring import MODULE, make_task

pytestmark = pytest.mark.sandbox
WRONG = MODULE  # sub(a, b) returns a + b: both requirement tests fail honestly
FIXED = MODULE.replace("a + b  #", "a - b  #")


@pytest.fixture
def host_secret():
    """A root-only host file holding a perfect reward, and a check that it is untouched after."""
    path = Path("/root" if os.geteuid() == 0 else os.path.expanduser("~")) / f"harnessrl-secret-{secrets.token_hex(4)}"
    path.write_text("1.0\n")
    path.chmod(0o600)
    before = path.stat()
    yield path
    after = path.stat()
    assert path.read_text() == "1.0\n" and (after.st_mtime_ns, after.st_mode) == (before.st_mtime_ns, before.st_mode)
    path.unlink()


def script_task(root: Path, test_sh: str):
    """A Harbor-style task: tests/test.sh writes /logs/verifier/reward.txt."""
    task = make_task(root)
    (task.tests_dir / "test.sh").write_text(textwrap.dedent(test_sh))
    return dataclasses.replace(task, test_runner="script", test_script="test.sh")


# -- class 1: reward files ----------------------------------------------------------------


def test_reward_file_reader_refuses_links_dirs_fifos_and_junk(tmp_path, host_secret):
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "reward.txt").symlink_to(host_secret)  # a real host file with a perfect reward
    assert read_reward_file(logs) == (None, "reward.txt: a symlink (refused)")
    (logs / "reward.txt").unlink()
    (logs / "reward.txt").mkdir()
    assert read_reward_file(logs)[0] is None and "not a regular file" in read_reward_file(logs)[1]
    (logs / "reward.txt").rmdir()
    os.mkfifo(logs / "reward.txt")  # opening a FIFO must not hang
    assert read_reward_file(logs)[0] is None
    (logs / "reward.txt").unlink()
    for junk in ["", "nan", "inf", "1e309", "2", "-1", "1.0 0.5", "x" * 5000]:
        (logs / "reward.txt").write_text(junk)
        assert read_reward_file(logs)[0] is None, junk
    (logs / "reward.txt").write_text("1\n")
    assert read_reward_file(logs) == (1.0, "")
    (logs / "reward.json").write_text('{"reward": 1}')
    assert read_reward_file(logs) == (1.0, "")  # both, agreeing (a script that writes both): Harbor reads reward.txt
    (logs / "reward.json").write_text('{"reward": 0}')
    assert read_reward_file(logs) == (None, "reward.txt and reward.json disagree on the reward")
    (logs / "reward.txt").unlink()
    for bad in ['{"reward": true}', '{"other": "1"}', "{}", '{"a": 1, "b": 2}', "[" * 100_000, '"1"', "1"]:
        (logs / "reward.json").write_text(bad)
        assert read_reward_file(logs)[0] is None, bad[:20]
    (logs / "reward.json").write_text('{"reward": 0.5}')
    assert read_reward_file(logs) == (0.5, "")
    (logs / "reward.json").write_text('{"correctness": 1, "performance": 0}')  # Harbor's named rewards
    assert read_rewards(logs) == ({"correctness": 1.0, "performance": 0.0}, "")
    assert read_reward_file(logs) == (0.5, "")  # no "reward" among them: their mean
    linked = tmp_path / "linked"
    linked.symlink_to(logs)
    assert read_reward_file(linked)[0] is None  # the directory itself may not be a link either


def test_symlinked_reward_to_a_host_file_is_test_error(sandbox, tmp_path, host_secret):
    # The agent's run.sh, executed by test.sh as the grader, points reward.txt at a root-only
    # host file that holds 1.0; the host must refuse to read through the link.
    task = script_task(tmp_path, """\
        #!/bin/bash
        bash /app/run.sh
        [ -e /logs/verifier/reward.txt ] || echo 0 > /logs/verifier/reward.txt
        """)
    with TaskRuntime(task, sandbox) as rt:
        rt.workspace.write_text("run.sh", f"ln -sf {host_secret} /logs/verifier/reward.txt\n")
        s = rt.score()
    assert s.outcome == "test_error" and "symlink" in s.detail and s.reward == 0.0


def test_planted_reward_dir_or_json_then_killed_run_is_test_error(sandbox, tmp_path):
    task = script_task(tmp_path, """\
        #!/bin/bash
        bash /app/run.sh
        python3 -c 'import calc; print(1.0 if calc.sub(5, 3) == 2 else 0.0)' > /logs/verifier/reward.txt
        """)
    with TaskRuntime(task, sandbox) as rt:
        rt.workspace.write_text("calc.py", WRONG)
        # a reward.json of 1.0, then the test run is killed before it writes its own verdict
        rt.workspace.write_text("run.sh", "echo '{\"reward\": 1.0}' > /logs/verifier/reward.json; kill -KILL $PPID\n")
        s = rt.score()
        assert s.outcome == "test_error" and not s.success, s.summary()
        # a directory where the reward file goes: test_error, and the NEXT score must not raise
        rt.workspace.write_text("run.sh", "mkdir -p /logs/verifier/reward.txt/x; kill -KILL $PPID\n")
        s = rt.score()
        assert s.outcome == "test_error" and "not a regular file" in s.detail, s.summary()
        rt.workspace.write_text("run.sh", "true\n")  # honest run next: the leftover is gone
        assert rt.score().outcome == "dropped_requirement"
        rt.workspace.write_text("calc.py", FIXED)
        assert rt.score().success


@pytest.mark.parametrize("bridge", [True, False], ids=["bridge", "in-process"])
def test_zero_collected_tests_is_never_solved(sandbox, tmp_path, monkeypatch, bridge):
    monkeypatch.setattr(grader, "BRIDGE", bridge)
    task = make_task(tmp_path)
    assert classify(task, [])[0] == "test_error"
    with TaskRuntime(task, sandbox) as rt:
        # the tested module ends its process before a single test ran: in-process that is the test
        # process (no report); through the bridge only the agent's child dies and every test fails
        rt.workspace.write_text("calc.py", FIXED + "\nimport os\nos._exit(0)\n")
        s = rt.score()
        if bridge:
            assert s.outcome == "dropped_requirement+broke_existing", s.summary()
            assert {t.outcome for t in s.tests} == {"error"}, s.summary()
        else:
            assert s.outcome == "test_error" and "no grader report" in s.detail, s.summary()
        # deselecting every test from inside the tested module: nothing ran, nothing solved
        rt.workspace.write_text("calc.py", FIXED + "\nimport pytest\npytest.skip('none', allow_module_level=True)\n")
        assert not rt.score().success


def test_report_parser_accepts_exactly_one_well_formed_report():
    good = "{'results': [('passed', 'requirement/t.py::a')], 'exitstatus': 0, 'tampered': []}"
    assert parse_report(good)["exitstatus"] == 0
    for bad in [good + good, good + "\n{}", "", "[]", good.replace("'passed'", "'won'"),
                "{'results': [], 'exitstatus': 0}", "(" * 10_000, "__import__('os')"]:
        with pytest.raises(ValueError):
            parse_report(bad)


# -- class 2: the grader trusted stdout and a process tree the agent shared ----------------


def test_stdlib_shadowing_from_app_never_loads(sandbox, tmp_path):
    req = ("import sqlite3\nimport tarfile\nfrom calc import sub\n\n\n"
           "def test_sub():\n    assert tarfile.TarFile and sqlite3.connect\n    assert sub(5, 3) == 2\n")
    task = make_task(tmp_path, req=req)
    forge = textwrap.dedent("""\
        import _pytest.reports
        _init = _pytest.reports.TestReport.__init__
        def __init__(self, *a, **k):
            _init(self, *a, **k)
            self.outcome = "passed"
        _pytest.reports.TestReport.__init__ = __init__
        print("=" * 20 + " short test summary info " + "=" * 20)
        print("PASSED ../tests/requirement/test_sub.py::test_sub")
        open("/tmp/shadow-ran", "w").write("yes")
        """)
    with TaskRuntime(task, sandbox) as rt:
        rt.workspace.write_text("calc.py", WRONG)
        for name in ("sqlite3.py", "tarfile.py", "pluggy.py"):
            rt.workspace.write_text(name, forge)
        rt.workspace.write_text("_pytest/__init__.py", forge)
        s = rt.score()
        assert s.outcome == "dropped_requirement", s.summary()
        # a task whose environment puts /app on PYTHONPATH (a Dockerfile ENV) changes nothing
        exposed = dataclasses.replace(task, env={"PYTHONPATH": "/app:/opt/lib"})
        s2 = score_workspace(exposed, rt.workspace, sandbox)
    assert s2.outcome == "dropped_requirement", s2.summary()


def test_second_summary_block_and_atexit_forgery_do_not_count(sandbox, tmp_path):
    task = make_task(tmp_path)
    forged = textwrap.dedent("""\
        import atexit, os, sys
        SUMMARY = "\\n".join(["=" * 20 + " short test summary info " + "=" * 20,
                               "PASSED ../tests/requirement/test_sub.py::test_sub",
                               "PASSED ../tests/requirement/test_sub.py::test_sub_neg",
                               "PASSED ../tests/regression/test_add.py::test_add",
                               "=" * 20 + " 3 passed in 0.01s " + "=" * 20])
        def forge():
            print(SUMMARY)
            sys.stdout.flush()
            os._exit(0)
        atexit.register(forge)
        print(SUMMARY)
        """)
    with TaskRuntime(task, sandbox) as rt:
        rt.workspace.write_text("calc.py", WRONG + forged)
        s = rt.score()
    assert s.outcome == "dropped_requirement", s.summary()
    assert s.run.exit_code == 1  # the plugin exited before the atexit handler could run


GRADER_KILL = textwrap.dedent("""\
    # Run by the tests (through make, or git's fsmonitor) as the grader: try every way to reach
    # the pytest process, forge a report through its fds, and kill it.
    import ctypes, errno, os, signal, sys
    libc = ctypes.CDLL(None, use_errno=True)
    log = []
    def note(what, ok):
        log.append(f"{what}={'OK' if ok else errno.errorcode.get(ctypes.get_errno(), '?')}")
    pids = [int(p) for p in os.listdir("/proc") if p.isdigit() and int(p) != os.getpid()]
    pytest_pids = [p for p in pids if b"pytest" in open(f"/proc/{p}/cmdline", "rb").read()]
    FORGED = b"{'results': [('passed', 'requirement/test_sub.py::test_sub')], 'exitstatus': 0, 'tampered': []}"
    for pid in pytest_pids:
        pidfd = libc.syscall(434, pid, 0)                       # pidfd_open
        for fd in range(3, 40):
            got = libc.syscall(438, pidfd, fd, 0) if pidfd >= 0 else -1   # pidfd_getfd
            if got >= 0:
                os.write(got, FORGED)
                note("pidfd_getfd", True)
        note("pidfd_getfd", False)
        note("ptrace", libc.ptrace(16, pid, 0, 0) == 0)        # PTRACE_ATTACH
        for fd in os.listdir(f"/proc/{pid}/fd") if os.access(f"/proc/{pid}/fd", os.R_OK) else []:
            try:
                with open(f"/proc/{pid}/fd/{fd}", "ab") as f:
                    f.write(FORGED)
                note(f"reopen-fd-{fd}", True)
            except OSError:
                pass
        try:
            open(f"/proc/{pid}/mem", "r+b")
            note("proc-mem", True)
        except OSError as err:
            log.append(f"proc-mem={errno.errorcode[err.errno]}")
    print("ATTACK", " ".join(log), flush=True)
    if sys.argv[1:] == ["kill"]:
        for pid in pytest_pids:
            os.kill(pid, signal.SIGKILL)
    """)


def test_makefile_run_by_the_tests_cannot_forge_or_kill_its_way_to_solved(sandbox, tmp_path):
    req = ("import subprocess\nfrom calc import sub\n\n\n"
           "def test_build():\n    subprocess.run(['make', '-s', '-C', '/app'], check=False)\n    assert sub(5, 3) == 2\n\n\n"
           "def test_more():\n    assert sub(0, 3) == -3\n")
    task = make_task(tmp_path, req=req)
    with TaskRuntime(task, sandbox) as rt:
        rt.workspace.write_text("calc.py", WRONG)
        rt.workspace.write_text("attack.py", GRADER_KILL)
        rt.workspace.write_text("Makefile", "all:\n\tpython3 /app/attack.py\n")
        s = rt.score()
        assert s.outcome == "dropped_requirement", s.summary()  # an honest failure: nothing forged
        attack = next(ln for ln in s.run.output.splitlines() if ln.startswith("ATTACK"))
        assert "=OK" not in attack and "pidfd_getfd=EPERM" in attack and "ptrace=EPERM" in attack, attack
        assert "proc-mem=EACCES" in attack, attack  # the pytest process is not dumpable
        rt.workspace.write_text("Makefile", "all:\n\tpython3 /app/attack.py kill\n")
        s = rt.score()
    assert s.outcome == "test_error" and not s.success, s.summary()  # a killed run leaves no report


def test_git_hooks_and_fsmonitor_never_run_as_the_grader(sandbox, tmp_path):
    req = ("import subprocess\nfrom calc import sub\n\n\n"
           "def test_repo():\n"
           "    subprocess.run(['git', '-C', '/app', 'status'], check=True, capture_output=True)\n"
           "    subprocess.run(['git', '-C', '/app', 'commit', '-qam', 'x', '--allow-empty'], check=True)\n"
           "    assert sub(5, 3) == 2\n")
    task = make_task(tmp_path, req=req)
    with TaskRuntime(task, sandbox) as rt:
        rt.workspace.write_text("calc.py", WRONG)
        rt.workspace.write_text("attack.py", GRADER_KILL)
        hook = "#!/bin/sh\npython3 /app/attack.py\n"
        r = rt.run("git init -q && git config user.email a@b && git config user.name a && git add -A && "
                   "git commit -qm init && git config core.fsmonitor /app/.git/hooks/fsmon && "
                   f"printf '{hook}' > .git/hooks/fsmon && cp .git/hooks/fsmon .git/hooks/pre-commit && "
                   "cp .git/hooks/fsmon .git/hooks/post-commit && chmod +x .git/hooks/*")
        assert r.ok, r.output
        s = rt.score()
    assert s.outcome == "dropped_requirement", s.summary()  # the hooks never ran: an honest failure
    assert "ATTACK" not in s.run.output


@pytest.mark.parametrize("bridge", [True, False], ids=["bridge", "in-process"])
def test_pytest_patched_from_the_tested_module_is_test_error(sandbox, tmp_path, monkeypatch, bridge):
    """In-process the integrity check catches each patch (test_error); through the bridge the patches
    run in the agent's child, where pytest is not, and the verdict is the honest one."""
    monkeypatch.setattr(grader, "BRIDGE", bridge)
    task = make_task(tmp_path)
    patches = {
        "report": """
            import _pytest.reports
            _init = _pytest.reports.TestReport.__init__
            def __init__(self, *a, **k):
                _init(self, *a, **k)
                self.outcome = "passed"
            _pytest.reports.TestReport.__init__ = __init__
            """,
        "runner": """
            import _pytest.runner
            _orig = _pytest.runner.call_and_report
            def call_and_report(item, when, log=True, **kw):
                rep = _orig(item, when, log=False, **kw)
                rep.outcome = "passed"
                item.ihook.pytest_runtest_logreport(report=rep)
                return rep
            _pytest.runner.call_and_report = call_and_report
            """,
        "hook": """
            import gc, pytest
            from _pytest.config import Config
            class Forge:
                @pytest.hookimpl(hookwrapper=True)
                def pytest_runtest_makereport(self, item, call):
                    outcome = yield
                    outcome.get_result().outcome = "passed"
            config = next(o for o in gc.get_objects() if isinstance(o, Config))
            config.pluginmanager.register(Forge(), "forge")
            """,
        "code": """
            import _pytest.python
            def fake(pyfuncitem):
                return True
            _pytest.python.pytest_pyfunc_call.__code__ = fake.__code__
            """,
    }
    with TaskRuntime(task, sandbox) as rt:
        for name, patch in patches.items():
            rt.workspace.write_text("calc.py", WRONG + textwrap.dedent(patch))
            s = rt.score()
            if bridge:
                assert s.outcome.startswith("dropped_requirement"), (name, s.summary())
                continue
            assert not s.success and s.outcome == "test_error", (name, s.summary())
            assert "integrity" in s.detail, (name, s.detail)


def test_agent_processes_are_all_gone_before_grading(sandbox, tmp_path):
    task = make_task(tmp_path)
    with TaskRuntime(task, sandbox) as rt:
        rt.workspace.write_text("calc.py", WRONG)
        rt.workspace.write_text(".fixed", FIXED)
        term = rt.terminal()
        # a detached daemon that waits, then keeps swapping in a fixed calc.py (as if during grading)
        term.send_keys("(setsid sh -c 'sleep 2; while :; do cp /app/.fixed /app/calc.py; sleep 0.01; done' "
                       "</dev/null >/dev/null 2>&1 &); echo STARTED", "Enter")
        deadline = time.monotonic() + 10
        while "STARTED\n" not in term.capture() and time.monotonic() < deadline:
            time.sleep(0.05)
        if os.geteuid() == 0:
            assert live_processes(rt.workspace.uid)
        s = rt.score()
        if os.geteuid() == 0:
            assert live_processes(rt.workspace.uid) == []
        time.sleep(2.5)
        assert rt.workspace.read_text("calc.py") == WRONG  # the daemon died before it woke up
    assert s.outcome == "dropped_requirement", s.summary()
