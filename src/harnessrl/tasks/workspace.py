"""A per-episode fresh copy of a task's workspace, and file operations that cannot escape it.

The agent sees a workspace at `/app` inside the sandbox. On the host it is a private directory
with its own quota and its own unprivileged uid, created for one episode and destroyed after:

    <base>/<uid>/            root-owned "home" of the episode (never visible to the agent)
        app/                 the workspace: a size-limited tmpfs (when root) owned by <uid>
        etc/passwd, group    a passwd entry for <uid> bound over /etc/passwd in the sandbox
        scratch/             a second size- and inode-capped tmpfs (when root) holding
            private/<name>/  extra directories owned by <uid> (e.g. a tmux socket dir)
            cmd-<n>/tmp,shm  one sandbox call's /tmp and /dev/shm, removed when the call ends

Why a uid per workspace: RLIMIT_NPROC counts every process of a uid, so concurrent episodes
sharing one uid would let a fork bomb in one starve the others; with one uid each, limits are
per episode and a leftover process can only ever belong to its own episode.

Why a tmpfs: RLIMIT_FSIZE caps one file, not a directory; the tmpfs `size=` caps the whole
workspace (and `nr_inodes=` the number of files), so filling the disk stops at the quota. The
same holds for every other directory the sandbox can write (/tmp, /dev/shm, private dirs): they
live on the scratch tmpfs, `scratch_mb` and `scratch_inodes` for the whole episode together.
Without root, the workspace is a plain directory and `quota_mb` is reported as None; the
sandbox then gives each call a bwrap tmpfs with a size but no inode cap (bwrap has no option).

File operations (fileops.py) resolve every path without following a symlink out of the
workspace; see that module for how.

Public API::

    ws = Workspace.create(source_dir, quota_mb=256)    # or Workspace.create(None) for empty
    ws.root, ws.uid, ws.gid, ws.quota_mb
    ws.read_text(path) / read_bytes(path)            -> str / bytes
    ws.write_text(path, text) / write_bytes(...)     creates parent directories
    ws.str_replace(path, old, new, count=1)          -> number replaced (EditError if not exactly `count`)
    ws.replace_all(path, old, new)                   -> number replaced (EditError if none)
    ws.insert(path, line, text)                      insert after line `line` (0 = top)
    ws.exists / is_file / is_dir / delete / listdir(path) / files() / snapshot()
    ws.private_dir(name)                             host dir owned by uid, outside /app
    ws.close()                                       unmount and delete everything

Paths may be relative (`src/x.py`) or absolute inside the sandbox (`/app/src/x.py`).
"""

from __future__ import annotations

import ctypes
import os
import secrets
import shutil
import subprocess
import tempfile
import weakref
from pathlib import Path

from harnessrl.tasks.cgroup import cleanup_stale as cgroup_cleanup_stale
from harnessrl.tasks.fileops import APP, EditError, SafeFiles, WorkspaceError

DEFAULT_BASE = Path(tempfile.gettempdir()) / "harnessrl-workspaces"
UID_RANGE = (200_000, 900_000)  # away from system/login uids and the usual subuid ranges


# ---------------------------------------------------------------------------------------
# Mounting (root only). ctypes instead of the mount(8) binary: one syscall, no fork.

_libc = ctypes.CDLL(None, use_errno=True)
_MS_NOSUID, _MS_NODEV = 2, 4
_MNT_DETACH = 2


def _mount_tmpfs(target: Path, size_mb: int, inodes: int) -> bool:
    opts = f"size={size_mb}m,nr_inodes={inodes},mode=0755".encode()
    return _libc.mount(b"tmpfs", str(target).encode(), b"tmpfs", _MS_NOSUID | _MS_NODEV, opts) == 0


def _umount(target: Path) -> None:
    _libc.umount2(str(target).encode(), _MNT_DETACH)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _destroy(home: Path, mounted: bool) -> None:
    if mounted:
        _umount(home / "app")
    if os.path.ismount(home / "scratch"):
        _umount(home / "scratch")
    remove_tree(home)


