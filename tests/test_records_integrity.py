"""Issue 16, "silent wrong data": every damage a store can suffer is named on read, by verify, or refused."""

import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import harnessrl.records as records_mod
from harnessrl.records import MANIFEST, CorruptShardError, RecordStore, RecordStoreError, recover, repair
from harnessrl.records.manifest import WRITERS, writers_paused
from tests.helpers import make_episode

ROOT = Path(__file__).resolve().parents[1]


def _store(path, n=3, per=10):
    s = RecordStore(path)
    for k in range(n):
        s.append([make_episode(per * k + i) for i in range(per)])
    return s


def _lines(path):
    return (path / MANIFEST).read_text().splitlines()


def _write_lines(path, lines):
    (path / MANIFEST).write_text("\n".join(lines) + "\n")


def test_random_single_bit_flips_never_read_back_as_data(tmp_path):
    """The issue's experiment: 300 random bit flips; 8 used to come back as altered rows with exit 0."""
    s = _store(tmp_path)
    originals = {info.file: (tmp_path / info.file).read_bytes() for info in s.shards}
    rng = random.Random(16)
    for trial in range(300):
        file = rng.choice(sorted(originals))
        data = bytearray(originals[file])
        data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        (tmp_path / file).write_bytes(bytes(data))
        reader = RecordStore(tmp_path)  # a fresh reader, as a new `records query` would be
        with pytest.raises(CorruptShardError, match=Path(file).name):
            if trial % 2:
                reader.sql("SELECT outcome, count(*) FROM episodes GROUP BY 1")
            else:
                list(reader.iter_episodes())
        (tmp_path / file).write_bytes(originals[file])
    assert RecordStore(tmp_path).count() == 30 and len(RecordStore(tmp_path).episodes()) == 30


def test_cached_verdict_does_not_hide_a_later_same_size_flip(tmp_path):
    s = _store(tmp_path)
    reader = RecordStore(tmp_path)
    assert reader.sql("SELECT count(*) AS n FROM episodes").column("n")[0].as_py() == 30  # verdicts now cached
    assert (tmp_path / ".verified.json").exists()
    victim = tmp_path / s.shards[0].file
    st = victim.stat()
    time.sleep(0.05)  # file times tick at the kernel's clock resolution
    data = bytearray(victim.read_bytes())
    data[len(data) // 3] ^= 0x10
    victim.write_bytes(bytes(data))
    os.utime(victim, ns=(st.st_atime_ns, st.st_mtime_ns))  # even with the old mtime put back (ctime moves)
    assert victim.stat().st_size == st.st_size
    with pytest.raises(CorruptShardError, match=victim.name):
        RecordStore(tmp_path).sql("SELECT count(*) FROM episodes")


def test_verify_catches_a_duplicated_manifest_line_and_reads_refuse_it(tmp_path):
    _store(tmp_path)
    lines = _lines(tmp_path)
    _write_lines(tmp_path, lines + [lines[2]])
    with pytest.raises(RecordStoreError, match="more than once"):
        RecordStore(tmp_path).count()
    report = RecordStore(tmp_path, verify="none", damaged_ok=True).verify()
    assert any("more than once" in p for p in report["problems"])
    assert repair(tmp_path) == [f"dropped duplicate line for {json.loads(lines[2])['file']} (lines 3 and 5)"]
    assert RecordStore(tmp_path).verify()["problems"] == [] and RecordStore(tmp_path).count() == 30


def test_verify_catches_duplicate_episode_ids_across_shards(tmp_path):
    s = _store(tmp_path, n=1)
    again = make_episode(0)
    again.episode_id = s.table(["episode_id"]).column(0)[0].as_py()  # the same id again, in a new shard
    s.append([again])
    problems = s.verify()["problems"]
    assert len(problems) == 1 and "stored more than once" in problems[0] and "11 rows, 10 distinct" in problems[0]


def test_edited_rows_count_is_caught_by_verify_and_by_reads(tmp_path):
    _store(tmp_path)
    lines = _lines(tmp_path)
    entry = json.loads(lines[1])
    entry["rows"] = 139
    _write_lines(tmp_path, [lines[0], json.dumps(entry), *lines[2:]])
    report = RecordStore(tmp_path, verify="none").verify()
    assert len(report["problems"]) == 1 and "holds 10 episodes, the manifest says 139" in report["problems"][0]
    assert report["episodes"] == 20  # what verified, not the manifest's claim
    with pytest.raises(CorruptShardError, match="manifest says 139"):
        RecordStore(tmp_path).sql("SELECT count(*) FROM episodes")


def test_sha_matching_but_unreadable_footer_is_a_problem(tmp_path):
    import hashlib

    s = _store(tmp_path, n=2)
    victim = tmp_path / s.shards[1].file
    broken = victim.read_bytes()[:-12] + b"\0" * 12  # footer length and magic gone
    victim.write_bytes(broken)
    lines = _lines(tmp_path)
    entry = json.loads(lines[2])
    entry.update(bytes=len(broken), sha256=hashlib.sha256(broken).hexdigest())  # a manifest written for a broken file
    _write_lines(tmp_path, [lines[0], lines[1], json.dumps(entry)])
    problems = RecordStore(tmp_path, verify="none").verify()["problems"]
    assert len(problems) == 1 and "SHA-256 matches but the Parquet footer cannot be read" in problems[0]
    with pytest.raises(CorruptShardError, match="footer"):
        RecordStore(tmp_path).episodes()


HOLDER = r"""
import sys, time
from pathlib import Path
from harnessrl.records.manifest import locked, WRITERS
root = Path(sys.argv[1])
with locked(root, shared=True, path=WRITERS):     # what RecordStore.append holds while a shard is in flight
    (root / "shards" / ".tmp-inflight.parquet").write_bytes(b"half a shard")
    (root / "shards" / "00000000000000000001-1-inflight.parquet").write_bytes(b"renamed, not yet committed")
    print("ready", flush=True)
    time.sleep(60)
"""


def test_live_writer_files_are_never_called_safe_to_delete(tmp_path):
    _store(tmp_path, n=1)
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(tmp_path)], cwd=ROOT, stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": f"{ROOT / 'src'}:{ROOT}"})
    try:
        assert proc.stdout.readline().strip() == "ready"
        report = RecordStore(tmp_path).verify()
        assert report["writers"] == "live" and len(report["uncommitted"]) == 2 and report["problems"] == []
    finally:
        proc.kill()
        proc.wait()
    report = RecordStore(tmp_path).verify()  # the writer died: now its leftovers are a killed writer's
    assert report["writers"] == "none" and len(report["uncommitted"]) == 2


