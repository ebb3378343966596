"""The Python tree seen through a private mount namespace, for an unprivileged sandbox.

As root, the sandbox drops to the workspace's uid before bwrap runs; a Python tree under a
directory that uid cannot traverse (`/root/.pyenv`, a venv under `/root`) is then unreadable.
Such trees are bind-mounted onto world-readable staging dirs inside a private mount namespace
held by one small helper process per workspace; each command joins it with `nsenter` (one
exec) instead of building it each time (three).
"""

from __future__ import annotations

import functools
import subprocess
import tempfile
import threading
import weakref
from collections.abc import Sequence
from pathlib import Path


class SandboxUnavailable(RuntimeError):
    """bubblewrap is missing (or unusable) and unsafe mode was not chosen."""


def _accessible_to_others(path: Path) -> bool:
    """Can an unprivileged uid traverse every ancestor and read `path`? (mode bits only)"""
    path = path.resolve()
    for p in [*reversed(path.parents), path]:
        try:
            mode = p.stat().st_mode
        except OSError:
            return False
        if not mode & 0o001:
            return False
    return bool(path.stat().st_mode & 0o004)



class PythonTreeStage:
    """Which read-only trees need staging, and the per-workspace namespace holders."""

    def __init__(self, ro_paths: Sequence[Path], state_dir: str | Path | None = None):
        self.staged: list[tuple[Path, Path]] = []
        todo = [p for p in ro_paths if p.exists() and not _accessible_to_others(p)]
        if todo:
            base = Path(state_dir) if state_dir else Path(tempfile.gettempdir()) / "harnessrl-sandbox"
            base.mkdir(mode=0o755, parents=True, exist_ok=True)
            for i, p in enumerate(ro_paths):
                if p in todo:
                    stage = base / f"stage-{i}"
                    stage.mkdir(mode=0o755, exist_ok=True)
                    self.staged.append((p, stage))
        self._helpers: dict[str, subprocess.Popen] = {}
        self._lock = threading.Lock()
        weakref.finalize(self, _stop_helpers, self._helpers, None)

    def __getstate__(self) -> dict:  # picklable: helpers stay behind
        return {"staged": self.staged}

    def __setstate__(self, state: dict) -> None:
        self.staged = state["staged"]
        self._helpers, self._lock = {}, threading.Lock()
        weakref.finalize(self, _stop_helpers, self._helpers, None)

    def holder(self, ws) -> int:
        """pid of a process holding a private mount namespace in which the unreadable trees are
        bind-mounted onto their staging dirs; commands join it with nsenter (one exec) instead
        of building it each time (three). A private namespace is a snapshot of the host's
        mounts, and the host's mounts do not propagate here, so a holder must be started after
        the workspace's tmpfs is mounted: one per workspace, stopped when the workspace goes."""
        key = str(ws.home)
        with self._lock:
            proc = self._helpers.get(key)
            if proc is not None and proc.poll() is None:
                return proc.pid
            script = ('while [ "$1" != -- ]; do mount --bind "$1" "$2" || exit 125; shift 2; done; '
                      'echo ready; exec cat >/dev/null')  # lives until our end of its stdin closes
            pairs = [str(x) for src, stage in self.staged for x in (src, stage)]
            proc = subprocess.Popen(
                ["unshare", "-m", "--propagation", "private", "--", "/bin/sh", "-c", script, "sh", *pairs, "--"],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
                env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"},
            )
            if proc.stdout.readline().strip() != b"ready":
                proc.kill()
                raise SandboxUnavailable(f"cannot stage the Python tree for the sandbox: {proc.stderr.read().decode()}")
            self._helpers[key] = proc
            ws.on_close(functools.partial(_stop_helpers, self._helpers, key))
            weakref.finalize(ws, _stop_helpers, self._helpers, key)
            return proc.pid


def _stop_helpers(helpers: dict[str, subprocess.Popen], key: str | None) -> None:
    """Stop the namespace holder of one workspace (key) or all of them (None)."""
    for k in [key] if key is not None else list(helpers):
        proc = helpers.pop(k, None)
        if proc is None:
            continue
        try:
            proc.stdin.close()
            proc.wait(timeout=2)
        except (OSError, subprocess.TimeoutExpired):
            proc.kill()
            proc.wait()
        for f in (proc.stdout, proc.stderr):
            f.close()
