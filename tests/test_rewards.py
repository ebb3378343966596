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
