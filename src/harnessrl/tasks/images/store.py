"""Where task images live and how podman/buildah are called on them (no daemon, no registry).

    store = ImageStore.default()             # $HARNESSRL_IMAGES, else ~/.cache/harnessrl/images
    store.podman("images")                   # CompletedProcess; every call uses the store's own storage
    store.exists("docker.io/library/debian:13"), store.image_id(ref), store.labels(ref)
    with store.mounted(ref) as root: ...     # the image's root file system, read through the host
    store.du() -> {"storage_bytes": .., "builds": [..]}; store.prune(budget_bytes)

Layout (all harnessrl's own, never the machine's /var/lib/containers):

    <root>/storage   podman/buildah graph root (kernel overlay driver)
    <root>/run       their run root (locks, mount state; in /tmp when <root> is too deep for podman)
    <root>/builds    one folder per task build key: build.log, meta.json
    <root>/locks     one lock file per build key (fcntl): two builders of one key never race

Facts of this kind of machine (root, cgroup v1 + a systemd name hierarchy, no registry): podman
needs `--runtime runc` (crun refuses the hybrid cgroup layout), the cgroupfs manager and explicit
ulimits; nothing is ever pulled (`--pull=never`), base images come from `images base`.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import resource
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path


def _ulimits() -> list[str]:
    """Explicit limits for every container (podman 4.3 with runc here fails without them): the host's
    own hard limits, capped (runc's init was refused nproc 32768 on a host whose hard limit was 96362)."""
    out = []
    for name, res, cap in (("nofile", resource.RLIMIT_NOFILE, 65536), ("nproc", resource.RLIMIT_NPROC, 16384)):
        hard = resource.getrlimit(res)[1]
        value = cap if hard == resource.RLIM_INFINITY else min(hard, cap)
        out += ["--ulimit", f"{name}={value}:{value}"]
    return out


ULIMITS = _ulimits()
TOOLS = ("podman", "buildah", "runc", "debootstrap")


class ImageError(RuntimeError):
    """A build or image operation failed; the message names what and where the log is."""


class BuildRefused(Exception):
    """A task this machine cannot build or run (a second service without a stand-in, ...): `code` is the
    machine-readable reason `tasks check` prints."""

    def __init__(self, code: str, reason: str):
        super().__init__(f"{code}: {reason}")
        self.code, self.reason = code, reason


def missing_tools() -> list[str]:
    """The Debian packages image builds need that this machine lacks (scripts/setup-system.sh installs them)."""
    return [t for t in TOOLS if shutil.which(t) is None and not Path(f"/usr/sbin/{t}").exists()]


def images_unavailable() -> str | None:
    """Why images cannot be built here, or None: the tools are missing, or we are not root (the overlay
    storage driver, debootstrap and per-episode mounts need root)."""
    missing = missing_tools()
    if missing:
        return f"missing tools {missing} (run scripts/setup-system.sh, or apt-get install {' '.join(missing)})"
    if os.geteuid() != 0:
        return "task images need root (overlay storage, debootstrap, per-episode mounts); run as root or in a container"
    return None


@dataclass(frozen=True)
class ImageStore:
    root: Path

    @staticmethod
    def default() -> ImageStore:
        env = os.environ.get("HARNESSRL_IMAGES")
        root = Path(env) if env else Path.home() / ".cache" / "harnessrl" / "images"
        return ImageStore(root.absolute())

    # -- calling the tools ------------------------------------------------------------------

    @property
    def run_root(self) -> Path:
        """podman refuses a run root longer than 50 characters: a deep store gets a short one in /tmp."""
        run = self.root / "run"
        if len(str(run)) <= 50:
            return run
        return Path(tempfile.gettempdir()) / f"harnessrl-run-{hashlib.sha256(str(self.root).encode()).hexdigest()[:12]}"

    def _storage_flags(self) -> list[str]:
        return ["--root", str(self.root / "storage"), "--runroot", str(self.run_root), "--storage-driver", "overlay"]

    def _env(self) -> dict[str, str]:
        # A private registries.conf: short names resolve to docker.io locally and are never pulled or prompted for.
        return {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME": str(self.root),
                "CONTAINERS_REGISTRIES_CONF": str(self._registries_conf()), "BUILDAH_RUNTIME": "runc",
                "TMPDIR": str(self.root / "tmp"), "LANG": "C.UTF-8"}

    def _registries_conf(self) -> Path:
        path = self.root / "registries.conf"
        if not path.exists():
            for d in ("storage", "run", "tmp", "builds", "locks"):
                (self.root / d).mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(".tmp")
            tmp.write_text('unqualified-search-registries = ["docker.io"]\nshort-name-mode = "permissive"\n')
            tmp.replace(path)
        return path

    def podman(self, *args: str, check: bool = True, log: Path | None = None, timeout: float | None = None,
               input: bytes | None = None) -> subprocess.CompletedProcess:
        argv = ["podman", *self._storage_flags(), "--runtime", "runc", "--cgroup-manager", "cgroupfs",
                "--events-backend", "file", *args]
        return self._call(argv, f"podman {' '.join(args[:2])}", check, log, timeout, input)

    def buildah(self, *args: str, check: bool = True, log: Path | None = None, timeout: float | None = None,
                on_line: Callable[[str], None] | None = None) -> subprocess.CompletedProcess:
        return self._call(["buildah", *self._storage_flags(), *args], f"buildah {args[0]}", check, log, timeout, None,
                          on_line)

    def _call(self, argv: list[str], what: str, check: bool, log: Path | None, timeout: float | None,
              input: bytes | None, on_line: Callable[[str], None] | None = None) -> subprocess.CompletedProcess:
        env = self._env()
        if log is not None and on_line is not None:  # a build: every line to the log, progress lines to on_line
            with open(log, "ab") as out:
                out.write(f"$ {' '.join(argv)}\n".encode())
                proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
                timer = threading.Timer(timeout, proc.kill) if timeout else None
                if timer:
                    timer.start()
                for line in proc.stdout:
                    out.write(line)
                    on_line(line.decode(errors="replace").rstrip())
                proc.wait()
                if timer:
                    timer.cancel()
                proc = subprocess.CompletedProcess(argv, proc.returncode, b"", b"")
        elif log is not None:
            with open(log, "ab") as out:
                out.write(f"$ {' '.join(argv)}\n".encode())
                out.flush()
                proc = subprocess.run(argv, stdout=out, stderr=subprocess.STDOUT, env=env, timeout=timeout, input=input)
        else:
            proc = subprocess.run(argv, capture_output=True, env=env, timeout=timeout, input=input)
        if check and proc.returncode != 0:
            where = f"; log: {log}" if log is not None else ""
            detail = (proc.stderr or b"").decode(errors="replace").strip().splitlines()[-1:] if log is None else []
            raise ImageError(f"{what} failed (exit {proc.returncode}){': ' + detail[0] if detail else ''}{where}")
        return proc

    # -- images -----------------------------------------------------------------------------

    def exists(self, ref: str) -> bool:
        return self.podman("image", "exists", ref, check=False).returncode == 0

    def inspect(self, ref: str) -> dict:
        out = self.podman("image", "inspect", ref).stdout
        return json.loads(out)[0]

    def image_id(self, ref: str) -> str:
        return self.inspect(ref)["Id"]

    def labels(self, ref: str) -> dict[str, str]:
        return dict((self.inspect(ref).get("Config") or {}).get("Labels") or {})

    @contextlib.contextmanager
    def mounted(self, ref: str) -> Iterator[Path]:
        """The image's root file system as a host path (read it; never write: layers are shared)."""
        path = Path(self.podman("image", "mount", ref).stdout.decode().strip())
        try:
            yield path
        finally:
            self.podman("image", "unmount", ref, check=False)

    def size(self, ref: str) -> int:
        return int(self.inspect(ref).get("Size") or 0)

    # -- builds: locks, logs, disk budget ---------------------------------------------------------

    def build_dir(self, key: str) -> Path:
        path = self.root / "builds" / key
        path.mkdir(parents=True, exist_ok=True)
        return path

    @contextlib.contextmanager
    def lock(self, key: str) -> Iterator[None]:
        """One builder per key at a time (a second waits, then finds the finished image)."""
        self._registries_conf()
        with open(self.root / "locks" / f"{key}.lock", "w") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)

    def builds(self) -> list[dict]:
        """Every finished task build's meta.json, oldest use first."""
        out = []
        for meta in sorted((self.root / "builds").glob("*/meta.json")):
            try:
                data = json.loads(meta.read_text())
            except (OSError, json.JSONDecodeError):
                continue
            data["_dir"] = str(meta.parent)
            data["_used"] = meta.stat().st_mtime
            out.append(data)
        return sorted(out, key=lambda d: d["_used"])

    def du(self) -> dict:
        """Disk used: the whole storage (shared layers counted once) and each task build's images."""
        total = _tree_bytes(self.root / "storage")
        rows = [{"task": b.get("task", "?"), "key": b.get("key", "?"), "image": b.get("image", "?"),
                 "bytes": int(b.get("bytes", 0))} for b in self.builds()]
        return {"root": str(self.root), "storage_bytes": total, "builds": rows}

    def prune(self, budget_bytes: int) -> list[str]:
        """Remove task builds, least recently used first, until storage fits `budget_bytes`; base images stay.
        Returns the removed build keys."""
        removed = []
        for build in self.builds():
            if _tree_bytes(self.root / "storage") <= budget_bytes:
                break
            self.remove_build(Path(build["_dir"]).name)
            removed.append(build.get("key", "?"))
        if removed:
            self.podman("image", "prune", "--force", check=False)
        return removed

    def remove_build(self, key: str) -> None:
        """One task build's images (agent and grader) and its folder; shared layers stay while used."""
        meta = self.root / "builds" / key / "meta.json"
        try:
            build = json.loads(meta.read_text())
        except (OSError, json.JSONDecodeError):
            build = {}
        for ref in (build.get("grader_image"), build.get("image")):
            if ref:
                self.podman("rmi", "--force", ref, check=False)
        shutil.rmtree(self.root / "builds" / key, ignore_errors=True)

    def touch(self, key: str) -> None:
        meta = self.root / "builds" / key / "meta.json"
        if meta.exists():
            os.utime(meta, (time.time(), time.time()))


def _tree_bytes(path: Path) -> int:
    """Allocated bytes under `path`, hard links once (du -s semantics, no following of links)."""
    proc = subprocess.run(["du", "-s", "-B1", "-x", str(path)], capture_output=True, text=True)
    try:
        return int(proc.stdout.split()[0])
    except (IndexError, ValueError):
        return 0
