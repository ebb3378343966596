import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from harnessrl.cli import app
from harnessrl.records import RecordStore
from tests.helpers import make_episode

runner = CliRunner()


@pytest.fixture()
def store(tmp_path):
    s = RecordStore(tmp_path / "store")
    s.append([make_episode(i) for i in range(12)])
    s.append([make_episode(i) for i in range(12, 20)])
    return s


def run(*args):
    return runner.invoke(app, list(args))


def test_help_and_version():
    assert run("--help").exit_code == 0
    r = run("version")
    assert r.exit_code == 0 and "harnessrl" in r.output and "torch" in r.output


def test_list_show_query(store):
    r = run("records", "list", "--store", str(store.root))
    assert r.exit_code == 0 and "20 episodes" in r.output
    ep_id = store.table(["episode_id"]).column(0)[0].as_py()
    r = run("records", "show", ep_id[:10], "--store", str(store.root))
    assert r.exit_code == 0 and "turn 0" in r.output
    r = run("records", "show", ep_id, "--store", str(store.root), "--json")
    assert r.exit_code == 0 and json.loads(r.output)["episode_id"] == ep_id
    r = run("records", "query", "SELECT harness_id, count(*) AS n FROM episodes GROUP BY 1 ORDER BY 1", "--store", str(store.root))
    assert r.exit_code == 0 and "aider" in r.output and "swe_agent" in r.output


def test_user_errors_have_no_traceback(tmp_path, store):
    r = run("records", "list", "--store", str(tmp_path / "nothing"))
    assert r.exit_code == 2 and "not a record store" in r.output and "Traceback" not in r.output
    r = run("records", "query", "SELECT nope FROM episodes", "--store", str(store.root))
    assert r.exit_code == 2 and "query failed" in r.output


def test_verify_names_the_corrupt_shard(store):
    assert run("records", "verify", "--store", str(store.root)).exit_code == 0
    victim = store.root / store.shards[0].file
    data = bytearray(victim.read_bytes())
    data[100] ^= 0xFF
    victim.write_bytes(bytes(data))
    r = run("records", "verify", "--store", str(store.root))
    assert r.exit_code == 1 and victim.name in r.output.replace("\n", "")
    r = run("records", "verify", "--store", str(store.root), "--drop-corrupt")
    assert r.exit_code == 0 and RecordStore(store.root).count() == 8


def test_export_jsonl_and_parquet_read_by_pandas_polars_datasets(tmp_path, store):
    r = run("records", "export", str(tmp_path / "e.jsonl"), "--store", str(store.root))
    assert r.exit_code == 0
    rows = [json.loads(line) for line in (tmp_path / "e.jsonl").read_text().splitlines()]
    assert len(rows) == 20 and rows[0]["turns"][0]["token_ids"] and rows[0]["metadata"]["nested"] == {"k": [1, 2]}

    out = tmp_path / "e.parquet"
    r = run("records", "export", str(out), "--store", str(store.root), "--where", "harness_id = 'aider'")
    assert r.exit_code == 0
    import pandas as pd
    import polars as pl

    df = pd.read_parquet(out)
    assert len(df) == 7 and set(df.harness_id) == {"aider"}
    assert pl.read_parquet(out).height == 7
    # datasets is imported in a subprocess: it is slow to import and offline-configured there
    code = (
        "import datasets, sys; d = datasets.load_dataset('parquet', data_files=sys.argv[1], split='train');"
        "print(len(d), len(d[0]['turns'][0]['token_ids']))"
    )
    res = subprocess.run([sys.executable, "-c", code, str(out)], capture_output=True, text=True,
                         env={"HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf"), "PATH": "/usr/bin:/bin"})
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == ["7", "7"]
    r = run("records", "export", str(tmp_path / "e.csv"), "--store", str(store.root))
    assert r.exit_code == 2 and "use .jsonl or .parquet" in r.output


def _one_error(r, *needles):
    lines = [ln for ln in r.output.splitlines() if ln.strip()]
    assert r.exit_code == 2 and len(lines) == 1 and lines[0].startswith("error:") and "Traceback" not in r.output, r.output
    assert all(n in lines[0] for n in needles), r.output


