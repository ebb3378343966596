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
