"""The grader's trusted base in a task image: the verdict process runs from pristine files, by allow-list.

    guard = guard_layer(gws)                                   # the grader's own top layer (below)
    groot = EpisodeRoot.create(store, grader_image, gws, on_top=(agent upper, uid, gid), guard=guard)
    base = TrustBase.mount(groot)      # the grader image WITHOUT the agent's folder, read-only, at /.harnessrl-trusted
    base.python_argv                   # [T/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2, --inhibit-cache,
                                       #  --library-path, T/usr/lib/x86_64-linux-gnu:..., T/usr/bin/python3.13, -S, -B]
    base.env(groot.env)                # the verdict process's fixed variables

Why: in a task image the agent is the image's root and may change any file, so a deny-list of
paths to check (grading.py's scan) misses whatever it forgot: a shared library the interpreter
maps, a shim in a folder of the image's ENV PATH, a protected folder's ancestor replaced by a
symlink, the stdlib folder replaced by a link to a modified copy. Instead, everything the verdict
process executes comes from a tree the agent never could write: the grader image's own layers
mounted a second time as a read-only overlay WITHOUT the agent's upper folder, bound read-only at
TRUSTED_AT inside the grading sandbox. Its programs are started through its own dynamic loader by
absolute, fully resolved paths (resolve(): every symlink followed inside the pristine tree, as a
chroot would, so that no path the kernel walks at exec time passes through a link), with
`--inhibit-cache` (no /etc/ld.so.cache) and `--library-path` naming only the pristine tree's library
folders. The kernel would otherwise take the ELF interpreter (PT_INTERP, an absolute path) from the
merged view; the loader itself is never found through it.

What the loader still reads by absolute path from the merged root, and how each is pinned: the
grader's guard layer sits above the agent's upper folder (a directory in a higher overlay layer hides
any non-directory below it, so a symlink the agent left at one of these paths cannot redirect it):

- `/etc/ld.so.preload`: empty (glibc reads it whatever --library-path says);
- `/etc/nsswitch.conf`: files and dns only, both built into glibc >= 2.34 (no NSS module is loaded
  by name: a module name the pristine tree lacks would be searched in the loader's built-in default
  folders, which are the merged view's);
- TRUSTED_AT itself: an empty directory, the mount point (a link there would move the bind).

A link of the pristine tree that leaves it (absolute, or `..` above its root) resolves in the merged
view; escaping_links() lists those in the folders the verdict process loads from, and grading
refuses (grader_tamper) when the agent changed where one lands (changed_in()).

What stays in the merged view, on purpose: everything the tests examine (/app, the agent's
programs, /usr/bin, /etc/passwd, ...) and what the tests' subprocesses run. A library name that the
pristine tree does not hold at all (an optional dlopen) falls back to the loader's built-in default
folders, which are the merged view's: docs/security.md names this residual.
"""

from __future__ import annotations

import glob
import os
import re
import stat
import struct
from dataclasses import dataclass
from pathlib import Path

from harnessrl.tasks.sandbox import Bind
from harnessrl.tasks.workspace import Workspace

TRUSTED_AT = "/.harnessrl-trusted"
NSSWITCH = ("# the grader's own (harnessrl): glibc's built-in sources only, no module loaded by name\n"
            "passwd: files\ngroup: files\nshadow: files\ngshadow: files\nhosts: files dns\nnetworks: files\n"
            "protocols: files\nservices: files\nethers: files\nrpc: files\nnetgroup: files\n")
MAX_LINKS = 40
# the loader's variables, and others that make glibc or a shell load or run something by path
# (PYTHON* need not be here: the pristine interpreter runs with -I, which ignores them all)
_UNSAFE = re.compile(r"LD_.*|GCONV_PATH|GLIBC_TUNABLES|HOSTALIASES|RES_OPTIONS|LOCALDOMAIN|BASH_ENV|ENV|LOCPATH|NLSPATH")


class TrustError(RuntimeError):
    """The grader image's pristine tree lacks what the verdict process needs (interpreter, loader)."""


def resolve(root: Path, path: str, limit: int = MAX_LINKS) -> str | None:
    """`path` inside the tree at host folder `root`, every symlink followed as a chroot would (an
    absolute target starts again at `root`, `..` stops there), so the result names no link at all;
    None when a component is missing or the links loop. Never follows anything on the host: each
    component is lstat-ed below folders already known to be real directories."""
    todo = [p for p in path.split("/") if p and p != "."]
    done: list[str] = []
    links = 0
    while todo:
        part = todo.pop(0)
        if part == "..":
            if done:
                done.pop()
            continue
        try:
            st = os.lstat(root.joinpath(*done, part))
        except OSError:
            return None
        if stat.S_ISLNK(st.st_mode):
            links += 1
            if links > limit:
                return None
            target = os.readlink(root.joinpath(*done, part))
            if target.startswith("/"):
                done = []
            todo = [p for p in target.split("/") if p and p != "."] + todo
            continue
        if todo and not stat.S_ISDIR(st.st_mode):
            return None
        done.append(part)
    return "/" + "/".join(done)


