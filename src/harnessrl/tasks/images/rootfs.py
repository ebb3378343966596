"""One episode's root file system: a task image's layers, uid-shifted, under a private kernel overlay.

    root = EpisodeRoot.create(store, "localhost/harnessrl-task/x:key", ws)   # mounts; closes with ws
    sandbox.attach_image(ws, root)        # every command of ws now runs in root.merged (sandbox.py)
    root.merged                           # the agent's / (host path, for harness-side file operations)
    root.upper                            # what the agent changed (the grader reads this)
    root.env, root.workdir, root.start    # the image's ENV, WORKDIR and CMD/ENTRYPOINT

How (as root, per episode, no daemon):
1. The image's layer folders (podman's overlay storage: the image's own layer plus its lower
   layers) are each bind-mounted *idmapped* (open_tree + mount_setattr(MOUNT_ATTR_IDMAP)) through
   a user namespace that maps image uid/gid 0 to the episode's unprivileged uid: what the image's
   root owns, the episode's uid owns. Every other image id k maps to host id 3,000,000 + k, owned
   by no episode: such files stay intact on copy-up, and the agent (the image's root without
   CAP_DAC_OVERRIDE) reads and writes them only as their mode bits allow "others". Unlike Docker's
   root, it cannot write into another image user's 0755 folder.
2. A kernel overlay stacks them as read-only lower layers, with upper and work folders on the
   episode's size- and inode-capped scratch tmpfs (bwrap 0.8 has no --overlay).
3. The jail is the existing one (sandbox_cmdline.py): setpriv to the episode's uid, bwrap with
   every namespace, seccomp, the episode cgroup, no network; in image mode bwrap binds the merged
   root at / and maps the episode's uid to uid 0 in its user namespace (`--uid 0`). The agent is
   the image's root inside and the episode's unprivileged uid outside, never the host's root: it
   owns exactly the files the image's root owns, and has no capability in any namespace.
Layers are never written (overlay copies up into the episode's upper folder); an episode's
changes die with its workspace.
"""

from __future__ import annotations

import ctypes
import os
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from harnessrl.tasks.images.store import ImageError, ImageStore
from harnessrl.tasks.workspace import Workspace

_libc = ctypes.CDLL(None, use_errno=True)
_SYS_OPEN_TREE, _SYS_MOVE_MOUNT, _SYS_MOUNT_SETATTR = 428, 429, 442  # x86-64 and aarch64 alike
_OPEN_TREE_CLONE, _OPEN_TREE_CLOEXEC, _AT_EMPTY_PATH, _AT_FDCWD = 1, 0o2000000, 0x1000, -100
_MOUNT_ATTR_RDONLY, _MOUNT_ATTR_IDMAP, _MOVE_MOUNT_F_EMPTY_PATH = 0x1, 0x00100000, 0x4
_MNT_DETACH = 2


class _MountAttr(ctypes.Structure):
    _fields_ = [("attr_set", ctypes.c_uint64), ("attr_clr", ctypes.c_uint64),
                ("propagation", ctypes.c_uint64), ("userns_fd", ctypes.c_uint64)]


def _check(ret: int, what: str) -> int:
    if ret < 0:
        err = ctypes.get_errno()
        raise ImageError(f"{what}: {os.strerror(err)}")
    return ret


IMAGE_IDS = 65536  # image uids/gids 0..65535 are mapped
OTHER_IDS_BASE = 3_000_000  # image id k (not the agent's) -> host id OTHER_IDS_BASE + k: owned by no episode


def id_map(agent: int, host: int) -> str:
    """uid_map lines: image id `agent` -> the episode's host id; every other image id -> OTHER_IDS_BASE + id,
    so files of other image users stay representable (no EOVERFLOW on copy-up) yet belong to no agent."""
    lines = []
    if agent > 0:
        lines.append(f"0 {OTHER_IDS_BASE} {agent}")
    lines.append(f"{agent} {host} 1")
    if agent + 1 < IMAGE_IDS:
        lines.append(f"{agent + 1} {OTHER_IDS_BASE + agent + 1} {IMAGE_IDS - agent - 1}")
    return "\n".join(lines) + "\n"


def _userns_fd(uid: int, gid: int, agent_uid: int = 0, agent_gid: int = 0) -> int:
    """A user namespace mapping image ids to host ids (id_map), held by an fd; its helper process is gone."""
    return _userns_fd_lines(id_map(agent_uid, uid), id_map(agent_gid, gid))