def remove_call_dir(path: Path) -> None:
    """Remove a `call_dirs()` directory: three rmdirs when the call left nothing behind (the
    usual case, no fork), `remove_tree` otherwise."""
    try:
        for sub in ("tmp", "shm", ""):
            os.rmdir(path / sub if sub else path)
    except FileNotFoundError:
        pass
    except OSError:
        remove_tree(path)


def remove_tree(path: Path) -> None:
    """Delete a directory tree the agent may have shaped (thousands of levels deep, paths past
    PATH_MAX): an empty one directly, otherwise GNU `rm -rf`, which walks it without recursion
    limits and never follows symlinks or leaves the file system."""
    try:
        os.rmdir(path)
        return
    except FileNotFoundError:
        return
    except OSError:
        pass
    subprocess.run(["rm", "-rf", "--one-file-system", "--", str(path)], check=False,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={"PATH": "/usr/bin:/bin"})


def cleanup_stale(base: Path = DEFAULT_BASE) -> int:
    """Remove workspaces whose owning process died without closing them, and (root) the episode
    cgroups such a process left (cgroup.py). Returns how many workspaces were removed."""
    cgroup_cleanup_stale()  # a kill -9'd run leaves both; its cgroups do not live under `base`
    removed = 0
    if not base.is_dir():
        return 0
    for home in base.iterdir():
        try:
            pid = int((home / "owner.pid").read_text())
        except (OSError, ValueError):
            continue
        if not _pid_alive(pid):
            _destroy(home, os.path.ismount(home / "app"))  # also unmounts scratch/
            removed += 1
    return removed


_cleaned: set[Path] = set()


# ---------------------------------------------------------------------------------------


