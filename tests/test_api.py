"""`import harnessrl` is the public API: the types and entry points a user needs, documented, light to import."""

import subprocess
import sys
from pathlib import Path

import harnessrl
from harnessrl.records import RecordStore
from tests import tiny_lm

ROOT = Path(__file__).resolve().parents[1]


def test_every_public_name_resolves_and_none_is_private():
    for name in harnessrl.__all__:
        assert not name.startswith("_") or name == "__version__", name
        assert getattr(harnessrl, name) is not None, name
    for name in ("Task", "Suite", "Harness", "Session", "HarnessSpec", "Policy", "Episode", "RecordStore",
                 "evaluate", "train", "RewardHook", "CodeHarness"):
        assert name in harnessrl.__all__, name
    assert issubclass(harnessrl.CodeHarness, harnessrl.Harness)


def test_import_is_light():
    out = subprocess.run([sys.executable, "-c", "import harnessrl, sys; print('torch' in sys.modules)"],
                         capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_every_public_name_is_documented():
    page = (ROOT / "docs" / "api.md").read_text()
    for name in harnessrl.__all__:
        assert f"`{name}" in page, name


def test_evaluate_and_train_from_python(tmp_path):
    result = harnessrl.evaluate("oracle", "lookup", ["lookup-plain", "lookup-kv"], tasks=["0", "1"],
                                store=tmp_path / "store")
    assert {r["harness_id"]: r["pass@1"] for r in result.summary} == {"lookup-plain": 1.0, "lookup-kv": 1.0}
    assert len(RecordStore(tmp_path / "store").episodes()) == 4
    model = tiny_lm.build(tmp_path / "m")
    rows = harnessrl.train({"policy": {"model": str(model), "max_new_tokens": 6}, "run_dir": str(tmp_path / "run"),
                            "harnesses": ["lookup-plain"], "tasks": ["lookup/000"], "group_size": 2,
                            "tasks_per_update": 1, "updates": 1})
    assert [r["update"] for r in rows] == [1]