def _userns_fd_lines(uid_map: str, gid_map: str) -> int:
    helper = subprocess.Popen(["unshare", "--user", "sleep", "30"], stdin=subprocess.DEVNULL)
    try:
        own = os.readlink("/proc/self/ns/user")
        for _ in range(500):
            if os.readlink(f"/proc/{helper.pid}/ns/user") != own:
                break
            time.sleep(0.002)
        else:
            raise ImageError("no user namespace for the idmapped layers (unshare --user did not start)")
        Path(f"/proc/{helper.pid}/uid_map").write_text(uid_map)
        Path(f"/proc/{helper.pid}/setgroups").write_text("deny")
        Path(f"/proc/{helper.pid}/gid_map").write_text(gid_map)
        return os.open(f"/proc/{helper.pid}/ns/user", os.O_RDONLY | os.O_CLOEXEC)
    finally:
        helper.kill()
        helper.wait()


def _idmapped_bind(source: str, target: Path, userns: int) -> None:
    fd = _check(_libc.syscall(_SYS_OPEN_TREE, _AT_FDCWD, source.encode(), _OPEN_TREE_CLONE | _OPEN_TREE_CLOEXEC),
                f"open_tree {source}")
    try:
        attr = _MountAttr(_MOUNT_ATTR_IDMAP | _MOUNT_ATTR_RDONLY, 0, 0, userns)
        _check(_libc.syscall(_SYS_MOUNT_SETATTR, fd, b"", _AT_EMPTY_PATH, ctypes.byref(attr), ctypes.sizeof(attr)),
               "mount_setattr(MOUNT_ATTR_IDMAP) (needs Linux >= 5.12 and a file system that supports idmapped mounts)")
        _check(_libc.syscall(_SYS_MOVE_MOUNT, fd, b"", _AT_FDCWD, str(target).encode(), _MOVE_MOUNT_F_EMPTY_PATH),
               f"move_mount {target}")
    finally:
        os.close(fd)


def _umount(path: Path) -> None:
    _libc.umount2(str(path).encode(), _MNT_DETACH)


@dataclass
class EpisodeRoot:
    image: str
    base: Path  # <scratch>/private/image: l0..lN (idmapped layers), upper, work, merged
    layers: list[Path]
    env: dict[str, str] = field(default_factory=dict)
    workdir: str = "/"
    start: list[str] = field(default_factory=list)  # ENTRYPOINT + CMD ([] when none)
    entrypoint: list[str] = field(default_factory=list)
    cmd: list[str] = field(default_factory=list)
    labels: dict[str, str] = field(default_factory=dict)
    image_layers: list[Path] = field(default_factory=list)  # the image's own layers, without on_top or a guard
    # grading (tasks/images/trust.py): extra binds for every command of this root, and the pid-1 shell
    # as (argv prefix, dialect) so that even the sandbox's first exec does not come from the merged view
    binds: list = field(default_factory=list)
    shell: tuple[list[str], str] | None = None
    mounts: list[Path] = field(default_factory=list)  # further mounts over the layers, unmounted first

    @property
    def merged(self) -> Path:
        return self.base / "merged"

    @property
    def upper(self) -> Path:
        return self.base / "upper"

    @staticmethod
    def create(store: ImageStore, image: str, ws: Workspace, on_top: tuple[Path, int, int] | None = None,
               guard: Path | None = None) -> EpisodeRoot:
        """Mount the episode's root. `on_top` = (an earlier episode's upper folder, its uid, gid): that
        folder becomes the topmost read-only layer, its owner shown as this episode's root (grading).
        `guard`: a folder of the host's own, read-only, above even that (trust.guard_layer: a directory
        there hides whatever non-directory the agent left at the same path)."""
        if os.geteuid() != 0 or ws.scratch is None:
            raise ImageError("running in a task image needs root and a scratch tmpfs for the episode")
        info = store.inspect(image)
        data = info["GraphDriver"]["Data"]
        layers = [data["UpperDir"], *[p for p in (data.get("LowerDir") or "").split(":") if p]]
        base = ws.private_dir("image")
        os.chmod(base, 0o755)
        root = EpisodeRoot(image, base, [], **_config(info))
        userns = _userns_fd(ws.uid, ws.gid)
        try:
            for i, layer in enumerate(layers):
                target = base / f"l{i}"
                target.mkdir()
                _idmapped_bind(layer, target, userns)
                root.layers.append(target)
        except ImageError:
            root.close()
            raise
        finally:
            os.close(userns)
        root.image_layers = list(root.layers)
        if on_top is not None:
            folder, uid, gid = on_top
            userns = _userns_fd_lines(f"{uid} {ws.uid} 1\n{OTHER_IDS_BASE} {OTHER_IDS_BASE} {IMAGE_IDS}\n",
                                      f"{gid} {ws.gid} 1\n{OTHER_IDS_BASE} {OTHER_IDS_BASE} {IMAGE_IDS}\n")
            try:
                target = base / "top"
                target.mkdir()
                _idmapped_bind(str(folder), target, userns)
                root.layers.insert(0, target)
            except ImageError:
                root.close()
                raise
            finally:
                os.close(userns)
        if guard is not None:
            root.layers.insert(0, guard)
        for name in ("upper", "work", "merged"):
            (base / name).mkdir()
            os.chown(base / name, ws.uid, ws.gid)
        opts = f"lowerdir={':'.join(map(str, root.layers))},upperdir={root.upper},workdir={base / 'work'}"
        if _libc.mount(b"overlay", str(root.merged).encode(), b"overlay", 0, opts.encode()) != 0:
            err = ctypes.get_errno()
            root.close()
            raise ImageError(f"overlay mount of {image}: {os.strerror(err)}")
        ws.on_close(root.close)
        _make_workdir(root, ws)
        return root

    def close(self) -> None:
        """Unmount the overlay and the layers (idempotent; the scratch tmpfs goes with the workspace;
        the upper folder stays readable until then, for grading)."""
        for mount in self.mounts:
            _umount(mount)
        self.mounts = []
        if os.path.ismount(self.merged):
            _umount(self.merged)
        for layer in self.layers:
            _umount(layer)
        self.layers = []

    def mount_pristine(self) -> Path:
        """The image's own layers, WITHOUT any on_top folder or guard, as a second, read-only overlay
        (no upper folder: the kernel refuses every write) at <base>/pristine: what the image held
        before any agent ran. Unmounted by close()."""
        target = self.base / "pristine"
        target.mkdir(exist_ok=True)
        if len(self.image_layers) == 1:  # overlayfs wants two lower layers without an upper one
            _check(_libc.mount(str(self.image_layers[0]).encode(), str(target).encode(), None, 0x1000 | 0x1, None),
                   f"bind {self.image_layers[0]}")  # MS_BIND | MS_RDONLY
        else:
            opts = f"lowerdir={':'.join(map(str, self.image_layers))}"
            _check(_libc.mount(b"overlay", str(target).encode(), b"overlay", 0x1, opts.encode()),  # MS_RDONLY
                   f"read-only overlay of {self.image}")
        self.mounts.append(target)
        return target

    def path(self, inside: str) -> Path:
        """A path as the agent sees it (absolute, or relative to WORKDIR), on the host. Harness-side
        file operations must still refuse symlinks that leave the root (resolve with fileops)."""
        rel = inside if inside.startswith("/") else f"{self.workdir.rstrip('/')}/{inside}"
        return self.merged / rel.lstrip("/")