class Workspace(SafeFiles):
    """One episode's workspace. Create with `Workspace.create`; close (or use `with`) after."""

    def __init__(self, home: Path, uid: int, gid: int, quota_mb: int | None, mounted: bool):
        self.home = home
        self.root = home / "app"
        self.uid = uid
        self.gid = gid
        self.quota_mb = quota_mb
        self.etc = home / "etc"
        self.scratch = home / "scratch" if os.path.ismount(home / "scratch") else None
        self._calls = 0
        self._on_close: list = []
        self._finalizer = weakref.finalize(self, _destroy, home, mounted)

    # -- lifecycle ----------------------------------------------------------------------

    @classmethod
    def create(
        cls,
        source: str | Path | None = None,
        *,
        quota_mb: int = 256,
        max_files: int = 50_000,
        scratch_mb: int = 256,
        scratch_inodes: int = 16_384,
        base: str | Path = DEFAULT_BASE,
    ) -> Workspace:
        """A fresh workspace holding a copy of `source` (a directory; None for empty)."""
        base = Path(base)
        if base not in _cleaned:
            _cleaned.add(base)
            cleanup_stale(base)
        base.mkdir(mode=0o711, parents=True, exist_ok=True)
        root_user = os.geteuid() == 0
        if root_user:
            while True:  # mkdir is atomic: the directory name claims the uid among all processes
                uid = UID_RANGE[0] + secrets.randbelow(UID_RANGE[1] - UID_RANGE[0])
                home = base / str(uid)
                try:
                    home.mkdir(mode=0o755)
                    break
                except FileExistsError:
                    continue
            gid = uid
        else:
            home = Path(tempfile.mkdtemp(prefix="ws-", dir=base))
            uid, gid = os.getuid(), os.getgid()
        (home / "owner.pid").write_text(str(os.getpid()))
        app = home / "app"
        app.mkdir()
        mounted = root_user and _mount_tmpfs(app, quota_mb, max_files)
        if mounted:
            (home / "scratch").mkdir()
            if not _mount_tmpfs(home / "scratch", scratch_mb, scratch_inodes):
                (home / "scratch").rmdir()
        ws = cls(home, uid, gid, quota_mb if mounted else None, mounted)
        try:
            if source is not None:
                source = Path(source)
                if not source.is_dir():
                    raise WorkspaceError(f"workspace source {source} is not a directory")
                shutil.copytree(source, app, symlinks=True, dirs_exist_ok=True)
            ws._write_identity()
            if root_user:
                for dirpath, dirnames, filenames in os.walk(app):
                    os.lchown(dirpath, uid, gid)
                    for name in dirnames + filenames:
                        os.lchown(os.path.join(dirpath, name), uid, gid)
        except BaseException:
            ws.close()
            raise
        return ws

    def _write_identity(self) -> None:
        # git, ssh and Python's getpass look the uid up in /etc/passwd; give it a name.
        self.etc.mkdir(exist_ok=True)
        passwd = Path("/etc/passwd").read_text().splitlines() if Path("/etc/passwd").exists() else []
        group = Path("/etc/group").read_text().splitlines() if Path("/etc/group").exists() else []
        passwd = [ln for ln in passwd if not ln.startswith("agent:")] + [f"agent:x:{self.uid}:{self.gid}:agent:/tmp:/bin/bash"]
        group = [ln for ln in group if not ln.startswith("agent:")] + [f"agent:x:{self.gid}:"]
        (self.etc / "passwd").write_text("\n".join(passwd) + "\n")
        (self.etc / "group").write_text("\n".join(group) + "\n")

    def import_path(self, source: str | Path, dest: str) -> None:
        """Copy a host file or directory into the workspace at `dest` (before the agent starts)."""
        rel = self.relpath(dest)
        if not rel:
            raise WorkspaceError("import_path needs a destination inside the workspace")
        source = Path(source)
        if source.is_dir():
            for path in sorted(source.rglob("*")):
                if path.is_file() and not path.is_symlink():
                    self.write_bytes(f"{rel}/{path.relative_to(source).as_posix()}", path.read_bytes())
        else:
            self.write_bytes(rel, source.read_bytes())
            if os.access(source, os.X_OK):
                (self.root / rel).chmod(0o755)

    def private_dir(self, name: str) -> Path:
        """A host directory owned by the workspace uid, outside /app (bind it where needed)."""
        if not name or "/" in name or name in (".", ".."):
            raise ValueError(f"private_dir name {name!r} must be a plain name")
        path = (self.scratch or self.home) / "private" / name
        path.mkdir(parents=True, exist_ok=True)
        if os.geteuid() == 0:
            os.chown(path, self.uid, self.gid)
        path.chmod(0o700)
        return path

    def call_dirs(self) -> Path | None:
        """A fresh `<scratch>/cmd-<n>/` holding empty `tmp` and `shm` dirs owned by the uid, for
        one sandbox call (None without a scratch tmpfs). Remove it with `remove_call_dir` after."""
        if self.scratch is None:
            return None
        self._calls += 1
        d = self.scratch / f"cmd-{os.getpid()}-{self._calls}-{secrets.token_hex(4)}"
        d.mkdir(mode=0o755)
        for sub in ("tmp", "shm"):
            (d / sub).mkdir(mode=0o700)
            os.chown(d / sub, self.uid, self.gid)
        return d

    def on_close(self, callback) -> None:
        """Run `callback()` when the workspace is closed (e.g. to stop helpers tied to it)."""
        self._on_close.append(callback)

    def close(self) -> None:
        while self._on_close:
            self._on_close.pop()()
        self._finalizer()

    @property
    def closed(self) -> bool:
        return not self._finalizer.alive

    def __enter__(self) -> Workspace:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Workspace({str(self.root)!r}, uid={self.uid}, quota_mb={self.quota_mb})"


__all__ = ["APP", "EditError", "Workspace", "WorkspaceError", "cleanup_stale", "remove_call_dir", "remove_tree"]
