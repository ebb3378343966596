"""File operations on a workspace that cannot be turned against the host.

They run in the harness's process (as root), so they must not follow an agent-made symlink
out of the workspace (`ln -s /etc/passwd x`, then "write x"). Every path is resolved one
component at a time with `openat(..., O_NOFOLLOW)` from a file descriptor of the workspace
root; a symlink is followed by hand only while its target stays inside the workspace (an
absolute target must start with `/app/`, exactly what the agent sees), and `..` never climbs
above the root. Because each step is relative to an already-open directory descriptor, an
agent process swapping a directory for a symlink mid-operation cannot redirect the write
either. FIFOs, devices and sockets are refused (opening a FIFO would block the harness).
Files the harness creates are given to the workspace uid so the agent can edit them after.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

APP = "/app"
MAX_READ_BYTES = 16 * 1024 * 1024  # a file the harness reads into memory; the tmpfs is bigger
_MAX_SYMLINK_HOPS = 40


class WorkspaceError(Exception):
    """A file operation that cannot be done; the message is fit to show the agent."""


class EditError(WorkspaceError):
    """A replacement whose `old` text did not occur the expected number of times."""

    def __init__(self, message: str, occurrences: int):
        super().__init__(message)
        self.occurrences = occurrences

    def __reduce__(self):  # picklable across process pools
        return (EditError, (self.args[0], self.occurrences))


class SafeFiles:
    """Mixin: containment-checked file operations on `self.root` (owned by self.uid/gid)."""

    root: Path
    uid: int
    gid: int
    # Where `root` is seen by the agent: /app for a workspace; "/" for a task image's episode root
    # (tasks/images/rootfs.py), where the agent may write anywhere and every absolute path is inside.
    mount: str = APP

    def _inside(self, p: str) -> bool:
        return self.mount == "/" or p == self.mount or p.startswith(self.mount + "/")

    def _strip(self, p: str) -> str:
        return p if self.mount == "/" else p[len(self.mount):]

    def _at(self, rel: str) -> str:
        return f"{self.mount.rstrip('/')}/{rel}"

    # -- path resolution (see the module docstring) ----------------------------------------

    def relpath(self, path: str | os.PathLike) -> str:
        """Normalise a path the agent gave to a workspace-relative one ('' = the root)."""
        p = os.fspath(path)
        if "\x00" in p:
            raise WorkspaceError(f"{p!r}: path contains a NUL byte")
        if p.startswith("/"):
            if not self._inside(p):
                raise WorkspaceError(f"{p}: outside the workspace {self.mount}")
            p = self._strip(p)
        parts: list[str] = []
        for part in p.split("/"):
            if part in ("", "."):
                continue
            if part == "..":
                if not parts:
                    raise WorkspaceError(f"{path}: outside the workspace {self.mount}")
                parts.pop()
            else:
                parts.append(part)
        return "/".join(parts)

    @contextmanager
    def _resolved(self, path: str | os.PathLike, *, create_parents: bool = False) -> Iterator[tuple[int, str, str]]:
        """Yield (parent_dir_fd, final_name, real_parent) with every parent opened no-follow.

        real_parent is the workspace-relative path of the parent after following symlinks.
        """
        rel = self.relpath(path)
        if not rel:
            raise WorkspaceError(f"{self.mount}: is the workspace directory, not a file")
        stack = [os.open(self.root, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW)]  # `..` pops
        names: list[str] = []  # the real path of stack[-1]
        pending = rel.split("/")
        hops = retries = 0
        try:
            while len(pending) > 1:
                part = pending.pop(0)
                if part in ("", "."):
                    continue
                if part == "..":
                    if len(stack) == 1:
                        raise WorkspaceError(f"{path}: resolves outside the workspace")
                    os.close(stack.pop())
                    names.pop()
                    continue
                try:
                    fd = os.open(part, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=stack[-1])
                except FileNotFoundError:
                    if not create_parents:
                        raise WorkspaceError(f"{self._at(rel)}: no such file or directory") from None
                    retries += 1
                    if retries > _MAX_SYMLINK_HOPS:  # something keeps swapping it under us
                        raise WorkspaceError(f"{self._at(rel)}: the path keeps changing; try again") from None
                    try:
                        os.mkdir(part, 0o755, dir_fd=stack[-1])
                        if os.geteuid() == 0:
                            os.chown(part, self.uid, self.gid, dir_fd=stack[-1], follow_symlinks=False)
                    except (FileExistsError, FileNotFoundError):
                        pass  # created or removed concurrently: the next pass re-checks, no-follow
                    except OSError as err:
                        raise WorkspaceError(f"{self._at(rel)}: {err.strerror}") from None
                    pending.insert(0, part)  # open it on the next pass, still no-follow
                    continue
                except OSError as err:
                    if err.errno not in (errno.ELOOP, errno.ENOTDIR):
                        raise WorkspaceError(f"{self._at(rel)}: {err.strerror}") from None
                    hops += 1
                    target = self._link_target(stack[-1], part, hops, rel)
                    if target.startswith("/"):  # absolute inside /app: restart from the root
                        while len(stack) > 1:
                            os.close(stack.pop())
                        names.clear()
                        target = self._strip(target)
                    pending = [p for p in target.split("/") if p not in ("", ".")] + pending
                    continue
                stack.append(fd)
                names.append(part)
            yield stack[-1], pending[0], "/".join(names)
        finally:
            for fd in stack:
                os.close(fd)

    def _link_target(self, dir_fd: int, name: str, hops: int, rel: str) -> str:
        """The target of the symlink `name` in dir_fd, refused if it leaves the workspace."""
        if hops > _MAX_SYMLINK_HOPS:
            raise WorkspaceError(f"{self._at(rel)}: too many levels of symbolic links")
        try:
            target = os.readlink(name, dir_fd=dir_fd)
        except OSError:
            raise WorkspaceError(f"{self._at(rel)}: not a directory") from None
        if target.startswith("/") and not self._inside(target):
            raise WorkspaceError(f"{self._at(rel)}: symbolic link {name} -> {target} points outside the workspace")
        return target

    def _open_file(self, path: str | os.PathLike, flags: int, *, create_parents: bool = False) -> tuple[int, str]:
        """Open a regular file no-follow (symlinks inside the workspace are followed by hand)."""
        hops = 0
        current = path
        while True:
            shown = f"{self._at(self.relpath(current))}"
            with self._resolved(current, create_parents=create_parents) as (dir_fd, name, parent):
                if name == "..":
                    raise WorkspaceError(f"{shown}: is a directory")
                try:
                    fd = os.open(name, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o644, dir_fd=dir_fd)
                except FileNotFoundError:
                    raise WorkspaceError(f"{shown}: no such file") from None
                except IsADirectoryError:
                    raise WorkspaceError(f"{shown}: is a directory") from None
                except OSError as err:
                    if err.errno == errno.ELOOP:  # the last component is a symlink: follow it by hand
                        hops += 1
                        target = self._link_target(dir_fd, name, hops, self.relpath(current))
                        current = target if target.startswith("/") else f"{self.mount.rstrip('/')}/{parent}/{target}"
                        continue
                    if err.errno == errno.ENXIO:  # a FIFO nobody reads
                        raise WorkspaceError(f"{shown}: not a regular file") from None
                    raise WorkspaceError(f"{shown}: {err.strerror}") from None
                info = os.fstat(fd)
                if not stat.S_ISREG(info.st_mode):
                    os.close(fd)
                    raise WorkspaceError(f"{shown}: not a regular file")
                if flags & os.O_CREAT and os.geteuid() == 0 and info.st_uid != self.uid:
                    os.fchown(fd, self.uid, self.gid)
                return fd, shown

    # -- file operations ---------------------------------------------------------------------

    def read_bytes(self, path: str | os.PathLike, limit: int = MAX_READ_BYTES) -> bytes:
        fd, shown = self._open_file(path, os.O_RDONLY)
        with os.fdopen(fd, "rb") as f:
            data = f.read(limit + 1)
        if len(data) > limit:
            raise WorkspaceError(f"{shown}: larger than {limit} bytes; view it in parts with a shell command")
        return data

    def read_text(self, path: str | os.PathLike) -> str:
        return self.read_bytes(path).decode("utf-8", errors="replace")

    def write_bytes(self, path: str | os.PathLike, data: bytes) -> None:
        fd, shown = self._open_file(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, create_parents=True)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
        except OSError as err:
            raise WorkspaceError(f"{shown}: {err.strerror}") from None

    def write_text(self, path: str | os.PathLike, text: str) -> None:
        self.write_bytes(path, text.encode("utf-8"))

    def str_replace(self, path: str | os.PathLike, old: str, new: str, count: int = 1) -> int:
        """Replace `old` by `new`, which must occur exactly `count` times. Returns `count`."""
        if not old:
            raise EditError(f"{self._at(self.relpath(path))}: the text to replace is empty", 0)
        text = self.read_text(path)
        found = text.count(old)
        if found != count:
            raise EditError(
                f"{self._at(self.relpath(path))}: expected {count} occurrence(s) of the text to replace, found {found}", found
            )
        self.write_text(path, text.replace(old, new))
        return found

    def replace_all(self, path: str | os.PathLike, old: str, new: str) -> int:
        """Replace every occurrence of `old` (at least one). Returns how many."""
        text = self.read_text(path)
        found = text.count(old) if old else 0
        if not found:
            raise EditError(f"{self._at(self.relpath(path))}: the text to replace was not found", 0)
        self.write_text(path, text.replace(old, new))
        return found

    def insert(self, path: str | os.PathLike, line: int, text: str) -> None:
        """Insert `text` after line `line` (1-based; 0 inserts at the top)."""
        lines = self.read_text(path).splitlines(keepends=True)
        if not 0 <= line <= len(lines):
            raise WorkspaceError(f"{self._at(self.relpath(path))}: line {line} is outside 0..{len(lines)}")
        if lines and line == len(lines) and not lines[-1].endswith("\n"):
            lines[-1] += "\n"
        block = text if text.endswith("\n") else text + "\n"
        self.write_text(path, "".join(lines[:line]) + block + "".join(lines[line:]))

    def _lstat(self, path: str | os.PathLike) -> os.stat_result | None:
        try:
            with self._resolved(path) as (dir_fd, name, _parent):
                return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except (WorkspaceError, FileNotFoundError):
            return None

    def exists(self, path: str | os.PathLike) -> bool:
        return self.relpath(path) == "" or self._lstat(path) is not None

    def is_file(self, path: str | os.PathLike) -> bool:
        st = self._lstat(path)
        return st is not None and stat.S_ISREG(st.st_mode)

    def is_dir(self, path: str | os.PathLike) -> bool:
        if self.relpath(path) == "":
            return True
        st = self._lstat(path)
        return st is not None and stat.S_ISDIR(st.st_mode)

    def delete(self, path: str | os.PathLike) -> None:
        """Delete a file or symlink (never what a symlink points to)."""
        shown = f"{self._at(self.relpath(path))}"
        with self._resolved(path) as (dir_fd, name, _parent):
            try:
                os.unlink(name, dir_fd=dir_fd)
            except FileNotFoundError:
                raise WorkspaceError(f"{shown}: no such file") from None
            except IsADirectoryError:
                raise WorkspaceError(f"{shown}: is a directory") from None

    def listdir(self, path: str | os.PathLike = "") -> list[str]:
        """Entries of a directory, sorted; directories end with '/', symlinks with '@'."""
        rel = self.relpath(path)
        if rel:
            with self._resolved(rel) as (dir_fd, name, _parent):
                try:
                    fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=dir_fd)
                except OSError:
                    raise WorkspaceError(f"{self._at(rel)}: not a directory") from None
        else:
            fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        try:
            out = []
            with os.scandir(fd) as it:
                for entry in it:
                    kind = "/" if entry.is_dir(follow_symlinks=False) else "@" if entry.is_symlink() else ""
                    out.append(entry.name + kind)
            return sorted(out)
        finally:
            os.close(fd)

    def files(self, skip: tuple[str, ...] = (".git",)) -> list[str]:
        """Every regular file, workspace-relative and sorted; symlinks are not followed.

        Iterative and bounded (an agent can build a directory tree thousands of levels deep):
        directories deeper than MAX_WALK_DEPTH and entries beyond MAX_WALK_ENTRIES are not listed."""
        return walk_files(self.root, skip)

    def snapshot(self, skip: tuple[str, ...] = (".git",)) -> dict[str, bytes]:
        """{relative path: content} of every regular file (for diffs and undo)."""
        snap = {}
        for rel in self.files(skip):
            try:
                snap[rel] = self.read_bytes(rel)
            except WorkspaceError:
                continue  # replaced by something else while we walked
        return snap


MAX_WALK_DEPTH = 64
MAX_WALK_ENTRIES = 100_000


def walk_files(root: str | os.PathLike, skip: tuple[str, ...] = (), max_depth: int = MAX_WALK_DEPTH,
               max_entries: int = MAX_WALK_ENTRIES) -> list[str]:
    """Sorted relative paths of the regular files under `root`: an explicit stack, no recursion,
    at most `max_depth` levels and `max_entries` directory entries looked at; unreadable
    directories (or paths too long for the kernel) are left out."""
    out: list[str] = []
    stack: list[tuple[str, int]] = [("", 0)]
    seen = 0
    while stack and seen < max_entries:
        rel_dir, depth = stack.pop()
        try:
            with os.scandir(os.path.join(root, rel_dir) if rel_dir else root) as it:
                for entry in it:
                    seen += 1
                    if seen > max_entries:
                        break
                    rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
                    if entry.is_dir(follow_symlinks=False):
                        if entry.name not in skip and depth + 1 < max_depth:
                            stack.append((rel, depth + 1))
                    elif entry.is_file(follow_symlinks=False):
                        out.append(rel)
        except OSError:
            continue
    return sorted(out)
