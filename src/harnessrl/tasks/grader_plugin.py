"""The pytest plugin the grader loads (`-p harnessrl_grader`) before any test or agent module.

This file is copied, as is, into a root-owned read-only directory of the grader's sandbox; it
imports nothing from harnessrl. What it does, in the order pytest calls it:

1. At import (before collection imports the tests, and through them the agent's code):
   - takes the report fd the host opened on a root-owned, unlinked file (HARNESSRL_REPORT_FD)
     and makes it non-inheritable: no subprocess the tests start gets it, and since the file is
     root's and 0600, no other process can reopen it through /proc/<pid>/fd;
   - marks the process non-dumpable, so other processes of the grader's uid cannot open its
     /proc/<pid>/mem or fds (ptrace and pidfd_getfd are also refused by the seccomp filter);
   - puts /app LAST on sys.path (after the stdlib and the runner's site-packages), so a
     `sqlite3.py` or `_pytest/` in the workspace cannot stand in for them;
   - snapshots pytest's and pluggy's machinery (every function and class attribute of the
     modules that run tests and build reports, and their code objects).
2. Records every collection error and every test phase's outcome as pytest reports it.
3. After each test and at the end, checks the machinery against the snapshot and checks that no
   hook implementation comes from a module under /app. A difference is "tampered".
4. At session end (after every other sessionfinish hook, the terminal summary included), writes ONE report, the Python literal of
   `{"results": [(outcome, nodeid), ...], "exitstatus": int, "tampered": [...]}`
   (repr of str/int/list/tuple, which imported code cannot redefine), then `os._exit`s at once:
   no atexit handler or leftover thread of the agent's code runs after the verdict.

What it cannot do: code imported into this process can still rewrite this module or pytest in
ways the snapshot does not cover, or write its own report and exit. See docs/security.md.
"""

import builtins
import ctypes
import json
import os
import sys
import types

_FD = int(os.environ.pop("HARNESSRL_REPORT_FD", "-1"))
_APP = os.environ.pop("HARNESSRL_APP", "/app")
_BRIDGE = os.environ.pop("HARNESSRL_BRIDGE", "on") != "off"
_CHILD = json.loads(os.environ.pop("HARNESSRL_CHILD_PYTHON", "null") or "null") or [sys.executable, "-P"]
_AGENT_PATHS = json.loads(os.environ.pop("HARNESSRL_AGENT_PATHS", "null") or "null") or [_APP]
_TESTS = os.environ.pop("HARNESSRL_TESTS", "/tests")
_BRIDGE_FDS = [int(x) for x in os.environ.pop("HARNESSRL_BRIDGE_FDS", "").split(",") if x]  # from the init
for _fd in _BRIDGE_FDS:
    os.set_inheritable(_fd, False)  # the tests' subprocesses never get the bridge's channel
_write, _exit, _repr, _id, _isinstance = os.write, os._exit, repr, id, isinstance
if _FD >= 0:
    os.set_inheritable(_FD, False)
try:
    ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 4
except (OSError, AttributeError):
    pass
_AGENT_ROOTS = [_APP, *_AGENT_PATHS]
sys.path[:] = [p for p in sys.path if p not in ("", ".") and not any(p == a or p.startswith(a + "/") for a in _AGENT_ROOTS)]
if _BRIDGE:
    # The agent's modules are imported in a child process (grader_bridge.py): no agent code ever runs
    # in this interpreter, so nothing can patch pytest, register a hook or write the report.
    import harnessrl_bridge  # noqa: E402

    harnessrl_bridge.install(_CHILD, _AGENT_PATHS, trusted=list(sys.path), tests=_TESTS, fds=_BRIDGE_FDS)
else:  # the in-process grader (tests switch the bridge off to show that an attack is real)
    sys.path.append(_APP)

import _pytest.assertion.rewrite  # noqa: E402  (imported now so the snapshot covers them)
import _pytest.assertion.util  # noqa: E402
import _pytest.fixtures  # noqa: E402
import _pytest.main  # noqa: E402
import _pytest.nodes  # noqa: E402
import _pytest.outcomes  # noqa: E402
import _pytest.python  # noqa: E402
import _pytest.reports  # noqa: E402
import _pytest.runner  # noqa: E402
import _pytest.skipping  # noqa: E402
import pluggy._callers  # noqa: E402
import pluggy._hooks  # noqa: E402
import pluggy._manager  # noqa: E402
import pytest  # noqa: E402

_IMPORTED = (_pytest.skipping, pluggy._manager)  # used only through the snapshot below

_WATCHED = ["_pytest.runner", "_pytest.reports", "_pytest.python", "_pytest.main", "_pytest.outcomes",
            "_pytest.nodes", "_pytest.skipping", "_pytest.fixtures", "_pytest.assertion.rewrite",
            "_pytest.assertion.util", "pluggy._callers", "pluggy._hooks", "pluggy._manager"]
_CRITICAL_HOOKS = ["pytest_runtest_protocol", "pytest_runtest_makereport", "pytest_runtest_logreport",
                   "pytest_runtest_call", "pytest_runtest_setup", "pytest_runtest_teardown", "pytest_pyfunc_call",
                   "pytest_report_teststatus", "pytest_collectreport", "pytest_make_collect_report",
                   "pytest_sessionfinish", "pytest_collection_modifyitems", "pytest_deselected"]


