"""scripts/reconstruction_vs_program.py: the side-by-side measures of docs/harnesses.md."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

from harnessrl.rollout.suites import load_suite
from harnessrl.tasks.sandbox import bwrap_path
from tests.tiny_lm import build

ROOT = Path(__file__).resolve().parents[2]


def _script():
    spec = importlib.util.spec_from_file_location("reconstruction_vs_program", ROOT / "scripts" / "reconstruction_vs_program.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def task():
    return next(t for t in load_suite("code-v1").tasks if not t.needs_shell)


def test_wilson_interval_matches_its_closed_form():
    mod = _script()
    lo, hi = mod.wilson(0, 3)
    assert lo == 0.0 and abs(hi - 0.5615) < 1e-3
    lo, hi = mod.wilson(5, 10)
    assert abs(lo - 0.2366) < 1e-3 and abs(hi - 0.7634) < 1e-3


@pytest.mark.sandbox
@pytest.mark.skipif(bwrap_path() is None, reason="needs bubblewrap")
def test_first_prompts_of_reconstructions_are_measured_from_the_first_model_call(tmp_path, task):
    mod = _script()
    from harnessrl.policies.lm import load_tokenizer

    tok = load_tokenizer(str(build(tmp_path)))
    rows = {r["harness"]: r for r in mod.prompt_part(tok, [("aider", ""), ("qwen_code", "")], task)}
    aider, qwen = rows["aider"], rows["qwen_code"]
    # Aider's chat: system, worked example exchanges, then the files and the request
    assert aider["system_prompt"] and aider["worked_examples"] >= 1 and aider["files_shown"].startswith("1/")
    assert aider["task_text"] == "user" and aider["tokens"] > 100
    assert qwen["worked_examples"] == 0 and "write_file" in qwen["tools"] and qwen["roles"] == "s,u"


@pytest.mark.slow
@pytest.mark.sandbox
@pytest.mark.skipif(bwrap_path() is None or os.geteuid() != 0, reason="needs bubblewrap and root (the real program)")
def test_the_oracles_aider_replies_replayed_through_aider_change_the_same_files(tmp_path, task):
    mod = _script()
    rows = mod.replay_part([("aider", "aider-cli")], [task], tmp_path)
    assert len(rows) == 1 and rows[0]["recon_files"], rows
    assert rows[0]["same_files"] and rows[0]["same_contents"] and rows[0]["program_solved"], rows