def test_append_holds_the_writers_lock_from_shard_to_commit(tmp_path, monkeypatch):
    s = _store(tmp_path, n=1)
    seen = []
    real_replace = os.replace

    def spy(src, dst):
        if str(src).endswith(".parquet") and ".tmp-" in str(src):
            with writers_paused(tmp_path) as quiet:
                seen.append(quiet)
        return real_replace(src, dst)

    monkeypatch.setattr(records_mod.os, "replace", spy)
    s.append([make_episode(99)])
    assert seen == [False] and (tmp_path / WRITERS).exists()


def test_shards_without_manifest_are_refused_then_recovered(tmp_path):
    s = _store(tmp_path)
    ids = sorted(s.table(["episode_id"]).column(0).to_pylist())
    (tmp_path / MANIFEST).unlink()
    for create in (True, False):
        with pytest.raises(RecordStoreError, match="3 shard.*no manifest.jsonl.*records recover"):
            RecordStore(tmp_path, create=create)
    assert not (tmp_path / MANIFEST).exists()  # nothing was created on top of the orphans
    res = recover(tmp_path)
    assert res["shards"] == 3 and res["episodes"] == 30 and res["skipped"] == []
    again = RecordStore(tmp_path, verify="full")
    assert sorted(again.table(["episode_id"]).column(0).to_pylist()) == ids and again.verify()["problems"] == []
    with pytest.raises(RecordStoreError, match="is readable"):
        recover(tmp_path)  # recover never rewrites a good manifest


def test_recover_keeps_a_damaged_manifest_aside_and_skips_non_shards(tmp_path):
    _store(tmp_path, n=2)
    (tmp_path / MANIFEST).write_bytes(b"\xff\xfe not a manifest\n")
    (tmp_path / "shards" / "00000000000000000009-1-bogus.parquet").write_bytes(b"not parquet")
    res = recover(tmp_path)
    assert res["shards"] == 2 and len(res["skipped"]) == 1 and "bogus" in res["skipped"][0]
    assert Path(res["kept_aside"]).read_bytes().startswith(b"\xff\xfe")
    assert RecordStore(tmp_path).count() == 20