def elf_interp(path: Path) -> str | None:
    """The PT_INTERP of an ELF file (its dynamic loader's path), "" when static, None when not ELF."""
    try:
        with open(path, "rb") as f:
            head = f.read(64)
            if len(head) < 52 or head[:4] != b"\x7fELF":
                return None
            e = "<" if head[5] == 1 else ">"
            is64 = head[4] == 2
            phoff = struct.unpack_from(e + ("Q" if is64 else "I"), head, 32 if is64 else 28)[0]
            phentsize, phnum = struct.unpack_from(e + "HH", head, 54 if is64 else 42)
            f.seek(phoff)
            table = f.read(phentsize * min(phnum, 256))
            for i in range(min(phnum, 256)):
                off = i * phentsize
                if struct.unpack_from(e + "I", table, off)[0] != 3:  # PT_INTERP
                    continue
                if is64:
                    p_offset, p_filesz = struct.unpack_from(e + "Q", table, off + 8)[0], struct.unpack_from(e + "Q", table, off + 32)[0]
                else:
                    p_offset, p_filesz = struct.unpack_from(e + "I", table, off + 4)[0], struct.unpack_from(e + "I", table, off + 16)[0]
                f.seek(p_offset)
                return f.read(min(p_filesz, 4096)).rstrip(b"\0").decode("utf-8", "replace")
    except (OSError, struct.error):
        return None
    return ""


def guard_layer(gws: Workspace) -> Path:
    """The grader's own topmost read-only layer (module docstring): the mount point, an empty
    /etc/ld.so.preload and a fixed /etc/nsswitch.conf. Folders are the grader's (its image root may
    still create files in /etc); the two files are the host's root's, which nothing in the sandbox is."""
    guard = gws.private_dir("guard")
    for folder in (TRUSTED_AT.lstrip("/"), "etc"):
        (guard / folder).mkdir(mode=0o755)
        os.chown(guard / folder, gws.uid, gws.gid)
        os.chmod(guard / folder, 0o755)
    for name, text in (("ld.so.preload", ""), ("nsswitch.conf", NSSWITCH)):
        (guard / "etc" / name).write_text(text)
        os.chown(guard / "etc" / name, 0, 0)
        os.chmod(guard / "etc" / name, 0o644)
    return guard


