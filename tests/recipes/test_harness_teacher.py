"""`harnessrl study` (= the harness-teacher recipe) end to end at a very small scale, in a real
process: Ctrl-C mid-study, --resume, the report and its numbers, the seal, refusals."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from harnessrl.evaluate.seal import all_seals, verify_seal
from harnessrl.records import RecordStore
from tests.report_checks import assert_report_has_content

SMALL = ["eval_tasks=4", "sft_seeds=1", "sft_epochs=1", "agent_updates=2", "further_updates=2", "group_size=2",
         "tasks_per_update=2", "ref_samples=4", "eval_samples=2", "n_boot=50"]
BETAS = "betas=[0.05,0.1]"  # the beta sweep: 0.1 (= beta) reuses the agent, 0.05 trains one more
SETS = [x for s in [*SMALL, BETAS] for x in ("--set", s)]


def cli(*args: str, **kw) -> subprocess.Popen:
    env = {**os.environ, "COLUMNS": "200"}
    return subprocess.Popen([sys.executable, "-m", "harnessrl.cli", *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, env=env, **kw)


@pytest.fixture(scope="module")
def study(tmp_path_factory) -> tuple[Path, str, str]:
    """Start a study, interrupt it with SIGINT once the reference stage is done, resume it to the end."""
    out = tmp_path_factory.mktemp("study") / "s"
    proc = cli("study", "--out", str(out), "--workers", "1", *SETS)
    deadline = time.time() + 300
    while not (out / "stages" / "reference.json").exists():
        assert proc.poll() is None, proc.stdout.read()
        assert time.time() < deadline, "the reference stage did not finish in 300 s"
        time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    first = proc.communicate(timeout=120)[0]
    assert proc.returncode == 130, first
    resumed = cli("study", "--out", str(out), "--workers", "1", "--resume", *SETS)
    second = resumed.communicate(timeout=900)[0]
    assert resumed.returncode == 0, second
    return out, first, second


def test_ctrl_c_leaves_a_resumable_study(study):
    out, first, second = study
    assert "interrupted" in first and "--resume" in first
    assert not (out / "report.html").exists() or "report:" in second
    # the reference stage was reused, not redone: its stage file predates the resumed run's RL
    ref_stage = (out / "stages" / "reference.json").stat().st_mtime
    assert ref_stage < (out / "models" / "agent" / "done.json").stat().st_mtime
    store = RecordStore(out / "store")
    n_ref = store.sql("SELECT count(*) AS n FROM episodes WHERE run_id = 'ref'").to_pylist()[0]["n"]
    assert n_ref == 7 * 4 * 4  # harnesses x held-out tasks x ref_samples, stored once


def test_report_and_summary_show_the_study(study):
    out, _, second = study
    html = (out / "report.html").read_text()
    assert_report_has_content(html, min_figures=5)
    for needle in ("Headline", "Ceiling and score per harness", "ceiling change minus headroom change",
                   "Predicted vs observed gain", "preferences the agent carries", "Sealed unseen harness",
                   "Exact config", "How to reproduce", "data:image/png;base64", "torch", "The beta sweep",
                   "exact optimum", "k2 as a loss term", "looking at the asked object and another object"):
        assert needle in html, needle
    assert html.count("<img") == 5
    # the hardest *other* harness is one the agent was evaluated in openly, not the sealed one (its own line)
    assert "hardest other harness json" not in second and "hardest other harness" in second
    assert not re.search(r"<td>\d(\.\d+)?e\+\d+</td>", html)  # stage times as 12.3, not 1e+01
    assert '"kl_coef": 0.1' in html and '"kl_coef": null' not in html  # the weight RL ran with (= beta)
    for term in ("Glossary", "ceiling (C)", "headroom (G = C - S)", "mismatch"):
        assert term in html, term
    for needle in ("agent trained in plain", "sealed unseen harness json", "predicted", "observed", "report:",
                   "beta 0.05 in plain", "beta 0.1 in plain"):
        assert needle in second, needle


def test_every_cross_harness_difference_decomposes(study):
    out, _, _ = study
    from harnessrl.config import load_config
    from harnessrl.recipes import harness_teacher as recipe

    cfg = load_config(recipe.HarnessTeacherConfig, out / "config.json")
    res = recipe.analyze(cfg, RecordStore(out / "store"), json.loads((out / "stages" / "choice.json").read_text())["harness"])
    rows = {(d["to"], d["term"].split()[-1]): d["value"] for d in res["decomposition"]}
    targets = {d["to"] for d in res["decomposition"]}
    assert targets == {*cfg.harnesses, cfg.sealed_harness} - {cfg.train_harness}
    for t in targets:
        assert rows[(t, "dS")] == pytest.approx(rows[(t, "dC")] - rows[(t, "dG")], abs=1e-9)
    table = {r["harness"]: r for r in res["harness_table"]}
    for r in table.values():
        assert 0 <= r["score"] <= r["hard_ceiling"] + 1e-9 <= 1 + 1e-9
    assert set(table) == {*cfg.harnesses, cfg.sealed_harness}


def test_report_renders_in_headless_chromium(study):
    from harnessrl.report.browser import check_report

    out, _, _ = study
    check = check_report(out / "report.html")
    assert check.ok, check.problems()
    assert check.images_total == check.images_loaded == 5 and not check.console_errors
    assert check.screenshot.parent == out and check.screenshot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_beta_sweep_trained_one_agent_per_new_beta_and_compares_with_the_solver(study):
    out, _, _ = study
    from harnessrl.config import load_config
    from harnessrl.recipes import harness_teacher as recipe
    from harnessrl.recipes.harness_teacher_beta import sweep_rows

    cfg = load_config(recipe.HarnessTeacherConfig, out / "config.json")
    assert cfg.betas == [0.05, 0.1] and cfg.train_kl_coef == 0.1
    assert json.loads((out / "models" / "agent-beta0.05" / "done.json").read_text())["kl_coef"] == 0.05
    assert json.loads((out / "models" / "agent" / "done.json").read_text())["kl_coef"] == 0.1
    assert not (out / "models" / "agent-beta0.1").exists()  # the main agent is the sweep's beta = 0.1
    store = RecordStore(out / "store")
    for rid in ("beta-0.05", "beta-0.1"):
        n = store.sql(f"SELECT count(*) AS n FROM episodes WHERE run_id = '{rid}'").to_pylist()[0]["n"]
        assert n == 7 * 4 * 2
    prefs = {f"beta-{b:g}": json.loads((out / "stages" / f"beta-{b:g}-preferences.json").read_text())["rows"]
             for b in cfg.betas}
    first = json.loads((out / "stages" / "first-actions.json").read_text())["returns"]
    rows = sweep_rows(cfg, store, prefs, first)
    assert len(rows) == 2 * 7
    for r in rows:
        assert r["score_lo"] <= r["score"] <= r["score_hi"] and 0 <= r["pred_score"] <= 1
        assert r["pred_kl"] >= -1e-12  # the optimum's KL to the reference


def test_chosen_harness_has_the_highest_prediction_and_was_trained(study):
    out, _, _ = study
    choice = json.loads((out / "stages" / "choice.json").read_text())
    preds = {h: p["value"] for h, p in choice["predicted"].items()}
    if np.isfinite(choice["kappa"]["value"]):
        assert choice["harness"] == max(preds, key=preds.get) and choice["rule"].startswith("highest predicted")
    else:  # a tiny model may leave no headroom to fit kappa on: the choice says so
        assert choice["rule"].startswith("kappa undefined")
    assert choice["harness"] not in ("lookup-plain", "lookup-sys", "lookup-noobj")  # not train / calibration
    assert (out / "models" / f"further-{choice['harness']}" / "done.json").exists()
    store = RecordStore(out / "store")
    after = store.sql(f"SELECT count(*) AS n FROM episodes WHERE run_id = 'after-{choice['harness']}'").to_pylist()[0]["n"]
    assert after == 4 * 2


def test_sealed_harness_was_evaluated_once_against_its_seal(study):
    out, _, _ = study
    (seal,) = all_seals(out / "seals")
    assert seal.harness_ids == {"lookup-json"} and seal.eval_path.exists()
    assert verify_seal(seal.name, RecordStore(out / "store"), out / "seals") == []
    assert len(json.loads(seal.eval_path.read_text())["entry"]["episodes"]) == 4 * 4 + 4 * 2


def test_resume_with_other_settings_is_refused(study):
    out, _, _ = study
    proc = cli("study", "--out", str(out), "--resume", *SETS, "--set", "agent_updates=3")
    text = proc.communicate(timeout=120)[0]
    assert proc.returncode == 2 and "agent_updates: 2 -> 3" in text, text


def test_a_used_folder_without_resume_and_bad_settings_are_refused(study, tmp_path):
    out, _, _ = study
    proc = cli("study", "--out", str(out), *SETS)
    assert proc.communicate(timeout=120)[0] and proc.returncode == 2
    proc = cli("study", "--out", str(tmp_path / "x"), "--set", "train_harness=lookup-nope")
    text = proc.communicate(timeout=120)[0]
    assert proc.returncode == 2 and "train_harness" in text, text


def test_study_suite_miniwob_is_the_miniwob_preset_and_checks_it_before_any_work(tmp_path):
    out = tmp_path / "mw"
    proc = cli("study", "--suite", "miniwob", "--out", str(out), "--set", "eval_tasks=7")
    text = proc.communicate(timeout=120)[0]
    assert proc.returncode == 2 and "eval_tasks=7 with held_out=seeds" in text and "6 tasks" in text, text
    assert not out.exists()  # refused before anything was written
    proc = cli("study", "--suite", "miniwob", "--out", str(out), "--set", "train_harness=lookup-plain")
    text = proc.communicate(timeout=120)[0]
    assert proc.returncode == 2 and "miniwob-html" in text, text  # the preset's harness list is in force


def test_no_second_model_is_alive_while_rl_runs(tmp_path, monkeypatch):
    """The reference (the SFT model) is dropped before each RL run in this process and loaded again
    to score samples: a real model is never held twice while the trainer holds its own copy."""
    import gc

    from harnessrl.policies.lm import LMPolicy
    from harnessrl.recipes import harness_teacher as recipe

    alive_at_rl: list[int] = []
    real_train_run = recipe.train_run

    def counting_train_run(*args, **kw):
        gc.collect()
        alive_at_rl.append(sum(isinstance(o, LMPolicy) for o in gc.get_objects()))
        return real_train_run(*args, **kw)

    monkeypatch.setattr(recipe, "train_run", counting_train_run)
    sets = dict(s.split("=", 1) for s in SMALL)
    cfg = recipe.HarnessTeacherConfig.model_validate({**{k: json.loads(v) for k, v in sets.items()}, "workers": 1})
    recipe.run(cfg, tmp_path / "s")
    assert len(alive_at_rl) == 1 + len(cfg.calibration_harnesses) + 1  # the agent, calibration rounds, the chosen round
    assert alive_at_rl == [0] * len(alive_at_rl)
