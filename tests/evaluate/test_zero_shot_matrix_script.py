"""scripts/zero_shot_matrix.py reads the docs' zero-shot matrix back from record stores."""

import importlib.util
from pathlib import Path

from typer.testing import CliRunner

from harnessrl.cli import app

ROOT = Path(__file__).resolve().parents[2]


def _script():
    spec = importlib.util.spec_from_file_location("zero_shot_matrix", ROOT / "scripts" / "zero_shot_matrix.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_matrix_script_reads_runs_from_several_stores(tmp_path, capsys, monkeypatch):
    runner = CliRunner()
    for policy, store in (("oracle", "a"), ("noop", "b")):
        r = runner.invoke(app, ["eval", "--policy", policy, "--suite", "lookup", "--harness", "lookup-plain,lookup-kv",
                                "--tasks", "0,1,2", "--workers", "1", "--run-id", policy, "--store", str(tmp_path / store)])
        assert r.exit_code == 0, r.output
    mod = _script()
    from harnessrl.records import RecordStore

    eps = [e for s in "ab" for e in RecordStore(str(tmp_path / s), create=False).episodes()]
    table = {(r["suite"], r["harness"]): r for r in mod.rows([e for e in eps if e.run_id == "oracle"])}
    assert set(table) == {("lookup", "lookup-plain"), ("lookup", "lookup-kv")}
    assert all(r["solve"] == (1.0, 1.0, 1.0) and r["episodes"] == 3 for r in table.values())
    noop = mod.rows([e for e in eps if e.run_id == "noop"])
    assert all(r["solve"][0] == 0.0 for r in noop)
    fig = tmp_path / "m.png"
    monkeypatch.setattr("sys.argv", ["x", str(tmp_path / "a"), str(tmp_path / "b"), "--runs", "oracle", "--figure", str(fig)])
    mod.main()
    out = capsys.readouterr().out
    assert "6 episodes" in out and "| lookup | lookup-kv | 3 | 3 | 1.00 [1.00, 1.00]" in out
    assert fig.stat().st_size > 1000
