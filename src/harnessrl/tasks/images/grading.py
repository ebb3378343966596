"""Grading an episode that ran in a task image: the grader's trust domain (grader.py) over the image.

    verdict = grade_in_image(task, store, built, ws, root, sandbox, timeout_s=60)
    verdict.status     # "graded" | "grader_tamper" | "test_error"
    verdict.report     # the plugin's report (results, exitstatus) when graded by pytest files
    verdict.rewards    # {name: reward} when graded by a Harbor test.sh (reward.txt / reward.json)
    verdict.reward     # 0..1; verdict.solved: reward 1
    verdict.tamper     # [(path in the image, rule)] that made it grader_tamper

1. The agent is stopped (grader.stop_agent: its cgroup emptied, kill(-1) as its uid).
2. The grader's trusted base (trust.py): the verdict process -- pid 1's shell, the init, pytest and
   its plugins, for a test script bash -- runs from the grader image's own layers mounted a second
   time WITHOUT the agent's upper folder, read-only at /.harnessrl-trusted, started through that
   tree's own dynamic loader by absolute resolved paths (--inhibit-cache, --library-path of its own
   library folders), isolated (-I -S), with a fixed environment; a guard layer of the grader's above
   the agent's folder pins /etc/ld.so.preload (empty), /etc/nsswitch.conf (built-in sources only) and
   the mount point. This is an allow-list: what the verdict process runs is pristine whatever the
   agent changed, so the verdict does not depend on step 3 (TRUST_BASE = False restores the old
   merged-view interpreter: the tests flip it to show each attack is real).
3. A diagnosis, before anything runs: the upper layer is diffed against the places that would have
   put the agent's code into the grader under the old scheme (PROTECTED; a protected folder or an
   ancestor replaced by a link, a deletion or an opaque folder); a hit is `grader_tamper`, an early
   clearly-labelled refusal (SCAN_UPPER = False skips it for pytest files).
4. A new workspace (new uid, new scratch) mounts the grader image (the task image plus the runner
   layer) with the agent's upper folder as a read-only layer under the guard, so the tests see
   exactly what the agent left. The hidden tests, pytest.ini, the plugin and the init are bound
   read-only over /tests and /grader (an agent's pre-created /tests, or a conftest.py or pytest.ini
   in it, is covered, never read: neutralised); `--confcutdir=/tests` and `-c` keep conftest.py and
   ini files elsewhere out. The report comes through the root-owned unlinked file of
   grader.run_pytest, outside anything the agent could touch.
5. A Harbor task is graded by its own tests/test.sh (grader.run_test_script): bound read-only at
   /tests, run by the trusted bash from WORKDIR with a fresh /logs/verifier of the grader's and the
   trusted grader layer's offline uv/uvx/pytest first on PATH (uv_shim.py). The commands the script
   runs come from the image the agent changed (a residual risk, docs/security.md): any command it
   names, the shells, env and python3 in a bin folder or a folder of the image's ENV PATH, any shared
   library under a lib folder, the NSS configuration, uv's install folder it sources, a pytest
   configuration above /tests, and a protected folder's ancestor replaced, are grader_tamper
   (script_rules; this scan is not skipped for a test script).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field, replace
from pathlib import Path

from harnessrl.tasks.base import Task
from harnessrl.tasks.grader import run_pytest, run_test_script, stop_agent
from harnessrl.tasks.images.build import Built
from harnessrl.tasks.images.grader_layer import GRADER_DIR, TOOLS_DIR
from harnessrl.tasks.images.rootfs import EpisodeRoot, service_start
from harnessrl.tasks.images.services import wait_listening, write_hosts
from harnessrl.tasks.images.store import ImageError, ImageStore
from harnessrl.tasks.images.trust import (TRUSTED_AT, TrustBase, TrustError, agent_paths, changed_in, child_python,
                                          guard_layer)
from harnessrl.tasks.sandbox import Sandbox, SandboxResult
from harnessrl.tasks.workspace import Workspace

_BIN = r"(?:usr/local/sbin|usr/local/bin|usr/sbin|usr/bin|sbin|bin)"
_PY = r"(?:usr/local/lib|usr/lib)/python3(?:\.\d+)?"
PROTECTED = [  # (rule, regex over the path relative to /)
    ("dynamic loader preload or search path", re.compile(r"etc/ld\.so\.(?:preload|conf|conf\.d(?:/.*)?)")),
    ("python start-up hook in site-packages", re.compile(_PY + r"/(?:site|dist)-packages/(?:sitecustomize\.py|usercustomize\.py|[^/]*\.pth)")),
    ("python user site", re.compile(r"root/\.local/lib/python3[^/]*(?:/.*)?")),
    ("python standard library", re.compile(_PY + r"/(?!site-packages(?:/|$)|dist-packages(?:/|$))[^/].*")),
    ("interpreter or pytest shim on PATH", re.compile(_BIN + r"/(?:python3(?:\.\d+)?|pytest|py\.test)")),
    ("the grader's runner layer", re.compile(re.escape(GRADER_DIR.lstrip("/").split("/")[0]) + r"/harnessrl(?:/.*)?")),
]
NEUTRALISED = [  # covered by the grader's own read-only binds or options: reported, not graded on
    ("tests folder (bound over read-only)", re.compile(r"tests(?:/.*)?")),
    ("verifier logs (a fresh folder per grading)", re.compile(r"logs/verifier(?:/.*)?")),
    ("conftest.py / pytest.ini outside /tests (--confcutdir, -c)", re.compile(r"(?:conftest\.py|pytest\.ini|tox\.ini|setup\.cfg)")),
]
# Harbor's test.sh runs as the grader over what the agent left (it is the task's verifier): these
# would run the agent's code in it, so a test-script task also refuses
SCRIPT_PROTECTED = [
    ("uv's install folder, which test scripts source ($HOME/.local/bin/env)", re.compile(r"root/\.(?:local/bin|cargo)(?:/.*)?")),
    ("pytest configuration above /tests, read by a test script's pytest",
     re.compile(r"(?:conftest\.py|pytest\.ini|pyproject\.toml|tox\.ini|setup\.cfg|setup\.py)")),
]
SCRIPT_SHELLS = ("bash", "sh", "dash", "env", "timeout", "python3", "python")  # env, python3: the uv shim's #! line
# Protected folders as component patterns: the upper folder holding one of these, or an ancestor, as a
# non-directory (a symlink, a whiteout, i.e. a deletion, a file) or an opaque folder redirects or
# hides the whole tree below, whatever its contents (a test script's: the image's ENV PATH folders too).
PROTECTED_ROOTS = [tuple(p.split("/")) for p in (
    "usr/local/sbin", "usr/local/bin", "usr/sbin", "usr/bin", "sbin", "bin", r"usr/lib/python3(?:\.\d+)?",
    r"usr/local/lib/python3(?:\.\d+)?", "lib", "lib64", "usr/lib", "usr/lib64", "usr/local/lib",
    r"lib/\w+-linux-gnu\w*", r"usr/lib/\w+-linux-gnu\w*", "etc", "opt/harnessrl/grader", "opt/harnessrl/bin")]
MAX_SCAN = 200_000
TRUST_BASE = True  # the verdict process from the pristine tree (trust.py); False only to show an attack is real
SCAN_UPPER = True  # the deny-list diagnosis for pytest-file tasks (a test script's rules always apply)
SERVICE_START_S = 10.0  # an image service restarted for the tests: the longest wait for it to listen
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def path_folders(path_env: str) -> list[str]:
    """The image's ENV PATH folders, relative to / (the grader's own tools folder left out)."""
    return [d.strip("/") for d in path_env.split(":") if d.startswith("/") and d.strip("/")
            and not d.startswith(TRUSTED_AT) and ".." not in d.split("/")]


def _bins(path_env: str) -> str:
    extra = "|".join(re.escape(d) for d in path_folders(path_env))
    return _BIN[:-1] + (f"|{extra})" if extra else ")")


def path_rules(path_env: str) -> list[tuple[str, re.Pattern]]:
    """The interpreter/pytest shim rule over the image's own ENV PATH folders too (/opt/venv/bin, ...)."""
    return [("interpreter or pytest shim on the image's PATH",
             re.compile(_bins(path_env) + r"/(?:python3(?:\.\d+)?|pytest|py\.test)"))]