@dataclass
class TrustBase:
    host: Path  # the pristine tree on the host (a read-only overlay)
    library_path: str  # inside paths, ':'-joined
    python: str  # inside path of the pristine interpreter (resolved)
    sh: str | None
    bash: str | None

    @classmethod
    def mount(cls, groot) -> TrustBase:
        """Mount the grader image's pristine tree, bind it read-only at TRUSTED_AT for every command of
        `groot` (its `binds`) and make the pristine shell those commands' pid 1 (its `shell`)."""
        host = groot.mount_pristine()
        python = next((r for r in (resolve(host, p) for p in ("usr/local/bin/python3", "usr/bin/python3"))
                       if r and elf_interp(host / r.lstrip("/")) is not None), None)
        if python is None:
            raise TrustError("the grader image has no python3 (an ELF file) for the trusted base")
        base = cls(host, library_path(host), python, _elf(host, "bin/sh"), _elf(host, "bin/bash") or _elf(host, "usr/bin/bash"))
        base.argv(python)  # raises when its loader is missing
        groot.binds.append(Bind(host, TRUSTED_AT))
        shell = base.sh or base.bash
        if shell is None:
            raise TrustError("the grader image has no /bin/sh for the trusted base")
        groot.shell = (base.argv(shell), "bash" if "bash" in os.path.basename(shell) else "dash")
        return base

    def argv(self, exe: str) -> list[str]:
        """How to start pristine executable `exe` (an inside path, resolved): through its own loader
        from the pristine tree, never through the merged view's PT_INTERP or ld.so.cache."""
        interp = elf_interp(self.host / exe.lstrip("/"))
        if interp is None:
            raise TrustError(f"{exe} is not an ELF executable")
        if interp == "":  # static: nothing to load
            return [TRUSTED_AT + exe]
        loader = resolve(self.host, interp)
        if loader is None:
            raise TrustError(f"the loader {interp} of {exe} is not in the grader image")
        return [TRUSTED_AT + loader, "--inhibit-cache", "--library-path", self.library_path, TRUSTED_AT + exe]

    @property
    def python_argv(self) -> list[str]:
        """The pristine interpreter; -S: no site at start-up (Debian's stdlib sitecustomize.py is a link
        to /etc, i.e. into the merged view; grader.run_pytest adds the pristine site-packages itself),
        -B: nothing written (the tree is read-only anyway)."""
        return [*self.argv(self.python), "-S", "-B"]

    @property
    def version(self) -> str | None:
        m = re.search(r"python(3\.\d+)", self.python)
        if m:
            return m.group(1)
        libs = sorted(glob.glob(str(self.host / "usr/lib/python3.*/os.py")))
        return Path(libs[-1]).parent.name.removeprefix("python") if libs else None

    def env(self, *image_envs: dict[str, str]) -> dict[str, str]:
        """The verdict process's variables: locale, home and user fixed; the loader's and Python's
        variables (and the rest of _UNSAFE) that the image's or task's ENV set are emptied, since the
        sandbox passes the image's ENV on; LOCPATH names the pristine locales (setlocale reads them)."""
        env = {k: "" for e in image_envs for k in e if _UNSAFE.fullmatch(k)}
        env |= {"LD_PRELOAD": "", "LD_AUDIT": "", "LD_LIBRARY_PATH": "", "BASH_ENV": "", "ENV": "",
                "LC_ALL": "C.UTF-8", "LANG": "C.UTF-8", "HOME": "/root", "USER": "root", "LOGNAME": "root",
                "LOCPATH": f"{TRUSTED_AT}/usr/lib/locale"}
        # glibc maps <libdir>/gconv/gconv-modules.cache by absolute path, from the merged view, unless
        # GCONV_PATH is set; it then reads the pristine configuration first (the default folder's comes
        # after: docs/security.md, residual risks)
        gconv = next((d + "/gconv" for d in self.library_path.split(":")
                      if (self.host / (d + "/gconv").removeprefix(TRUSTED_AT).lstrip("/")).is_dir()), None)
        if gconv:
            env["GCONV_PATH"] = gconv
        return env

    def escaping_links(self, limit: int = 100_000) -> list[tuple[str, str]]:
        """(link, target) for every symlink in the folders the verdict process loads from (the library
        folders, the stdlib and its lib-dynload, the pristine site-packages, the grader layer) whose
        target leaves the pristine tree (absolute, or `..` above its root): inside the sandbox it
        resolves in the merged view. `target` is that merged path. The stdlib's sitecustomize.py and
        usercustomize.py are left out: -S never imports them."""
        v = self.version
        python_dirs = [f"/usr/lib/python{v}", f"/usr/local/lib/python{v}", "/usr/lib/python3/dist-packages",
                       "/opt/harnessrl"] if v else ["/opt/harnessrl"]
        lib_dirs = [d.removeprefix(TRUSTED_AT) for d in self.library_path.split(":")]
        out: list[tuple[str, str]] = []
        seen = 0
        for folder, recurse in [*((d, False) for d in lib_dirs), *((d, True) for d in python_dirs)]:
            stack = [folder]
            while stack and seen < limit:
                rel_dir = stack.pop()
                try:
                    entries = list(os.scandir(self.host / rel_dir.lstrip("/")))
                except OSError:
                    continue
                for entry in entries:
                    seen += 1
                    inside = f"{rel_dir}/{entry.name}"
                    if entry.is_symlink():
                        target = _leaves(inside, os.readlink(entry.path))
                        if target and entry.name not in ("sitecustomize.py", "usercustomize.py"):
                            out.append((inside, target))
                    elif recurse and entry.is_dir(follow_symlinks=False):
                        stack.append(inside)
        return out


def _leaves(link: str, target: str) -> str | None:
    """The merged-view path a link at `link` (inside the trusted mount) would reach when its target
    leaves the pristine tree, or None when it stays inside."""
    if target.startswith("/"):
        return os.path.normpath(target)
    parts = [p for p in link.split("/")[:-1] if p]
    for i, part in enumerate(p for p in target.split("/") if p and p != "."):
        if part != "..":
            parts.append(part)
        elif parts:
            parts.pop()
        else:  # above the pristine root: on to / of the merged view
            rest = [p for p in target.split("/") if p and p != "."][i + 1:]
            return os.path.normpath("/" + "/".join(rest))  # normpath: '..' at / stays at /, as the kernel does
    return None


