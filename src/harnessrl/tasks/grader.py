"""Grading as its own trust domain: what the agent left behind may be graded, never the grader.

    stop_agent(workspace, sandbox)              every process of the episode is gone
    with grader_workspace(workspace) as gws:    a fresh copy of /app, under a NEW uid
        report, run = run_pytest(task, gws, sandbox, timeout)    the plugin's report, not stdout
        reward, run = run_reward_script(task, gws, sandbox, timeout)

The steps, and the attack each one closes (docs/security.md has the whole threat model):

1. `stop_agent`: the episode's cgroup is emptied (cgroup.py), then `kill(-1, SIGKILL)` issued AS the
   agent's uid (the kernel signals every process of that uid in one pass, forks in flight
   included; the uid belongs to this episode only), repeated until none is left. Nothing the
   agent started (a daemon, a `sleep 1000 &` in tmux, a process waiting to swap files under the
   tests) survives into grading.
2. `grader_workspace`: the agent's /app is copied by the host into a new workspace owned by a
   different uid (a new tmpfs with its own quota): regular files, directories and symlinks only
   (a FIFO or socket cannot hang or reach the copy), set-uid bits dropped, bounded in depth and
   entries, modes and mtimes kept (make and the permission tasks depend on them). The agent's uid
   can neither see nor touch it.
3. `run_pytest`: the tests and the plugin are root-owned and bound read-only; pytest runs with
   `python -P`, /app is never on PYTHONPATH, and the plugin puts /app LAST on sys.path, so nothing in /app shadows the stdlib or
   pytest; git runs with no system/global config, no hooks and no fsmonitor (an agent's
   `.git/config` cannot make the tests run its code through git). The verdict is the plugin's
   report, written through an fd on a root-owned, unlinked file that no other process can
   open — read only by the host, size-capped, exactly one literal, cross-checked against the exit
   status and the plugin's integrity check. stdout is never parsed.
4. `run_reward_script` (Harbor): test.sh runs the same way; /logs/verifier is a fresh directory
   of the grader's; the reward file (reward.txt, or reward.json with named rewards; reward_files.py) is opened with
   O_NOFOLLOW, must be a regular file of at most 4 KiB of finite numbers in [0, 1]; anything else
   is no reward (test_error).
"""

from __future__ import annotations

import ast
import contextlib
import errno
import json
import os
import shutil
import stat
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from harnessrl.tasks.base import TEST_GROUPS, Task
from harnessrl.tasks.fileops import MAX_WALK_DEPTH, MAX_WALK_ENTRIES
from harnessrl.tasks.reward_files import one_reward, read_rewards
from harnessrl.tasks.sandbox import Bind, Sandbox, SandboxResult
from harnessrl.tasks.workspace import Workspace

TESTS_AT = "/tests"
PLUGIN_AT = "/grader"
LOGS_AT = "/logs/verifier"
PLUGIN_SOURCE = Path(__file__).with_name("grader_plugin.py")
INIT_SOURCE = Path(__file__).with_name("grader_init.py")
BRIDGE_SOURCES = (Path(__file__).with_name("grader_bridge.py"), Path(__file__).with_name("grader_child.py"),
                  Path(__file__).with_name("grader_values.py"))
# The agent-call bridge (grader_bridge.py): tests' imports of the agent's modules run in a child
# process. False only in tests that show an attack on the in-process grader is real.
BRIDGE = True
REPORT_MAX_BYTES = 16 << 20
OUTCOME_WORDS = ("passed", "failed", "error", "skipped", "xfail", "xpass")
_PYTEST_INI = "[pytest]\naddopts = -p no:cacheprovider\n"
# git as the grader: no system or global config, no hooks, no fsmonitor, no pager; these env
# entries count as `git -c` options and so win over anything in the agent's .git/config.
GIT_SAFE_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_TERMINAL_PROMPT": "0",
    "GIT_CONFIG_COUNT": "4",
    "GIT_CONFIG_KEY_0": "core.hooksPath", "GIT_CONFIG_VALUE_0": "/dev/null",
    "GIT_CONFIG_KEY_1": "core.fsmonitor", "GIT_CONFIG_VALUE_1": "false",
    "GIT_CONFIG_KEY_2": "core.pager", "GIT_CONFIG_VALUE_2": "cat",
    "GIT_CONFIG_KEY_3": "diff.external", "GIT_CONFIG_VALUE_3": "",
}