def script_rules(script: str, path_env: str = DEFAULT_PATH) -> list[tuple[str, re.Pattern]]:
    """Extra protected paths for a task graded by its test script, whose commands come from the merged
    view: the shells (and env, python3: the uv shim's #! line), every command name the script mentions,
    in a bin folder or a folder of the image's ENV PATH; any shared library under a lib folder (what
    those commands map); the NSS configuration; and the SCRIPT_PROTECTED paths."""
    words = set(re.findall(r"[A-Za-z0-9_][A-Za-z0-9_.+-]*", script)) | set(SCRIPT_SHELLS)
    names = "|".join(sorted(re.escape(w) for w in words))
    return [*SCRIPT_PROTECTED,
            ("a command the test script runs, replaced or shadowed", re.compile(_bins(path_env) + rf"/(?:{names})")),
            ("a shared library under a lib folder", re.compile(r"(?:usr/(?:local/)?)?lib(?:32|64|x32)?(?:/.*)?/[^/]*\.so(?:\.[^/]*)?")),
            ("the name service switch (NSS modules are loaded by name from it)", re.compile(r"etc/nsswitch\.conf"))]


def _redirects(entry: os.DirEntry) -> bool:
    """A non-directory (symlink, whiteout, file) or an opaque directory: the lower tree at that path is gone."""
    if not entry.is_dir(follow_symlinks=False):
        return True
    try:
        return os.getxattr(entry.path, "trusted.overlay.opaque", follow_symlinks=False) == b"y"
    except OSError:
        return False


