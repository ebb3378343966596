"""The record store's manifest: parsing that refuses every malformed line, the locks, atomic rewrites.

`manifest.jsonl` is the store's only source of truth: line 1 is a header, every further line
commits one shard. A reader must never guess at a damaged manifest, so `read_manifest` names
the first bad line (not UTF-8, not JSON, not an object, a missing key, a wrong type, a path
outside `shards/`) and says how to recover. Two damages a crash or an edit can leave that are
*repairable* are returned, not raised, so `verify` can report them and `repair` fix them: a
last line without its newline (a torn commit) and a shard listed twice.

Locks (flock, so they die with their process):
    .lock     exclusive around a commit (appending one manifest line) and manifest rewrites;
              readers take it shared only to tell a torn line from a commit in progress.
    .writers  every writer holds it *shared* from writing a shard until its commit; anyone
              who can take it exclusively knows no writer is alive (see `writers_alive`).
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path

from harnessrl.episode import READABLE_VERSIONS, SCHEMA_VERSION
from harnessrl.fileio import fsync_dir  # noqa: F401  (re-exported by harnessrl.records)

MANIFEST = "manifest.jsonl"
SHARD_DIR = "shards"
LOCK = ".lock"
WRITERS = ".writers"
# a committed shard: shards/<name>.parquet; never hidden (".tmp-*" are in-flight writes), never outside shards/
SHARD_NAME = re.compile(r"^shards/[A-Za-z0-9_-][A-Za-z0-9._-]*\.parquet$")
SHA256 = re.compile(r"^[0-9a-f]{64}$")


class RecordStoreError(Exception):
    """A record store cannot be used as asked; the message names the file and the fix."""


class CorruptShardError(RecordStoreError):
    pass


@dataclass(frozen=True, slots=True)
class ShardInfo:
    file: str  # relative to the store root
    rows: int
    bytes: int
    sha256: str
    time: float


@dataclass
class Manifest:
    shards: list[ShardInfo]  # committed shards, each once, in commit order
    header: dict = field(default_factory=dict)
    torn: str | None = None  # the last line when it lacks its newline (not committed)
    duplicates: list[str] = field(default_factory=list)  # "shards/x.parquet (lines 3 and 5)"

    @property
    def problems(self) -> list[str]:
        out = [f"{MANIFEST}: the last line has no newline (a commit that did not finish, or an edit): {self.torn[:120]!r}"
               ] if self.torn is not None else []
        return out + [f"{MANIFEST}: shard listed more than once, its episodes would count twice: {d}" for d in self.duplicates]


def recover_hint(root: Path) -> str:
    return f"`harnessrl records recover --store {root}` rebuilds it from the shards"


def repair_hint(root: Path) -> str:
    return f"`harnessrl records repair --store {root}`"


def _bad(path: Path, lineno: int, what: str) -> RecordStoreError:
    return RecordStoreError(f"{path}:{lineno}: {what}; the manifest is damaged. Restore it from a backup, or "
                            f"{recover_hint(path.parent)}.")


def _shard(path: Path, lineno: int, entry: object) -> ShardInfo:
    if not isinstance(entry, dict):
        raise _bad(path, lineno, f"expected a JSON object, found {json.dumps(entry)[:40]}")
    if entry.get("kind") != "shard":
        raise _bad(path, lineno, f"kind {entry.get('kind')!r}, expected 'shard'")
    missing = [k for k in ShardInfo.__slots__ if k not in entry]
    if missing:
        raise _bad(path, lineno, f"missing key(s) {', '.join(missing)}")
    file, rows, size, sha, t = (entry[k] for k in ShardInfo.__slots__)
    checks = [
        (isinstance(file, str) and SHARD_NAME.match(file), "file", "a name shards/NAME.parquet"),
        (type(rows) is int and rows >= 0, "rows", "a count >= 0"),
        (type(size) is int and size > 0, "bytes", "a size > 0"),
        (isinstance(sha, str) and SHA256.match(sha), "sha256", "64 lowercase hex digits"),
        (type(t) in (int, float), "time", "a number"),
    ]
    for ok, key, expected in checks:
        if not ok:
            raise _bad(path, lineno, f"{key} = {json.dumps(entry[key])[:60]} is not {expected}")
    return ShardInfo(file, rows, size, sha, float(t))


def _read_bytes(path: Path) -> bytes:
    if path.is_dir():
        raise RecordStoreError(f"{path}: is a folder, not the manifest file. Move it away; {recover_hint(path.parent)}.")
    try:
        return path.read_bytes()
    except OSError as err:
        raise RecordStoreError(f"{path}: cannot read the manifest ({err.strerror}).") from None


def read_manifest(root: Path, *, holding_lock: bool = False) -> Manifest:
    """Parse `root/manifest.jsonl`; raises `RecordStoreError` naming the first malformed line.
    `holding_lock`: the caller holds `locked(root)` already (flock would wait for itself)."""
    path = root / MANIFEST
    raw = _read_bytes(path)
    if raw and not raw.endswith(b"\n") and not holding_lock:
        # A commit may be landing right now: look again under the commit lock before calling it torn.
        with locked(root, shared=True, create=False):
            raw = _read_bytes(path)
    lines = raw.split(b"\n")
    complete, torn = lines[:-1], lines[-1]
    if not complete:
        raise RecordStoreError(f"{path}: empty manifest (no header line). Restore it from a backup, or "
                               f"{recover_hint(root)}.")
    shards: list[ShardInfo] = []
    header: dict = {}
    first_line: dict[str, int] = {}
    duplicates: list[str] = []
    for lineno, line in enumerate(complete, start=1):
        try:
            entry = json.loads(line.decode("utf-8"))
        except UnicodeDecodeError:
            raise _bad(path, lineno, "not UTF-8 text") from None
        except json.JSONDecodeError as err:
            raise _bad(path, lineno, f"not JSON ({err.msg})") from None
        if lineno == 1:
            if not isinstance(entry, dict) or entry.get("kind") != "header":
                raise _bad(path, 1, "the first line must be the header {\"kind\": \"header\", ...}")
            version = entry.get("schema_version")
            if version not in READABLE_VERSIONS:
                raise RecordStoreError(f"{path}: schema version {version}, this harnessrl reads {READABLE_VERSIONS}. "
                                       "Use the harnessrl version that wrote it, or export and re-import.")
            header = entry
            continue
        info = _shard(path, lineno, entry)
        if info.file in first_line:
            duplicates.append(f"{info.file} (lines {first_line[info.file]} and {lineno})")
            continue
        first_line[info.file] = lineno
        shards.append(info)
    torn_text = torn.decode("utf-8", "replace") if torn else None
    return Manifest(shards, header, torn_text, duplicates)


def header_line(header: dict | None = None) -> bytes:
    """The given header (kept on rewrites), or a new one."""
    header = header or {"kind": "header", "schema_version": SCHEMA_VERSION, "created": time.time()}
    return (json.dumps(header) + "\n").encode()


def shard_line(info: ShardInfo) -> bytes:
    return (json.dumps({"kind": "shard", **asdict(info)}) + "\n").encode()


def write_manifest(root: Path, shards: list[ShardInfo], header: dict | None = None) -> None:
    """Replace the manifest atomically (temp file, fsync, rename, fsync the folder). Hold `locked(root)`."""
    tmp = root / f".{MANIFEST}.{uuid.uuid4().hex}.tmp"
    try:
        with open(tmp, "wb") as f:
            f.write(header_line(header) + b"".join(shard_line(s) for s in shards))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, root / MANIFEST)
    finally:
        tmp.unlink(missing_ok=True)
    fsync_dir(root)


def manifest_tail_torn(root: Path) -> bool:
    """True when the manifest's last byte is not a newline (a torn commit nobody has repaired)."""
    with open(root / MANIFEST, "rb") as f:
        f.seek(0, os.SEEK_END)
        if f.tell() == 0:
            return False
        f.seek(-1, os.SEEK_END)
        return f.read(1) != b"\n"


