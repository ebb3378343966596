"""Append-only record store: Parquet shards + a checksummed manifest, queried with DuckDB.

Layout of a store directory::

    manifest.jsonl   line 1: header {schema_version}; then one line per committed shard
                     {file, rows, bytes, sha256, time}. Appending that line is the commit.
    shards/*.parquet immutable, written once
    .lock            flock'ed by writers around the commit

Write protocol (crash-safe at every instruction): serialise the shard in memory and hash
it; write it to `shards/.tmp-*`, fsync, rename to its final name, fsync the directory;
then append its manifest line and fsync. A process killed before the manifest line is
complete leaves at most an uncommitted file (ignored, reported by `verify`) or a torn last
manifest line (ignored, and trimmed by the next writer). Readers only see committed shards.
"""

from __future__ import annotations

import fcntl
import hashlib
import io
import json
import os
import time
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from harnessrl.episode import SCHEMA, SCHEMA_VERSION, Episode, from_arrow, to_arrow

MANIFEST = "manifest.jsonl"
SHARD_DIR = "shards"
Verify = Literal["full", "size", "none"]


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


def fsync_dir(path: Path) -> None:
    """Make a directory entry (a new or renamed file in it) durable."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 22):
            h.update(chunk)
    return h.hexdigest()


def _arrow(result: duckdb.DuckDBPyRelation) -> pa.Table:
    # DuckDB 2 renamed fetch_arrow_table -> to_arrow_table; accept both.
    fetch = getattr(result, "to_arrow_table", None) or result.fetch_arrow_table
    return fetch()


def _arrow_batches(result: duckdb.DuckDBPyRelation, rows: int) -> Iterator[pa.RecordBatch]:
    fetch = getattr(result, "to_arrow_reader", None) or result.fetch_record_batch
    return iter(fetch(rows))


class RecordStore:
    """An append-only store of `Episode`s.

    Opening checks every committed shard (`verify="full"`: size and SHA-256; `"size"`: size
    only; `"none"`). Any mismatch raises `CorruptShardError` naming the shard.
    """

    def __init__(self, root: str | os.PathLike, *, create: bool = True, verify: Verify = "full"):
        self.root = Path(root)
        manifest = self.root / MANIFEST
        if not manifest.exists():
            if not create:
                raise RecordStoreError(
                    f"{self.root}: not a record store (no {MANIFEST}). "
                    "Check the path, or write episodes there first to create one."
                )
            self._create()
        self.shards = self._read_manifest()
        if verify != "none":
            for info in self.shards:
                self._check_shard(info, full=verify == "full")

    # -- creation and manifest -----------------------------------------------------------

    def _create(self) -> None:
        (self.root / SHARD_DIR).mkdir(parents=True, exist_ok=True)
        with self._locked():
            manifest = self.root / MANIFEST
            if manifest.exists():  # another process created it meanwhile
                return
            tmp = self.root / f".{MANIFEST}.{uuid.uuid4().hex}.tmp"
            header = {"kind": "header", "schema_version": SCHEMA_VERSION, "created": time.time()}
            with open(tmp, "w") as f:
                f.write(json.dumps(header) + "\n")
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, manifest)
            fsync_dir(self.root)

    @contextmanager
    def _locked(self) -> Iterator[None]:
        self.root.mkdir(parents=True, exist_ok=True)
        with open(self.root / ".lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def _read_manifest(self) -> list[ShardInfo]:
        path = self.root / MANIFEST
        raw = path.read_bytes()
        lines = raw.split(b"\n")
        # A last line without its newline is a torn commit from a killed writer: not committed.
        complete, torn = lines[:-1], lines[-1]
        del torn
        if not complete:
            raise RecordStoreError(f"{path}: empty manifest (no header line). Restore it from a backup.")
        shards = []
        for lineno, line in enumerate(complete, start=1):
            try:
                entry = json.loads(line)
            except json.JSONDecodeError as err:
                raise RecordStoreError(f"{path}:{lineno}: unreadable manifest line ({err.msg}).") from None
            if lineno == 1:
                if entry.get("kind") != "header":
                    raise RecordStoreError(f"{path}:1: first line must be the header.")
                version = entry.get("schema_version")
                if version != SCHEMA_VERSION:
                    raise RecordStoreError(
                        f"{path}: schema version {version}, this harnessrl reads {SCHEMA_VERSION}. "
                        "Use the harnessrl version that wrote it, or export and re-import."
                    )
                continue
            shards.append(ShardInfo(**{k: entry[k] for k in ShardInfo.__slots__}))
        return shards

    def refresh(self) -> None:
        """Re-read the manifest (other processes may have committed shards)."""
        self.shards = self._read_manifest()

    # -- integrity -----------------------------------------------------------------------

    def _check_shard(self, info: ShardInfo, *, full: bool) -> None:
        path = self.root / info.file
        if not path.exists():
            raise CorruptShardError(f"{path}: shard listed in the manifest is missing.")
        size = path.stat().st_size
        if size != info.bytes:
            raise CorruptShardError(
                f"{path}: shard is {size} bytes, the manifest says {info.bytes} (truncated or "
                "overwritten). Restore the file, or drop it with `harnessrl records verify --drop-corrupt`."
            )
        if full and _sha256_file(path) != info.sha256:
            raise CorruptShardError(
                f"{path}: SHA-256 does not match the manifest (the file was modified or is "
                "corrupted). Restore the file, or drop it with `harnessrl records verify --drop-corrupt`."
            )

    def verify(self) -> dict[str, Any]:
        """Check every shard fully; also list uncommitted files left by killed writers."""
        problems: list[str] = []
        for info in self.shards:
            try:
                self._check_shard(info, full=True)
                pq.ParquetFile(self.root / info.file).metadata  # the footer must parse too
            except (CorruptShardError, pa.ArrowException) as err:
                problems.append(str(err))
        committed = {info.file for info in self.shards}
        uncommitted = sorted(
            str(p.relative_to(self.root))
            for p in (self.root / SHARD_DIR).iterdir()
            if str(p.relative_to(self.root)) not in committed
        )
        return {
            "shards": len(self.shards),
            "episodes": self.count(),
            "problems": problems,
            "uncommitted": uncommitted,
        }

    def drop_corrupt(self) -> list[str]:
        """Rewrite the manifest without shards that fail verification; returns what was dropped."""
        with self._locked():
            self.refresh()
            good, dropped = [], []
            for info in self.shards:
                try:
                    self._check_shard(info, full=True)
                    good.append(info)
                except CorruptShardError:
                    dropped.append(info.file)
            tmp = self.root / f".{MANIFEST}.{uuid.uuid4().hex}.tmp"
            header = {"kind": "header", "schema_version": SCHEMA_VERSION, "created": time.time()}
            with open(tmp, "w") as f:
                f.write(json.dumps(header) + "\n")
                for info in good:
                    f.write(json.dumps({"kind": "shard", **asdict(info)}) + "\n")
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.root / MANIFEST)
            fsync_dir(self.root)
            self.shards = good
        return dropped

    # -- writing -------------------------------------------------------------------------

    def append(self, episodes: list[Episode] | pa.Table) -> ShardInfo | None:
        """Commit episodes as one new shard. Returns None for an empty list."""
        table = episodes if isinstance(episodes, pa.Table) else to_arrow(list(episodes))
        if table.num_rows == 0:
            return None
        if not table.schema.equals(SCHEMA, check_metadata=False):
            raise RecordStoreError("append: table does not have harnessrl.episode.SCHEMA")
        buf = io.BytesIO()
        # zstd level 1: ~3x smaller than raw token arrays at a fraction of the write time.
        pq.write_table(table, buf, compression="zstd", compression_level=1, row_group_size=4096)
        data = buf.getbuffer()
        digest = hashlib.sha256(data).hexdigest()
        name = f"{time.time_ns():020d}-{os.getpid()}-{uuid.uuid4().hex[:8]}.parquet"
        shard_dir = self.root / SHARD_DIR
        tmp = shard_dir / f".tmp-{name}"
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, shard_dir / name)
        fsync_dir(shard_dir)
        info = ShardInfo(f"{SHARD_DIR}/{name}", table.num_rows, len(data), digest, time.time())
        line = (json.dumps({"kind": "shard", **asdict(info)}) + "\n").encode()
        with self._locked():
            with open(self.root / MANIFEST, "r+b") as f:
                raw = f.read()
                if raw and not raw.endswith(b"\n"):  # trim a torn line left by a killed writer
                    f.truncate(raw.rfind(b"\n") + 1)
                f.seek(0, os.SEEK_END)
                f.write(line)
                f.flush()
                os.fsync(f.fileno())
        self.shards.append(info)
        return info

    @contextmanager
    def writer(self, flush_every: int = 1024) -> Iterator["BufferedWriter"]:
        """Buffer episodes and commit a shard every `flush_every`; commits the rest on exit."""
        w = BufferedWriter(self, flush_every)
        try:
            yield w
        finally:
            w.flush()

    # -- reading -------------------------------------------------------------------------

    def count(self) -> int:
        return sum(info.rows for info in self.shards)

    def files(self) -> list[str]:
        return [str(self.root / info.file) for info in self.shards]

    def connect(self) -> duckdb.DuckDBPyConnection:
        """A DuckDB connection with a view `episodes` over every committed shard."""
        con = duckdb.connect()
        if self.shards:
            files = ", ".join("'" + f.replace("'", "''") + "'" for f in self.files())
            con.execute(f"CREATE VIEW episodes AS SELECT * FROM read_parquet([{files}])")
        else:
            empty = SCHEMA.empty_table()
            con.register("_empty_episodes", empty)
            con.execute("CREATE VIEW episodes AS SELECT * FROM _empty_episodes")
        return con

    def sql(self, query: str, params: list[Any] | None = None) -> pa.Table:
        """Run SQL against the view `episodes`; returns an Arrow table."""
        con = self.connect()
        try:
            return _arrow(con.sql(query, params=params or None))
        except duckdb.Error as err:
            raise RecordStoreError(f"query failed: {err}") from None
        finally:
            con.close()

    def table(self, columns: list[str] | None = None, where: str | None = None) -> pa.Table:
        cols = ", ".join(f'"{c}"' for c in columns) if columns else "*"
        return self.sql(f"SELECT {cols} FROM episodes" + (f" WHERE {where}" if where else ""))

    def episodes(self, where: str | None = None) -> list[Episode]:
        return from_arrow(self.table(where=where))

    def iter_episodes(self, batch_rows: int = 1024) -> Iterator[Episode]:
        """Stream all episodes shard by shard (bounded memory)."""
        for path in self.files():
            for batch in pq.ParquetFile(path).iter_batches(batch_size=batch_rows):
                yield from from_arrow(pa.Table.from_batches([batch]))

    def solve_rate(self, by: Iterable[str] = ("task_id", "harness_id"), where: str | None = None) -> pa.Table:
        """Success rate, mean reward and episode count grouped by context columns."""
        keys = ", ".join(f'"{k}"' for k in by)
        return self.sql(
            f"SELECT {keys}, count(*) AS n, avg(success::DOUBLE) AS solve_rate, avg(reward) AS mean_reward "
            f"FROM episodes {'WHERE ' + where if where else ''} GROUP BY {keys} ORDER BY {keys}"
        )

    # -- export --------------------------------------------------------------------------

    def export_parquet(self, out: str | os.PathLike, where: str | None = None) -> int:
        """One Parquet file readable by pandas, polars and `datasets.load_dataset("parquet")`."""
        con = self.connect()
        try:
            sel = "SELECT * FROM episodes" + (f" WHERE {where}" if where else "")
            reader = _arrow_batches(con.sql(sel), 8192)
            n = 0
            with pq.ParquetWriter(str(out), SCHEMA, compression="zstd") as w:
                for batch in reader:
                    w.write_table(pa.Table.from_batches([batch]).cast(SCHEMA))
                    n += batch.num_rows
            return n
        finally:
            con.close()

    def export_jsonl(self, out: str | os.PathLike, where: str | None = None) -> int:
        """One JSON object per episode; token arrays as lists; metadata as an object."""
        n = 0
        with open(out, "w", encoding="utf-8") as f:
            source = self.episodes(where) if where else self.iter_episodes()
            for ep in source:
                f.write(json.dumps(episode_to_json(ep), ensure_ascii=False) + "\n")
                n += 1
        return n


def episode_to_json(ep: Episode) -> dict[str, Any]:
    d = {k: getattr(ep, k) for k in Episode.__slots__ if k not in ("context", "turns")}
    d["context"] = asdict(ep.context)
    d["num_turns"] = ep.num_turns
    d["turns"] = [
        {
            k: (v.tolist() if hasattr(v, "tolist") else v)
            for k, v in ((s, getattr(t, s)) for s in t.__slots__)
        }
        for t in ep.turns
    ]
    return d


class BufferedWriter:
    """Collects episodes and commits them in shards of `flush_every`."""

    def __init__(self, store: RecordStore, flush_every: int):
        self.store, self.flush_every, self.buffer = store, flush_every, []

    def write(self, episode: Episode) -> None:
        self.buffer.append(episode)
        if len(self.buffer) >= self.flush_every:
            self.flush()

    def flush(self) -> None:
        if self.buffer:
            self.store.append(self.buffer)
            self.buffer = []
