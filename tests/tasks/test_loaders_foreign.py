"""Terminal-Bench / Harbor folders as users bring them: the loader bugs of issue 20, each on a
synthetic task folder in the same format (our own text), and the reasons reaching the user."""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

import pytest
from typer.testing import CliRunner

from harnessrl.cli import app
from harnessrl.config import ConfigError
from harnessrl.evaluate.run import plan_eval
from harnessrl.tasks import installs
from harnessrl.tasks.check import check_rows
from harnessrl.tasks.loaders import Rejected, load_suite, read_dockerfile
from harnessrl.tasks.runtime import TaskRuntime

YAML_VERSION = importlib.metadata.version("pyyaml")
NUMPY_VERSION = importlib.metadata.version("numpy")
TEST = "from pathlib import Path\n\n\ndef test_answer():\n    assert Path('/app/answer.txt').read_text().strip() == '42'\n"


def tb_task(root: Path, name: str, dockerfile: str, solution: str = "echo 42 > /app/answer.txt\n",
            run_tests: str | None = None, files: dict[str, str] | None = None) -> Path:
    """A Terminal-Bench-style task folder: task.yaml, Dockerfile, solution.sh, tests/."""
    folder = root / name
    (folder / "tests").mkdir(parents=True)
    (folder / "task.yaml").write_text("instruction: |\n  Write the number 42 into /app/answer.txt.\ndifficulty: easy\n")
    (folder / "Dockerfile").write_text(dockerfile)
    (folder / "solution.sh").write_text("#!/bin/bash\n" + solution)
    (folder / "tests" / "test_outputs.py").write_text(TEST)
    if run_tests is not None:
        (folder / "run-tests.sh").write_text("#!/bin/bash\n" + run_tests)
    for rel, text in (files or {}).items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(text)
    return folder


BASE = "FROM ghcr.io/example/tb-python:3.13\nRUN apt-get update && apt-get install -y tmux asciinema\nWORKDIR /app\n"


# ----------------------------------------------------------------------------------------
# Dockerfile and script reading


def test_copy_onto_workdir_dot_lands_in_app(tmp_path: Path):
    folder = tb_task(tmp_path, "copy-dot", BASE + "COPY task-deps/ ./\nCOPY notes.txt .\n",
                     files={"task-deps/input.txt": "6 7\n", "task-deps/lib/util.sh": "echo hi\n", "notes.txt": "n\n"})
    env = read_dockerfile(folder / "Dockerfile", folder)
    deps = (folder / "task-deps").resolve()
    assert env.copies == [(deps / "input.txt", "input.txt"), (deps / "lib", "lib"),
                          ((folder / "notes.txt").resolve(), "notes.txt")]


@pytest.mark.sandbox
def test_copy_onto_workdir_dot_runs_in_the_sandbox(tmp_path: Path, sandbox):
    tb_task(tmp_path, "copy-dot", BASE + "COPY task-deps/ ./\n", files={"task-deps/input.txt": "6 7\n"})
    task = load_suite(tmp_path)["copy-dot"]  # used to raise WorkspaceError (destination ".")
    with TaskRuntime(task, sandbox) as rt:
        assert rt.run("cat /app/input.txt").stdout == "6 7\n"


def test_terminal_bench_tooling_is_not_a_dependency(tmp_path: Path):
    folder = tb_task(tmp_path, "recorder", BASE)
    suite = load_suite(tmp_path)
    assert suite.ids == [f"{tmp_path.name}/recorder"] and not suite.rejected
    notes = " ".join(suite["recorder"].notes)
    assert "asciinema" in notes and "not a task dependency" in notes
    assert folder.exists()


@pytest.mark.parametrize("line", [
    f'RUN pip install "pyyaml=={YAML_VERSION}"',
    f"RUN pip install 'pyyaml=={YAML_VERSION}' --no-cache-dir",
    f'RUN ["pip", "install", "pyyaml=={YAML_VERSION}"]',
    f"RUN pip install --index-url https://mirror.example/simple --extra-index-url https://b.example pyyaml=={YAML_VERSION}",
    f"RUN uv pip install --system -i https://mirror.example/simple pyyaml=={YAML_VERSION}",
])
def test_quoted_pins_and_option_values_are_read_as_pip_does(tmp_path: Path, line):
    (tmp_path / "Dockerfile").write_text(BASE + line + "\n")
    env = read_dockerfile(tmp_path / "Dockerfile", tmp_path)
    assert env.setup == []  # satisfied by the host: nothing left to run