def test_torn_last_line_can_be_kept_when_its_shard_verifies(tmp_path):
    _store(tmp_path, n=2)
    raw = (tmp_path / MANIFEST).read_bytes()
    (tmp_path / MANIFEST).write_bytes(raw[:-1])  # a whole line, only its newline lost
    with pytest.raises(RecordStoreError, match="no newline"):
        RecordStore(tmp_path)
    assert repair(tmp_path, keep_torn=True)[0].startswith("completed the torn last line")
    assert RecordStore(tmp_path).count() == 20 and (tmp_path / MANIFEST).read_bytes() == raw


BAD_LINES = {
    "missing key": lambda e: {k: v for k, v in e.items() if k != "sha256"},
    "null": lambda e: None,
    "list": lambda e: [1, 2],
    "unknown kind": lambda e: {**e, "kind": "shrd"},
    "path outside shards": lambda e: {**e, "file": "../../etc/passwd"},
    "absolute path": lambda e: {**e, "file": "/etc/passwd"},
    "rows not a count": lambda e: {**e, "rows": "41"},
    "rows a bool": lambda e: {**e, "rows": True},
    "negative bytes": lambda e: {**e, "bytes": -1},
    "short sha": lambda e: {**e, "sha256": "abc"},
}


@pytest.mark.parametrize("kind", sorted(BAD_LINES))
def test_malformed_manifest_lines_name_the_line(tmp_path, kind):
    _store(tmp_path, n=2)
    lines = _lines(tmp_path)
    _write_lines(tmp_path, [lines[0], json.dumps(BAD_LINES[kind](json.loads(lines[1]))), lines[2]])
    with pytest.raises(RecordStoreError, match=f"{MANIFEST}:2: .*records recover"):
        RecordStore(tmp_path, verify="none", damaged_ok=True)


def test_non_utf8_empty_and_folder_manifests(tmp_path):
    _store(tmp_path, n=1)
    lines = _lines(tmp_path)
    (tmp_path / MANIFEST).write_bytes(lines[0].encode() + b"\n\xff\xfe\xfd\n")
    with pytest.raises(RecordStoreError, match=":2: not UTF-8"):
        RecordStore(tmp_path)
    (tmp_path / MANIFEST).write_bytes(b"")
    with pytest.raises(RecordStoreError, match="empty manifest"):
        RecordStore(tmp_path)
    (tmp_path / MANIFEST).unlink()
    (tmp_path / MANIFEST).mkdir()
    with pytest.raises(RecordStoreError, match="is a folder"):
        RecordStore(tmp_path)


def test_queries_cannot_write_attach_or_read_other_files(tmp_path):
    s = _store(tmp_path, n=1)
    manifest = (tmp_path / MANIFEST).read_bytes()
    before = sorted(p.name for p in tmp_path.rglob("*"))
    for sql in [f"COPY (SELECT 1) TO '{tmp_path / MANIFEST}'", f"COPY episodes TO '{tmp_path / 'x.parquet'}'",
                f"ATTACH '{tmp_path / 'new.duckdb'}' AS x", "SELECT * FROM read_csv('/etc/passwd')",
                "SET enable_external_access = true", "INSTALL httpfs"]:
        with pytest.raises(RecordStoreError, match="query failed"):
            s.sql(sql)
    assert (tmp_path / MANIFEST).read_bytes() == manifest and sorted(p.name for p in tmp_path.rglob("*")) == before
    with pytest.raises(RecordStoreError, match="empty query"):
        s.sql("  ")


@pytest.mark.parametrize("suffix", [".jsonl", ".parquet"])
def test_failed_export_leaves_the_old_file_untouched(tmp_path, suffix):
    s = _store(tmp_path / "store", n=1)
    out = tmp_path / f"old{suffix}"
    out.write_bytes(b"precious")
    with pytest.raises(RecordStoreError, match="query failed"):
        getattr(s, f"export_{suffix[1:]}")(out, where="no_such_column = 1")
    assert out.read_bytes() == b"precious" and sorted(p.name for p in tmp_path.iterdir()) == ["old" + suffix, "store"]
    assert getattr(s, f"export_{suffix[1:]}")(out) == 10 and out.read_bytes() != b"precious"
    if suffix == ".parquet":
        assert pq.read_table(out).num_rows == 10
