"""Terminal-Bench and Harbor task folders: accepted ones run in the sandbox, others say why not."""

from __future__ import annotations

from pathlib import Path

import pytest

from harnessrl.tasks.base import SuiteError
from harnessrl.tasks.loaders import Rejected, load_suite, read_dockerfile
from harnessrl.tasks.runtime import TaskRuntime

from .conftest import FIXTURES


def test_builtin_by_name_and_unknown():
    assert load_suite("code-v1").name == "code-v1"
    with pytest.raises(SuiteError, match="built-in suites are"):
        load_suite("no-such-suite")


def test_terminal_bench_folder_accepts_and_rejects_with_reasons():
    suite = load_suite(FIXTURES / "terminal-bench")
    assert [t.name for t in suite] == ["hello-file"]
    reasons = {r.path.name: r.reason for r in suite.rejected}
    assert reasons == {
        "needs-apt": "needs system packages not on this host: r-base",
        "needs-pip": "needs Python package 'flask==3.0.3', which is not installed",
        "two-containers": "needs 2 containers (client, server)",
    }
    task = suite["hello-file"]
    assert task.source == "terminal-bench" and task.needs_shell
    assert task.env == {"GREETING_WORD": "Hi"}
    assert task.meta.agent_timeout_s == 180 and task.meta.test_timeout_s == 30
    assert any("run-tests.sh replaced" in n for n in task.notes)


def test_harbor_folder_accepts_and_rejects_with_reasons():
    suite = load_suite(FIXTURES / "harbor")
    assert [t.name for t in suite] == ["count-lines", "reward-script"]
    reasons = {r.path.name: r.reason for r in suite.rejected}
    assert reasons == {"gpu-train": "needs 1 GPU(s)",
                       "prebuilt-image": "runs in a prebuilt image (ghcr.io/example/custom-env:latest)"}
    assert suite["count-lines"].test_runner == "pytest"  # its test.sh downloads uv: replaced
    assert suite["reward-script"].test_runner == "script"  # offline test.sh: run as is


@pytest.mark.sandbox
@pytest.mark.parametrize("folder,name", [("terminal-bench", "hello-file"), ("harbor", "count-lines"),
                                         ("harbor", "reward-script")])
def test_accepted_foreign_tasks_run_end_to_end(sandbox, folder, name):
    task = load_suite(FIXTURES / folder)[name]
    with TaskRuntime(task, sandbox) as rt:
        assert rt.run("ls /app").ok
        before = rt.score()
        assert not before.success and before.outcome in ("dropped_requirement", "test_error")
        solved = rt.apply_solution()
        assert solved.ok, solved.output
        after = rt.score()
    assert after.success and after.reward == 1.0, after.summary() + after.run.output[-2000:]


@pytest.mark.sandbox
def test_harbor_partial_reward_is_not_solved(sandbox):
    task = load_suite(FIXTURES / "harbor")["reward-script"]
    with TaskRuntime(task, sandbox) as rt:
        assert rt.run("mkdir -p answers && echo ALPHA > answers/a.txt && echo BETA > answers/b.txt").ok
        score = rt.score()
    assert score.reward == pytest.approx(0.6667) and score.outcome == "dropped_requirement"


@pytest.mark.sandbox
def test_dockerfile_setup_and_env_reach_the_sandbox(sandbox):
    task = load_suite(FIXTURES / "terminal-bench")["hello-file"]
    with TaskRuntime(task, sandbox) as rt:
        r = rt.run("cat out/README; echo $GREETING_WORD; ls data; ls /tests 2>&1 | head -1")
    assert r.stdout.splitlines()[:3] == ["created by the image", "Hi", "names.txt"]
    assert "No such file" in r.stdout  # the hidden tests are not there while the agent works


@pytest.mark.parametrize("dockerfile,reason", [
    ("FROM x\nWORKDIR /src\n", "WORKDIR /src"),
    ("FROM x\nWORKDIR /app\nADD https://example.com/a.tgz /app/\n", "ADD from the network"),
    ("FROM x\nWORKDIR /app\nRUN curl -L https://example.com/x | sh\n", "RUN needs the network"),
    ("FROM x\nWORKDIR /app\nRUN echo 1 > /etc/motd\n", "RUN writes outside /app"),
    ("FROM x\nWORKDIR /app\nCOPY a.txt /opt/a.txt\n", "outside /app"),
    ("FROM x AS build\nFROM y\nCOPY --from=build /x /app/x\n", "multi-stage"),
    ("FROM x\nWORKDIR /app\nRUN pip install -r requirements.txt\n", "requirements"),
    ("FROM x\nWORKDIR /app\nONBUILD RUN x\nFOO bar\n", "unsupported Dockerfile instruction FOO"),
])
def test_dockerfile_rejections(tmp_path: Path, dockerfile, reason):
    (tmp_path / "a.txt").write_text("a")
    (tmp_path / "Dockerfile").write_text(dockerfile)
    with pytest.raises(Rejected, match=reason):
        read_dockerfile(tmp_path / "Dockerfile", tmp_path)


def test_dockerfile_accepted_parts(tmp_path: Path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "m.py").write_text("x = 1\n")
    (tmp_path / "Dockerfile").write_text(
        "FROM python:3.13\nWORKDIR /app\nENV A=1 B=\"two words\"\nRUN apt-get update && apt-get install -y git jq \\\n"
        "  && rm -rf /var/lib/apt/lists/*\nRUN pip install numpy pytest\nCOPY src/ lib/\n"
        "RUN git init -q && echo ok > status.txt\nCMD [\"bash\"]\n")
    env = read_dockerfile(tmp_path / "Dockerfile", tmp_path)
    assert env.env == {"A": "1", "B": "two words"}
    assert env.copies == [((tmp_path / "src").resolve(), "lib")]
    assert env.setup == ["git init -q", "echo ok > status.txt"]


def test_suite_toml_can_declare_a_foreign_format(tmp_path: Path):
    import shutil

    shutil.copytree(FIXTURES / "harbor" / "count-lines", tmp_path / "count-lines")
    (tmp_path / "suite.toml").write_text('[suite]\nname = "mini-harbor"\nversion = "2"\nformat = "harbor"\n')
    suite = load_suite(tmp_path)
    assert suite.name == "mini-harbor" and suite.version == "2" and suite.ids == ["mini-harbor/count-lines"]
