"""The CLI's edges a new user touches first: one-line errors instead of tracebacks, `tasks check` on native
task folders, no store left behind by a failed audit, `--version`, and `-o` meaning `--out` everywhere."""

import sys

import typer
from typer.testing import CliRunner

from harnessrl.cli import app, legacy_policy_option
from harnessrl.tasks.base import BUILTIN_DIR
from tests.test_cli_literal_text import _commands

runner = CliRunner()


def one_line_error(r, *needles):
    """Exit 2, one `error:` line naming the problem, no traceback."""
    text = r.output
    assert r.exit_code == 2, text
    assert "Traceback" not in text and (r.exception is None or isinstance(r.exception, SystemExit)), text
    errors = [line for line in text.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, text
    for needle in needles:
        assert needle in errors[0], (needle, errors[0])


def test_unknown_option_of_an_lm_policy_is_one_line(tmp_path):
    r = runner.invoke(app, ["eval", "--policy", "lm:some-model", "--suite", "lookup", "--tasks", "0",
                            "--policy-option", "bogus=1", "--store", str(tmp_path / "s")])
    one_line_error(r, "bogus: unknown key", "policy lm", "temperature")


def test_bad_option_value_of_an_lm_policy_is_one_line(tmp_path):
    r = runner.invoke(app, ["eval", "--policy", "lm:some-model", "--suite", "lookup", "--tasks", "0",
                            "--policy-option", "temperature=hot", "--store", str(tmp_path / "s")])
    one_line_error(r, "temperature = 'hot'")


def test_unknown_option_of_an_endpoint_policy_is_one_line(tmp_path):
    r = runner.invoke(app, ["eval", "--policy", "endpoint:m", "--suite", "lookup", "--tasks", "0", "--policy-option",
                            "base_url=http://127.0.0.1:9/v1", "--policy-option", "bogus=1", "--store", str(tmp_path / "s")])
    one_line_error(r, "bogus: unknown key", "policy endpoint", "api_key_env")
    assert not (tmp_path / "s" / "shards").exists() or not any((tmp_path / "s" / "shards").iterdir())


def _trl_args(tmp_path, *sets):
    args = ["train", "agent", "--engine", "trl", "--model", "m", "--out", str(tmp_path / "run"),
            "--set", "harnesses=[lookup-plain,lookup-kv]", "--set", "tasks=[lookup/000]"]
    for s in sets:
        args += ["--set", s]
    return args


def test_use_vllm_without_vllm_is_one_line(tmp_path):
    import importlib.util

    assert importlib.util.find_spec("vllm") is None  # this test is about a machine without vLLM
    r = runner.invoke(app, _trl_args(tmp_path, "trl.use_vllm=true"))
    one_line_error(r, "trl.use_vllm=true needs vLLM", "harnessrl[vllm]")
    assert not (tmp_path / "run").exists()


def test_engine_trl_without_trl_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "trl", None)  # `import trl` now raises ImportError, as on a machine without it
    r = runner.invoke(app, _trl_args(tmp_path))
    one_line_error(r, "--engine trl needs TRL", "harnessrl[trl]")


def test_tasks_check_on_one_native_task_folder():
    r = runner.invoke(app, ["tasks", "check", str(BUILTIN_DIR / "code-v1" / "feat-cli-flag")], terminal_width=200)
    assert r.exit_code == 0, r.output
    assert "1 loaded, 0 rejected" in r.output and "harnessrl" in r.output and "harbor" not in r.output


def test_tasks_check_reports_every_bad_task_of_a_suite(tmp_path):
    import shutil

    suite = tmp_path / "suite"
    shutil.copytree(BUILTIN_DIR / "code-v1", suite)
    n = sum((p / "task.toml").exists() for p in suite.iterdir())
    (suite / "feat-cli-flag" / "instruction.md").unlink()
    shutil.rmtree(suite / "feat-histogram" / "tests" / "requirement")
    r = runner.invoke(app, ["tasks", "check", str(suite), "--strict"], terminal_width=250)
    assert r.exit_code == 1, r.output
    assert f"{n - 2} loaded, 2 rejected" in r.output
    from harnessrl.tasks.check import check_native

    _, rows = check_native(suite)  # the rows the table prints
    rejected = {row.name: row.reason for row in rows if row.status == "rejected"}
    assert "instruction.md: missing or empty" in rejected["feat-cli-flag"]
    assert "no test_*.py files" in rejected["feat-histogram"]


def test_failed_audit_leaves_no_store(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    r = runner.invoke(app, ["audit", "code-v9"])
    one_line_error(r, "unknown suite 'code-v9'")
    assert not (tmp_path / "runs").exists()


def test_version_option():
    from harnessrl import __version__

    r = runner.invoke(app, ["--version"])
    assert r.exit_code == 0 and r.output.strip() == f"harnessrl {__version__}"


def test_dash_o_is_out_in_every_command():
    shorts = 0
    for path, cmd in _commands(typer.main.get_command(app), []):
        for p in cmd.params:
            if "-o" in getattr(p, "opts", []):
                assert "--out" in p.opts, (path, p.opts)
                shorts += 1
    assert shorts >= 9  # eval, train agent, analyze, study, the recipes


def test_old_dash_o_policy_option_spelling_still_works():
    assert legacy_policy_option(["eval", "-o", "temperature=0", "-o", "runs/out"]) == \
        ["eval", "--policy-option", "temperature=0", "-o", "runs/out"]
    assert legacy_policy_option(["study", "-o", "a=b"]) == ["study", "-o", "a=b"]  # -o was always --out there


def test_valid_policy_options_pass_the_early_check():
    from harnessrl.policies.registry import PolicySpec, check_policy

    check_policy(PolicySpec("lm", "some-model", {"temperature": 0.5, "max_new_tokens": 8}))
    check_policy(PolicySpec("endpoint", "m", {"base_url": "http://127.0.0.1:9/v1", "max_tokens": 8}))


def test_an_empty_tasks_option_is_refused_not_run_as_every_task(tmp_path):
    """`--tasks "$TASKS"` with TASKS unset once evaluated the whole suite."""
    r = runner.invoke(app, ["eval", "--policy", "noop", "--suite", "code-v1", "--harness", "swe_agent", "--tasks", "",
                            "--store", str(tmp_path / "st")])
    assert r.exit_code == 2 and "names no task" in r.output, r.output
    assert not (tmp_path / "st").exists()


def test_a_negative_seed_is_refused_before_any_work(tmp_path):
    """seed=-1 used to load the model and run rollouts, then die in the first seeded draw (12 min in)."""
    r = runner.invoke(app, ["train", "agent", "--model", "m", "--out", str(tmp_path / "run"), "--set",
                            "harnesses=[lookup-plain]", "--set", "tasks=[lookup/000]", "--set", "seed=-1"])
    assert r.exit_code == 2 and "seed=-1" in r.output and ">= 0" in r.output, r.output
    assert len(r.output.strip().splitlines()) == 1, r.output


def test_more_workers_than_episodes_is_said(tmp_path):
    r = runner.invoke(app, ["eval", "--policy", "noop", "--suite", "code-v1", "--harness", "swe_agent", "--tasks",
                            "fix-leap-year", "--workers", "4", "--store", str(tmp_path / "st")])
    assert r.exit_code == 0, r.output
    assert "note: --workers 4 but 1 episode(s)" in r.output, r.output