def test_same_size_flip_stops_list_query_and_export(tmp_path, store):
    victim = store.root / store.shards[1].file
    data = bytearray(victim.read_bytes())
    data[len(data) // 2] ^= 0x04
    victim.write_bytes(bytes(data))
    for args in (["records", "list"], ["records", "query", "SELECT count(*) FROM episodes"],
                 ["records", "export", str(tmp_path / "e.jsonl")], ["records", "export", str(tmp_path / "e.parquet")]):
        _one_error(run(*args, "--store", str(store.root)), victim.name, "SHA-256")
    assert not (tmp_path / "e.jsonl").exists() and not (tmp_path / "e.parquet").exists()


def test_verify_shows_every_problem_and_repair_fixes_the_manifest(store):
    root = store.root
    lines = (root / "manifest.jsonl").read_text().splitlines()
    (root / "manifest.jsonl").write_text("\n".join(lines + [lines[1]]) + "\n" + lines[2])  # a duplicate, then torn
    r = run("records", "verify", "--store", str(root))
    assert r.exit_code == 1 and "more than once" in r.output and "no newline" in r.output and "records repair" in r.output
    _one_error(run("records", "list", "--store", str(root)), "records repair")
    r = run("records", "repair", "--store", str(root))
    assert r.exit_code == 0 and r.output.count("repaired:") == 2
    r = run("records", "verify", "--store", str(root))
    assert r.exit_code == 0 and "ok 2 shards, 20 episodes" in r.output


def test_uncommitted_file_of_a_dead_writer_is_called_safe_to_delete(store):
    (store.root / "shards" / ".tmp-dead.parquet").write_bytes(b"half")
    r = run("records", "verify", "--store", str(store.root))
    assert r.exit_code == 0 and "never committed; safe to delete" in r.output


def test_missing_manifest_is_refused_with_the_recover_command(tmp_path, store):
    (store.root / "manifest.jsonl").unlink()
    _one_error(run("records", "list", "--store", str(store.root)), "records recover")
    _one_error(run("eval", "-p", "oracle", "--suite", "code-v1", "--store", str(store.root)), "records recover")
    assert not (store.root / "manifest.jsonl").exists()
    r = run("records", "recover", "--store", str(store.root))
    assert r.exit_code == 0 and "recovered 2 shards, 20 episodes" in r.output
    assert run("records", "verify", "--store", str(store.root)).exit_code == 0


@pytest.mark.parametrize("line", ['{"kind": "shard", "file": "shards/a.parquet"}', "null", "[1,2]", "\udcff"])
def test_malformed_manifest_line_is_one_error_for_every_records_command(tmp_path, store, line):
    manifest = store.root / "manifest.jsonl"
    raw = manifest.read_bytes()
    manifest.write_bytes(raw + line.encode("utf-8", "surrogateescape") + b"\n")
    for args in (["list"], ["show", "x"], ["query", "SELECT 1"], ["verify"], ["export", str(tmp_path / "e.jsonl")], ["repair"]):
        _one_error(run("records", *args, "--store", str(store.root)), "manifest.jsonl:4", "records recover")
    manifest.unlink()
    manifest.mkdir()
    for args in (["list"], ["verify"], ["query", "SELECT 1"]):
        _one_error(run("records", *args, "--store", str(store.root)), "is a folder")


def test_query_help_says_it_is_read_only():
    r = run("records", "query", "--help")
    assert r.exit_code == 0 and "Read-only" in r.output and "COPY" in r.output


def test_verify_reports_each_evaluation_cell_stored_twice(tmp_path, store):
    """A re-run of `harnessrl eval` under the same run id (before it was refused) stored every cell a second time
    with new episode ids: verify names each such cell. Training episodes may repeat a cell and are not flagged."""
    import dataclasses
    import uuid

    again = dataclasses.replace(store.episodes("seed = 0")[0], episode_id=uuid.uuid4().hex)  # no eval marker
    store.append([again])
    assert run("records", "verify", "--store", str(store.root)).exit_code == 0
    r = run("eval", "--policy", "oracle", "--suite", "lookup", "--harness", "lookup-plain", "--tasks", "0,1,2",
            "--workers", "1", "--run-id", "e1", "--store", str(store.root))
    assert r.exit_code == 0, r.output
    assert run("records", "verify", "--store", str(store.root)).exit_code == 0
    planted = [dataclasses.replace(e, episode_id=uuid.uuid4().hex)
               for e in RecordStore(store.root).episodes("run_id = 'e1' AND task_id <> 'lookup/001'")]
    RecordStore(store.root).append(planted)
    r = run("records", "verify", "--store", str(store.root))
    lines = [ln for ln in r.output.splitlines() if "evaluation cell stored" in ln]
    assert r.exit_code == 1 and len(lines) == 2, r.output
    assert "run 'e1', task 'lookup/000', harness 'lookup-plain', seed 0" in lines[0] and "lookup/002" in lines[1]
