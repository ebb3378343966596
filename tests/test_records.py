import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harnessrl.records import MANIFEST, CorruptShardError, RecordStore, RecordStoreError, repair
from tests.helpers import make_episode

ROOT = Path(__file__).resolve().parents[1]

WRITER = r"""
import sys
from harnessrl.records import RecordStore
from tests.helpers import make_episode
store = RecordStore(sys.argv[1])
batch = int(sys.argv[2])
i = 0
while True:
    eps = [make_episode(i + k, turns=4, tokens=2000) for k in range(batch)]
    for k, ep in enumerate(eps):
        ep.episode_id = f"ep-{i + k:06d}"
    store.append(eps)
    print(" ".join(ep.episode_id for ep in eps), flush=True)
    i += batch
"""


def _ids(store: RecordStore) -> list[str]:
    return sorted(store.table(["episode_id"]).column("episode_id").to_pylist())


@pytest.mark.parametrize("trial", range(20))
def test_sigkill_at_random_points_keeps_exactly_completed_episodes(tmp_path, trial):
    rng = random.Random(trial)
    batch = rng.choice([1, 3])
    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(tmp_path / "store"), str(batch)],
        cwd=ROOT, stdout=subprocess.PIPE, text=True,
    )
    time.sleep(rng.uniform(0.8, 2.5))
    proc.send_signal(signal.SIGKILL)
    out, _ = proc.communicate()
    printed = sorted(x for line in out.splitlines() if line.endswith(tuple("0123456789")) for x in line.split())
    # A batch whose commit finished just before the kill but was not yet printed may be present.
    if not (tmp_path / "store" / MANIFEST).exists():
        assert printed == []
        return
    store = RecordStore(tmp_path / "store", create=False)  # full checksum verification
    stored = _ids(store)
    assert stored[: len(printed)] == printed
    extra = stored[len(printed):]
    assert len(extra) in (0, batch), extra
    # Every stored episode is complete (all turns, all tokens).
    for ep in store.episodes():
        assert ep.num_turns == 4 and all(len(t.token_ids) == 2000 for t in ep.turns)
    # The store stays writable after the crash.
    store.append([make_episode(999)])
    assert RecordStore(tmp_path / "store").count() == len(stored) + 1


def _store_with_shards(path, n=3):
    s = RecordStore(path)
    for k in range(n):
        s.append([make_episode(10 * k + i) for i in range(10)])
    return s


