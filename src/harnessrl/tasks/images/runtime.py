"""ImageTaskRuntime: TaskRuntime's API for a task that runs in its own image (runtime = "image").

    with ImageTaskRuntime(task, sandbox) as rt:   # builds (or finds) the image, mounts the episode root,
        rt.instruction                            # starts ENTRYPOINT/CMD in the background
        rt.workspace.read_text("app.py")          # relative to WORKDIR; absolute paths anywhere in the image
        rt.run("apt list --installed | wc -l")    # every command in the image, under the jail
        rt.apply_solution()                       # the reference solution, as the agent would run it
        score = rt.score()                        # grading in the image (tasks/images/grading.py) -> Score
        rt.metadata                               # image, build key, substitutions: for Episode.metadata

`task.root` is the task folder (Terminal-Bench or Harbor) whose Dockerfile is built. The episode
has one loopback-only network namespace (tasks/netns.py): every command, the ENTRYPOINT service,
the compose sidecars (services.py, started first, each healthy) and the grader's test run join it. File
operations on the harness side go through `ImageFiles`: the same containment-checked resolution
as a workspace (fileops.py), over the episode's merged root, with "/" as the mount point.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from harnessrl.tasks.base import Task
from harnessrl.tasks.fileops import SafeFiles, WorkspaceError, walk_files
from harnessrl.tasks.images.build import Built, build_task, task_build_spec
from harnessrl.tasks.images.grading import grade_in_image
from harnessrl.tasks.images.rootfs import EpisodeRoot, start_in_background
from harnessrl.tasks.images.services import Services, wait_listening, write_hosts
from harnessrl.tasks.images.store import ImageStore
from harnessrl.tasks.netns import EpisodeNetwork
from harnessrl.tasks.runtime import replay_solution
from harnessrl.tasks.sandbox import Sandbox, SandboxResult
from harnessrl.tasks.scoring import Score, classify
from harnessrl.tasks.terminal import TerminalError, TmuxTerminal
from harnessrl.tasks.workspace import Workspace

log = logging.getLogger(__name__)


class ImageFiles(SafeFiles):
    """Harness-side file operations in an episode's root: relative paths start at WORKDIR."""

    mount = "/"

    def __init__(self, root: EpisodeRoot, uid: int, gid: int):
        self.root, self.uid, self.gid = root.merged, uid, gid
        self.workdir = root.workdir

    def relpath(self, path) -> str:
        p = str(path)
        return super().relpath(p if p.startswith("/") else f"{self.workdir.rstrip('/')}/{p}")

    def files(self, skip: tuple[str, ...] = (".git",)) -> list[str]:
        """Every regular file under WORKDIR (relative to it); never walks through a symlink."""
        work = self.relpath("")
        current = self.root
        for part in [p for p in work.split("/") if p]:
            current = current / part
            if current.is_symlink() or not current.is_dir():
                raise WorkspaceError(f"{self.workdir}: not a plain directory")
        return walk_files(current, skip)


class ImageTaskRuntime:
    def __init__(self, task: Task, sandbox: Sandbox, *, store: ImageStore | None = None, built: Built | None = None,
                 quota_mb: int = 256, scratch_mb: int = 2048, scratch_inodes: int = 200_000):
        self.task, self.sandbox = task, sandbox
        self.store = store or ImageStore.default()
        self.built = built or build_task(self.store, task_build_spec(task.root), say=log.info)
        sandbox.hide(task.root)
        # one loopback-only network per episode: the agent's commands, its ENTRYPOINT service, the
        # compose sidecars and the grader's test run all join it (services.py)
        self.network = EpisodeNetwork(low_ports=True)  # a task's server on port 80
        self.names = [self.built.service_name, *[svc["name"] for svc in self.built.services]]
        self.service = self.services = None
        self._terminals: list[TmuxTerminal] = []
        # the agent's changes to the image live on the scratch tmpfs: its size is the episode's disk quota
        self.ws = Workspace.create(None, quota_mb=quota_mb, scratch_mb=scratch_mb, scratch_inodes=scratch_inodes)
        try:
            self.services = Services(self.store, sandbox, self.built.services, self.network, self.names)
            self.root = EpisodeRoot.create(self.store, self.built.image, self.ws)
            sandbox.attach_image(self.ws, self.root)
            if self.built.services:
                write_hosts(self.root.merged, self.ws.uid, self.ws.gid, self.names)
            self.workspace = ImageFiles(self.root, self.ws.uid, self.ws.gid)
            before = self.network.listening()
            self.service = start_in_background(sandbox, self.ws, self.root, network=self.network)
            if self.service is not None:
                wait_listening(self.network, self.service, before)
        except BaseException:
            self.close()
            raise

    @property
    def instruction(self) -> str:
        return self.task.instruction

    @property
    def metadata(self) -> dict:
        """What ran: the image, its build key and every base-image substitution."""
        return {"runtime": "image", "image": self.built.image, "build_key": self.built.key,
                "substitutions": [s["note"] for s in self.built.stand_ins],
                "services": [svc["name"] for svc in self.built.services]}

    def run(self, command: str, *, timeout_s: float | None = None, stdin: str | None = None,
            env: Mapping[str, str] | None = None) -> SandboxResult:
        """A shell command (bash -c) in the image, from WORKDIR, under the jail."""
        return self.sandbox.run(command, self.ws, timeout_s=timeout_s, stdin=stdin, env=dict(env or {}),
                                cwd=self.root.workdir, network=self.network)

    def terminal(self, **kwargs) -> TmuxTerminal:
        """A tmux terminal in the image (its own tmux: Terminal-Bench's base images carry one)."""
        if not any((self.root.merged / d / "tmux").exists() for d in ("usr/bin", "usr/local/bin", "bin")):
            raise TerminalError(f"{self.task.id}: the task image has no tmux; install it in the Dockerfile "
                                "(Terminal-Bench's base images have it) or use a harness without a terminal")
        term = TmuxTerminal(self.sandbox, self.ws, network=self.network, **kwargs)
        self._terminals.append(term)
        return term

    def apply_solution(self, timeout_s: float = 300.0) -> SandboxResult | None:
        return replay_solution(self.task, self.workspace, lambda script, binds: self.sandbox.run(
            script, self.ws, timeout_s=timeout_s, binds=binds, cwd=self.root.workdir, network=self.network))

    def score(self) -> Score:
        """Stop the agent (its service and terminals too), grade in the image; grader_tamper and test_error score 0."""
        for term in self._terminals:
            term.close()
        if self.service is not None:
            self.service.close()
        verdict = grade_in_image(self.task, self.store, self.built, self.ws, self.root, self.sandbox,
                                 timeout_s=self.task.meta.test_timeout_s, network=self.network,
                                 hosts=self.names if self.built.services else ())
        run = verdict.run or SandboxResult("ok", None, "", "", 0.0)
        if verdict.status != "graded":
            return Score(verdict.status, (), 0.0, run, verdict.why)
        if verdict.rewards is not None:  # Harbor's test.sh: its reward decides (named rewards in the detail)
            detail = ", ".join(f"{k}={v:g}" for k, v in verdict.rewards.items())
            return Score("solved" if verdict.solved else "dropped_requirement", (), verdict.reward, run, detail)
        outcome, results, detail = classify(self.task, verdict.report["results"])
        return Score(outcome, results, 1.0 if outcome == "solved" else 0.0, run, detail)

    def close(self) -> None:
        for term in self._terminals:
            term.close()
        if self.service is not None:
            self.service.close()
        self.ws.close()
        if self.services is not None:
            self.services.close()
        self.network.close()

    def __enter__(self) -> ImageTaskRuntime:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