def changed_in(upper: Path, host: Path, path: str, limit: int = MAX_LINKS) -> bool:
    """Whether the merged view (pristine tree `host` under the agent's `upper` folder) may resolve
    `path` differently from the pristine tree: walking it as resolve() does, some component is in the
    upper folder as the last one, as a non-directory (a link, a whiteout, a file) or as an opaque folder."""
    todo = [p for p in path.split("/") if p and p != "."]
    done: list[str] = []
    links = 0
    while todo:
        part = todo.pop(0)
        if part == "..":
            if done:
                done.pop()
            continue
        mine = upper.joinpath(*done, part)
        if os.path.lexists(mine):
            if not todo or mine.is_symlink() or not mine.is_dir():
                return True
            try:
                if os.getxattr(mine, "trusted.overlay.opaque", follow_symlinks=False) == b"y":
                    return True
            except OSError:
                pass
        pristine = host.joinpath(*done, part)
        if pristine.is_symlink():
            links += 1
            if links > limit:
                return True
            target = os.readlink(pristine)
            if target.startswith("/"):
                done = []
            todo = [p for p in target.split("/") if p and p != "."] + todo
            continue
        if not pristine.exists() and not os.path.lexists(mine):
            return False  # missing in both: the merged view has nothing there either
        done.append(part)
    return False


def _elf(host: Path, path: str) -> str | None:
    r = resolve(host, path)
    return r if r and elf_interp(host / r.lstrip("/")) is not None else None


def library_path(host: Path) -> str:
    """The pristine tree's library folders, in the order the loader would use them through its cache
    (ld.so.conf and its includes), then its built-in defaults; each resolved inside the tree."""
    dirs: list[str] = []

    def conf(path: str, depth: int) -> None:
        real = resolve(host, path)
        if real is None or depth > 3:
            return
        try:
            lines = (host / real.lstrip("/")).read_text(errors="replace").splitlines()
        except OSError:
            return
        for line in lines:
            line = line.split("#", 1)[0].strip()
            if line.startswith("include "):
                pattern = line.split(None, 1)[1].strip()
                folder = resolve(host, os.path.dirname(pattern) or "/etc")
                if folder:
                    for found in sorted(glob.glob(str(host / folder.lstrip("/") / os.path.basename(pattern)))):
                        conf(f"{folder}/{os.path.basename(found)}", depth + 1)
            elif line.startswith("/"):
                dirs.append(line)

    conf("/etc/ld.so.conf", 0)
    triplets = sorted(e.name for e in os.scandir(host / "usr/lib") if re.fullmatch(r"\w+-linux-gnu\w*", e.name)) \
        if (host / "usr/lib").is_dir() else []
    dirs += [f"/{p}/{t}" for t in triplets for p in ("lib", "usr/lib")] + ["/lib64", "/usr/lib64", "/lib", "/usr/lib"]
    out: list[str] = []
    for d in dirs:
        real = resolve(host, d)
        if real and (host / real.lstrip("/")).is_dir() and ":" not in real and real not in out:
            out.append(real)
    return ":".join(TRUSTED_AT + d for d in out)


def child_python(merged: Path, path_env: str) -> list[str]:
    """The interpreter the agent itself would run (`python3` on the image's PATH, in the merged view),
    for the plugin's agent-call bridge; looked up without following a link out of the root."""
    for folder in path_env.split(":"):
        if folder.startswith("/") and resolve(merged, f"{folder}/python3") is not None:
            return [f"{folder.rstrip('/')}/python3"]
    return ["/usr/bin/env", "python3"]


def agent_paths(merged: Path, child: list[str], version: str | None, task_pythonpath: str) -> list[str]:
    """The merged view's import folders that `child` would use (a venv's site-packages, the system's
    and /usr/local's), after the task's PYTHONPATH entries; /app last."""
    found = [p for p in task_pythonpath.split(":") if p.startswith("/")]
    if version:
        venv = os.path.dirname(os.path.dirname(child[0])) if child[0].startswith("/") and len(child) == 1 else ""
        candidates = ([f"{venv}/lib/python{version}/site-packages"] if venv and resolve(merged, f"{venv}/pyvenv.cfg") else [])
        candidates += [f"/usr/local/lib/python{version}/dist-packages", f"/usr/local/lib/python{version}/site-packages",
                       "/usr/lib/python3/dist-packages", f"/usr/lib/python{version}/dist-packages"]
        found += [c for c in candidates if resolve(merged, c) is not None]
    return [p for i, p in enumerate(found) if p not in found[:i] and p != "/app"] + ["/app"]