@contextmanager
def locked(root: Path, *, shared: bool = False, create: bool = True, path: str = LOCK) -> Iterator[None]:
    """flock on root/.lock (or `path`). A reader on a read-only store without a lock file goes unlocked:
    no writer can be there either."""
    lock_path = root / path
    try:
        fd = os.open(lock_path, (os.O_RDWR | os.O_CREAT) if create else os.O_RDONLY, 0o644)
    except OSError:
        if create:
            raise
        yield
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_SH if shared else fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing drops the lock


@contextmanager
def writers_paused(root: Path) -> Iterator[bool | None]:
    """Yields True while holding .writers exclusively (no writer is alive, none can start until the block
    ends), False when a live writer holds it, None when it cannot be told (a read-only store whose lock
    file cannot be opened)."""
    try:
        fd = os.open(root / WRITERS, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError:
        try:
            fd = os.open(root / WRITERS, os.O_RDONLY)
        except FileNotFoundError:
            yield True  # a store nobody can write to, and no writer ever wrote here
            return
        except OSError:
            yield None
            return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        os.close(fd)


def shard_files(root: Path) -> list[str]:
    """Every file under shards/ (committed or not), relative to the root, sorted."""
    folder = root / SHARD_DIR
    if not folder.is_dir():
        return []
    return sorted(f"{SHARD_DIR}/{p.name}" for p in folder.iterdir())