def test_pip_words():
    words = installs.command_words('sudo -E PIP_X=1 python3 -m pip install -i URL "pandas==2.2.3" -r req.txt x[extra]>=1')
    assert installs.pip_requirements(words) == (["pandas==2.2.3", "x[extra]>=1"], ["-r req.txt"])
    assert installs.apt_packages(installs.command_words("DEBIAN_FRONTEND=noninteractive apt-get install -y -o A=b curl r-base=4.3")) == ["curl", "r-base"]


def test_the_real_apt_blocker_is_named_not_curl(tmp_path: Path):
    (tmp_path / "Dockerfile").write_text(
        "FROM ubuntu:24.04\nWORKDIR /app\nRUN DEBIAN_FRONTEND=noninteractive apt-get install -y curl wget r-base\n")
    with pytest.raises(Rejected, match=r"^needs system packages not on this host: r-base$") as err:
        read_dockerfile(tmp_path / "Dockerfile", tmp_path)
    assert "apt-get install r-base" in err.value.fix


def test_a_solution_that_downloads_is_rejected(tmp_path: Path):
    tb_task(tmp_path, "curl-installer", BASE, solution="curl -fsSL https://get.example.com/install.sh | bash\necho 42 > answer.txt\n")
    tb_task(tmp_path, "heredoc", BASE, solution="cat > fetch.py <<'EOF'\n# would use curl or wget here\nEOF\necho 42 > answer.txt\n")
    suite = load_suite(tmp_path)
    reasons = {r.path.name: r.reason for r in suite.rejected}
    assert reasons == {"curl-installer": "solution.sh needs the network: 'curl -fsSL https://get.example.com/install.sh'"}
    assert [t.name for t in suite] == ["heredoc"]  # a heredoc's body is data, not a command


def test_harbor_solve_sh_is_checked_too(tmp_path: Path):
    folder = tmp_path / "harbor-dl"
    (folder / "tests").mkdir(parents=True)
    (folder / "solution").mkdir()
    (folder / "task.toml").write_text('version = "1.0"\n[metadata]\ndifficulty = "easy"\n')
    (folder / "instruction.md").write_text("Write 42 into /app/answer.txt.\n")
    (folder / "tests" / "test.sh").write_text("#!/bin/bash\npytest /tests/test_outputs.py\n")
    (folder / "tests" / "test_outputs.py").write_text(TEST)
    (folder / "solution" / "solve.sh").write_text("#!/bin/bash\nwget -q https://example.com/tool.tgz\n")
    suite = load_suite(tmp_path)
    assert [r.reason for r in suite.rejected] == ["solution/solve.sh needs the network: 'wget -q https://example.com/tool.tgz'"]


# ----------------------------------------------------------------------------------------
# Pins: refused with the pin named (default) or loaded with the mismatch noted (pins=loose)


def test_a_pin_other_than_the_hosts_is_refused_with_the_pin_named(tmp_path: Path):
    assert NUMPY_VERSION != "1.0"
    tb_task(tmp_path, "old-numpy", BASE + 'RUN pip install "numpy==1.0"\n')
    tb_task(tmp_path, "test-pin", BASE, run_tests='uv pip install pytest==8.4.1 "numpy==1.0"\nuv run pytest\n')
    tb_task(tmp_path, "same-pin", BASE + f"RUN pip install numpy=={NUMPY_VERSION}\n",
            run_tests=f"uv add pytest==8.4.1 'numpy=={NUMPY_VERSION}'\n")
    suite = load_suite(tmp_path)
    reasons = {r.path.name: (r.reason, r.fix) for r in suite.rejected}
    assert reasons["old-numpy"][0] == f"pins numpy==1.0; this host has numpy {NUMPY_VERSION}"
    assert 'pins = "loose" in suite.toml' in reasons["old-numpy"][1] and "pip install 'numpy==1.0'" in reasons["old-numpy"][1]
    assert reasons["test-pin"][0] == f"run-tests.sh pins numpy==1.0; this host has numpy {NUMPY_VERSION}"
    assert [t.name for t in suite] == ["same-pin"]  # pytest's own pin: our pytest runs the tests (noted)
    assert any("installs pytest==8.4.1" in n for n in suite["same-pin"].notes)

    loose = load_suite(tmp_path, pins="loose")
    assert [t.name for t in loose] == ["old-numpy", "same-pin", "test-pin"]
    assert any(f"this host has numpy {NUMPY_VERSION} (pins=loose" in n for n in loose["old-numpy"].notes)


