"""No verdict is computed in a process that ran agent code (the grader's agent-call bridge).

The tests import the agent's module; with the bridge the module lives in a child process and the
pytest process that writes the report never executes a line of the agent's. Each attack below is
run twice: with the bridge switched off (grader.BRIDGE = False, the old in-process grader) it must
score the still-broken task as SOLVED, proving the attack is real; with the bridge it must be an
honest failure. The agent's `sub` always adds: an honest grader says `dropped_requirement`.
"""

from __future__ import annotations

import textwrap

import pytest

from harnessrl.tasks import grader
from harnessrl.tasks.runtime import TaskRuntime

from .test_scoring import MODULE, make_task

pytestmark = pytest.mark.sandbox
WRONG = MODULE

FORGE_REPORT = """
    import os, sys
    g = sys.modules.get("harnessrl_grader")
    if g is not None and g._FD >= 0:  # in the verdict process: write a perfect report, exit before any test
        os.write(g._FD, repr({"results": [("passed", "requirement/test_sub.py::test_sub"),
                                          ("passed", "regression/test_add.py::test_add")],
                              "exitstatus": 0, "tampered": []}).encode())
        os._exit(0)
"""

RESULTS_REWRITE = """
    import gc, sys
    import pytest
    from _pytest.config import Config
    g = sys.modules.get("harnessrl_grader")

    class Late:  # pytest_runtest_logfinish: after each test's reports, and on no fixed list of hooks
        @pytest.hookimpl(trylast=True)
        def pytest_runtest_logfinish(self, nodeid, location):
            g._results[:] = [("passed", n) for _, n in g._results]

        @pytest.hookimpl(tryfirst=True)
        def pytest_sessionfinish(self, session):
            session.exitstatus = 0

    if g is not None:
        next(o for o in gc.get_objects() if isinstance(o, Config)).pluginmanager.register(Late(), "late")
"""


@pytest.fixture
def in_process(monkeypatch):
    """The grader without the bridge: the agent's module imported into the verdict process."""
    monkeypatch.setattr(grader, "BRIDGE", False)


def _score(sandbox, tmp_path, module: str, req: str | None = None):
    task = make_task(tmp_path, module=module, req=req)
    with TaskRuntime(task, sandbox) as rt:
        return rt.score()


def test_a_report_written_from_the_tested_module_is_real_in_process_and_void_with_the_bridge(sandbox, tmp_path, monkeypatch):
    module = WRONG + textwrap.dedent(FORGE_REPORT)
    monkeypatch.setattr(grader, "BRIDGE", False)
    forged = _score(sandbox, tmp_path / "a", module)
    assert forged.success, f"the attack no longer works in-process, so this test shows nothing: {forged.summary()}"
    monkeypatch.setattr(grader, "BRIDGE", True)
    honest = _score(sandbox, tmp_path / "b", module)
    assert not honest.success and honest.outcome == "dropped_requirement", honest.summary()


def test_a_hook_outside_any_fixed_list_cannot_rewrite_results(sandbox, tmp_path, monkeypatch):
    """The red team's hook: registered from the tested module, on a hook no fixed list named."""
    module = WRONG + textwrap.dedent(RESULTS_REWRITE)
    monkeypatch.setattr(grader, "BRIDGE", False)
    caught = _score(sandbox, tmp_path / "a", module)  # in-process, the plugin now checks every hook
    assert not caught.success and caught.outcome == "test_error" and "integrity" in caught.detail, caught.summary()
    monkeypatch.setattr(grader, "BRIDGE", True)
    honest = _score(sandbox, tmp_path / "b", module)
    assert not honest.success and honest.outcome == "dropped_requirement", honest.summary()


