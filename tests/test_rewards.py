"""Reward hooks in TRL's reward_funcs shape: composed with the verifier's reward on the host after grading, in
`eval` (2 workers), native training and the TRL engine."""

from __future__ import annotations

import textwrap

import pytest
from typer.testing import CliRunner

from harnessrl.config import ConfigError
from harnessrl.episode import Context, Episode
from harnessrl.records import RecordStore
from harnessrl.rewards import RewardHook, apply, split

runner = CliRunner()

REWARDS = '''
def brevity(prompts, completions, **kwargs):
    """Minus the characters of the agent's replies / 100 (TRL's reward function shape)."""
    assert all(p[-1]["role"] == "user" for p in prompts) and len(kwargs["verifier_reward"]) == len(prompts)
    return [-sum(len(m["content"]) for m in c if m["role"] == "assistant") / 100 for c in completions]

def only_failures(prompts, completions, success, **kwargs):
    return [None if ok else 1.0 for ok in success]
'''


@pytest.fixture
def reward_module(tmp_path, monkeypatch):
    (tmp_path / "myrewards.py").write_text(textwrap.dedent(REWARDS))
    monkeypatch.syspath_prepend(str(tmp_path))
    return "myrewards"


def _episode(reward: float, success: bool, replies: list[str]) -> Episode:
    msgs = [{"role": "system", "content": "sys"}, {"role": "user", "content": "task"}]
    for r in replies:
        msgs += [{"role": "assistant", "content": r}, {"role": "user", "content": "obs"}]
    return Episode(Context(task_id="t", harness_id="h"), reward=reward, success=success, messages=msgs)


def test_prompt_and_completion_of_a_multi_turn_episode():
    prompt, completion = split(_episode(1.0, True, ["look box", "answer red"]).messages)
    assert [m["content"] for m in prompt] == ["sys", "task"]
    assert [m["role"] for m in completion] == ["assistant", "user", "assistant", "user"]


def test_weighted_sum_with_the_verifier_and_none_adds_nothing(reward_module):
    eps = [_episode(1.0, True, ["a" * 50]), _episode(0.0, False, ["b" * 200, "c" * 100])]
    apply(RewardHook(("myrewards:brevity", "myrewards:only_failures"), (2.0, 0.5), verifier_weight=3.0), eps)
    assert eps[0].reward == pytest.approx(3.0 * 1.0 + 2.0 * -0.5)  # only_failures: None for a success
    assert eps[1].reward == pytest.approx(3.0 * 0.0 + 2.0 * -3.0 + 0.5 * 1.0)
    assert eps[0].metadata["rewards"]["verifier"] == 1.0 and eps[0].metadata["rewards"]["myrewards:only_failures"] is None
    assert eps[0].success and not eps[1].success  # success stays the verifier's


def test_bad_hooks_are_config_errors(reward_module):
    with pytest.raises(ConfigError, match="2 weights for 1"):
        RewardHook(("myrewards:brevity",), (1.0, 2.0))
    with pytest.raises(ConfigError, match="no attribute 'nope'"):
        apply(RewardHook(("myrewards:nope",)), [_episode(1.0, True, ["x"])])


def test_eval_with_two_workers_adds_the_reward(reward_module, tmp_path):
    from harnessrl.cli import app

    store = tmp_path / "st"
    r = runner.invoke(app, ["eval", "--policy", "oracle", "--suite", "lookup", "--tasks", "0,1", "--harness",
                            "lookup-plain,lookup-kv", "--workers", "2", "--store", str(store),
                            "--reward-func", "myrewards:brevity", "--reward-weight", "0.5"])
    assert r.exit_code == 0, r.output
    eps = RecordStore(store).episodes()
    assert len(eps) == 4
    for ep in eps:
        chars = sum(len(t.action) for t in ep.turns)
        assert ep.metadata["rewards"]["verifier"] == 1.0 and ep.success
        assert ep.reward == pytest.approx(1.0 + 0.5 * -chars / 100)
    r = runner.invoke(app, ["eval", "--policy", "oracle", "--suite", "lookup", "--tasks", "0", "--store", str(store),
                            "--reward-func", "myrewards:missing"])
    assert r.exit_code == 2 and "no attribute 'missing'" in r.output