def test_suite_toml_can_loosen_pins(tmp_path: Path):
    tb_task(tmp_path, "old-numpy", BASE + "RUN pip install numpy==1.0\n")
    (tmp_path / "suite.toml").write_text('[suite]\nname = "tb"\nformat = "terminal-bench"\npins = "loose"\n')
    assert load_suite(tmp_path).ids == ["tb/old-numpy"]
    (tmp_path / "suite.toml").write_text('[suite]\nname = "tb"\nformat = "terminal-bench"\npins = "sloppy"\n')
    with pytest.raises(Exception, match="pins = 'sloppy'"):
        load_suite(tmp_path)


# ----------------------------------------------------------------------------------------
# Reasons reach the user


def _mixed(root: Path) -> Path:
    tb_task(root, "fine", BASE + "COPY task-deps/ ./\n", files={"task-deps/input.txt": "x\n"})
    tb_task(root, "needs-r", "FROM ubuntu:24.04\nWORKDIR /app\nRUN apt-get install -y curl r-base\n")
    tb_task(root, "old-numpy", BASE + 'RUN pip install "numpy==1.0"\n')
    tb_task(root, "downloads", BASE, solution="curl -LsSf https://astral.sh/uv/install.sh | sh\n")
    (root / "notes").mkdir()
    return root


def test_check_rows_cover_every_folder(tmp_path: Path):
    rows = {r.name: r for r in check_rows(load_suite(_mixed(tmp_path)))}
    assert {n: r.status for n, r in rows.items()} == {
        "downloads": "rejected", "fine": "loaded", "needs-r": "rejected", "notes": "rejected", "old-numpy": "rejected"}
    assert rows["needs-r"].reason == "needs system packages not on this host: r-base"
    assert rows["fine"].reason == "" and all(r.fix for r in rows.values() if r.status == "rejected")


def test_tasks_check_prints_the_table(tmp_path: Path, monkeypatch):
    from harnessrl.commands import common

    # the shared console took its width when it was made (80 columns without a terminal): widen it so rows stay whole
    monkeypatch.setattr(common.console, "_width", 250)
    result = CliRunner().invoke(app, ["tasks", "check", str(_mixed(tmp_path))], env={"COLUMNS": "250"})
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert "1 loaded, 4 rejected" in result.output
    row = next(line for line in lines if "needs-r" in line)
    assert "terminal-bench" in row and "rejected" in row and "r-base" in row and "apt-get install r-base" in row
    row = next(line for line in lines if "old-numpy" in line)
    assert f"pins numpy==1.0; this host has numpy {NUMPY_VERSION}" in row
    assert "needs the network" in next(line for line in lines if "downloads" in line)
    assert "loaded" in next(line for line in lines if " fine " in line)
    strict = CliRunner().invoke(app, ["tasks", "check", str(tmp_path), "--strict"], env={"COLUMNS": "250"})
    assert strict.exit_code == 1
    missing = CliRunner().invoke(app, ["tasks", "check", str(tmp_path / "nope")])
    assert missing.exit_code == 2 and "not a folder" in missing.output


def test_asking_for_a_rejected_task_names_the_reason(tmp_path: Path):
    root = _mixed(tmp_path)
    with pytest.raises(ConfigError, match=r"'needs-r' .* was not loaded: needs system packages not on this host: r-base; "
                                          r"fix: install them"):
        plan_eval(str(root), tasks=["needs-r"])
    with pytest.raises(ConfigError, match=r"has no task\(s\) \['nonesuch'\]; known: fine"):
        plan_eval(str(root), tasks=["nonesuch"])
    result = CliRunner().invoke(app, ["eval", "--policy", "oracle", "--suite", str(root), "--tasks", "old-numpy",
                                      "--store", str(tmp_path / "store")], env={"COLUMNS": "250"})
    assert result.exit_code == 2 and "pins numpy==1.0" in result.output and "Traceback" not in result.output


def test_suite_lookup_of_a_rejected_task_names_the_reason(tmp_path: Path):
    suite = load_suite(_mixed(tmp_path))
    with pytest.raises(KeyError, match="'downloads' .* was not loaded: solution.sh needs the network"):
        suite["downloads"]
    assert suite["fine"].name == "fine"


@pytest.mark.parametrize("line,downloads", [
    ("curl -fsSL https://x.example/i.sh", True), ("/usr/bin/wget -q URL", True), ("git clone https://x/y.git", True),
    ("git -C repo fetch origin", True), ("go mod download", True), ("uv add requests", True),
    ('python3 -c "$(curl -s https://x.example/a.py)"', True),
    ('echo "install it with curl or wget"', False), ("git commit -m 'use npm later'", False), ("uv run pytest", False),
    ("grep -r curl src/", False),
])
def test_script_commands_are_judged_by_the_command_not_its_words(line, downloads):
    assert installs.downloads(line) is downloads