def test_the_agents_process_has_no_channel_to_the_verdict(sandbox, tmp_path):
    """From the child: every fd it holds, the parent's fds and memory through /proc, signals that
    do not kill. None may change the verdict; the tests of the wrong `sub` still fail."""
    module = WRONG + textwrap.dedent("""
        import os, signal
        report = repr({"results": [("passed", "requirement/test_sub.py::test_sub")], "exitstatus": 0, "tampered": []})
        for fd in range(3, 256):  # its own channel to the trusted side included: a breach fails the tests
            try:
                os.write(fd, report.encode())
            except OSError:
                pass
        ppid = os.getppid()
        for name in os.listdir(f"/proc/{ppid}/fd") if os.path.isdir(f"/proc/{ppid}/fd") else []:
            try:
                with open(f"/proc/{ppid}/fd/{name}", "w") as f:
                    f.write(report)
            except OSError:
                pass
        try:
            with open(f"/proc/{ppid}/mem", "r+b") as f:
                f.write(b"x")
        except OSError:
            pass
        os.kill(ppid, signal.SIGCONT)
    """)
    s = _score(sandbox, tmp_path, module)
    assert not s.success and s.outcome.startswith("dropped_requirement"), s.summary()


def test_a_test_callback_gives_the_agent_no_path_into_the_verdict_process(sandbox, tmp_path):
    """A test hands a lambda to the agent's code; walking from it to the grader's globals is refused."""
    module = WRONG + textwrap.dedent("""
        def apply(f, x):
            try:
                g = f.__globals__["__builtins__"]["__import__"]("harnessrl_grader")
                g._results.clear()
            except Exception:
                pass
            return f(x)
    """)
    req = ("from calc import apply, sub\n\n\ndef test_sub():\n    assert apply(lambda v: v + 1, 1) == 2\n"
           "    assert sub(5, 3) == 2\n")
    s = _score(sandbox, tmp_path, module, req)
    assert not s.success and s.outcome == "dropped_requirement", s.summary()


def test_the_agent_process_dying_at_import_is_a_failure(sandbox, tmp_path):
    for i, tail in enumerate(["import os\nos._exit(0)\n", "raise SystemExit(0)\n", "raise KeyboardInterrupt\n",
                              "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n"]):
        s = _score(sandbox, tmp_path / str(i), WRONG + tail)
        assert not s.success, (tail, s.summary())


SEMANTICS_MODULE = '''
import dataclasses, os


def sub(a, b):
    return a - b


def add(a, b):
    return a + b


class BankError(Exception):
    pass


class Insufficient(BankError):
    def __init__(self, need):
        super().__init__(f"need {need} more")
        self.need = need


@dataclasses.dataclass
class Point:
    x: int
    y: int

    def moved(self, dx):
        return Point(self.x + dx, self.y)


class Account:
    rate = 3

    def __init__(self):
        self.balance = 0
        self.listeners = []

    def on_change(self, f):
        self.listeners.append(f)

    def deposit(self, n):
        if n <= 0:
            raise ValueError("positive amounts only")
        self.balance += n
        for f in self.listeners:
            f(self.balance)
        return self

    def withdraw(self, n):
        if n > self.balance:
            raise Insufficient(n - self.balance)
        self.balance -= n

    def __len__(self):
        return self.balance

    def __iter__(self):
        yield from range(self.balance)


def sort_in_place(xs):
    xs.sort()


def greet(name):
    print(f"hello {name}")
    return len(name)


def env(key):
    return os.environ.get(key), os.getcwd()


def squares(n):
    for i in range(n):
        yield i * i
'''