def test_flipped_byte_is_detected_and_named(tmp_path):
    s = _store_with_shards(tmp_path)
    victim = tmp_path / s.shards[1].file
    data = bytearray(victim.read_bytes())
    data[len(data) // 2] ^= 0x01
    victim.write_bytes(bytes(data))
    with pytest.raises(CorruptShardError) as err:
        RecordStore(tmp_path, verify="full")
    assert victim.name in str(err.value) and "SHA-256" in str(err.value)
    with pytest.raises(CorruptShardError, match=victim.name + ".*SHA-256"):  # the default checks on first read
        RecordStore(tmp_path).episodes()
    report = RecordStore(tmp_path, verify="none").verify()
    assert len(report["problems"]) == 1 and victim.name in report["problems"][0]


def test_truncated_shard_is_detected_and_named(tmp_path):
    s = _store_with_shards(tmp_path)
    victim = tmp_path / s.shards[0].file
    victim.write_bytes(victim.read_bytes()[:-100])
    with pytest.raises(CorruptShardError, match=victim.name + ".*truncated"):
        RecordStore(tmp_path, verify="size")


def test_drop_corrupt_keeps_the_rest(tmp_path):
    s = _store_with_shards(tmp_path)
    victim = tmp_path / s.shards[2].file
    victim.write_bytes(b"garbage")
    dropped = RecordStore(tmp_path, verify="none").drop_corrupt()
    assert dropped == [s.shards[2].file]
    assert RecordStore(tmp_path).count() == 20


def test_torn_manifest_line_is_refused_until_repaired(tmp_path):
    _store_with_shards(tmp_path, 2)
    with open(tmp_path / MANIFEST, "a") as f:
        f.write('{"kind": "shard", "file": "shards/x.parq')  # a killed writer's half line
    with pytest.raises(RecordStoreError, match="last line has no newline.*records repair"):
        RecordStore(tmp_path)
    report = RecordStore(tmp_path, verify="none", damaged_ok=True).verify()
    assert len(report["problems"]) == 1 and "no newline" in report["problems"][0]
    with pytest.raises(RecordStoreError, match="records repair"):  # writers do not trim it behind anyone's back
        RecordStore(tmp_path, damaged_ok=True).append([make_episode(1)])
    assert repair(tmp_path) and repair(tmp_path) == []
    s = RecordStore(tmp_path)
    assert s.count() == 20
    s.append([make_episode(1)])
    lines = (tmp_path / MANIFEST).read_text().splitlines()
    assert all(json.loads(line) for line in lines) and len(lines) == 4
    assert RecordStore(tmp_path).count() == 21


def test_uncommitted_leftovers_are_reported(tmp_path):
    s = _store_with_shards(tmp_path, 1)
    (tmp_path / "shards" / ".tmp-123.parquet").write_bytes(b"partial")
    assert s.verify()["uncommitted"] == ["shards/.tmp-123.parquet"]


def test_not_a_store_and_bad_schema_version(tmp_path):
    with pytest.raises(RecordStoreError, match="not a record store"):
        RecordStore(tmp_path / "nope", create=False)
    _store_with_shards(tmp_path, 1)
    lines = (tmp_path / MANIFEST).read_text().splitlines()
    lines[0] = json.dumps({"kind": "header", "schema_version": 99})
    (tmp_path / MANIFEST).write_text("\n".join(lines) + "\n")
    with pytest.raises(RecordStoreError, match="schema version 99"):
        RecordStore(tmp_path)


def test_concurrent_writers_lose_nothing(tmp_path):
    script = (
        "import sys\nfrom harnessrl.records import RecordStore\nfrom tests.helpers import make_episode\n"
        "s = RecordStore(sys.argv[1])\nw = int(sys.argv[2])\n"
        "for k in range(15):\n    e = make_episode(k)\n    e.episode_id = f'w{w}-{k}'\n    s.append([e])\n"
    )
    procs = [subprocess.Popen([sys.executable, "-c", script, str(tmp_path), str(w)], cwd=ROOT) for w in range(3)]
    assert all(p.wait() == 0 for p in procs)
    assert len(set(_ids(RecordStore(tmp_path)))) == 45


def test_solve_rate_query_matches_python(tmp_path):
    s = RecordStore(tmp_path)
    eps = [make_episode(i) for i in range(60)]
    with s.writer(flush_every=16) as w:
        for ep in eps:
            w.write(ep)
    assert len(s.shards) == 4
    table = s.solve_rate()
    for row in table.to_pylist():
        group = [e for e in eps if (e.context.task_id, e.context.harness_id) == (row["task_id"], row["harness_id"])]
        assert row["n"] == len(group)
        assert row["solve_rate"] == pytest.approx(sum(e.success for e in group) / len(group))
    assert sum(r["n"] for r in table.to_pylist()) == 60


def test_empty_store_queries(tmp_path):
    s = RecordStore(tmp_path)
    assert s.count() == 0 and s.solve_rate().num_rows == 0 and s.episodes() == []


def test_bad_sql_is_a_clear_error(tmp_path):
    s = _store_with_shards(tmp_path, 1)
    with pytest.raises(RecordStoreError, match="query failed"):
        s.sql("SELECT nonexistent_column FROM episodes")


def test_a_duckdb_interrupt_is_recognised_as_ctrl_c():
    # DuckDB turns a SIGINT that lands mid-query into an error; RecordStore.sql re-raises it as
    # KeyboardInterrupt so that recipes keep their Ctrl-C contract (exit 130, resumable)
    from harnessrl.records import _interrupted

    assert _interrupted(RuntimeError("Query interrupted"))
    assert not _interrupted(RuntimeError("Binder Error: column x not found"))
