"""Installed-program bookkeeping without the network: the manifest, drift, interrupted installs,
the CLI's answers. (The real installs are exercised by test_programs_start.py.)"""

from __future__ import annotations

import json
import os

import pytest
from typer.testing import CliRunner

from harnessrl.agents import install as inst
from harnessrl.agents.registry import PROGRAMS, program
from harnessrl.cli import app
from harnessrl.config import ConfigError


@pytest.fixture
def agents_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESSRL_AGENTS_DIR", str(tmp_path))
    return tmp_path


def fake_install(name: str) -> inst.Path:
    """A tiny tree standing in for an environment, with its manifest written the real way."""
    spec = program(name)
    root = inst.program_dir(name)
    env = root / inst.ENV
    (env / "bin").mkdir(parents=True)
    (env / "bin" / spec.entry).write_text("#!/bin/sh\necho hi\n")
    (env / "lib").mkdir()
    (env / "lib" / "mod.py").write_text("x = 1\n")
    os.symlink("mod.py", env / "lib" / "alias.py")
    inst.write_manifest(spec, root, f"{spec.package}=={spec.version}\n", "test", 0.0)
    return root


def test_manifest_hashes_every_file_and_verify_reports_each_kind_of_drift(agents_dir):
    root = fake_install("mini-swe-agent")
    m = json.loads((root / inst.MANIFEST).read_text())
    assert set(m["files"]) == {"bin/mini", "lib/mod.py", "lib/alias.py"}
    assert m["files"]["lib/alias.py"] == "link:mod.py"
    assert m["content_hash"] == inst.content_hash(m["files"]) and len(m["content_hash"]) == 64
    assert (root / inst.LOCK).read_text() == "mini-swe-agent==2.4.6\n"
    assert inst.verify("mini-swe-agent") == []
    assert inst.install("mini-swe-agent")["content_hash"] == m["content_hash"]  # installed: a no-op that verifies

    env = root / inst.ENV
    (env / "lib" / "mod.py").write_text("x = 2\n")
    (env / "bin" / "mini").unlink()
    (env / "lib" / "__pycache__").mkdir()
    (env / "lib" / "__pycache__" / "mod.pyc").write_bytes(b"\0")
    assert inst.verify("mini-swe-agent") == ["changed: lib/mod.py", "missing: bin/mini",
                                              "extra: lib/__pycache__/mod.pyc"]
    with pytest.raises(ConfigError, match="--force"):
        inst.install("mini-swe-agent")  # offline: drift is an error, never a silent reinstall


def test_interrupted_install_is_not_installed(agents_dir):
    root = fake_install("aider-cli")
    (root / inst.MANIFEST).unlink()  # as if the install stopped before the manifest was written
    assert not inst.is_installed("aider-cli")
    with pytest.raises(ConfigError, match="harnessrl agents install aider-cli"):
        inst.installed("aider-cli")
    row = {r["name"]: r for r in inst.listing()}["aider-cli"]
    assert row["installed"] is False and row["path"] == str(root)


def test_installed_gives_the_entry_point_and_the_trees_to_mount(agents_dir):
    fake_install("mini-swe-agent")
    prog = inst.installed("mini-swe-agent")
    assert prog.executable == prog.env / "bin" / "mini"
    assert prog.ro_paths[0] == prog.root


def test_find_python_finds_the_running_version_and_names_the_fix_otherwise():
    import sys
    v = f"{sys.version_info[0]}.{sys.version_info[1]}"
    assert inst.find_python(v).name.startswith("python")
    with pytest.raises(ConfigError, match="pyenv install 2.1"):
        inst.find_python("2.1")


def test_cli_list_verify_and_bad_names(agents_dir):
    fake_install("mini-swe-agent")
    runner = CliRunner()
    r = runner.invoke(app, ["agents", "list"])
    assert r.exit_code == 0
    lines = {ln.split("\t")[0]: ln for ln in r.stdout.splitlines() if "\t" in ln}
    assert set(lines) == set(PROGRAMS)
    assert "installed=yes" in lines["mini-swe-agent"] and "installed=no" in lines["aider-cli"]
    assert runner.invoke(app, ["agents", "verify", "mini-swe-agent"]).exit_code == 0
    (inst.program_dir("mini-swe-agent") / inst.ENV / "lib" / "mod.py").write_text("tampered\n")
    r = runner.invoke(app, ["agents", "verify", "mini-swe-agent"])
    assert r.exit_code == 1 and "changed: lib/mod.py" in r.output
    r = runner.invoke(app, ["agents", "verify", "aider-cli"])
    assert r.exit_code == 2 and "harnessrl agents install aider-cli" in r.output
    r = runner.invoke(app, ["agents", "install", "no-such-agent"])
    assert r.exit_code == 2 and "not known" in r.output and "mini-swe-agent" in r.output


def test_the_address_space_stays_capped_where_no_cgroup_bounds_memory():
    import warnings

    from harnessrl.agents.launch import program_limits
    from harnessrl.tasks.sandbox import Limits, Sandbox
    from harnessrl.tasks.workspace import Workspace

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sandbox = Sandbox(Limits(memory_mb=2048), unsafe=True, bwrap="/nonexistent")  # no episode cgroup
    with Workspace.create(None, quota_mb=16) as ws:
        limits, notes = program_limits(sandbox, ws)
    assert limits.memory_mb == 2048 and "RLIMIT_AS stays 2048 MB" in notes[0]
