"""Checking what a record store holds, and the explicit commands that fix what can be fixed.

- `check_shard`: size, SHA-256, a readable Parquet footer, the row count and the schema the
  manifest line promises. Any difference raises `CorruptShardError` naming the shard.
- `ReadVerifier`: every read path runs each shard through `check_shard` once; the verdict is
  cached in `.verified.json` keyed by (size, mtime, ctime, inode, sha256, rows), so a second
  `records query` does not hash the store again, and any write to a shard (which moves its
  mtime/ctime) makes it be checked again.
- `verify_store`: everything above for every shard, plus the manifest's repairable damage (torn
  last line, duplicate lines), episode ids stored twice, evaluation cells stored twice (below),
  and files under shards/ no manifest line names, told apart by whether a live writer holds the
  store.
- An evaluation cell is (run id, task, harness, seed); every episode `harnessrl eval` stores
  carries `metadata[EVAL_META]` (the policy it ran), so only evaluation episodes are held to one
  per cell: training, audits' replays and the skill optimizer may repeat a task x harness x seed.
- `recover` rebuilds a lost or unreadable manifest from the shards (each Parquet file carries
  its schema and row count); `repair` trims a torn last line and duplicate lines. Neither runs
  by itself: reads refuse a damaged store and name the command.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from harnessrl.episode import is_episode_schema
from harnessrl.records.manifest import (
    MANIFEST, SHARD_NAME, CorruptShardError, Manifest, RecordStoreError, ShardInfo, _shard, locked, read_manifest,
    repair_hint, shard_files, write_manifest, writers_paused,
)

CACHE = ".verified.json"
EVAL_META = "eval"  # metadata key of every evaluation episode: the policy spec it ran
CELL_KEY = ("run_id", "task_id", "harness_id", "seed")  # one episode per evaluation cell
_SHOWN_CELLS = 200  # a whole run stored twice would print thousands of lines; the count says the rest


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 22):
            h.update(chunk)
    return h.hexdigest()


def _fix(root: Path) -> str:
    return (f"Restore the file, or drop the shard from the manifest with `harnessrl records verify --store {root} "
            "--drop-corrupt` (its episodes are lost).")


def check_shard(root: Path, info: ShardInfo, *, full: bool) -> None:
    """Raise `CorruptShardError` unless the shard is what its manifest line says (full: bytes too)."""
    path = root / info.file
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        raise CorruptShardError(f"{path}: shard listed in the manifest is missing. {_fix(root)}") from None
    if not path.is_file():
        raise CorruptShardError(f"{path}: shard listed in the manifest is not a file. {_fix(root)}")
    if size != info.bytes:
        raise CorruptShardError(f"{path}: shard is {size} bytes, the manifest says {info.bytes} (truncated or "
                                f"overwritten). {_fix(root)}")
    if not full:
        return
    if sha256_file(path) != info.sha256:
        raise CorruptShardError(f"{path}: SHA-256 does not match the manifest (the file was modified or is "
                                f"corrupted). {_fix(root)}")
    try:
        parquet = pq.ParquetFile(path)
        rows, schema = parquet.metadata.num_rows, parquet.schema_arrow
    except (pa.ArrowException, OSError) as err:
        raise CorruptShardError(f"{path}: the SHA-256 matches but the Parquet footer cannot be read ({err}); the "
                                f"manifest was written for a broken file. {_fix(root)}") from None
    if rows != info.rows:
        raise CorruptShardError(f"{path}: holds {rows} episodes, the manifest says {info.rows} (the manifest line "
                                f"was edited). {_fix(root)}")
    if not is_episode_schema(schema):
        raise CorruptShardError(f"{path}: not an episode shard (its columns differ from harnessrl's schema). {_fix(root)}")


class ReadVerifier:
    """Checks each shard fully the first time it is read; remembers the verdict across processes."""

    def __init__(self, root: Path):
        self.root = root
        self.cache: dict[str, list] = {}
        self.dirty = False
        try:
            loaded = json.loads((root / CACHE).read_text())
            if isinstance(loaded, dict):
                self.cache = loaded
        except (OSError, ValueError):
            pass  # no cache yet, or an unreadable one: check everything

    def _key(self, info: ShardInfo) -> list:
        st = (self.root / info.file).stat()
        return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, info.sha256, info.rows]

    def check(self, info: ShardInfo) -> None:
        try:
            key = self._key(info)
        except OSError:
            key = None
        if key is not None and self.cache.get(info.file) == key:
            return
        check_shard(self.root, info, full=True)
        self.cache[info.file] = key or self._key(info)
        self.dirty = True

    def save(self) -> None:
        """Best effort: a read-only store just checks again next time."""
        if not self.dirty:
            return
        tmp = self.root / f".{CACHE}.{uuid.uuid4().hex}.tmp"
        try:
            tmp.write_text(json.dumps(self.cache))
            os.replace(tmp, self.root / CACHE)
            self.dirty = False
        except OSError:
            tmp.unlink(missing_ok=True)


def _duplicate_ids(root: Path, shards: list[ShardInfo]) -> list[str]:
    if not shards:
        return []
    ids = pa.concat_arrays([pq.read_table(root / s.file, columns=["episode_id"]).column(0).combine_chunks() for s in shards])
    counts = pc.value_counts(ids)
    dup = counts.filter(pc.greater(counts.field("counts"), 1))
    if len(dup) == 0:
        return []
    shown = ", ".join(str(v) for v in dup.field("values").to_pylist()[:3])
    return [f"{len(dup)} episode id(s) are stored more than once ({shown}{', ...' if len(dup) > 3 else ''}): "
            f"{len(ids)} rows, {len(pc.unique(ids))} distinct ids"]


def _duplicate_cells(root: Path, shards: list[ShardInfo]) -> list[str]:
    """One line per evaluation cell stored more than once (a run re-run or resumed twice into one store)."""
    counts: dict[tuple, int] = {}
    for s in shards:
        t = pq.read_table(root / s.file, columns=[*CELL_KEY, "metadata"])
        # substring first (cheap), then the JSON: only a top-level key marks an evaluation episode
        t = t.filter(pc.fill_null(pc.match_substring(t.column("metadata"), f'"{EVAL_META}":'), False))
        for *key, meta in zip(*(t.column(c).to_pylist() for c in (*CELL_KEY, "metadata"))):
            if EVAL_META in json.loads(meta):
                counts[tuple(key)] = counts.get(tuple(key), 0) + 1
    dup = sorted(((k, n) for k, n in counts.items() if n > 1), key=lambda kn: tuple(map(str, kn[0])))
    out = [f"evaluation cell stored {n} times: run {run!r}, task {task!r}, harness {harness!r}, seed {seed}"
           for (run, task, harness, seed), n in dup[:_SHOWN_CELLS]]
    if len(dup) > _SHOWN_CELLS:
        out.append(f"... and {len(dup) - _SHOWN_CELLS} more evaluation cells stored more than once")
    return out


def verify_store(root: Path, manifest: Manifest, progress=lambda: None) -> dict[str, Any]:
    """Every check, none stopping at the first failure. `problems` empty means the store is sound."""
    problems = [p + f"; repair it with {repair_hint(root)}" for p in manifest.problems]
    good = []
    for info in manifest.shards:
        try:
            check_shard(root, info, full=True)
            good.append(info)
        except CorruptShardError as err:
            problems.append(str(err))
        progress()
    problems += _duplicate_ids(root, good)
    problems += _duplicate_cells(root, good)
    with writers_paused(root) as quiet:
        # under the writers lock no commit can land between reading the manifest and listing the files
        committed = {s.file for s in read_manifest(root).shards} if quiet else {s.file for s in manifest.shards}
        uncommitted = [f for f in shard_files(root) if f not in committed]
    return {"shards": len(manifest.shards), "episodes": sum(s.rows for s in good), "problems": problems,
            "uncommitted": uncommitted, "writers": {True: "none", False: "live", None: "unknown"}[quiet]}


def recover(root: Path) -> dict[str, Any]:
    """Rebuild a lost or unreadable manifest from the shard files. Keeps a damaged manifest aside."""
    path = root / MANIFEST
    if path.is_file():
        try:
            read_manifest(root)
        except RecordStoreError:
            pass  # damaged: recover it
        else:
            raise RecordStoreError(f"{path} is readable; `recover` only rebuilds a lost or unreadable manifest. "
                                   f"Use {repair_hint(root)} for a torn last line or duplicate lines, "
                                   f"`harnessrl records verify --store {root}` to check the shards.")
    if not (root / "shards").is_dir():
        raise RecordStoreError(f"{root}: no shards/ folder; nothing to recover from.")
    with locked(root), writers_paused(root) as quiet:
        if quiet is False:
            raise RecordStoreError(f"{root}: a writer is running on this store; stop it before recovering.")
        shards, skipped = [], []
        for name in shard_files(root):
            if not SHARD_NAME.match(name):
                skipped.append(f"{name} (not a committed shard name)")
                continue
            file = root / name
            try:
                parquet = pq.ParquetFile(file)
                if not is_episode_schema(parquet.schema_arrow):
                    raise ValueError("columns differ from harnessrl's schema")
                rows = parquet.metadata.num_rows
                st = file.stat()
                shards.append(ShardInfo(name, rows, st.st_size, sha256_file(file), st.st_mtime))
            except (pa.ArrowException, OSError, ValueError) as err:
                skipped.append(f"{name} ({err})")
        kept_aside = None
        if path.exists() or path.is_symlink():
            kept_aside = path.with_name(f"{MANIFEST}.damaged-{time.strftime('%Y%m%d-%H%M%S')}")
            os.replace(path, kept_aside)
        write_manifest(root, shards)  # names start with the write time in ns: commit order
    return {"shards": len(shards), "episodes": sum(s.rows for s in shards), "skipped": skipped,
            "kept_aside": str(kept_aside) if kept_aside else None}


def repair(root: Path, keep_torn: bool = False) -> list[str]:
    """Drop (or, with keep_torn, complete) a torn last line and drop duplicate lines. Returns what changed."""
    with locked(root):
        m = read_manifest(root, holding_lock=True)
        changes = [f"dropped duplicate line for {d}" for d in m.duplicates]
        shards = list(m.shards)
        if m.torn is not None:
            if keep_torn:
                try:
                    info = _shard(root / MANIFEST, len(m.shards) + len(m.duplicates) + 2, json.loads(m.torn))
                except (ValueError, RecordStoreError) as err:
                    raise RecordStoreError(f"the torn last line cannot be kept ({err}); repair without --keep-torn "
                                           "to drop it") from None
                check_shard(root, info, full=True)
                if info.file not in {s.file for s in shards}:
                    shards.append(info)
                changes.append(f"completed the torn last line ({info.file}, {info.rows} episodes kept)")
            else:
                changes.append(f"dropped the torn last line {m.torn[:80]!r} (that commit never finished)")
        if changes:
            write_manifest(root, shards, m.header)
    return changes
