"""`harnessrl analyze` on a synthetic multi-harness store: tables, decomposition, gain prediction, errors."""

from __future__ import annotations

import csv

import numpy as np
import pytest
from typer.testing import CliRunner

from harnessrl.cli import app
from harnessrl.episode import Context, Episode
from harnessrl.records import RecordStore


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    rng = np.random.default_rng(0)
    root = tmp_path_factory.mktemp("analyze") / "store"
    s = RecordStore(root)
    eps = []
    p = {"wide": rng.uniform(0.05, 0.6, 8), "narrow": rng.uniform(0.0, 0.3, 8), "mid": rng.uniform(0.02, 0.45, 8)}
    for h, ps in p.items():
        for t, pt in enumerate(ps):
            for pid, q in (("base", pt), ("after", pt + 0.4 * ((1 - (1 - pt) ** 20) - pt))):
                for y in rng.random(30) < q:
                    lp = np.log(q if y else 1 - q)
                    eps.append(Episode(context=Context(task_id=f"t{t}", harness_id=h), reward=float(y), success=bool(y),
                                       outcome="solved" if y else "failed", policy_id=pid, run_id="r1",
                                       metadata={"logprob": float(lp), "ref_logprob": float(np.log(pt if y else 1 - pt))}))
    s.append(eps)
    return root


def test_tables_decomposition_and_gain(store, tmp_path) -> None:
    out = tmp_path / "t"
    r = CliRunner().invoke(app, ["analyze", str(store), "--reference", "base", "--policy", "base", "--after", "after",
                                 "--harness", "narrow,wide,mid", "--beta", "0.2", "--k", "20", "--boot", "100", "--out", str(out)])
    assert r.exit_code == 0, r.output
    assert "narrow -> wide" in r.output and "gain prediction" in r.output
    rows = list(csv.DictReader(open(out / "decomposition.csv")))
    by = {(x["to"], x["term"].split()[0]): float(x["value"]) for x in rows}
    assert by[("wide", "score")] == pytest.approx(by[("wide", "ceiling")] - by[("wide", "headroom")])
    gain = list(csv.DictReader(open(out / "gain_prediction.csv")))
    assert {g["harness"] for g in gain} == {"narrow", "wide", "mid"}
    assert all(float(g["kappa"]) == pytest.approx(0.4, abs=0.25) for g in gain)
    harness_rows = list(csv.DictReader(open(out / "harnesses.csv")))
    assert all(float(h["kl_ref"]) == 0.0 for h in harness_rows)  # the reference scored against itself


def test_run_id_and_errors(store) -> None:
    runner = CliRunner()
    r = runner.invoke(app, ["analyze", "r1", "--store", str(store), "--reference", "base", "--boot", "20", "--k", "10"])
    assert r.exit_code == 0, r.output
    r = runner.invoke(app, ["analyze", str(store)])
    assert r.exit_code == 2 and "--reference" in r.output
    r = runner.invoke(app, ["analyze", str(store), "--reference", "nope"])
    assert r.exit_code == 2 and "no such policy_id" in r.output
    r = runner.invoke(app, ["analyze", "/no/such/place", "--store", str(store)])
    assert r.exit_code == 2 and "neither a record store" in r.output
    r = runner.invoke(app, ["analyze", str(store), "--reference", "base", "--k", "500"])
    assert r.exit_code == 2 and "k=500 exceeds" in r.output