@pytest.mark.parametrize("engine", ["native", "trl"])
@pytest.mark.slow
def test_training_learns_from_the_hooked_reward(reward_module, tmp_path, engine):
    from harnessrl.cli import app
    from tests import tiny_lm

    model = tiny_lm.build(tmp_path / "m")
    run = tmp_path / "run"
    args = ["train", "agent", "--engine", engine, "--model", str(model), "--out", str(run),
            "--set", "harnesses=[lookup-plain,lookup-kv]", "--set", "tasks=[lookup/000]", "--set", "group_size=2",
            "--set", "tasks_per_update=1", "--set", "updates=1", "--set", "policy.max_new_tokens=6",
            "--set", "reward_funcs=[myrewards:brevity]", "--set", "reward_weights=[2.0]"]
    if engine == "trl":
        args += ["--set", "trl.gradient_checkpointing=false"]
    r = runner.invoke(app, args, catch_exceptions=False)
    assert r.exit_code == 0, r.output
    eps = RecordStore(run / "store").episodes()
    assert eps and all("myrewards:brevity" in ep.metadata["rewards"] for ep in eps)
    for ep in eps:
        parts = ep.metadata["rewards"]
        assert ep.reward == pytest.approx(parts["verifier"] + 2.0 * parts["myrewards:brevity"])
        assert parts["myrewards:brevity"] < 0  # every episode replied something


def test_a_tasks_hook_is_added_to_the_runs(reward_module):
    """task.toml's functions join the run's; one named by both counts once with the run's weight; verifier weights multiply."""
    from harnessrl.rewards import TASK_KEY, combine

    task = {"reward_funcs": ["myrewards:brevity", "myrewards:only_failures"], "reward_weights": [7.0, 4.0], "verifier_weight": 2.0}
    hook = combine(RewardHook(("myrewards:brevity",), (0.5,), verifier_weight=3.0), task)
    assert hook == RewardHook(("myrewards:brevity", "myrewards:only_failures"), (0.5, 4.0), 6.0)
    eps = [_episode(0.0, False, ["b" * 100]), _episode(0.0, False, ["b" * 100])]
    eps[0].metadata[TASK_KEY] = task  # the second episode's task declares nothing
    apply(RewardHook(("myrewards:brevity",), (0.5,)), eps)
    assert eps[0].reward == pytest.approx(0.5 * -1.0 + 4.0 * 1.0) and eps[1].reward == pytest.approx(0.5 * -1.0)
    assert "myrewards:only_failures" not in eps[1].metadata["rewards"]


TASK_REWARDS = '''
def calc_fixed(prompts, completions, final_files, **kwargs):
    """1 when the agent's final calc.py adds; reads the host copy of the workspace, which it cannot change."""
    out = []
    for files in final_files:
        try:
            files["calc.py"] = "tampered"
        except TypeError:
            pass
        else:
            raise AssertionError("final_files is writable")
        assert not any(p.startswith("tests/") or "test_add" in p for p in files), sorted(files)  # the hidden tests never
        out.append(1.0 if "a + b" in files.get("calc.py", "") else 0.0)
    return out
'''