SEMANTICS_TEST = '''
import os

import pytest
from calc import Account, BankError, Insufficient, Point, env, greet, sort_in_place, squares, sub


def test_sub():
    assert sub(5, 3) == 2
    assert sub(0, 3) == -3


def test_objects_exceptions_and_callbacks(capsys, monkeypatch, tmp_path):
    acct = Account()
    seen = []
    acct.on_change(seen.append)
    acct.on_change(lambda b: seen.append(b * 10))
    assert acct.deposit(5) is acct and acct.balance == 5 and len(acct) == 5 and list(acct) == [0, 1, 2, 3, 4]
    assert seen == [5, 50]
    assert Account.rate == 3 and isinstance(acct, Account)
    with pytest.raises(ValueError, match="positive"):
        acct.deposit(0)
    with pytest.raises(BankError) as info:
        acct.withdraw(8)
    assert isinstance(info.value, Insufficient) and info.value.need == 3 and str(info.value) == "need 3 more"
    assert Point(1, 2) == Point(1, 2) and Point(1, 2).moved(2) == Point(3, 2) and Point(1, 2) != Point(2, 2)
    xs = [3, 1, 2]
    sort_in_place(xs)
    assert xs == [1, 2, 3]
    assert greet("ada") == 3 and capsys.readouterr().out == "hello ada\\n"
    monkeypatch.setenv("CALC_MODE", "exact")
    monkeypatch.chdir(tmp_path)
    assert env("CALC_MODE") == ("exact", str(tmp_path))
    assert list(squares(4)) == [0, 1, 4, 9] and sum(squares(3)) == 5
    assert {"a": (1, 2.5, None, b"x")} == {"a": (1, 2.5, None, b"x")}
'''


def test_an_honest_module_keeps_its_meaning_through_the_bridge(sandbox, tmp_path):
    """Classes, instances, the agent's exception hierarchy under pytest.raises, callbacks into the
    test, printed output for capsys, in-place changes to arguments, environment and cwd set by the
    test, generators: what the suites' tests do, through the child."""
    s = _score(sandbox, tmp_path, SEMANTICS_MODULE, SEMANTICS_TEST)
    assert s.success, s.summary()
    broken = SEMANTICS_MODULE.replace("self.need = need", "self.need = need + 1")
    s = _score(sandbox, tmp_path / "broken", broken, SEMANTICS_TEST)
    assert not s.success and s.outcome == "dropped_requirement", s.summary()


def test_code_from_the_workspace_is_never_executed_in_the_verdict_process(sandbox, tmp_path):
    """A test that puts /app on sys.path itself, or runs an /app file with runpy: the audit hook refuses."""
    req = ("import runpy\nimport sys\n\n\ndef test_sub():\n    sys.path.insert(0, '/app')\n    import calc\n"
           "    assert type(calc).__name__ == 'RemoteModule'\n    assert calc.sub(5, 3) == 2\n\n\n"
           "def test_runpy():\n    with __import__('pytest').raises(RuntimeError, match='refuses'):\n"
           "        runpy.run_path('/app/calc.py')\n")
    fixed = WRONG.replace("a + b  #", "a - b  #")
    s = _score(sandbox, tmp_path, fixed, req)
    assert s.success, s.summary()


def test_jail_the_graders_trust_base_is_out_of_the_agents_reach(sandbox, tmp_path):
    """The image-runtime attack classes, tried in the host jail: replace a library the interpreter
    loads, put an interpreter shim in a PATH folder, replace the standard library (or an ancestor of
    it) by a symlink. Every place is read-only to the agent, and the verdict stays honest."""
    import sys
    import sysconfig

    stdlib = sysconfig.get_paths()["stdlib"]
    libdir = sysconfig.get_config_var("LIBDIR") or "/usr/lib"
    bindirs = [p for p in sandbox.env["PATH"].split(":") if p]
    task = make_task(tmp_path)
    with TaskRuntime(task, sandbox) as rt:
        tries = [f"cp /bin/true {libdir}/libpython3.so", f"echo 'import os' > {stdlib}/sitecustomize.py",
                 f"mv {stdlib} {stdlib}.orig", f"ln -sfn /app {stdlib}", f"ln -sfn /app {stdlib.rsplit('/', 1)[0]}",
                 f"cp /bin/true {sys.prefix}/bin/python3.11"]
        tries += [f"printf '#!/bin/sh\\nexit 0\\n' > {d}/python && chmod +x {d}/python" for d in bindirs]
        for cmd in tries:
            r = rt.run(cmd + " 2>&1; echo rc=$?")
            assert "rc=0" not in r.stdout, (cmd, r.stdout)
        s = rt.score()
    assert not s.success and s.outcome == "dropped_requirement", s.summary()
