"""`harnessrl recipe agentic-coding` with a warm start: the held-out tasks sealed before any
demonstration, SFT (LoRA, merged) on the oracle's episodes through the chosen harness, GSPO with a
fresh LoRA whose KL reference is the SFT model, two GSPO seeds, an evaluation-only harness, and a
report with base / SFT / SFT+GSPO. Tiny LM built by the recipe, one-turn episodes of 16 tokens."""

from __future__ import annotations

import json

import pytest
import torch
from typer.testing import CliRunner

from harnessrl.cli import app
from harnessrl.evaluate.seal import all_seals, verify_seal
from harnessrl.policies.lm import LMConfig, LMPolicy
from harnessrl.records import RecordStore

SMALL = ["suite=code-v2", "warm_start=true", "rl_seeds=[0,1]", "eval_harnesses=[terminus]", "sft_seeds=1",
         "sft_epochs=2", "train_tasks=2", "tasks_per_update=2", "group_size=2", "heldout_tasks=1", "sealed_tasks=1",
         "eval_tasks=1", "max_turns=1", "max_new_tokens=16", "lora_rank=2"]
SETS = [x for s in SMALL for x in ("--set", s)]


def invoke(*args: str):
    return CliRunner().invoke(app, ["recipe", "agentic-coding", "--no-browser-check", "--harness", "swe_agent",
                                    "--eval-suites", "heldout", *args], catch_exceptions=False)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("warm") / "ac"
    res = invoke("--out", str(out), *SETS)
    assert res.exit_code == 0, res.output
    return out, res.output


@pytest.mark.slow
def test_heldout_is_sealed_before_the_warm_start_and_evaluated_once_by_every_policy(run):
    out, _ = run
    (seal,) = [s for s in all_seals(out / "seals") if "-heldout-" in s.name]
    assert seal.path.stat().st_mtime <= (out / "sft" / "sft.json").stat().st_mtime
    assert verify_seal(seal.name, RecordStore(out / "store"), out / "seals") == []
    entry = json.loads(seal.eval_path.read_text())["entry"]
    # base, SFT, and both GSPO seeds; one task through the trained and the evaluation-only harness
    assert sorted(e["episode_id"].rsplit("-", 2)[0] for e in entry["episodes"]) == sorted(
        ["before"] * 2 + ["sft"] * 2 + ["after"] * 2 + ["after-s1"] * 2)
    assert {e["harness_id"] for e in entry["episodes"]} == {"swe_agent", "terminus"}
    assert set(entry["result"]["pass@1"]) == {"before", "sft", "after"}


@pytest.mark.slow
def test_gspo_trains_a_fresh_adapter_per_seed_whose_reference_is_the_sft_model(run):
    out, _ = run
    sft = json.loads((out / "sft" / "sft.json").read_text())
    assert sft["harness"] == "swe_agent" and sft["demonstrations"] == 2 and sft["steps"] == 2
    ids = torch.tensor([[5, 17, 33, 2, 9, 41, 12, 8]])
    attention, mask = torch.ones_like(ids), torch.ones_like(ids)
    mask[:, 0] = 0  # every token but the first is predicted

    def logprobs(policy: LMPolicy) -> torch.Tensor:
        from harnessrl.policies.scoring import token_logprobs

        with torch.no_grad():
            return token_logprobs(policy.model, ids, attention, mask).logprobs

    base = logprobs(LMPolicy.from_config(LMConfig(model=str(out / "model"))))
    warm = logprobs(LMPolicy.from_config(LMConfig(model=str(out / "sft"))))
    assert not torch.allclose(base, warm)  # the warm start changed the model the adapter trains on
    for run_id in ("gspo", "gspo-s1"):
        adapter = out / "runs" / run_id / "final"
        assert json.loads((adapter / "adapter_config.json").read_text())["base_model_name_or_path"] == str(out / "sft")
        trained = LMPolicy.from_config(LMConfig(model=str(out / "sft"), adapter=str(adapter)))
        with trained.reference():  # what the KL term is taken against: the adapter disabled
            assert torch.allclose(logprobs(trained), warm, atol=1e-6)
    eps = RecordStore(out / "store").episodes("run_id IN ('gspo', 'gspo-s1')")
    assert sorted(e.run_id for e in eps) == ["gspo"] * 4 + ["gspo-s1"] * 4
    assert {e.context.harness_id for e in eps} == {"swe_agent"}  # never the evaluation-only harness


@pytest.mark.slow
def test_report_has_base_sft_and_sft_gspo_steps_seeds_and_mixed_groups(run):
    out, output = run
    html = (out / "report.html").read_text()
    for needle in ("pass@1 base", "pass@1 SFT", "pass@1 SFT+GSPO", "change vs base", "SFT vs base",
                   "pass@1 after GSPO per seed", "Agent steps on tasks solved both before and after",
                   "mixed outcomes", "signal_fraction", "peak memory", "Evaluated through but never trained in: terminus",
                   "Warm start: SFT 2 step(s) on 2 oracle episodes through swe_agent"):
        assert needle in html, needle
    assert "heldout: pass@1 base" in output and "-> SFT+GSPO" in output


@pytest.mark.slow
def test_resume_reuses_every_stage(run):
    out, _ = run
    counts = RecordStore(out / "store").sql("SELECT run_id, count(*) AS n FROM episodes GROUP BY run_id").to_pylist()
    res = invoke("--out", str(out), "--resume", *SETS)
    assert res.exit_code == 0, res.output
    again = RecordStore(out / "store").sql("SELECT run_id, count(*) AS n FROM episodes GROUP BY run_id").to_pylist()
    assert sorted(map(str, again)) == sorted(map(str, counts))
    assert "SFT steps" not in res.output  # the warm start was not run again


@pytest.mark.parametrize("args, needle", [
    (["--set", "eval_harnesses=[qwen_code_3turns]"], "never trained in"),
    (["--set", "rl_seeds=[0,0]"], "rl_seeds"),
    (["--harness", ""], "--harness is empty"),
])
def test_bad_warm_start_settings_are_one_error_line(tmp_path, args, needle):
    res = CliRunner().invoke(app, ["recipe", "agentic-coding", "--no-browser-check", "--out", str(tmp_path / "o"), *args],
                             catch_exceptions=False)
    assert res.exit_code == 2, res.output
    lines = [x for x in res.output.splitlines() if x.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:") and needle in lines[0], res.output