def _fingerprint() -> dict:
    out = {}
    for name in _WATCHED:
        mod = sys.modules.get(name)
        if mod is None:
            continue
        out[(name,)] = _id(mod)
        for key, value in list(vars(mod).items()):
            if _isinstance(value, types.FunctionType):
                out[(name, key)] = (_id(value), _id(value.__code__))
            elif _isinstance(value, type) and getattr(value, "__module__", "") == name:
                for attr, member in list(vars(value).items()):
                    code = getattr(member, "__code__", None) or getattr(getattr(member, "__func__", None), "__code__", None)
                    out[(name, key, attr)] = (_id(member), _id(code))
            elif callable(value):
                out[(name, key)] = _id(value)
    for key in ("write", "_exit", "fsync"):
        out[("os", key)] = _id(getattr(os, key, None))
    for key in ("repr", "id", "isinstance", "AssertionError", "__import__", "getattr", "vars"):
        out[("builtins", key)] = _id(getattr(builtins, key, None))
    out[("self",)] = tuple(_id(v) for v in (pytest_runtest_logreport, pytest_collectreport, pytest_sessionfinish,
                                            _check, _fingerprint, _finish))
    return out


_results: list = []
_tampered: list = []
_config = None


def _foreign_hooks() -> list:
    """Every hook implementation (not a fixed list of hooks) must come from a file of the trusted base or
    /tests, and every plugin registered after session start must be a conftest of /tests."""
    bad = []
    if _config is None:
        return bad
    for plugin in _config.pluginmanager.get_plugins():
        if _id(plugin) in _PLUGINS_AT_START:
            continue
        owner = plugin if _isinstance(plugin, types.ModuleType) else sys.modules.get(type(plugin).__module__)
        origin = getattr(owner, "__file__", None) or ""
        if not origin.startswith("/") or any(origin.startswith(a + "/") for a in _AGENT_ROOTS):
            bad.append(f"plugin {_config.pluginmanager.get_name(plugin)!r} from {origin or '?'} registered during the tests")
    for hook in sorted(set(_CRITICAL_HOOKS) | set(vars(_config.hook))):
        caller = getattr(_config.hook, hook, None)
        for impl in caller.get_hookimpls() if hasattr(caller, "get_hookimpls") else ():
            path = getattr(sys.modules.get(getattr(impl.function, "__module__", "") or ""), "__file__", None) or ""
            code_file = getattr(getattr(impl.function, "__code__", None), "co_filename", "") or ""
            if path.startswith(_APP + "/") or code_file.startswith(_APP + "/") or code_file.startswith("<"):
                bad.append(f"hook {hook} from {code_file or path}")
    return bad


_VOLATILE = {("_pytest.assertion.util", "_reprcompare"), ("_pytest.assertion.util", "_assertion_pass"),
             ("_pytest.assertion.util", "_config")}  # pytest sets these itself around each test


def _check(where: str) -> None:
    now = _fingerprint()
    base = _BASE or now
    changed = sorted(".".join(k) for k in base if k not in _VOLATILE and base[k] != now.get(k))
    foreign = _foreign_hooks()
    if changed or foreign:
        _tampered.append(f"{where}: {', '.join((changed + foreign)[:8])}")


def pytest_configure(config):
    global _config
    _config = config


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session):
    # The baseline: pytest has finished configuring itself (legacypath, assertion rewriting
    # patch a few attributes), and no test module — so none of the agent's code — is imported.
    _BASE.update(_fingerprint())
    _PLUGINS_AT_START.update(_id(p) for p in session.config.pluginmanager.get_plugins())


def pytest_collectreport(report):
    if report.failed or (report.skipped and report.nodeid.endswith(".py")):  # a module that skipped itself
        _results.append(("error" if report.failed else "skipped", report.nodeid))


def pytest_runtest_logreport(report):
    if report.when == "call" or (report.when == "setup" and not report.passed):
        if report.passed:
            outcome = "xpass" if hasattr(report, "wasxfail") else "passed"
        elif report.skipped:
            outcome = "xfail" if hasattr(report, "wasxfail") else "skipped"
        else:
            outcome = "failed" if report.when == "call" else "error"
        _results.append((outcome, report.nodeid))
    elif report.when == "teardown" and report.failed:
        _results.append(("error", report.nodeid))
    if report.when == "teardown" and not _BRIDGE:  # in-process, after every test; with the bridge no agent
        _check(report.nodeid)                       # code runs here, and the check at session end suffices


def _finish(exitstatus) -> None:
    _check("session end")
    code = int(exitstatus)
    data = _repr({"results": list(_results), "exitstatus": code, "tampered": list(_tampered)}).encode()
    if _FD >= 0:
        view = memoryview(data)
        while view:
            view = view[_write(_FD, view):]
    _exit(code if not _tampered else 3)


@pytest.hookimpl(wrapper=True, tryfirst=True)  # the outermost wrapper: its end runs after all the others
def pytest_sessionfinish(session, exitstatus):
    yield
    _finish(session.exitstatus)

_BASE: dict = {}
_PLUGINS_AT_START: set = set()
