"""Append-only record store: Parquet shards + a checksummed manifest, queried with DuckDB.

Layout of a store directory::

    manifest.jsonl   line 1: header {schema_version}; then one line per committed shard
                     {file, rows, bytes, sha256, time}. Appending that line is the commit.
    shards/*.parquet immutable, written once
    .lock, .writers  flock'ed by writers (records/manifest.py says which lock means what)
    .verified.json   read verification verdicts (records/integrity.py)

Write protocol (crash-safe at every instruction): serialise the shard in memory and hash
it; write it to `shards/.tmp-*`, fsync, rename to its final name, fsync the directory;
then append its manifest line and fsync. A process killed before the manifest line is
complete leaves at most an uncommitted file (reported by `verify`) or a torn last manifest
line (reported by `verify`, refused by readers and writers, fixed by `records repair`).

Read protocol: readers see committed shards only, and every shard is checked against its
manifest line (SHA-256, footer, row count) the first time it is read; a bad shard stops the
read with its name. Queries run in DuckDB with file access switched off: SQL can read the
episodes and nothing else, and can write nowhere.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import time
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

import duckdb
import pyarrow as pa
import pyarrow.dataset as pads
import pyarrow.parquet as pq

from harnessrl.episode import SCHEMA, Episode, from_arrow, to_arrow
from harnessrl.records.export import episode_to_json, sft_messages
from harnessrl.records.integrity import ReadVerifier, check_shard, recover, repair, verify_store
from harnessrl.records.manifest import (
    MANIFEST, SHARD_DIR, WRITERS, CorruptShardError, Manifest, RecordStoreError, ShardInfo, fsync_dir, locked,
    manifest_tail_torn, read_manifest, recover_hint, repair_hint, shard_files, shard_line, write_manifest,
)

__all__ = ["MANIFEST", "SHARD_DIR", "BufferedWriter", "CorruptShardError", "RecordStore", "RecordStoreError",
           "ShardInfo", "episode_to_json", "fsync_dir", "recover", "repair"]

# full: hash every shard when the store is opened. read (default): sizes when opened, each shard fully
# the first time it is read (verdicts cached). size: the old name of read. none: no checks (verify, repair).
Verify = Literal["full", "read", "size", "none"]


def _interrupted(err: BaseException) -> bool:
    """DuckDB reports a SIGINT that arrives mid-query as an error ("Query interrupted"), not KeyboardInterrupt."""
    kind = getattr(duckdb, "InterruptException", None)
    return (kind is not None and isinstance(err, kind)) or "query interrupted" in str(err).lower()


def _arrow(result: duckdb.DuckDBPyRelation) -> pa.Table:
    # DuckDB 2 renamed fetch_arrow_table -> to_arrow_table; accept both.
    fetch = getattr(result, "to_arrow_table", None) or result.fetch_arrow_table
    return fetch()


def _arrow_batches(result: duckdb.DuckDBPyRelation, rows: int) -> Iterator[pa.RecordBatch]:
    fetch = getattr(result, "to_arrow_reader", None) or result.fetch_record_batch
    return iter(fetch(rows))


def _os_error(action: str, err: OSError) -> RecordStoreError:
    where = f"{err.filename}: " if err.filename else ""
    return RecordStoreError(f"{where}cannot {action} ({err.strerror or err})")


@contextmanager
def _replace_on_success(out: Path) -> Iterator[Path]:
    """Yield a temporary path next to `out`; rename it onto `out` only when the block succeeds, so a failed
    export leaves an existing `out` untouched and never a partial or empty file."""
    tmp = out.with_name(f".{out.name}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        yield tmp
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        os.replace(tmp, out)
    except OSError as err:
        raise _os_error(f"write {out}", err) from None
    finally:
        tmp.unlink(missing_ok=True)


class RecordStore:
    """An append-only store of `Episode`s.

    Opening refuses a damaged manifest (naming the line and the command that fixes it) and a
    folder with shards but no manifest. `verify` chooses when shards are checked (see `Verify`);
    a mismatch raises `CorruptShardError` naming the shard. `damaged_ok=True` opens a store whose
    manifest has a torn last line or duplicate lines (for `verify` and `repair` only).
    """

    def __init__(self, root: str | os.PathLike, *, create: bool = True, verify: Verify = "read",
                 damaged_ok: bool = False):
        self.root = Path(root)
        self.verify_mode = "read" if verify == "size" else verify
        self.damaged_ok = damaged_ok
        manifest = self.root / MANIFEST
        if not (manifest.exists() or manifest.is_symlink()):
            orphans = [f for f in shard_files(self.root) if f.endswith(".parquet") and not f.startswith(f"{SHARD_DIR}/.")]
            if orphans:
                raise RecordStoreError(f"{self.root}: {len(orphans)} shard(s) but no {MANIFEST} (it was deleted or lost); "
                                       f"refusing to start a new store on top of them. {recover_hint(self.root)[0].upper()}"
                                       f"{recover_hint(self.root)[1:]}.")
            if not create:
                raise RecordStoreError(f"{self.root}: not a record store (no {MANIFEST}). "
                                       "Check the path, or write episodes there first to create one.")
            if self.root.exists() and not self.root.is_dir():
                raise RecordStoreError(f"{self.root}: not a folder; give a folder for the record store.")
            try:
                self._create()
            except OSError as err:
                raise _os_error(f"create a record store in {self.root}", err) from None
        self.manifest: Manifest = self._load()
        self.shards: list[ShardInfo] = self.manifest.shards
        self._verifier = ReadVerifier(self.root)
        self._checked: set[str] = set()
        if self.verify_mode != "none":
            for info in self.shards:
                check_shard(self.root, info, full=self.verify_mode == "full")
            if self.verify_mode == "full":
                self._checked = {info.file for info in self.shards}

    # -- creation and manifest -----------------------------------------------------------

    def _create(self) -> None:
        (self.root / SHARD_DIR).mkdir(parents=True, exist_ok=True)
        with locked(self.root):
            manifest = self.root / MANIFEST
            if manifest.exists():  # another process created it meanwhile
                return
            write_manifest(self.root, [])

    def _load(self) -> Manifest:
        m = read_manifest(self.root)
        if m.problems and not self.damaged_ok:
            raise RecordStoreError(f"{self.root}: {m.problems[0]}. Nothing was read. Check with `harnessrl records "
                                   f"verify --store {self.root}`; fix with {repair_hint(self.root)}.")
        return m

    def refresh(self) -> None:
        """Re-read the manifest (other processes may have committed shards)."""
        self.manifest = self._load()
        self.shards = self.manifest.shards

    # -- integrity -----------------------------------------------------------------------

    def _check_shard(self, info: ShardInfo, *, full: bool) -> None:
        check_shard(self.root, info, full=full)

    def _readable(self) -> list[ShardInfo]:
        """The committed shards, each checked fully the first time this store reads it."""
        if self.verify_mode != "none":
            for info in self.shards:
                if info.file not in self._checked:
                    self._verifier.check(info)
                    self._checked.add(info.file)
            self._verifier.save()
        return self.shards

    def verify(self, progress=lambda: None) -> dict[str, Any]:
        """Check everything (see integrity.verify_store): shards, manifest damage, duplicate ids, leftovers."""
        return verify_store(self.root, read_manifest(self.root), progress)

    def drop_corrupt(self) -> list[str]:
        """Rewrite the manifest without shards that fail verification; returns what was dropped."""
        with locked(self.root):
            m = read_manifest(self.root, holding_lock=True)
            good, dropped = [], []
            for info in m.shards:
                try:
                    check_shard(self.root, info, full=True)
                    good.append(info)
                except CorruptShardError:
                    dropped.append(info.file)
            write_manifest(self.root, good, m.header)
            self.manifest, self.shards = Manifest(good, m.header, m.torn), good
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
        tmp, final = shard_dir / f".tmp-{name}", shard_dir / name
        info = ShardInfo(f"{SHARD_DIR}/{name}", table.num_rows, len(data), digest, time.time())
        try:
            # shared on .writers from the first byte to the commit: `verify` tells this shard is in flight
            with locked(self.root, shared=True, path=WRITERS):
                self._refuse_torn()
                try:
                    with open(tmp, "wb") as f:
                        f.write(data)
                        f.flush()
                        os.fsync(f.fileno())
                    os.replace(tmp, final)
                    fsync_dir(shard_dir)
                    with locked(self.root):
                        self._refuse_torn()
                        with open(self.root / MANIFEST, "ab") as f:
                            f.write(shard_line(info))
                            f.flush()
                            os.fsync(f.fileno())
                except BaseException:
                    tmp.unlink(missing_ok=True)
                    try:
                        if info.file not in {s.file for s in read_manifest(self.root).shards}:
                            final.unlink(missing_ok=True)  # never committed: leave no orphan
                    except (OSError, RecordStoreError):
                        pass  # cannot tell: keep the file; `verify` reports it
                    raise
        except OSError as err:
            raise _os_error(f"store {table.num_rows} episodes in {self.root}; they were not stored", err) from None
        self.shards.append(info)
        self._checked.add(info.file)  # written from the bytes we hashed
        return info

    def _refuse_torn(self) -> None:
        if manifest_tail_torn(self.root):
            raise RecordStoreError(f"{self.root / MANIFEST}: the last line has no newline (a commit that did not "
                                   f"finish); nothing is appended after it. Fix it with {repair_hint(self.root)}.")

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
        """Paths of the committed shards, each verified (see `Verify`)."""
        return [str(self.root / info.file) for info in self._readable()]

    def connect(self) -> duckdb.DuckDBPyConnection:
        """A DuckDB connection with a view `episodes` over every committed (and verified) shard.

        The shards are handed to DuckDB as an Arrow dataset, then DuckDB's file access is switched off
        and its configuration locked: SQL sees the episodes and cannot read, write, attach or install
        anything else (no COPY ... TO, ATTACH, read_csv, INSTALL)."""
        files = self.files()
        con = duckdb.connect()
        source = pads.dataset(files, schema=SCHEMA, format="parquet") if files else SCHEMA.empty_table()
        con.register("_shards", source)
        con.execute("CREATE VIEW episodes AS SELECT * FROM _shards")
        con.execute("SET enable_external_access = false")
        con.execute("SET lock_configuration = true")
        return con

    def sql(self, query: str, params: list[Any] | None = None) -> pa.Table:
        """Run SQL against the view `episodes`; returns an Arrow table."""
        if not query.strip():
            raise RecordStoreError("empty query; give SQL over the view `episodes`, e.g. SELECT count(*) FROM episodes")
        con = self.connect()
        try:
            result = con.sql(query, params=params or None)
            if result is None:
                raise RecordStoreError("the query returned no table; give a SELECT (queries are read-only)")
            return _arrow(result)
        except KeyboardInterrupt:
            raise
        except (duckdb.Error, RuntimeError) as err:
            if _interrupted(err):  # DuckDB turns Ctrl-C inside a query into an error: keep it a Ctrl-C
                raise KeyboardInterrupt from err
            if not isinstance(err, duckdb.Error):
                raise
            raise RecordStoreError(f"query failed: {' '.join(str(err).split())}") from None
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
        """One Parquet file readable by pandas, polars and `datasets.load_dataset("parquet")`.
        Written to a temporary file renamed onto `out` on success: a failure leaves `out` as it was."""
        con = self.connect()
        try:
            sel = "SELECT * FROM episodes" + (f" WHERE {where}" if where else "")
            try:
                reader = _arrow_batches(con.sql(sel), 8192)
                first = next(reader, None)  # a bad --where fails here, before any file exists
            except duckdb.Error as err:
                raise RecordStoreError(f"query failed: {' '.join(str(err).split())}") from None
            n = 0
            with _replace_on_success(Path(out)) as tmp, pq.ParquetWriter(str(tmp), SCHEMA, compression="zstd") as w:
                batch = first
                while batch is not None:
                    w.write_table(pa.Table.from_batches([batch]).cast(SCHEMA))
                    n += batch.num_rows
                    batch = next(reader, None)
            return n
        finally:
            con.close()

    def export_sft(self, out: str | os.PathLike, where: str | None = None) -> tuple[int, int]:
        """One {"messages": [...]} line per episode (TRL SFT's conversational format) from the stored
        conversations; (written, skipped: episodes without one). Atomic like export_jsonl; nothing is re-rendered."""
        n = skipped = 0
        source = self.episodes(where) if where else self.iter_episodes()
        with _replace_on_success(Path(out)) as tmp, open(tmp, "w", encoding="utf-8") as f:
            for ep in source:
                msgs = sft_messages(ep)
                if not msgs:
                    skipped += 1
                    continue
                f.write(json.dumps({"messages": msgs}, ensure_ascii=False) + "\n")
                n += 1
        return n, skipped

    def export_jsonl(self, out: str | os.PathLike, where: str | None = None) -> int:
        """One JSON object per episode; token arrays as lists; metadata as an object. Atomic like export_parquet."""
        n = 0
        source = self.episodes(where) if where else self.iter_episodes()
        with _replace_on_success(Path(out)) as tmp, open(tmp, "w", encoding="utf-8") as f:
            for ep in source:
                f.write(json.dumps(episode_to_json(ep), ensure_ascii=False) + "\n")
                n += 1
        return n


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