def _ancestor_or_self(rel: str, roots) -> bool:
    parts = rel.split("/")
    return any(len(parts) <= len(root) and all(re.fullmatch(r, p) for r, p in zip(root, parts)) for root in roots)


@dataclass
class ImageVerdict:
    status: str  # "graded" | "grader_tamper" | "test_error"
    report: dict | None = None
    why: str = ""
    tamper: list[tuple[str, str]] = field(default_factory=list)
    neutralised: list[tuple[str, str]] = field(default_factory=list)
    run: SandboxResult | None = None  # the test run (None when not graded)
    rewards: dict[str, float] | None = None  # a test-script task: its named rewards (reward.txt/json)

    @property
    def reward(self) -> float:
        if self.status != "graded":
            return 0.0
        if self.rewards is not None:
            return self.rewards.get("reward", sum(self.rewards.values()) / len(self.rewards))
        return 1.0 if self.report is not None and self.report["exitstatus"] == 0 else 0.0

    @property
    def solved(self) -> bool:
        return self.reward >= 1.0 - 1e-9


def scan_upper(upper: Path, extra: list[tuple[str, re.Pattern]] = (), path_env: str | None = None
               ) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """(tampered, neutralised): the upper layer's entries (whiteouts, i.e. deletions, included)
    matching a protected (or `extra`) or a neutralised rule, or redirecting a protected folder or one
    of its ancestors, as (path, rule). `path_env` (a test script's: its commands are found through
    it): the image's ENV PATH folders are protected too, shims and redirections alike; not for pytest
    files, whose verdict process never uses them (an agent may well build the venv on its PATH).
    Iterative, bounded, no symlink followed."""
    protected = [*PROTECTED, *(path_rules(path_env) if path_env else ()), *extra]
    roots = [*PROTECTED_ROOTS, *(tuple(re.escape(c) for c in d.split("/")) for d in path_folders(path_env or ""))]
    redirect_rule = "a protected folder or its ancestor replaced (symlink, deletion or opaque folder)"
    tampered, neutralised = [], []
    stack, seen = [""], 0
    while stack:
        rel_dir = stack.pop()
        try:
            entries = list(os.scandir(upper / rel_dir if rel_dir else upper))
        except OSError:
            continue
        for entry in entries:
            seen += 1
            rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
            if seen > MAX_SCAN:
                return [*tampered, (rel_dir, f"more than {MAX_SCAN} changed entries: not inspected")], neutralised
            hit = next((rule for rule, rx in protected if rx.fullmatch(rel)), None)
            if hit is None and _ancestor_or_self(rel, roots) and _redirects(entry):
                hit = redirect_rule
            if hit:
                tampered.append((f"/{rel}", hit))
                continue
            soft = next((rule for rule, rx in NEUTRALISED if rx.fullmatch(rel)), None)
            if soft:
                neutralised.append((f"/{rel}", soft))
                continue
            if entry.is_dir(follow_symlinks=False):
                stack.append(rel)
    return tampered, neutralised