def _make_workdir(root: EpisodeRoot, ws: Workspace) -> None:
    """Docker creates WORKDIR even when no later step used it; buildah may not. Created by the host,
    so never through a symlink (a link in the image could point anywhere on the host)."""
    current = root.merged
    for part in [p for p in root.workdir.split("/") if p and p != "."]:
        if part == "..":
            return
        current = current / part
        if current.is_symlink():
            return
        if not current.exists():
            current.mkdir(mode=0o755)
            os.chown(current, ws.uid, ws.gid)  # the image's root's, as seen through the shifted layers


def _config(info: dict) -> dict:
    config = info.get("Config") or {}
    env = dict(item.split("=", 1) for item in config.get("Env") or [] if "=" in item)
    entrypoint, cmd = list(config.get("Entrypoint") or []), list(config.get("Cmd") or [])
    return {"env": env, "workdir": config.get("WorkingDir") or "/", "start": entrypoint + cmd,
            "entrypoint": entrypoint, "cmd": cmd, "labels": dict(config.get("Labels") or {})}


def start_in_background(sandbox, ws: Workspace, root: EpisodeRoot, lifetime_s: float = 3600.0, network=None):
    """The image's ENTRYPOINT + CMD, started at episode start as a long-lived sandboxed process (a
    `SandboxProcess`, stopped with the episode), or None when the image has neither or only a shell
    (`bash`, `sh`, `python3`: an interactive default, not a service). Each sandbox call has its own
    network namespace, so a service is reachable over the network only where the sandbox shares one
    per episode (`network`: the episode's, as ImageTaskRuntime gives); files and processes it creates
    are visible to the agent's later commands."""
    argv = service_start(root)
    if argv is None:
        return None
    return sandbox.spawn(argv, ws, cwd=root.workdir, lifetime_s=lifetime_s, network=network, stdin=False)


def service_start(root: EpisodeRoot) -> list[str] | None:
    """The image's service command line, or None. An ENTRYPOINT without a CMD gets `sleep infinity`
    as its arguments, as Harbor's and Terminal-Bench's compose files give the agent's container
    (an entrypoint that sets things up, starts a server in the background, then `exec "$@"`)."""
    if not root.start or root.start in (["bash"], ["/bin/bash"], ["sh"], ["/bin/sh"], ["python3"], ["python"]):
        return None
    return [*root.entrypoint, "sleep", "infinity"] if root.entrypoint and not root.cmd else list(root.start)
