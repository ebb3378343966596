"""`harnessrl recipe reward-tilt` end to end at a tiny scale, and `harnessrl analyze` on its records."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest
from typer.testing import CliRunner

from harnessrl.cli import app
from harnessrl.records import RecordStore
from tests.report_checks import assert_report_has_content

TINY = [
    "demos.episodes=120", "bc.steps=150", "reward.aimed=80", "reward.random=20", "reward.steps=30",
    "finetune.rounds=2", "finetune.samples_per_round=120", "finetune.steps_per_round=30", "finetune.eval_episodes=120",
    "base_episodes=200", "n_boot=50", "learned_seeds=[1,2]", "verifier_seeds=[1]",
    "ppo.rounds=2", "ppo.iterations_per_round=1", "ppo.samples=60", "ppo.epochs=2", "ppo.eval_episodes=120",
    "report_to=[tensorboard]",
]


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("reward-tilt")
    args = ["recipe", "reward-tilt", "--out", str(out), "--store", str(out / "store")]
    for s in TINY:
        args += ["--set", s]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    return out, result.output


@pytest.mark.slow
def test_recipe_writes_report_figures_and_records(tiny_run) -> None:
    out, output = tiny_run
    html = (out / "report.html").read_text()
    assert_report_has_content(html, min_figures=6)
    for name in ("predicted_vs_observed", "over_finetuning", "predicted_vs_observed_rwr", "over_finetuning_rwr",
                 "reward_by_outcome", "training"):
        assert (out / f"{name}.png").stat().st_size > 1000
    assert "Predicted vs observed outcome frequencies per" in html and "tilt model" in html
    assert "ppo: re-optimisation (seed 2)" in output and "rwr: re-optimisation (seed 2)" in output and "report:" in output
    assert "PPO over the denoising chain" in html and "reward-weighted regression" in html
    store = RecordStore(out / "store")
    rows = store.sql("SELECT policy_id, env_id, outcome, count(*) AS n FROM episodes GROUP BY ALL").to_pylist()
    assert {r["env_id"] for r in rows} == {"drawer"}
    assert {r["outcome"] for r in rows} <= {"success", "wrong_object", "miss"}
    per_policy = {}
    for r in rows:
        per_policy[r["policy_id"]] = per_policy.get(r["policy_id"], 0) + r["n"]
    assert per_policy["bc"] == 200
    expected = {f"{o}-{k}-s{s}-r{i}" for o in ("ppo", "rwr") for k, s in (("learned", 1), ("learned", 2), ("verified", 1))
                for i in (1, 2)} | {"ppo-control-s100-r1", "rwr-control-s100-r1"}
    assert expected <= set(per_policy) and all(per_policy[p] == 120 for p in expected)
    # every evaluated episode carries the learned reward next to the reward its run optimised
    for opt in ("ppo", "rwr"):
        meta = store.sql(f"SELECT metadata FROM episodes WHERE policy_id = '{opt}-verified-s1-r1' LIMIT 5").column("metadata").to_pylist()
        assert meta and all("learned_reward" in json.loads(m) and json.loads(m)["kind"] == "verified"
                            and json.loads(m)["optimizer"] == opt for m in meta)


@pytest.mark.slow
def test_each_fine_tuning_run_logs_its_rounds_to_tensorboard(tiny_run) -> None:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    out, _ = tiny_run
    runs = sorted(p.parent.name for p in (out / "runs").glob("*/tensorboard"))
    assert runs == sorted(["ppo-learned-s1", "ppo-learned-s2", "ppo-verified-s1", "ppo-control-s100", "rwr-learned-s1",
                           "rwr-learned-s2", "rwr-verified-s1", "rwr-control-s100"])
    acc = EventAccumulator(str(out / "runs" / "ppo-learned-s1" / "tensorboard"))
    acc.Reload()
    freqs = [sum(acc.Scalars(tag)[i].value for tag in acc.Tags()["scalars"] if tag.startswith("freq/")) for i in range(2)]
    assert len(acc.Scalars("reward_mean")) == 2 and [round(f, 6) for f in freqs] == [1.0, 1.0]  # two rounds; outcomes sum to 1


@pytest.mark.slow
def test_report_renders_in_headless_chromium(tiny_run) -> None:
    from harnessrl.report.browser import check_report

    out, _ = tiny_run
    check = check_report(out / "report.html")
    assert check.ok, check.problems()
    assert check.images_total == check.images_loaded == 6 and not check.console_errors


@pytest.mark.slow
def test_analyze_prints_and_exports_tables(tiny_run, tmp_path) -> None:
    out, _ = tiny_run
    result = CliRunner().invoke(app, ["analyze", str(out), "--reference", "bc", "--policy", "ppo-learned-s1-r2", "--beta", "0.5,1",
                                      "--boot", "50", "--out", str(tmp_path / "tables")])
    assert result.exit_code == 0, result.output
    assert "tilt model from 'bc'" in result.output and "outcome frequencies per policy" in result.output
    for name in ("harnesses", "cells", "outcomes", "tilt"):
        assert (tmp_path / "tables" / f"{name}.csv").exists()
    summary = json.loads((tmp_path / "tables" / "summary.json").read_text())
    assert summary["reference"] == "bc"


def test_bad_config_is_a_clear_error(tmp_path) -> None:
    result = CliRunner().invoke(app, ["recipe", "reward-tilt", "--out", str(tmp_path), "--store", str(tmp_path / "s"),
                                      "--set", "policy.chunk=5"])
    assert result.exit_code == 2
    assert "policy.chunk=5" in result.output and "must divide" in result.output
    result = CliRunner().invoke(app, ["recipe", "reward-tilt", "--out", str(tmp_path), "--set", "finetune.beta=-1"])
    assert result.exit_code == 2 and "beta" in result.output
    result = CliRunner().invoke(app, ["recipe", "reward-tilt", "--out", str(tmp_path), "--set", "policy.final_std=0"])
    assert result.exit_code == 2 and "policy.final_std" in result.output and "optimizer=rwr" in result.output
    assert not (tmp_path / "report.html").exists()
    result = CliRunner().invoke(app, ["recipe", "reward-tilt", "--out", str(tmp_path), "--task", "cabinet"])
    assert result.exit_code == 2 and "task='cabinet'" in result.output and "metaworld-drawer" in result.output


def _cli(*args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "harnessrl.cli", *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, env={**os.environ, "COLUMNS": "200"})


@pytest.mark.slow
def test_killed_run_resumes_to_the_uninterrupted_result(tiny_run, tmp_path) -> None:
    """kill -9 during the second fine-tuning run, --resume: the same figures as the uninterrupted
    tiny_run, every stored policy's episodes once, finished stages not recomputed."""
    ref_out, _ = tiny_run
    out = tmp_path / "rt"
    args = ["recipe", "reward-tilt", "--out", str(out), "--store", str(out / "store")] + [x for s in TINY for x in ("--set", s)]
    proc = _cli(*args)
    deadline = time.time() + 300
    while not (out / "stages" / "run-ppo-learned-s1.pt").exists():
        assert proc.poll() is None, proc.stdout.read()
        assert time.time() < deadline, "the first fine-tuning run did not finish in 300 s"
        time.sleep(0.05)
    proc.kill()
    proc.communicate(timeout=60)
    assert not (out / "report.html").exists() and not (out / "stages" / "run-rwr-verified-s1.pt").exists()
    bc_mtime = (out / "stages" / "bc.pt").stat().st_mtime

    again = _cli(*args)  # without --resume: refused, nothing touched
    text = again.communicate(timeout=120)[0]
    assert again.returncode == 2 and "--resume" in text
    changed = _cli(*args, "--resume", "--set", "finetune.beta=0.5")
    text = changed.communicate(timeout=120)[0]
    assert changed.returncode == 2 and "finetune" in text and "other settings" in text

    resumed = _cli(*args, "--resume")
    text = resumed.communicate(timeout=600)[0]
    assert resumed.returncode == 0, text
    assert (out / "stages" / "bc.pt").stat().st_mtime == bc_mtime  # reused, not recomputed
    assert "--resume" not in (out / "report.html").read_text().split("How to reproduce")[1][:2000]

    def table(store_dir):
        store = RecordStore(store_dir)
        return store.sql("SELECT policy_id, outcome, count(*) AS n, round(sum(reward), 6) AS r FROM episodes "
                         "GROUP BY ALL ORDER BY ALL").to_pylist()

    ours, reference = table(out / "store"), table(ref_out / "store")
    assert ours == reference  # same outcomes and rewards per policy, and no episode stored twice
