"""`harnessrl recipe multi-harness` with agent programs as harnesses: oracle records through the
programs, Within and Cross trained through three programs, the fourth sealed and refused in training,
the ceiling decomposition and the mixed-outcome share in the report.

The fast test runs four program harnesses built from tests/harness/programs/mini_text.py (a
standard-library program speaking mini-swe-agent's text protocol, run like a real one: in the
episode's sandbox and network namespace, through its own gateway); the slow one runs the real
programs (`--scale real-programs`)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import tomllib

from harnessrl.config import ConfigError
from harnessrl.evaluate.seal import SealedError, verify_seal
from harnessrl.harness.base import program_specs
from harnessrl.records import RecordStore
from harnessrl.recipes import multi_harness as recipe
from harnessrl.recipes.engine import train_agent
from harnessrl.tasks.sandbox import bwrap_path

pytestmark = [pytest.mark.sandbox, pytest.mark.skipif(bwrap_path() is None or os.geteuid() != 0,
                                                      reason="needs bubblewrap and root (per-episode network namespace)")]

PROGRAM = Path(__file__).parents[1] / "harness" / "programs" / "mini_text.py"


def program_spec(folder: Path, name: str, wall_s: int) -> str:
    """A program harness spec file: mini-swe-agent's spec, renamed, running the stand-in program. A seal
    knows a harness by its content too (a renamed copy of the sealed harness is refused), so each
    differs in one setting, as real programs differ in much more."""
    spec = tomllib.loads(program_specs()["mini-swe-agent"].read_text())
    body = (f'id = "{name}"\nstyle = "{spec["style"]}"\ndescription = "stand-in program {name}"\nmax_turns = 4\n'
            f'max_format_errors = 3\n\n[options]\nprogram = "script"\nscript = "{PROGRAM}"\nmax_tokens = 4096\n'
            f'wall_s = {wall_s}\nmodel_name = "harnessrl-policy"\n')
    path = folder / f"{name}.toml"
    path.write_text(body)
    return str(path)


@pytest.mark.slow  # 20 min on the shared 2-core machine at load ~15, niced (about 50 program episodes and starts)
def test_within_and_cross_train_through_programs_and_the_sealed_program_is_refused(tmp_path):
    a, b, c, sealed = (program_spec(tmp_path, n, 120 + i) for i, n in enumerate(("prog-a", "prog-b", "prog-c", "prog-sealed")))
    cfg = recipe.MultiHarnessConfig.model_validate({
        **recipe.REAL_PROGRAMS, "sft_harness": a, "train_harnesses": [a, b, c], "sealed_harness": sealed,
        "sft_epochs": 2, "tiny_positions": 2048, "tiny_vocab": 512})
    out = tmp_path / "mh"
    res = recipe.run(cfg, out)

    store = RecordStore(out / "store")
    counts = {r["run_id"]: r["n"] for r in store.sql("SELECT run_id, count(*) AS n FROM episodes GROUP BY run_id").to_pylist()}
    # the oracle through every trained program on the training task, each solved as the program ran it
    assert [(r["harness"], r["episodes"], r["solved"]) for r in res["oracle_records"]] == [
        ("prog-a", 1, 1), ("prog-b", 1, 1), ("prog-c", 1, 1)]
    # Within and Cross each trained one update through the three programs (1 task x 3 programs x G=2)
    assert [r["rule"] for r in res["results"]] == ["within", "cross"]
    assert counts["within-s0"] == counts["cross-s0"] == 6
    trained_in = store.sql("SELECT DISTINCT harness_id FROM episodes WHERE run_id IN ('within-s0', 'cross-s0')")
    assert set(trained_in.column("harness_id").to_pylist()) == {"prog-a", "prog-b", "prog-c"}
    for r in res["results"]:
        assert len(r["metrics"]) == 1 and r["metrics"][0]["groups"] == (3 if r["rule"] == "within" else 1)
    # the start model through every program, the sealed one under its seal, for the ceiling decomposition
    assert counts["ref"] == 3 * 2 and counts["sealed-ref"] == 2
    # the sealed program: evaluated once per policy under the seal, never trained in
    assert counts["sealed-sft"] == counts["sealed-within-s0"] == counts["sealed-cross-s0"] == 1
    html = _report(res)
    for needle in ("Ceiling decomposition across harnesses", "ceiling change  dC", "headroom change  dG",
                   "Groups with mixed outcomes", "Oracle records through the harnesses", "prog-sealed (sealed)"):
        assert needle in html, needle
    assert verify_seal(res["seal"].name, store, out / "seals") == []
    # training refuses the sealed program: the trainer itself, before any episode
    tcfg = recipe.rl_config(cfg, out, res["sft_model"], "within", 9, recipe.tasks_of(cfg)[0])
    tcfg = tcfg.model_copy(update={"harnesses": [a, sealed], "run_dir": str(out / "runs" / "refused"), "manifest": None})
    with pytest.raises(SealedError, match="prog-sealed"):
        train_agent(tcfg, recipe.tasks_of(cfg)[0])
    with pytest.raises(ConfigError, match="must be unseen"):
        recipe.run(cfg.model_copy(update={"train_harnesses": [a, sealed]}), tmp_path / "other")


def _report(res) -> str:
    from harnessrl.recipes.multi_harness_report import build_report

    return Path(build_report(res, "harnessrl recipe multi-harness --scale real-programs")).read_text()