class GraderError(RuntimeError):
    """The agent's processes could not all be stopped: grading would not be sound."""


# -- 1. stop the agent ------------------------------------------------------------------


def live_processes(uid: int) -> list[int]:
    """Host pids owned by `uid` that are not zombies."""
    out = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            if entry.stat().st_uid != uid:
                continue
            with open(f"/proc/{entry.name}/stat", "rb") as f:
                state = f.read().rsplit(b")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state != b"Z":
            out.append(int(entry.name))
    return out


def stop_agent(workspace: Workspace, sandbox: Sandbox, timeout_s: float = 10.0) -> None:
    """Kill every process the episode started; raise GraderError if any survives."""
    cg = sandbox.cgroup(workspace)
    if cg is not None:
        cg.kill(timeout_s / 2)
    if os.geteuid() != 0 or workspace.uid == 0 or workspace.uid == os.getuid():
        return  # without a uid of its own the episode cannot be told apart from us (docs/security.md)
    deadline = time.monotonic() + timeout_s
    while live_processes(workspace.uid):
        subprocess.run(  # kill(-1) as that uid: every process it owns, in one pass of the kernel
            ["setpriv", f"--reuid={workspace.uid}", f"--regid={workspace.gid}", "--clear-groups", "--",
             "kill", "-KILL", "-1"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={"PATH": "/usr/bin:/bin"}, check=False)
        if time.monotonic() > deadline:
            raise GraderError(f"processes of uid {workspace.uid} survive SIGKILL: {live_processes(workspace.uid)}")
        time.sleep(0.005)


# -- 2. the grader's own copy -----------------------------------------------------------


def copy_tree(src: Path, dst: Path, uid: int, gid: int, max_depth: int = MAX_WALK_DEPTH,
              max_entries: int = MAX_WALK_ENTRIES) -> list[str]:
    """Copy regular files, directories and symlinks from `src` into the existing `dst`, owned by
    uid:gid. Never follows a symlink, never opens anything but a regular file. Returns what was
    left out (special files, too deep, too many, unreadable)."""
    skipped: list[str] = []
    dirs_done: list[tuple[Path, os.stat_result]] = []
    stack: list[tuple[str, int]] = [("", 0)]
    seen = 0
    chown = os.geteuid() == 0
    while stack:
        rel_dir, depth = stack.pop()
        try:
            entries = list(os.scandir(src / rel_dir if rel_dir else src))
        except OSError:
            skipped.append(rel_dir)
            continue
        for entry in entries:
            seen += 1
            rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
            if seen > max_entries:
                skipped.append(f"{rel_dir or '.'}: more than {max_entries} entries")
                break
            try:
                st = entry.stat(follow_symlinks=False)
                target = dst / rel
                if stat.S_ISDIR(st.st_mode):
                    if depth + 1 >= max_depth:
                        skipped.append(f"{rel}: deeper than {max_depth} levels")
                        continue
                    target.mkdir(mode=0o700)
                    if chown:
                        os.chown(target, uid, gid)
                    dirs_done.append((target, st))
                    stack.append((rel, depth + 1))
                elif stat.S_ISLNK(st.st_mode):
                    os.symlink(os.readlink(entry.path), target)
                    if chown:
                        os.lchown(target, uid, gid)
                elif stat.S_ISREG(st.st_mode):
                    _copy_file(Path(entry.path), target, st, uid if chown else -1, gid if chown else -1)
                else:
                    skipped.append(f"{rel}: not a regular file, directory or symlink")
            except OSError as err:
                skipped.append(f"{rel}: {err.strerror}")
    for target, st in reversed(dirs_done):  # children first: setting a dir's mode last keeps it writable meanwhile
        os.chmod(target, stat.S_IMODE(st.st_mode) & 0o777)
        os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns), follow_symlinks=False)
    return skipped