@pytest.mark.sandbox
def test_suite_defaults_and_task_toml_declare_reward_funcs_with_final_files(tmp_path, monkeypatch):
    """A suite's [defaults] reward_funcs apply to every task; a task's own keys override them; the functions read
    the agent's final workspace files (a read-only host copy, never stored) through eval with 2 worker processes."""
    import json

    from harnessrl.cli import app

    (tmp_path / "taskrewards.py").write_text(textwrap.dedent(TASK_REWARDS))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)  # the worker processes find the module from the working folder
    files = {"suite.toml": '[suite]\nname = "rs"\n\n[defaults]\nkind = "code"\nreward_funcs = ["taskrewards:calc_fixed"]\n'
                           "reward_weights = [0.25]\n",
             "b/task.toml": 'title = "b"\nreward_weights = [2.0]\nverifier_weight = 0.5\n'}
    for name in ("a", "b"):
        files.update({f"{name}/instruction.md": "Fix add in calc.py.\n", f"{name}/workspace/calc.py": "def add(a, b):\n    return a - b\n",
                      f"{name}/tests/requirement/test_add.py": "from calc import add\n\ndef test_add():\n    assert add(2, 3) == 5\n",
                      f"{name}/solution/edits.toml": '[[step]]\npath = "calc.py"\nold = "    return a - b\\n"\nnew = "    return a + b\\n"\n'})
    files.setdefault("a/task.toml", 'title = "a"\n')
    for rel, text in files.items():
        (tmp_path / "rs" / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "rs" / rel).write_text(text)
    store = tmp_path / "st"
    r = runner.invoke(app, ["eval", "--policy", "oracle", "--suite", str(tmp_path / "rs"), "--harness", "aider",
                            "--workers", "2", "--store", str(store)])
    assert r.exit_code == 0, r.output
    eps = RecordStore(store).episodes()
    assert len(eps) == 2 and all(ep.success for ep in eps)
    for ep in eps:
        parts = ep.metadata["rewards"]
        assert parts["taskrewards:calc_fixed"] == 1.0  # the oracle's edit is in the copied files
        want = 0.25 + 1.0 if ep.context.task_id == "rs/a" else 0.5 * 1.0 + 2.0 * 1.0
        assert ep.reward == pytest.approx(want), ep.context.task_id
        assert ep.final_files is None  # the copy is never stored
    exported = tmp_path / "eps.jsonl"
    assert runner.invoke(app, ["records", "export", str(exported), "--store", str(store)]).exit_code == 0
    assert all("final_files" not in json.loads(line) for line in exported.read_text().splitlines())


def test_a_task_toml_with_mismatched_reward_weights_names_the_field(tmp_path):
    from harnessrl.tasks.base import SuiteError, load_task

    task = tmp_path / "t"
    (task / "tests" / "requirement").mkdir(parents=True)
    (task / "tests" / "requirement" / "test_x.py").write_text("def test_x():\n    pass\n")
    (task / "instruction.md").write_text("Do it.\n")
    (task / "task.toml").write_text('reward_funcs = ["m:f", "m:g"]\nreward_weights = [1.0]\n')
    with pytest.raises(SuiteError, match="reward_weights: 1 weights for 2 reward_funcs"):
        load_task(task, "s")


def test_final_files_copies_the_workspace_text_within_bounds(tmp_path):
    """The host copy holds the agent's UTF-8 files; binary and oversized files are left out and a symlink the
    agent planted (to a host file) is not followed."""
    import os

    from harnessrl.rollout import loop
    from harnessrl.tasks.workspace import Workspace

    secret = tmp_path / "host-secret.txt"
    secret.write_text("not the agent's")
    with Workspace.create(None, quota_mb=8) as ws:
        ws.write_text("calc.py", "def add(a, b):\n    return a + b\n")
        ws.write_text("pkg/notes.md", "ok\n")
        (ws.root / "blob.bin").write_bytes(b"\xff\xfe\x00binary")
        (ws.root / "big.txt").write_text("x" * (loop.FINAL_FILE_BYTES + 1))
        os.symlink(secret, ws.root / "link.txt")
        files = loop.final_files(type("Env", (), {"workspace": ws})())
    assert files == {"calc.py": "def add(a, b):\n    return a + b\n", "pkg/notes.md": "ok\n"}
    assert loop.final_files(object()) is None  # an env without a workspace (lookup, MiniWoB)