def grade_in_image(task: Task, store: ImageStore, built: Built, ws: Workspace, root: EpisodeRoot,
                   sandbox: Sandbox, timeout_s: float = 60.0, network=None, hosts: tuple | list = ()) -> ImageVerdict:
    """Stop the agent, check its changes, run the hidden tests in the grader image over them: its
    pytest files, or (test_runner "script", Harbor's contract) `bash /tests/test.sh`, whose
    reward.txt / reward.json in a fresh /logs/verifier is the verdict. `network`: the episode's, where
    its compose sidecars still run (the tests reach them by name: `hosts` into /etc/hosts)."""
    stop_agent(ws, sandbox)
    script = task.test_runner == "script" and task.test_script
    image_path = root.env.get("PATH") or DEFAULT_PATH
    extra = script_rules((task.tests_dir / task.test_script).read_text(errors="replace"), image_path) if script else []
    tampered, neutralised = scan_upper(root.upper, extra, image_path if script else None)
    if tampered and (SCAN_UPPER or script):
        return ImageVerdict("grader_tamper", why="; ".join(f"{p} ({r})" for p, r in tampered[:5]),
                            tamper=tampered, neutralised=neutralised)
    root.close()  # the agent's overlay goes; its upper folder stays until the workspace closes
    with Workspace.create(None, quota_mb=64) as gws:
        groot = EpisodeRoot.create(store, built.grader_image, gws, on_top=(root.upper, ws.uid, ws.gid),
                                   guard=guard_layer(gws) if TRUST_BASE else None)
        try:
            base = TrustBase.mount(groot) if TRUST_BASE else None
        except (TrustError, ImageError) as err:
            return ImageVerdict("test_error", why=f"no trusted base: {err}", neutralised=neutralised)
        if base is not None:  # a pristine link out of the tree lands in the merged view: was it changed there?
            hit = [(link, target) for link, target in base.escaping_links() if changed_in(root.upper, base.host, target)]
            if hit:
                why = "; ".join(f"{t} (the trusted tree's link {ln} points there)" for ln, t in hit[:5])
                return ImageVerdict("grader_tamper", why=why, neutralised=neutralised,
                                    tamper=[(t, "target of a trusted link out of the pristine tree") for _, t in hit])
        sandbox.attach_image(gws, groot)
        if hosts:
            write_hosts(groot.merged, gws.uid, gws.gid, list(hosts))
        if network is not None and service_start(groot) is not None:
            _restart_service(store, built, ws, root, sandbox, network, hosts, gws)
        path = groot.env.get("PATH") or DEFAULT_PATH
        fixed = base.env(groot.env, task.env) | {"PATH": path} if base else {}
        graded = replace(task, env={**task.env, **fixed, "PYTHONNOUSERSITE": "1"})
        if script:
            tools = f"{TRUSTED_AT if base else ''}{TOOLS_DIR}"
            rewards, why, run = run_test_script(graded, gws, sandbox, timeout_s, env={"PATH": f"{tools}:{path}"},
                                                cwd=groot.workdir, network=network,
                                                shell=base.argv(base.bash) if base and base.bash else None)
            if rewards is None:
                return ImageVerdict("test_error", why=why, neutralised=neutralised, run=run)
            return ImageVerdict("graded", neutralised=neutralised, run=run, rewards=rewards)
        if base is None:  # the old way, for the tests that show an attack is real: the merged view's python3
            report, why, run = run_pytest(graded, gws, sandbox, timeout_s, python="python3", runner_path=(GRADER_DIR,),
                                          network=network)
        else:
            child = child_python(groot.merged, path)
            report, why, run = run_pytest(
                graded, gws, sandbox, timeout_s, python=base.python_argv, runner_path=(TRUSTED_AT + GRADER_DIR,),
                network=network, child_python=child,
                agent_paths=agent_paths(groot.merged, child, base.version, task.env.get("PYTHONPATH", "")))
    if report is None:
        return ImageVerdict("test_error", why=why, neutralised=neutralised, run=run)
    return ImageVerdict("graded", report=report, neutralised=neutralised, run=run)


def _restart_service(store: ImageStore, built: Built, ws: Workspace, root: EpisodeRoot, sandbox: Sandbox,
                     network, hosts, gws: Workspace) -> None:
    """The image's ENTRYPOINT/CMD service was stopped with the agent; the tests may talk to it (a
    server on port 80). It starts again for them over what the agent left (the task image plus the
    agent's upper folder), in the episode's network, but in its OWN root and uid: it shares no file
    and no process with the test run, only the network. It ends with the grader's workspace."""
    sws = Workspace.create(None, quota_mb=64, scratch_mb=512, scratch_inodes=50_000)
    gws.on_close(sws.close)
    sroot = EpisodeRoot.create(store, built.image, sws, on_top=(root.upper, ws.uid, ws.gid))
    sandbox.attach_image(sws, sroot)
    if hosts:
        write_hosts(sroot.merged, sws.uid, sws.gid, list(hosts))
    before = network.listening()
    proc = sandbox.spawn(service_start(sroot), sws, cwd=sroot.workdir, network=network, stdin=False, lifetime_s=3600)
    sws.on_close(proc.close)
    wait_listening(network, proc, before, SERVICE_START_S)