def _copy_file(source: Path, target: Path, st: os.stat_result, uid: int, gid: int) -> None:
    fd_in = os.open(source, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd_in).st_mode):  # swapped between lstat and open
            raise OSError(errno.EINVAL, "not a regular file")
        fd_out = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            with open(fd_in, "rb", closefd=False) as fin, open(fd_out, "wb", closefd=False) as fout:
                shutil.copyfileobj(fin, fout, 1 << 20)
            if uid >= 0:
                os.fchown(fd_out, uid, gid)
            os.fchmod(fd_out, stat.S_IMODE(st.st_mode) & 0o777)  # no set-uid/set-gid/sticky
            os.utime(fd_out, ns=(st.st_atime_ns, st.st_mtime_ns))
        finally:
            os.close(fd_out)
    finally:
        os.close(fd_in)


@contextlib.contextmanager
def grader_workspace(workspace: Workspace) -> Iterator[Workspace]:
    """A new workspace (new uid, new tmpfs) holding a copy of the agent's /app."""
    gws = Workspace.create(None, quota_mb=workspace.quota_mb or 256)
    try:
        gws.skipped = copy_tree(workspace.root, gws.root, gws.uid, gws.gid)
        yield gws
    finally:
        gws.close()


def _root_dir(path: Path) -> Path:
    """A fresh directory only root (or we) can write; readable by the grader's uid."""
    if path.exists():
        shutil.rmtree(path)
    path.mkdir(mode=0o755)
    return path


def _stage_tests(task: Task, gws: Workspace) -> list[Bind]:
    tests = _root_dir(gws.home / "tests")
    shutil.copytree(task.tests_dir, tests, symlinks=False, dirs_exist_ok=True)
    (tests / "pytest.ini").write_text(_PYTEST_INI)
    for dirpath, dirnames, filenames in os.walk(tests):  # readable, not writable, by the grader
        for name in dirnames:
            os.chmod(os.path.join(dirpath, name), 0o755)
        for name in filenames:
            p = os.path.join(dirpath, name)
            os.chmod(p, 0o755 if os.stat(p).st_mode & 0o100 else 0o644)
    plugin = _root_dir(gws.home / "grader")
    for source, name in ((PLUGIN_SOURCE, "harnessrl_grader.py"), (INIT_SOURCE, "harnessrl_init.py"),
                         (BRIDGE_SOURCES[0], "harnessrl_bridge.py"), (BRIDGE_SOURCES[1], "harnessrl_child.py"),
                         (BRIDGE_SOURCES[2], "harnessrl_values.py")):
        shutil.copyfile(source, plugin / name)
        os.chmod(plugin / name, 0o644)
    return [Bind(tests, TESTS_AT), Bind(plugin, PLUGIN_AT)]


# -- 3. pytest ------------------------------------------------------------------------------


def run_pytest(task: Task, gws: Workspace, sandbox: Sandbox, timeout_s: float, python: str | list[str] = "python",
               runner_path: tuple[str, ...] = (), network=None, *, child_python: list[str] | None = None,
               agent_paths: list[str] | None = None) -> tuple[dict | None, str, SandboxResult]:
    """Run the hidden tests over the grader's copy. Returns (report or None, why not, the run).
    `python`: one word (the host jail: the host's interpreter, found on PATH) or an argv prefix
    (a task image, tasks/images/trust.py: the trusted base's loader, its flags and interpreter, by
    absolute paths); then the runner is isolated (`-I`: no PYTHON* variable, no user site, no
    working directory) and its sys.path gets /grader and `runner_path` (the grader layer's folder
    holding pytest) in front of its own standard library, since -I ignores PYTHONPATH.
    `child_python` / `agent_paths`: the interpreter argv and import folders of the view the agent
    changed, for the agent-call bridge: the init starts the child (HARNESSRL_BRIDGE_CHILD), which imports
    from those folders (HARNESSRL_AGENT_PATHS)."""
    binds = _stage_tests(task, gws)
    targets = [f"{TESTS_AT}/{f}" for g in TEST_GROUPS for f in task.test_files.get(g, ())]
    if isinstance(python, str):
        init, runner = [python, "-I"], [python, "-P", "-m", "pytest"]
    else:
        init, runner = [*python, "-I"], [*python, "-I", "-c", _BOOT % ([PLUGIN_AT, *runner_path],)]
    cmd = [*init, f"{PLUGIN_AT}/harnessrl_init.py", *runner, "-c", f"{TESTS_AT}/pytest.ini", f"--rootdir={TESTS_AT}",
           f"--confcutdir={TESTS_AT}", "-p", "harnessrl_grader", "-rA", "--color=no", "--tb=short",
           "--import-mode=importlib", "--continue-on-collection-errors", "-o", "console_output_style=classic",
           *targets]
    with tempfile.TemporaryFile(dir=gws.home) as report:  # root's, 0600, unlinked: no path to it exists
        env = {**task.env, **GIT_SAFE_ENV, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
               "PYTHONPATH": _grader_pythonpath(task.env.get("PYTHONPATH", ""), runner_path),
               "HARNESSRL_REPORT_FD": str(report.fileno()), "HARNESSRL_APP": "/app",
               "HARNESSRL_BRIDGE": "on" if BRIDGE else "off",
               "HARNESSRL_AGENT_PATHS": json.dumps(agent_paths or _agent_paths(task.env.get("PYTHONPATH", ""))),
               **({"HARNESSRL_BRIDGE_CHILD": json.dumps([*(child_python or ["python", "-P"]),
                                                          f"{PLUGIN_AT}/harnessrl_child.py"])} if BRIDGE else {})}
        for key in ("PYTEST_ADDOPTS", "PYTEST_PLUGINS", "PYTHONSTARTUP", "PYTHONHOME", "PYTHONUSERBASE"):
            env.pop(key, None)
        run = sandbox.run(cmd, gws, timeout_s=timeout_s, binds=binds, env=env, pass_fds=[report.fileno()],
                          exec_init=True, network=network)
        report.seek(0)
        data = report.read(REPORT_MAX_BYTES + 1)
    if run.status != "ok":
        return None, f"test run {run.status}" + (f" ({run.detail})" if run.detail else ""), run
    if len(data) > REPORT_MAX_BYTES:
        return None, f"grader report over {REPORT_MAX_BYTES} bytes", run
    if not data:
        return None, f"no grader report (test run exit {run.exit_code})", run
    try:
        parsed = parse_report(data.decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as err:
        return None, f"malformed grader report ({err})", run
    if parsed["tampered"]:
        return None, "grader integrity check failed: " + "; ".join(parsed["tampered"])[:300], run
    if run.exit_code != parsed["exitstatus"]:
        return None, f"exit status {run.exit_code} disagrees with the report's {parsed['exitstatus']}", run
    all_passed = bool(parsed["results"]) and all(o == "passed" for o, _ in parsed["results"])
    if all_passed != (parsed["exitstatus"] == 0):
        return None, f"report ({'all passed' if all_passed else 'failures'}) disagrees with exit status " \
                     f"{parsed['exitstatus']}", run
    return parsed, "", run


def _agent_paths(task_path: str) -> list[str]:
    """Where the agent's importable code lives: /app, then the task's PYTHONPATH entries under /app."""
    under = [p for p in task_path.split(":") if p == "/app" or p.startswith("/app/")]
    return ["/app", *(p for p in under if p != "/app")]


# The isolated runner's start (argv prefix form of run_pytest): -I drops PYTHONPATH, so /grader and the
# runner folder go in front here; with -S (trust.py: the stdlib's sitecustomize.py may be a link out of
# the trusted tree) the interpreter's own site-packages are added after the stdlib, without sitecustomize.
_BOOT = ("import sys\nsys.path[:0] = %r\n"
         "if sys.flags.no_site:\n    import site\n    for _d in site.getsitepackages():\n        site.addsitedir(_d)\n"
         "import pytest\nraise SystemExit(pytest.console_main())\n")


def _grader_pythonpath(task_path: str, runner_path: tuple[str, ...] = ()) -> str:
    """The plugin's dir, then the task's own PYTHONPATH entries except /app and below: pytest
    imports much of the stdlib before any plugin runs, so /app must not come first even then.
    (PYTHONSAFEPATH is not set: the tests' own `python script.py` subprocesses keep the
    script's directory on their path, as everywhere else.)"""
    keep = [p for p in task_path.split(":") if p and p != "/app" and not p.startswith("/app/")]
    return ":".join([PLUGIN_AT, *runner_path, *keep])


def parse_report(text: str) -> dict:
    """The plugin's one report: a dict literal with results [(outcome, nodeid)], exitstatus, tampered."""
    try:
        data = ast.literal_eval(text)  # exactly one expression; a second report is a syntax error
    except (SyntaxError, ValueError, MemoryError, RecursionError) as err:
        raise ValueError(f"not one Python literal: {type(err).__name__}") from None
    if not isinstance(data, dict) or set(data) != {"results", "exitstatus", "tampered"}:
        raise ValueError("wrong keys")
    results, code, tampered = data["results"], data["exitstatus"], data["tampered"]
    if not isinstance(results, list) or not isinstance(code, int) or not isinstance(tampered, list):
        raise ValueError("wrong types")
    for row in results:
        if not (isinstance(row, tuple) and len(row) == 2 and row[0] in OUTCOME_WORDS and isinstance(row[1], str)):
            raise ValueError(f"bad result row {row!r:.80}")
    if not all(isinstance(t, str) for t in tampered):
        raise ValueError("bad tamper list")
    return data


# -- 4. Harbor reward files -----------------------------------------------------------------


def run_reward_script(task: Task, gws: Workspace, sandbox: Sandbox, timeout_s: float) -> tuple[float | None, str, SandboxResult]:
    """Run tests/test.sh over the grader's copy; (reward or None, why not, the run)."""
    rewards, why, run = run_test_script(task, gws, sandbox, timeout_s)
    if rewards is None:
        return None, why, run
    return one_reward(rewards), "", run


def run_test_script(task: Task, gws: Workspace, sandbox: Sandbox, timeout_s: float, *,
                    env: dict[str, str] | None = None, cwd: str | None = None, network=None,
                    shell: list[str] | None = None) -> tuple[dict[str, float] | None, str, SandboxResult]:
    """Harbor's verifier: `bash /tests/test.sh` with the tests bound read-only at /tests and a fresh
    /logs/verifier of the grader's; ({name: reward} or None, why not, the run). `env` and `cwd`:
    what a task image adds (its PATH with the grader layer's offline tools first, its WORKDIR);
    `network`: the episode's network namespace, where a task's other services run; `shell`: the
    argv that runs bash (a task image: the trusted base's, by absolute paths; default `bash`)."""
    binds = _stage_tests(task, gws)
    logs = gws.private_dir("verifier")  # fresh: this grader workspace is new
    run_env = {**task.env, **GIT_SAFE_ENV, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", **(env or {})}
    for key in ("PYTEST_ADDOPTS", "PYTEST_PLUGINS", "PYTHONSTARTUP", "BASH_ENV", "ENV"):
        run_env.pop(key, None)
    run = sandbox.run([*(shell or ["bash"]), f"{TESTS_AT}/{task.test_script}"], gws, timeout_s=timeout_s,
                      binds=[*binds, Bind(logs, LOGS_AT, writable=True)], env=run_env, network=network,
                      **({"cwd": cwd} if cwd else {}))
    rewards, why = read_rewards(logs)
    if rewards is not None and run.status != "ok":
        return None, f"test run {run.status}" + (f" ({run.detail})" if run.detail else ""), run
    return rewards, why, run


__all__ = ["GraderError", "copy_tree", "grader_workspace", "live_processes", "parse_report",
           "run_pytest", "run_reward_script", "run_test_script",
           "stop_agent"]
